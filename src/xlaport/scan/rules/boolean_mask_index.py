"""``boolean-mask-index``: Boolean-mask indexing.

Reading a tensor through a boolean mask (`x[x > 0]`, `x[~torch.isnan(x)]`, a name bound to a mask); a
mask on its own line of a subscript that spans lines is reported on the mask's line. Writing through a mask
(`x[mask] = 0`) keeps the shape and is not reported.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from ..registry import check
from ..rule import Rule
from ._common import _NEW_SHAPE

if TYPE_CHECKING:  # pragma: no cover
    from ..walker import Walker

RULE = Rule(
    id="boolean-mask-index",
    title="Boolean-mask indexing",
    severity="warning",
    category="dynamic-shape",
    why="`x[mask]` returns one element per true entry: its shape depends on the data.",
    fix="Keep the shape: `torch.where(mask, x, 0)` (or `x * mask`), and for a mean divide the sum by `mask.sum()`; writing `x[mask] = v` is fine.",
    chapter="notebooks/recompile_storms",
    see_also=("notebooks/op_fallbacks",),
    position=10,
    invalid=("import torch\nx = torch.randn(8)\ny = x[x > 0]\nm = torch.isnan(x)\nz = x[~m]\n",),
    valid=("import torch\nx = torch.randn(8)\nx[x > 0] = 0\ny = torch.where(x > 0, x, 0)\nz = x[:4]\n",),
)


@check(RULE.id, ast.Subscript)
def boolean_mask_index(w: Walker, node: ast.Subscript) -> None:
    sl = node.slice
    elts = sl.elts if sl.__class__ is ast.Tuple else (sl,)
    for e in elts:
        if e.__class__ is not ast.Slice and w.is_mask(e):
            w.hit(
                RULE.id,
                # on the mask's line when the subscript spans lines (`x[\n    x.ge(t)\n]`)
                e if getattr(e, "lineno", node.lineno) != node.lineno else node,
                f"indexing with a boolean mask has a data-dependent shape{_NEW_SHAPE}",
                tensor_guess=True,
            )
            return
