"""``dynamic-shape-op``: Data-dependent output shape.

Ops whose output size depends on the data: `nonzero`, `unique`, `unique_consecutive`, `masked_select`,
`argwhere` and one-argument `where`, as functions or methods.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from ..registry import check
from ..rule import Rule
from ._common import _DYNAMIC_OPS, _NEW_SHAPE

if TYPE_CHECKING:  # pragma: no cover
    from ..walker import Walker

RULE = Rule(
    id="dynamic-shape-op",
    title="Data-dependent output shape",
    severity="warning",
    category="dynamic-shape",
    why="`nonzero`, `unique`, `masked_select`, `argwhere` and one-argument `where` return as many elements as the data hold: a host sync, and a new program for each new count (or a CPU fallback).",
    fix="Keep the shape static: a mask and `torch.where`/`masked_fill`, a masked mean, or pad to a fixed size (`nonzero_static`, or a padded `unique` as the op-fallbacks chapter builds).",
    chapter="notebooks/op_fallbacks",
    see_also=("notebooks/recompile_storms",),
    position=9,
    invalid=("import torch\nidx = torch.nonzero(mask)\nu = x.unique()\nv = torch.masked_select(x, m)\n",),
    valid=("import torch\nidx = torch.nonzero_static(mask, size=8)\ny = torch.where(mask, x, 0)\n",),
)


@check(RULE.id, ast.Call, attrs={*_DYNAMIC_OPS, "where"})
def dynamic_shape_op(w: Walker, node: ast.Call) -> None:
    attr, q = w.attr, w.q or ""
    fcls = node.func.__class__
    if attr in _DYNAMIC_OPS and fcls in (ast.Attribute, ast.Name):
        if not q.startswith(("numpy.", "np.", "pandas.", "pd.")) and not any(k.arg == "size" for k in node.keywords):
            w.hit(RULE.id, node, f"`{attr}` has a data-dependent output shape{_NEW_SHAPE}", detail=attr)
    elif attr == "where" and q.startswith("torch.") and len(node.args) == 1 and not node.keywords:
        w.hit(RULE.id, node, f"one-argument `torch.where` is `nonzero`{_NEW_SHAPE}", detail="where")
