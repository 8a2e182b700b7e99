"""``cuda-streams``: CUDA streams, events or graphs.

CUDA streams, events and graphs: `torch.cuda.Stream`, `stream(...)`, `current_stream`, `Event`, `CUDAGraph`,
`graph`, `make_graphed_callables`, also through a name bound to `torch.cuda`, and the stream bookkeeping
methods (`wait_stream`, `record_stream`) on them.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from ..registry import check
from ..rule import Rule
from ._common import _AUTOCAST, _STREAM_NAMES, _shown, _torch_cuda_head

if TYPE_CHECKING:  # pragma: no cover
    from ..walker import Walker

RULE = Rule(
    id="cuda-streams",
    title="CUDA streams, events or graphs",
    severity="warning",
    category="streams",
    why="Streams, events and CUDA graphs schedule work on a GPU; TorchTPU's are placeholders and XLA already compiles the whole step into one program.",
    fix="Drop the side stream and the graph capture; time with `t.sync()` around the step, and let the compiled step overlap its own copies.",
    chapter="notebooks/port_training",
    see_also=("book/generated/api_mapping",),
    position=3,
    invalid=(
        "import torch\ns = torch.cuda.Stream()\nwith torch.cuda.stream(s):\n    y = x * 2\ng = torch.cuda.CUDAGraph()\n",
    ),
    valid=("import xlaport\nt = xlaport.target('auto')\ny = x * 2\nt.sync()\n",),
)


def _cuda_streams(w: Walker, node: ast.AST, q: str, called: bool) -> None:
    head = _torch_cuda_head(q)
    if head is not None and head[0] in _STREAM_NAMES and q not in _AUTOCAST:
        if not called:
            what = "names a CUDA stream/event/graph, which does not exist there"
        elif head[0] == "Event":  # torch 2.9 without CUDA: the event is created, its record() raises
            what = "creates an event whose `record()` raises there (no CUDA device)"
        else:
            what = "raises there (no CUDA device)"
        w.hit(RULE.id, node, f"{_shown(q, called)} {what}", detail=q)


@check(RULE.id, ast.Call)
def cuda_streams_call(w: Walker, node: ast.Call) -> None:
    if w.q is not None:
        _cuda_streams(w, node, w.q, True)
    if w.attr in ("record_stream", "wait_stream") and node.func.__class__ is ast.Attribute:
        w.hit(
            RULE.id,
            node,
            f"`.{w.attr}()` is CUDA stream bookkeeping; there are no CUDA streams there",
            detail=w.attr,
        )


@check(RULE.id, ast.Attribute)
def cuda_streams_name(w: Walker, node: ast.Attribute) -> None:
    q = w.q
    if q is not None:
        _cuda_streams(w, node, q, False)
