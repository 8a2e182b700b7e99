"""Recompiles: see them per step, find their cause, and stop them.

Modules: :mod:`~xlaport.recompile.monitor` (``RecompileMonitor``: per-step compiles, compile time
and the reason for each recompile; summary, table, plot, storm verdict),
:mod:`~xlaport.recompile.guards` (TorchTPU's storage-offset guard for any Dynamo backend),
:mod:`~xlaport.recompile.buckets` (pad variable lengths to a few buckets, with attention masks),
:mod:`~xlaport.recompile.persistent_cache` (check whether a compilation cache on disk saves a new
process its compiles).
"""

from __future__ import annotations

from .monitor import (
    CompileEvent,
    RecompileMonitor,
    StepCosts,
    StepRecord,
    Summary,
    Verdict,
    describe_key_change,
    parse_reason,
    shape_key,
    step_costs,
)

__all__ = [
    "RecompileMonitor",
    "StepRecord",
    "Summary",
    "Verdict",
    "StepCosts",
    "step_costs",
    "CompileEvent",
    "shape_key",
    "parse_reason",
    "describe_key_change",
]
