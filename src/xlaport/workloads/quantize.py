"""What a quantized model holds and what XLA compiles from it.

>>> stored_bytes(model)                  # bytes of every parameter as stored: int8 data and scales of a subclass
>>> kinds = program_types(hlo_text)      # torch_xla._XLAC._get_xla_tensors_hlo([out]) of one forward
>>> kinds.parameters, kinds.dots         # {"s8": bytes, "bf16": bytes, ...}, {("bf16", "bf16"): 9, ...}

torchao's quantized weights are tensor subclasses (``Int8Tensor``, ``Float8Tensor``) whose ``element_size()`` is the
dtype they stand in for; :func:`stored_bytes` counts the tensors they are made of instead
(``__tensor_flatten__``), which is what a device holds.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

__all__ = ["stored_bytes", "program_types", "ProgramTypes", "ELEMENT_BYTES"]

#: Bytes per element of the HLO element types a program of this book meets.
ELEMENT_BYTES = {
    "pred": 1,
    "s8": 1,
    "u8": 1,
    "f8e4m3fn": 1,
    "f8e5m2": 1,
    "s16": 2,
    "bf16": 2,
    "f16": 2,
    "s32": 4,
    "u32": 4,
    "f32": 4,
    "s64": 8,
    "f64": 8,
}


def _tensor_bytes(t: Any) -> int:
    flatten = getattr(type(t), "__tensor_flatten__", None)
    if flatten is not None:
        names, _ = t.__tensor_flatten__()
        return sum(_tensor_bytes(getattr(t, n)) for n in names)
    return int(t.numel() * t.element_size())


def stored_bytes(model: Any) -> int:
    """Bytes of ``model``'s parameters and buffers as stored (a quantized weight's data and scales), shared ones once."""
    if not hasattr(model, "parameters"):
        raise ValueError(f"expected a torch module, got {type(model).__name__}")
    seen: set[int] = set()
    total = 0
    for t in [*model.parameters(), *model.buffers()]:
        if id(t) not in seen:
            seen.add(id(t))
            total += _tensor_bytes(t)
    return total


@dataclass(frozen=True)
class ProgramTypes:
    """A program's inputs by element type (bytes) and its matrix products by (result, left operand) type."""

    parameters: dict[str, int] = field(default_factory=dict)
    parameter_counts: dict[str, int] = field(default_factory=dict)
    dots: dict[tuple[str, str], int] = field(default_factory=dict)


_SHAPE = r"(\w+)\[([\d,]*)\]"
_PARAM = re.compile(rf"= {_SHAPE}(?:\{{[^}}]*\}})? parameter\(")
_DOT = re.compile(rf"= {_SHAPE}(?:\{{[^}}]*\}})? dot\({_SHAPE}")


def program_types(hlo: str) -> ProgramTypes:
    """Read HLO text (as ``torch_xla._XLAC._get_xla_tensors_hlo`` gives it): the bytes of its entry computation's
    parameters per element type, and all its ``dot`` instructions by result and left-operand type. An element type not in
    :data:`ELEMENT_BYTES` raises, rather than counting as zero."""
    if not isinstance(hlo, str) or "ENTRY" not in hlo:
        raise ValueError("program_types() takes HLO module text with an ENTRY computation")
    entry = hlo[hlo.index("ENTRY") :]  # the program's own inputs, not those of its reduction lambdas
    sizes: Counter[str] = Counter()
    counts: Counter[str] = Counter()
    for kind, dims in _PARAM.findall(entry):
        if kind not in ELEMENT_BYTES:
            raise ValueError(f"HLO element type {kind!r} has no known size; add it to ELEMENT_BYTES")
        n = 1
        for d in filter(None, dims.split(",")):
            n *= int(d)
        sizes[kind] += n * ELEMENT_BYTES[kind]
        counts[kind] += 1
    dots = Counter((out, lhs) for out, _, lhs, _ in _DOT.findall(hlo))
    return ProgramTypes(dict(sizes), dict(counts), dict(dots))
