"""``growing-cache``: Tensor that grows in a loop.

A tensor concatenated onto itself in a loop (`tokens = torch.cat([tokens, nxt])`), and a tensor built each
iteration from a Python list the loop appends to (`torch.tensor(ids)` after `ids.append(t)`).
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

from ..registry import check
from ..rule import Rule
from ._common import _CAT

if TYPE_CHECKING:  # pragma: no cover
    from ..walker import Walker

RULE = Rule(
    id="growing-cache",
    title="Tensor that grows in a loop",
    severity="warning",
    category="recompile",
    why="A tensor concatenated onto itself, or built each step from a Python list the loop appends to, changes shape every step: one new program per length on TPU/Trainium, where compiled steps are static.",
    fix="Preallocate to the maximum length and write in place (`index_copy_` at a position held in a device tensor), with a mask over the unused slots.",
    chapter="notebooks/port_inference",
    see_also=("notebooks/recompile_storms",),
    position=14,
    invalid=(
        "import torch\nfor _ in range(n):\n    nxt = model(tokens)\n    tokens = torch.cat(\n        [tokens, nxt], dim=1)\n",
    ),
    valid=(
        "import torch\nbuf = torch.zeros(\n    1, 64, dtype=torch.long,\n    device=device)\npos = torch.zeros(\n    1, dtype=torch.long,\n    device=device)\nfor _ in range(n):\n    nxt = model(buf)\n    buf.index_copy_(1, pos, nxt)\n    pos += 1\n",
    ),
)


@check(RULE.id, ast.Assign, ast.AnnAssign)
def growing_cache(w: Walker, node: Any) -> None:
    value = node.value
    calls = value.elts if value.__class__ is ast.Tuple else [value]
    targets = w.assign_targets(node)
    for c in calls:
        if c.__class__ is not ast.Call or not c.args:
            continue
        q = w.dotted(c.func)
        if q not in _CAT:
            continue
        seq = c.args[0]
        if seq.__class__ not in (ast.List, ast.Tuple):
            continue
        names = set()
        for t in targets:
            for n in t.elts if t.__class__ in (ast.Tuple, ast.List) else [t]:
                if n.__class__ in (ast.Name, ast.Attribute):
                    names.add(ast.unparse(n))
        for e in seq.elts:
            if e.__class__ not in (ast.Name, ast.Attribute):
                continue
            name = ast.unparse(e)
            fresh = w.scope.fresh[-1] if w.scope.fresh else ()
            if name in names and name not in fresh and (w.scope.loops > 0 or name in w.scope.params):
                where = "in a loop" if w.scope.loops > 0 else "from a parameter (called once per step)"
                w.hit(
                    RULE.id,
                    c,
                    f"`{name}` grows by `{q}` {where}: a new shape each step, so TPU/Trainium compile a new program each step",
                    name,
                )
                return


_FROM_LIST = {"tensor", "as_tensor", "LongTensor", "FloatTensor", "IntTensor", "BoolTensor", "Tensor"}


@check(RULE.id, ast.Call, attrs={*_FROM_LIST, *(q.rsplit(".", 1)[-1] for q in _CAT)})
def growing_list_tensor(w: Walker, node: ast.Call) -> None:
    """``torch.as_tensor([output_ids])`` in a loop that also does ``output_ids.append(token)``: a tensor whose
    length follows a Python list that grows every iteration (and ``torch.cat(chunks)`` of such a list)."""
    q = w.q
    if not w.scope.loop_nodes or not node.args or q is None or not q.startswith("torch."):
        return
    a = node.args[0]
    names = [a.id] if a.__class__ is ast.Name else []
    if q[6:] in _FROM_LIST:
        names = _list_names(a)
    for name in names:
        if w.growing_list(name) is not None:
            w.hit(
                RULE.id,
                node,
                f"`{q}` of `{name}`, a Python list that grows in this loop: one element longer each iteration, "
                "so TPU/Trainium compile a new program each step",
                detail=name,
            )
            return


def _list_names(e: ast.AST) -> list[str]:
    """Names whose length decides a tensor's built from ``e``: ``ids``, ``[ids]``, ``[[t] if c else ids]``."""
    c = e.__class__
    if c is ast.Name:
        return [e.id]  # type: ignore[attr-defined]
    if c in (ast.List, ast.Tuple):
        return [n for x in e.elts for n in _list_names(x)]  # type: ignore[attr-defined]
    if c is ast.IfExp:
        return _list_names(e.body) + _list_names(e.orelse)  # type: ignore[attr-defined]
    return []
