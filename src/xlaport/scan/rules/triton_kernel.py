"""``triton-kernel``: Triton kernel.

Functions decorated `@triton.jit`, `@triton.autotune`, `@triton.heuristics` or `torch.library.triton_op`:
each is one kernel to rewrite, counted with its lines.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

from ..registry import check
from ..rule import Rule
from ._common import _TRITON_DECOS

if TYPE_CHECKING:  # pragma: no cover
    from ..walker import Walker

RULE = Rule(
    id="triton-kernel",
    title="Triton kernel",
    severity="error",
    category="kernel",
    why="Triton compiles for NVIDIA and AMD GPUs only; there is no Triton-to-Pallas translator.",
    fix="Rewrite the kernel in Pallas (TorchTPU, `torch.tpu.pallas.jax_op`) or NKI (TorchNeuron, `@nki.jit` with `@nki_op`), or use the plain PyTorch ops it fuses.",
    chapter="notebooks/custom_kernels",
    see_also=("book/generated/kernel_concepts",),
    position=6,
    invalid=(
        "import triton\nimport triton.language as tl\n\n@triton.jit\ndef add(x_ptr, n, B: tl.constexpr):\n    pid = tl.program_id(0)\n",
    ),
    valid=("import torch\n\n@torch.compile\ndef add(x, y):\n    return x + y\n",),
)


@check(RULE.id, ast.FunctionDef, ast.AsyncFunctionDef)
def triton_kernel(w: Walker, node: Any) -> None:
    decos = node.decorator_list
    for d in decos:
        target = d.func if d.__class__ is ast.Call else d
        q = w.dotted(target) or ""
        if q in _TRITON_DECOS or (q.startswith("triton.") and q.endswith((".jit", ".autotune"))):
            first = min(x.lineno for x in decos)
            lines = (getattr(node, "end_lineno", None) or node.lineno) - first + 1
            w.hit(
                RULE.id,
                d,
                f"Triton kernel `{node.name}` ({lines} lines): Triton has no TPU or Trainium backend, so launching it fails there",
                detail=node.name,
                lines=lines,
            )
            return
