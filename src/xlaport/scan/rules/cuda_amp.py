"""``cuda-amp``: fp16 autocast or GradScaler.

fp16 automatic mixed precision: `GradScaler` (and the training libraries' wrappers of it), `autocast` with
`"cuda"` or `float16`, `torch.cuda.amp.*`, and `from torch.cuda.amp import ...` at the import, also through a
name bound by a conditional expression (`scope = autocast if ... else nullcontext`).
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from ..registry import check
from ..rule import Rule
from ._common import _AUTOCAST, _EXTENSIONS, _SCALER, _SCALER_NAMES, _shown, _torch_cuda_head

if TYPE_CHECKING:  # pragma: no cover
    from ..walker import Walker

RULE = Rule(
    id="cuda-amp",
    title="fp16 autocast or GradScaler",
    severity="warning",
    category="amp",
    why="fp16 autocast needs a `GradScaler` against underflow; TPU and Trainium compute in bf16, which keeps fp32's exponent range, so the scaler only adds work.",
    fix="`torch.autocast(t.device.type, dtype=torch.bfloat16)` (or `t.autocast()`), `loss.backward()` and `opt.step()` without a scaler.",
    chapter="notebooks/port_training",
    see_also=(),
    position=2,
    invalid=(
        "import torch\nscaler = torch.amp.GradScaler('cuda')\nwith torch.autocast(\n    'cuda',\n    dtype=torch.float16,\n):\n    y = model(x)\n",
        "from torch import autocast\nfrom contextlib import nullcontext\nscope = (autocast if opt.amp\n         else nullcontext)\nwith scope('cuda'):\n    y = model(x)\n",
    ),
    valid=(
        "import torch\nimport xlaport\nt = xlaport.target('auto')\nwith torch.autocast(\n    t.device.type,\n    dtype=torch.bfloat16,\n):\n    y = model(x)\ny.sum().backward()\n",
    ),
)


@check(RULE.id, ast.Call)
def cuda_amp_call(w: Walker, node: ast.Call) -> None:
    q, attr = w.q, w.attr
    if q is not None and q.startswith("torch."):
        if q in _AUTOCAST:
            _autocast(w, node, q)
        elif q in _SCALER:
            w.hit(RULE.id, node, f"`{q}()`{_SCALER_ON_HOST}", detail=q)
        else:
            head = _torch_cuda_head(q)
            if head is not None and head[0] == "amp":
                w.hit(RULE.id, node, f"{_shown(q, True)}{_AMP_ON_HOST}", detail=q)
    elif q is not None and attr in _SCALER_NAMES and q not in _EXTENSIONS:
        w.hit(RULE.id, node, f"`{attr}()`{_SCALER_ON_HOST}", detail=attr)
    if attr == "half" and node.func.__class__ is ast.Attribute and not node.args:
        w.hit(
            RULE.id,
            node,
            "`.half()` gives float16 weights or activations; TPU and Trainium compute in bfloat16, and float16 "
            "without a loss scaler underflows",
            detail=".half()",
        )


@check(RULE.id, ast.ImportFrom)
def cuda_amp_import(w: Walker, node: ast.ImportFrom) -> None:
    """``from torch.cuda.amp import autocast, GradScaler`` (or ``from torch.cuda import amp``): the line to port,
    since every use below it then reads as the device-neutral name."""
    if node.level or not node.module:
        return
    mod = node.module
    if mod == "torch.cuda.amp" or mod.startswith("torch.cuda.amp."):
        names = [a.name for a in node.names]
    elif mod == "torch.cuda" and any(a.name == "amp" for a in node.names):
        names = ["amp"]
    else:
        return
    shown = ", ".join(f"`{n}`" for n in names)
    w.hit(
        RULE.id,
        node,
        f"imports {shown} from CUDA's AMP namespace{_AMP_ON_HOST}; import them from `torch.amp` and pass the "
        "device type",
        detail=f"{mod}.{names[0]}" if mod != "torch.cuda" else "torch.cuda.amp",
    )


@check(RULE.id, ast.Attribute)
def cuda_amp_name(w: Walker, node: ast.Attribute) -> None:
    q = w.q or ""
    head = _torch_cuda_head(q)
    if head is not None and head[0] == "amp":
        w.hit(RULE.id, node, f"{_shown(q, False)}{_AMP_ON_HOST}", detail=q)


_SCALER_ON_HOST = (
    " warns and disables itself on a TPU VM or Trainium host (no CUDA; torch 2.9), so `scale`/`step` pass "
    "through; with bf16 no scaler is needed"
)
_AUTOCAST_ON_HOST = (
    " warns and disables itself on a TPU VM or Trainium host (no CUDA; torch 2.9): the step silently runs in float32"
)
_AMP_ON_HOST = ": CUDA automatic mixed precision, which disables itself where there is no CUDA device"


def _autocast(w: Walker, node: ast.Call, q: str) -> None:
    device = node.args[0] if node.args else None
    dtype = node.args[1] if len(node.args) > 1 else None
    for k in node.keywords:
        if k.arg == "device_type":
            device = k.value
        elif k.arg == "dtype":
            dtype = k.value
    dev = device.value if isinstance(device, ast.Constant) else None
    dt = w.dotted(dtype) if dtype is not None else None
    fp16 = dt in ("torch.float16", "torch.half")
    if q == "torch.cuda.amp.autocast":
        w.hit(RULE.id, node, f"`torch.cuda.amp.autocast()`{_AUTOCAST_ON_HOST}", detail=q)
    elif dev == "cuda" or fp16:
        what = ", ".join(x for x in (f'"{dev}"' if dev == "cuda" else "", "float16" if fp16 else "") if x)
        on_host = _AUTOCAST_ON_HOST if dev == "cuda" else ": float16 autocast; TPU and Trainium compute in bfloat16"
        w.hit(RULE.id, node, f"`{q}({what})`{on_host}", detail=q)
