"""``cuda-extension``: CUDA C++ extension.

CUDA C++ compiled from Python: `torch.utils.cpp_extension.load_inline` with CUDA sources, `load` of `.cu`
files, `CUDAExtension` in a `setup.py` (also when a conditional picks it: `Extension = CppExtension if cpu
else CUDAExtension`), CuPy's `RawKernel`/`RawModule`/`ElementwiseKernel`/`ReductionKernel` and PyCUDA's
`SourceModule`.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from ..registry import check
from ..rule import Rule
from ._common import _EXTENSIONS, _string_lines, _strings

if TYPE_CHECKING:  # pragma: no cover
    from ..walker import Walker

RULE = Rule(
    id="cuda-extension",
    title="CUDA C++ extension",
    severity="error",
    category="kernel",
    why="`load_inline`, `CUDAExtension`, CuPy and PyCUDA kernels compile CUDA C++, which TPU and Trainium do not run.",
    fix="Rewrite the kernel in Pallas or NKI, or express it with PyTorch ops the compiler fuses.",
    chapter="notebooks/custom_kernels",
    see_also=("book/generated/kernel_concepts",),
    position=7,
    invalid=(
        "from torch.utils.cpp_extension \\\n    import load_inline\nm = load_inline(\n    'k',\n    cpp_sources='',\n    cuda_sources=KERNEL,\n)\n",
    ),
    valid=(
        "from torch.utils.cpp_extension \\\n    import load_inline\nm = load_inline(\n    'k',\n    cpp_sources=CPP,\n)\n",
    ),
)


@check(RULE.id, ast.Call, attrs={*(q.rsplit(".", 1)[-1] for q in _EXTENSIONS), "load"})
def cuda_extension(w: Walker, node: ast.Call) -> None:
    q = w.q
    if q is None:
        return
    if q in _EXTENSIONS:
        if q != "torch.utils.cpp_extension.load_inline" or any(
            k.arg in ("cuda_sources", "with_cuda") for k in node.keywords
        ):
            _extension(w, node, _EXTENSIONS[q])
    elif q == "torch.utils.cpp_extension.load" and any(s.endswith((".cu", ".cuh")) for s in _strings(node)):
        _extension(w, node, "cpp_extension.load")


@check(RULE.id, ast.Assign)
def cuda_extension_chosen(w: Walker, node: ast.Assign) -> None:
    """``Extension = CppExtension if cpu else CUDAExtension``: the class is chosen here and called later."""
    v = node.value
    for e in (v.body, v.orelse) if isinstance(v, ast.IfExp) else (v,):
        if e.__class__ in (ast.Name, ast.Attribute) and w.dotted(e) == "torch.utils.cpp_extension.CUDAExtension":
            w.hit(
                RULE.id,
                e,
                "`CUDAExtension` builds CUDA kernels: without nvcc on a TPU VM or Trainium host the build fails or leaves them out",
                detail="CUDAExtension",
            )


def _extension(w: Walker, node: ast.Call, what: str) -> None:
    lines = 0
    for k in node.keywords:
        if k.arg in ("cuda_sources", "cuda_source") or (k.arg == "code" and what.startswith(("cupy", "pycuda"))):
            lines += _string_lines(k.value)
    if what.startswith(("cupy", "pycuda")) and node.args:
        lines += _string_lines(node.args[0])
    n = f" ({lines} lines of CUDA C++)" if lines else ""
    w.hit(
        RULE.id,
        node,
        f"`{what}` compiles a CUDA kernel{n}: there is no nvcc or CUDA device to build or run it on a TPU VM or Trainium host",
        detail=what,
        lines=lines,
    )
