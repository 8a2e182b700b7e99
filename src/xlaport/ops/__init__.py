"""Which ATen ops your code dispatches, and what each target does with every one of them.

>>> from xlaport import ops
>>> trace = ops.aten_ops(model, x)             # the ATen ops it really dispatches, counted, with call sites
>>> print(ops.coverage(trace, "tpu").table())  # supported / decomposed / falls back / raises, per op

Modules: :mod:`~xlaport.ops.trace` (record the ops), :mod:`~xlaport.ops.support` (per-target
kernel tables with provenance), :mod:`~xlaport.ops.route` (:func:`decide`: what a target does with one op
and its inputs, following the dispatcher's route; the one answer the report, the emulator and the zoo sweep
use), :mod:`~xlaport.ops.coverage` (the verdict per traced op), :mod:`~xlaport.ops.fallback` (TorchTPU's CPU-fallback switch and its
missing-op behaviour on the emulator), :mod:`~xlaport.ops.entry` (load ``FILE.py:CALLABLE`` specs
and build example inputs, for the CLI and the doctor).
"""

from __future__ import annotations

from .coverage import STATUSES, Coverage, OpSupport, coverage
from .fallback import (
    TpuFallbackWarning,
    cpu_fallback,
    emulate_missing_ops,
    emulated_ops,
    emulation_plan,
    execution_mode,
    fallback_counts,
)
from .route import Decision, decide
from .support import COVERAGE_TARGETS, XLA_KERNELS_THAT_FALL_BACK, SupportTable, support_table, tables_here
from .trace import OpCall, OpTrace, aten_ops

__all__ = [
    "OpCall",
    "OpTrace",
    "aten_ops",
    "SupportTable",
    "support_table",
    "tables_here",
    "OpSupport",
    "Coverage",
    "coverage",
    "execution_mode",
    "cpu_fallback",
    "fallback_counts",
    "emulate_missing_ops",
    "emulated_ops",
    "emulation_plan",
    "Decision",
    "decide",
    "TpuFallbackWarning",
    "COVERAGE_TARGETS",
    "STATUSES",
    "XLA_KERNELS_THAT_FALL_BACK",
]
