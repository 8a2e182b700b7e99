"""What several rules share: the tables of CUDA names and packages, and the readers of strings and names.

Nothing here is a rule; each rule's module (:mod:`xlaport.scan.rules`) takes what it needs.
"""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from ..walker import Walker

# Import name -> (distribution names in requirements files, what to use instead)
CUDA_ONLY_PACKAGES: dict[str, tuple[tuple[str, ...], str]] = {
    "apex": (
        ("apex", "nvidia-apex"),
        "torch.autocast and torch.optim's fused optimizers replace apex.amp and FusedAdam",
    ),
    "bitsandbytes": (("bitsandbytes",), "keep bf16 weights and optimizer state, or quantize with torchao"),
    "flash_attn": (("flash-attn", "flash_attn"), "torch.nn.functional.scaled_dot_product_attention"),
    "xformers": (("xformers",), "torch.nn.functional.scaled_dot_product_attention"),
    "deepspeed": (("deepspeed",), "FSDP2 (TorchNeuron) or FSDPv2/SPMD (torch_xla); DeepSpeed's ops are CUDA"),
    "cupy": (("cupy",), "torch ops on the device, or NumPy on the host"),
    "cupyx": (("cupy",), "torch ops on the device, or NumPy/SciPy on the host"),
    "pycuda": (("pycuda",), "torch ops, or a Pallas/NKI kernel"),
    "triton": (("triton",), "Pallas (TorchTPU) or NKI (TorchNeuron); the kernels are counted by triton-kernel"),
    "transformer_engine": (("transformer-engine", "transformer_engine"), "bf16 autocast; fp8 recipes differ per chip"),
    "mamba_ssm": (("mamba-ssm", "mamba_ssm"), "a PyTorch reference implementation of the scan, or a Pallas/NKI kernel"),
    "causal_conv1d": (("causal-conv1d", "causal_conv1d"), "torch.nn.functional.conv1d with left padding"),
    "liger_kernel": (("liger-kernel", "liger_kernel"), "the plain PyTorch ops it fuses (XLA fuses them too)"),
    "tensorrt": (("tensorrt",), "torch.compile with the target's backend"),
    "torch_tensorrt": (("torch-tensorrt", "torch_tensorrt"), "torch.compile with the target's backend"),
    "pynvml": (("pynvml", "nvidia-ml-py"), "torch.accelerator memory queries, or the vendor's monitoring tools"),
    "nvidia": (("nvidia-dali",), "a torch DataLoader on the host"),
}
_DIST_TO_IMPORT = {d: imp for imp, (dists, _) in CUDA_ONLY_PACKAGES.items() for d in dists}


def dependency_advice(requirement_name: str) -> tuple[str, str] | None:
    """(package, advice) if a requirements-file name is a CUDA-only package, else None."""
    n = requirement_name.lower().replace("_", "-")
    if n.startswith("cupy"):
        n = "cupy"
    imp = _DIST_TO_IMPORT.get(n) or _DIST_TO_IMPORT.get(n.replace("-", "_"))
    if imp is None:
        return None
    return n, CUDA_ONLY_PACKAGES[imp][1]


_STREAM_NAMES = {
    "Stream",
    "ExternalStream",
    "Event",
    "stream",
    "current_stream",
    "default_stream",
    "set_stream",
    "CUDAGraph",
    "graph",
    "graphs",
    "make_graphed_callables",
    "StreamContext",
}
_AUTOCAST = {"torch.autocast", "torch.amp.autocast", "torch.cuda.amp.autocast", "torch.amp.autocast_mode.autocast"}
_SCALER = {"torch.amp.GradScaler", "torch.cuda.amp.GradScaler", "torch.GradScaler", "torch.amp.grad_scaler.GradScaler"}
# GradScaler and the wrappers training libraries build on it (timm.utils.NativeScaler)
_SCALER_NAMES = {"GradScaler", "NativeScaler", "NativeScalerWithGradNormCount"}
_DATA_PARALLEL = {
    "torch.nn.DataParallel",
    "torch.nn.parallel.DataParallel",
    "torch.nn.parallel.data_parallel.DataParallel",
}
_DYNAMIC_OPS = {"nonzero", "unique", "unique_consecutive", "masked_select", "argwhere"}
_CAT = {"torch.cat", "torch.concat", "torch.concatenate", "torch.stack", "torch.hstack", "torch.vstack", "torch.dstack"}
_EXTENSIONS = {
    "torch.utils.cpp_extension.load_inline": "load_inline",
    "torch.utils.cpp_extension.CUDAExtension": "CUDAExtension",
    "cupy.RawKernel": "cupy.RawKernel",
    "cupy.RawModule": "cupy.RawModule",
    "cupy.ElementwiseKernel": "cupy.ElementwiseKernel",
    "cupy.ReductionKernel": "cupy.ReductionKernel",
    "pycuda.compiler.SourceModule": "pycuda SourceModule",
}
_TRITON_DECOS = {"triton.jit", "triton.autotune", "triton.heuristics", "torch.library.triton_op"}
_SYNC_METHODS = {"item", "tolist", "numpy"}
_SYNC_BUILTINS = {"float", "int", "bool"}
_CONDITION_TORCH = {
    "any",
    "all",
    "equal",
    "allclose",
    "isclose",
    "isnan",
    "isinf",
    "isfinite",
    "is_nonzero",
    "gt",
    "lt",
    "ge",
    "le",
    "eq",
    "ne",
    "count_nonzero",
    "logical_and",
    "logical_or",
    "logical_not",
}
_DEVICE_STR = re.compile(r"^cuda(?::\d+)?$")
_DEVICE_CALLS = {"to", "device", "Generator", "set_default_device", "get_device_module"}
_DEVICE_KEYWORDS = {"device", "map_location", "device_type"}
_GROUP_CALLS = {"init_process_group", "new_group", "new_subgroups"}


def device_string(e: ast.AST | None) -> str | None:
    """The CUDA device string an expression spells (``"cuda"``, ``"cuda:0"``, ``f"cuda:{i}"``), or None."""
    if e is None:
        return None
    c = e.__class__
    if c is ast.Constant:
        v = e.value  # type: ignore[attr-defined]
        return v if isinstance(v, str) and _DEVICE_STR.match(v) else None
    if c is ast.JoinedStr:
        first = e.values[0] if e.values else None  # type: ignore[attr-defined]
        if first is not None and first.__class__ is ast.Constant and str(first.value).startswith("cuda:"):
            return "cuda:{...}"
        return None
    if c is ast.IfExp:
        return device_string(e.body) or device_string(e.orelse)  # type: ignore[attr-defined]
    if c is ast.BoolOp:
        for v in e.values:  # type: ignore[attr-defined]
            s = device_string(v)
            if s:
                return s
    return None


def nccl_string(e: ast.AST | None) -> bool:
    """True when an expression is (or may be) the string ``"nccl"`` (also ``"cpu:gloo,cuda:nccl"``)."""
    if e is None:
        return False
    if e.__class__ is ast.Constant:
        v = e.value
        return isinstance(v, str) and "nccl" in v.lower() and len(v) < 40
    if e.__class__ is ast.IfExp:
        return nccl_string(e.body) or nccl_string(e.orelse)
    return False


def bound_string(w: Walker, e: ast.AST) -> ast.AST | None:
    """The string literal a name was bound to in this scope or the module (``loc = f"cuda:{r}"``), or None."""
    if e.__class__ is not ast.Name:
        return None
    name = e.id
    return w.scope.strings.get(name) or (w.module.strings.get(name) if w.scope is not w.module else None)


def _argparse_default(node: ast.Call, word: str) -> ast.AST | None:
    """``parser.add_argument("--dist-backend", default=...)``: the default when an option string names ``word``."""
    names: list[str] = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    names += [str(k.value.value) for k in node.keywords if k.arg == "dest" and isinstance(k.value, ast.Constant)]
    if not any(word in str(n).lower() for n in names):
        return None
    return next((k.value for k in node.keywords if k.arg == "default"), None)


def _torch_cuda_head(q: str) -> tuple[str, str] | None:
    """For ``torch.cuda.X.Y``: (``X``, the rest after ``torch.cuda.``); None for other names."""
    if q == "torch.cuda":
        return "", ""
    if q.startswith("torch.cuda."):
        rest = q[len("torch.cuda.") :]
        return rest.split(".", 1)[0], rest
    return None


def _shown(q: str, called: bool) -> str:
    return f"`{q}{'()' if called else ''}`"


def _strings(e: ast.AST) -> list[str]:
    return [n.value for n in ast.walk(e) if n.__class__ is ast.Constant and isinstance(n.value, str)]


def _string_lines(e: ast.AST) -> int:
    return sum(s.count("\n") + 1 for s in _strings(e) if "\n" in s or "__global__" in s)


_NEW_SHAPE = ": on TPU/Trainium a host sync, and one new compiled program per count"


def _default_of(node: ast.Call) -> tuple[str, ast.AST] | None:
    """(key, default) of ``getattr(obj, "key", default)`` and ``mapping.get("key", default)``, else None."""
    f = node.func
    if f.__class__ is ast.Name and f.id == "getattr" and len(node.args) == 3:
        key, d = node.args[1], node.args[2]
    elif f.__class__ is ast.Attribute and f.attr in ("get", "getenv") and len(node.args) == 2:
        key, d = node.args
    else:
        return None
    if key.__class__ is ast.Constant and isinstance(key.value, str):
        return key.value.lower(), d
    return None


_LOOKUPS = frozenset({"getattr", "get", "getenv"})


def assigned_name(t: ast.AST) -> str:
    """The name an assignment target spells: ``device`` for ``device``, ``self.device`` and ``cfg["device"]``."""
    if isinstance(t, ast.Name):
        return t.id
    if isinstance(t, ast.Attribute):
        return t.attr
    if isinstance(t, ast.Subscript) and isinstance(t.slice, ast.Constant) and isinstance(t.slice.value, str):
        return t.slice.value
    return ""
