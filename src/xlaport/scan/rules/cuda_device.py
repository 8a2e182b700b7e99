"""``cuda-device``: CUDA device string or .cuda().

Places that name a CUDA device: `.cuda()`, the strings `"cuda"` and `"cuda:N"` (also `f"cuda:{i}"`) given to
`.to`, `torch.device`, `device=`/`map_location=` or bound to a name or attribute called like a device, a device
chosen as a default (an argparse default, a parameter default, `getattr(args, "device", "cuda")`) and a config
key naming the device. Where a string reaches a device through a name, the finding is on the string: that is
where the fix goes.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

from ..registry import DEFAULTS, check
from ..rule import Rule
from ._common import (
    _AUTOCAST,
    _DEVICE_CALLS,
    _DEVICE_KEYWORDS,
    _LOOKUPS,
    _argparse_default,
    _default_of,
    assigned_name,
    bound_string,
    device_string,
)

if TYPE_CHECKING:  # pragma: no cover
    from ..walker import Walker

RULE = Rule(
    id="cuda-device",
    title="CUDA device string or .cuda()",
    severity="error",
    category="device",
    why='`.cuda()`, `"cuda"` and `"cuda:N"` name a device that does not exist on a TPU or Trainium host.',
    fix="Place tensors on one device object: `t = xlaport.target(...)` and `.to(t.device)`, or `torch.accelerator.current_accelerator()`, which names `tpu` or `neuron` there.",
    chapter="notebooks/port_training",
    see_also=("notebooks/01_first_steps",),
    position=0,
    invalid=(
        "import torch\nmodel = Net().cuda()\nx = torch.zeros(\n    3, device='cuda:0')\n",
        "def run(args):\n    dev = getattr(\n        args, 'device', 'cuda')\n    return setup(device=dev)\n",
    ),
    valid=(
        "import torch\nimport xlaport\nt = xlaport.target('auto')\nmodel = Net().to(t.device)\nx = torch.zeros(\n    3, device=t.device)\n",
        "# a comparison names no device\non_gpu = x.device.type == 'cuda'\n",
    ),
)


@check(RULE.id, ast.Call)
def cuda_device_call(w: Walker, node: ast.Call) -> None:
    attr, q = w.attr, w.q or ""
    if attr == "cuda" and node.func.__class__ is ast.Attribute and not q.startswith("torch.cuda"):
        w.hit(
            RULE.id,
            node,
            "`.cuda()` raises on a TPU VM or Trainium host (no CUDA device; torch 2.9: 'Found no NVIDIA driver')",
            detail=".cuda()",
        )
    if attr in _DEVICE_CALLS or q == "torch.device":
        for a in node.args[:2]:
            _device_arg(w, a, "device string ")
    if q not in _AUTOCAST:
        for k in node.keywords:
            if k.arg in _DEVICE_KEYWORDS:
                _device_arg(w, k.value, f"{k.arg}=")
    if attr == "add_argument":
        d = _argparse_default(node, "device")
        s = device_string(d)
        if d is not None and s:
            w.hit(RULE.id, d, f'argparse default "{s}" for the device{_DEVICE_ON_HOST}', detail=s)
    got = _default_of(node) if attr in _LOOKUPS else None  # getattr(args, "device", "cuda")
    s = device_string(got[1]) if got is not None and "device" in got[0] else None
    if got is not None and s:
        w.hit(RULE.id, got[1], f'default "{s}" for `{got[0]}`{_DEVICE_ON_HOST}', detail=s)


_DEVICE_ON_HOST = ": on a TPU VM or Trainium host the first tensor moved there raises (no CUDA device)"


def _device_arg(w: Walker, a: ast.AST, what: str) -> None:
    s = device_string(a)
    if s:
        w.hit(RULE.id, a, f'{what}"{s}"{_DEVICE_ON_HOST}', detail=s)
        return
    lit = bound_string(w, a)
    s = device_string(lit)
    if lit is not None and s:
        name = a.id  # type: ignore[attr-defined]
        w.hit(RULE.id, lit, f'"{s}" reaches a device through `{name}`{_DEVICE_ON_HOST}', detail=s)


@check(RULE.id, ast.Dict)
def cuda_device_dict(w: Walker, node: ast.Dict) -> None:
    for k, v in zip(node.keys, node.values):
        if isinstance(k, ast.Constant) and isinstance(k.value, str) and "device" in k.value.lower():
            s = device_string(v)
            if s:
                w.hit(RULE.id, v, f'config "{k.value}": "{s}"{_DEVICE_ON_HOST}', detail=s)


@check(RULE.id, ast.Assign, ast.AnnAssign)
def cuda_device_assign(w: Walker, node: Any) -> None:
    for t in w.assign_targets(node):
        # `device = "cuda"`, and the same on an attribute or a key: `self.device = "cuda" if ... else "cpu"`
        name = assigned_name(t)
        low = name.lower()
        if "device" in low or low in ("dev", "map_location"):
            s = device_string(node.value)
            if s:
                shown = name if t.__class__ is ast.Name else ast.unparse(t)
                w.hit(RULE.id, node.value, f'`{shown} = "{s}"`{_DEVICE_ON_HOST}', detail=s)


@check(RULE.id, DEFAULTS)
def cuda_device_default(w: Walker, args: ast.arguments) -> None:
    for a, d in w.defaults(args):
        if "device" in a.arg.lower():
            s = device_string(d)
            if s:
                w.hit(RULE.id, d, f'default {a.arg}="{s}"{_DEVICE_ON_HOST}', detail=s)
