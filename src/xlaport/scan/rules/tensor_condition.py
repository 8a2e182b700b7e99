"""``tensor-condition``: Python branch on a tensor.

`if`, `while`, `assert` and conditional expressions whose test is a tensor or a comparison of one
(`if loss > best:`, `if torch.isnan(x).any():`), including through a helper in the same file called with
tensors.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

from ..registry import check
from ..rule import Rule
from ._common import _CONDITION_TORCH

if TYPE_CHECKING:  # pragma: no cover
    from ..walker import Walker

RULE = Rule(
    id="tensor-condition",
    title="Python branch on a tensor",
    severity="warning",
    category="host-sync",
    why="`if tensor:` (or a comparison of a tensor) needs the value on the host: a sync, and under `torch.compile` a graph break.",
    fix="Compute both sides and select with `torch.where`, or move the check out of the step.",
    chapter="notebooks/01_first_steps",
    see_also=("notebooks/recompile_storms",),
    position=13,
    invalid=(
        "import torch\ndef f(x: torch.Tensor):\n    if x.sum() > 0:\n        return x\n    if torch.isnan(x).any():\n        return -x\n",
    ),
    valid=(
        "import torch\ndef f(x: torch.Tensor):\n    if x.shape[0] > 0:\n        pos = x.sum() > 0\n        return torch.where(\n            pos, x, -x)\n",
    ),
)


@check(RULE.id, ast.If, ast.IfExp, ast.While, ast.Assert)
def tensor_condition(w: Walker, node: Any) -> None:
    if _tensor_truth(w, node.test):
        w.hit(
            RULE.id,
            node,
            "a Python branch on a tensor's value waits for the device there, and breaks the compiled graph",
            tensor_guess=True,
        )


def _tensor_truth(w: Walker, e: ast.AST) -> bool:
    c = e.__class__
    if c is ast.BoolOp:
        return any(_tensor_truth(w, v) for v in e.values)  # type: ignore[attr-defined]
    if c is ast.UnaryOp and isinstance(e.op, ast.Not):  # type: ignore[attr-defined]
        return _tensor_truth(w, e.operand)  # type: ignore[attr-defined]
    if c is ast.IfExp:
        return _tensor_truth(w, e.body) or _tensor_truth(w, e.orelse)  # type: ignore[attr-defined]
    if c is ast.Name:
        return w.lookup_tensor(e.id)  # type: ignore[attr-defined]
    if c is ast.Compare:
        return w._tensor_compare(e)  # type: ignore[arg-type]
    if c is ast.Call:
        f = e.func  # type: ignore[attr-defined]
        q = w.dotted(f)
        if q is not None and q.startswith("torch.") and q[6:] in _CONDITION_TORCH:
            return True
        if f.__class__ is ast.Attribute and f.attr in ("any", "all", "equal", "allclose"):
            return w.is_tensor(f.value) or w.is_mask(f.value) or f.value.__class__ is ast.Compare
    return False
