"""``cuda-source``: CUDA source file.

Each `.cu`/`.cuh` file, once, at its first line, with its lines and its `__global__` kernels counted.
"""

from __future__ import annotations

import re

from ..registry import Hit, file_check
from ..rule import Rule

RULE = Rule(
    id="cuda-source",
    title="CUDA source file",
    severity="error",
    category="kernel",
    why="`.cu`/`.cuh` files are CUDA C++ kernels; each `__global__` function needs a rewrite.",
    fix="Rewrite the kernels in Pallas or NKI, or replace them with PyTorch ops.",
    chapter="notebooks/custom_kernels",
    see_also=("book/generated/kernel_concepts",),
    position=8,
    invalid=("#include <cuda.h>\n__global__ void add(float* x) {\n  x[threadIdx.x] += 1.0f;\n}\n",),
    example_path="kernel.cu",
)


_GLOBAL = re.compile(r"__global__")


@file_check(RULE.id, "cu")
def cuda_source_file(text: str, kind: str) -> list[Hit]:
    """One finding per file, at its first line, with its lines and ``__global__`` kernels counted."""
    n = text.count("\n") + (0 if text.endswith("\n") else 1)
    k = len(_GLOBAL.findall(text))
    msg = (
        f"CUDA source: {n} lines, {k} `__global__` kernel{'s' if k != 1 else ''}; nothing on a TPU VM or "
        "Trainium host compiles or runs it"
    )
    return [Hit(RULE.id, 1, 0, msg, str(k), n)]
