"""``nccl-backend``: NCCL process group.

The NCCL backend: `"nccl"` given to `init_process_group`/`new_group` (directly, through a name, an
attribute such as `args.dist_backend`, an argparse default or a parameter default), a table of backends
per device type that names no TPU or Trainium backend (`{"cuda": "nccl", "xpu": "ccl"}`), and
`torch.cuda.nccl`. The finding is on the string.
"""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING, Any

from ..registry import DEFAULTS, check
from ..rule import Rule
from ._common import (
    _GROUP_CALLS,
    _LOOKUPS,
    _argparse_default,
    _default_of,
    _shown,
    _torch_cuda_head,
    assigned_name,
    bound_string,
    nccl_string,
)

if TYPE_CHECKING:  # pragma: no cover
    from ..walker import Walker

RULE = Rule(
    id="nccl-backend",
    title="NCCL process group",
    severity="error",
    category="distributed",
    why="`nccl` is NVIDIA's collective library; it is not there on TPU or Trainium hosts.",
    fix='TorchTPU: `init_process_group("tpu_dist")`; TorchNeuron: `init_process_group("neuron")`; keep the rest of the DDP/FSDP code.',
    chapter="book/support_matrix",
    see_also=(),
    position=4,
    invalid=(
        "import torch.distributed as dist\ndist.init_process_group(\n    backend='nccl')\n",
        "import torch.distributed as dist\nargs.dist_backend = 'nccl'\ndist.init_process_group(\n    backend=args.dist_backend)\n",
        "BACKENDS = {'cuda': 'nccl',\n            'xpu': 'ccl'}\n",
    ),
    valid=(
        "import torch.distributed as dist\ndist.init_process_group(\n    backend='tpu_dist')\n",
        "BACKENDS = {'tpu': 'tpu_dist',\n            'neuron': 'neuron',\n            'cuda': 'nccl'}\n",
    ),
)


def _nccl_name(w: Walker, node: ast.AST, q: str, called: bool) -> None:
    head = _torch_cuda_head(q)
    if head is not None and head[0] == "nccl":
        w.hit(RULE.id, node, f"{_shown(q, called)}: NCCL bindings{_NCCL_ON_HOST}", detail=q)
    elif q.startswith("torch.distributed.Backend.NCCL"):
        w.hit(RULE.id, node, f"`{q}`{_NCCL_ON_HOST}", detail=q)


@check(RULE.id, ast.Call)
def nccl_call(w: Walker, node: ast.Call) -> None:
    if w.q is not None:
        _nccl_name(w, node, w.q, True)
    for k in node.keywords:
        if k.arg == "backend":
            _nccl_arg(w, k.value, 'backend "nccl"')
    if w.attr in _GROUP_CALLS and node.args:
        _nccl_arg(w, node.args[0], f'`{w.attr}("nccl")`')
    if w.attr == "add_argument":
        d = _argparse_default(node, "backend")
        if d is not None and nccl_string(d):
            w.hit(RULE.id, d, f'argparse default "nccl" for the backend{_NCCL_ON_HOST}', detail="nccl")
    got = _default_of(node) if w.attr in _LOOKUPS else None  # getattr(args, "dist_backend", "nccl")
    if got is not None and "backend" in got[0] and nccl_string(got[1]):
        w.hit(RULE.id, got[1], f'default "nccl" for `{got[0]}`{_NCCL_ON_HOST}', detail="nccl")


_NCCL_ON_HOST = ": on a TPU VM or Trainium host init_process_group raises (NCCL needs CUDA devices)"


def _nccl_arg(w: Walker, a: ast.AST, what: str) -> None:
    if nccl_string(a):
        w.hit(RULE.id, a, what + _NCCL_ON_HOST, detail="nccl")
        return
    lit = bound_string(w, a)
    if lit is not None and nccl_string(lit):
        name = a.id  # type: ignore[attr-defined]
        w.hit(RULE.id, lit, f'"nccl" reaches the process group through `{name}`{_NCCL_ON_HOST}', detail="nccl")


@check(RULE.id, ast.Dict)
def nccl_dict(w: Walker, node: ast.Dict) -> None:
    """``{"backend": "nccl"}``, and a table of backends per device type with no TPU or Trainium entry:
    ``{"cuda": "nccl", "xpu": "ccl"}`` (one with ``"tpu": "tpu_dist"`` or ``"neuron": "neuron"`` is ported)."""
    for k, v in zip(node.keys, node.values):
        key = k.value.lower() if isinstance(k, ast.Constant) and isinstance(k.value, str) else ""
        if ("backend" in key and nccl_string(v)) or (key and _exact_nccl(v) and not _names_ported(node)):
            w.hit(RULE.id, v, f'config "{k.value}": "nccl"{_NCCL_ON_HOST}', detail="nccl")  # type: ignore[union-attr]


#: keys or values of a table of backends that show it already names the TPU or Trainium one
_PORTED_BACKENDS = frozenset({"tpu", "tpu_dist", "xla", "neuron"})


def _names_ported(table: ast.Dict) -> bool:
    return any(isinstance(e, ast.Constant) and e.value in _PORTED_BACKENDS for e in (*table.keys, *table.values))


def _exact_nccl(e: ast.AST | None) -> bool:
    """The string is a backend spec naming NCCL (``"nccl"``, ``"cpu:gloo,cuda:nccl"``), not a sentence."""
    if e is None or e.__class__ is not ast.Constant or not isinstance(e.value, str):
        return False
    return re.fullmatch(r"(?:[a-z]+:[a-z]+,)*(?:cuda:)?nccl(?:,[a-z]+:[a-z]+)*", e.value.lower()) is not None


@check(RULE.id, ast.Attribute)
def nccl_name(w: Walker, node: ast.Attribute) -> None:
    q = w.q
    if q is not None:
        _nccl_name(w, node, q, False)


@check(RULE.id, ast.Assign, ast.AnnAssign)
def nccl_assign(w: Walker, node: Any) -> None:
    """``backend = "nccl"``, and the same on an attribute or a key: ``args.dist_backend = "nccl"``."""
    for t in w.assign_targets(node):
        name = assigned_name(t)
        if "backend" in name.lower() and nccl_string(node.value):
            shown = name if t.__class__ is ast.Name else ast.unparse(t)
            w.hit(RULE.id, node.value, f'`{shown} = "nccl"`{_NCCL_ON_HOST}', detail="nccl")


@check(RULE.id, DEFAULTS)
def nccl_default(w: Walker, args: ast.arguments) -> None:
    for a, d in w.defaults(args):
        low = a.arg.lower()
        if "device" not in low and "backend" in low and nccl_string(d):
            w.hit(RULE.id, d, f'default {a.arg}="nccl"{_NCCL_ON_HOST}', detail="nccl")
