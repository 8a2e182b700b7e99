"""``view-offset-in-loop``: Tensor indexed by the loop variable.

A device tensor read at the loop variable's position (`sigmas[i]`, `W[:, i]`, `x[i:i + k]`) inside a
loop, or inside a function of the same file that the loop passes its variable to (`step(x, sigmas, i)`):
each step is a view at a new storage offset, which the SD3 sampling loop showed recompiling on TorchTPU. A
tensor already copied to the host, or made there, is not reported.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from ..registry import check
from ..rule import Rule

if TYPE_CHECKING:  # pragma: no cover
    from ..walker import Walker

RULE = Rule(
    id="view-offset-in-loop",
    title="Tensor indexed by the loop variable",
    severity="warning",
    category="recompile",
    why="`sigmas[i]` inside a denoise or generation loop is a view at a new storage offset each step, and the index is a Python constant: a new program per step.",
    fix="Index with a device tensor (`index_select`), or `.clone()` the element so the compiled step sees offset 0.",
    chapter="notebooks/sd3_view_offsets",
    see_also=(),
    position=15,
    invalid=(
        "import torch\nsigmas = torch.linspace(\n    1, 0, 28, device=device)\nfor i in range(len(sigmas) - 1):\n    s = sigmas[i]\n    x = step(x, s)\n",
        "def step(x, sigmas, i):\n    return x * sigmas[i]\nfor i in range(n):\n    x = step(x, sigmas, i)\n",
    ),
    valid=(
        "import torch\nsigmas = torch.linspace(\n    1, 0, 28, device=device)\nat = torch.zeros(\n    1, dtype=torch.long,\n    device=device)\nfor _ in range(len(sigmas) - 1):\n    s = sigmas.index_select(0, at)\n    x = step(x, s)\n    at += 1\n",
    ),
)


@check(RULE.id, ast.Subscript)
def view_offset_in_loop(w: Walker, node: ast.Subscript) -> None:
    lv = w.scope.loop_vars
    if lv and w.is_tensor(node.value) and not w.on_host(node.value):  # a host tensor has no compiled views
        for n in ast.walk(node.slice):
            if n.__class__ is ast.Name and any(n.id in vs for vs in lv):
                name = ast.unparse(node.value)
                w.hit(
                    RULE.id,
                    node,
                    f"`{name}[...]` indexed by the loop variable `{n.id}`: a view at a new storage offset each step, "
                    "which TPU/Trainium compile anew",
                    detail=name,
                    tensor_guess=True,
                )
                return
