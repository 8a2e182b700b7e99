"""The MFU band of a user's entry point on a chip: what the doctor's break-even uses instead of an assumed MFU.

The entry (``FILE.py:CALLABLE`` or ``MODULE:CALLABLE``, with the doctor's ``--input`` shapes) is run once on
CPU under the op counter (:func:`xlaport.perf.trace.trace_call`), and its roofline band on the chip gives
MFU at the slow end (unfused, eager-like) and at the fast end (fused and overlapped). The input shapes are
the ones the step really runs with: a toy shape gives the toy step's (low) MFU.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .machine import chip
from .roofline import band
from .trace import StepTrace, trace_call

__all__ = ["EntryBand", "trace_entry_step", "entry_band"]


@dataclass(frozen=True)
class EntryBand:
    chip: str
    chips: int
    step_s: tuple[float, float]  # (fast end, slow end)
    mfu: tuple[float, float]  # (slow end, fast end)
    flop: float
    bytes_unfused: float

    def as_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def trace_entry_step(entry: str, inputs: Sequence[str] = (), seed: int = 0) -> StepTrace:
    """Load the entry as the doctor does, build its inputs from the shape specs, count one call's ops."""
    import torch

    from ..ops.entry import load_entry, parse_input

    e = load_entry(entry)
    if e.fn is None:
        raise ValueError(f"{entry}: the estimate needs FILE.py:CALLABLE, not a whole script")
    g = torch.Generator().manual_seed(seed)
    args = [parse_input(s, g) for s in inputs] or e.example_inputs()
    try:
        return trace_call(e.fn, args)
    except Exception as ex:  # the user's code: one line
        raise ValueError(
            f"{entry} failed while counting its ops: {str(ex).splitlines()[0] if str(ex) else ex!r}"
        ) from None


def entry_band(trace: StepTrace, chip_id: str, chips: int = 1) -> EntryBand:
    """The band of the traced step on ``chips`` of ``chip_id``, with MFU at both ends."""
    m = chip(chip_id)
    b = band(trace, m, chips)
    if trace.flop <= 0:
        raise ValueError("the entry does no matrix FLOPs (no matmul, conv or attention): MFU is undefined")
    return EntryBand(m.id, b.chips, (b.low_s, b.high_s), b.mfu(m.peak_flop_per_s), trace.flop, trace.bytes_unfused)
