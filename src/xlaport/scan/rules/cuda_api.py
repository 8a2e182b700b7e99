"""``cuda-api``: torch.cuda / torch.backends.cuda call.

Calls and names under `torch.cuda` and `torch.backends.cuda`/`cudnn` (memory queries, seeds, device
counts, TF32 and cuDNN switches), `torch.nn.DataParallel`, and a name bound to the `torch.cuda` module
(`device_mod = torch.cuda`), whose calls are then reported where they are made. Where the API-mapping table
has a row for the call, the finding's fix is that row's TorchTPU and TorchNeuron spelling.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

from ..registry import check
from ..rule import Rule
from ._common import _AUTOCAST, _DATA_PARALLEL, _SCALER, _STREAM_NAMES, _shown, _torch_cuda_head

if TYPE_CHECKING:  # pragma: no cover
    from ..walker import Walker

RULE = Rule(
    id="cuda-api",
    title="torch.cuda / torch.backends.cuda call",
    severity="warning",
    category="device",
    why="`torch.cuda.*` reports on or drives a CUDA device; TorchTPU and TorchNeuron answer through `torch.accelerator` (TorchTPU 0.2.0 makes several of its own `torch.tpu` device calls raise with a pointer there).",
    fix="Use the `torch.accelerator` spelling from the API-mapping table; delete cuDNN/TF32 switches.",
    chapter="book/generated/api_mapping",
    see_also=("notebooks/port_training",),
    position=1,
    invalid=(
        "import torch\ntorch.cuda.synchronize()\ntorch.backends.cudnn.benchmark = True\n",
        "import torch\ndevice_mod = torch.cuda\nn = device_mod.device_count()\n",
    ),
    valid=("import torch\nimport xlaport\nt = xlaport.target('auto')\ntorch.accelerator.synchronize()\nt.sync()\n",),
)


#: What a ``torch.cuda`` name does, as written, on a host without a CUDA device (a TPU VM, a Trainium host),
#: measured with torch 2.9.0 on such a host (tests/unit/test_scan_messages.py checks it when torch is
#: installed and no GPU is present); severity: error when the line stops or silently changes the run.
#: Names not listed raise there ("Found no NVIDIA driver on your system").
CUDA_ON_HOST: dict[str, tuple[str, str]] = {
    "is_available": (
        'returns False there: an `assert` on it stops the script, and `"cuda" if ... else "cpu"` silently '
        "runs everything on the host CPU",
        "error",
    ),
    "device_count": ("returns 0 there: a launcher that starts one process per GPU starts none", "error"),
    "is_bf16_supported": ("returns False there, so code that picks bf16 by it falls back to float16", "error"),
    "empty_cache": ("does nothing there (no CUDA memory to release)", "warning"),
    "manual_seed": ("does nothing there: the device's generator is not seeded", "warning"),
    "manual_seed_all": ("does nothing there: the device's generator is not seeded", "warning"),
    "memory_allocated": ("returns 0 there: memory logs and checks read zero", "warning"),
    "max_memory_allocated": ("returns 0 there: memory logs and checks read zero", "warning"),
    "OutOfMemoryError": (
        "names CUDA's out-of-memory error; the target reports running out of device memory its own way",
        "warning",
    ),
}
_CUDA_RAISES = ("raises there (no CUDA device: 'Found no NVIDIA driver on your system')", "error")
_CUDNN_SWITCH = ("does nothing there (a cuDNN/CUDA kernel switch)", "warning")


def cuda_on_host(q: str, called: bool) -> tuple[str, str]:
    """(what ``q`` as written does on a TPU VM or Trainium host, severity) for a torch.cuda/backends name."""
    if q.startswith("torch.backends."):
        return _CUDNN_SWITCH
    leaf = q.rsplit(".", 1)[-1]
    if leaf in CUDA_ON_HOST:
        return CUDA_ON_HOST[leaf]
    return _CUDA_RAISES if called else ("refers to CUDA's runtime; calls through it raise there", "warning")


def _cuda_api(w: Walker, node: ast.AST, q: str, called: bool) -> None:
    if q.startswith("torch.") and q not in _AUTOCAST and q not in _SCALER:
        head = _torch_cuda_head(q)
        if (head is not None and head[1] and head[0] not in ("amp", "nccl") and head[0] not in _STREAM_NAMES) or (
            head is None and q.startswith(("torch.backends.cudnn", "torch.backends.cuda"))
        ):
            what, sev = cuda_on_host(q, called)
            w.hit(RULE.id, node, f"{_shown(q, called)} {what}", detail=q, severity=sev)


@check(RULE.id, ast.Call)
def cuda_api_call(w: Walker, node: ast.Call) -> None:
    if w.q is not None:
        _cuda_api(w, node, w.q, True)
        if w.q in _DATA_PARALLEL:
            w.hit(
                RULE.id,
                node,
                "`DataParallel` replicates over CUDA devices; on a TPU VM or Trainium host it finds none and runs "
                "the model unreplicated on one device (torch 2.9), so the batch is not split",
                detail="torch.nn.DataParallel",
            )


@check(RULE.id, ast.Attribute)
def cuda_api_name(w: Walker, node: ast.Attribute) -> None:
    q = w.q
    if q is not None:
        _cuda_api(w, node, q, False)


@check(RULE.id, ast.Assign, ast.AnnAssign)
def cuda_module_bound(w: Walker, node: Any) -> None:
    """``device_mod = torch.cuda``: the file reaches CUDA's runtime through another name from here on."""
    value = getattr(node, "value", None)
    if value is not None and w.torch_path(value) == "torch.cuda":
        names = ", ".join(ast.unparse(t) for t in w.assign_targets(node))
        w.hit(
            RULE.id,
            node,
            f"`{names} = torch.cuda`: calls through `{names}` reach CUDA's runtime, which is not there",
            detail="torch.cuda",
        )
