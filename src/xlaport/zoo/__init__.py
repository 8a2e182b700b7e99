"""A zoo of tiny Hugging Face architectures, and a sweep that runs each one forward, training and on varied lengths.

Modules: :mod:`~xlaport.zoo.registry` (``ModelSpec`` and ``REGISTRY``: configs built locally with random
weights, no downloads; torch-free to import) and :mod:`~xlaport.zoo.sweep` (``sweep``: per model and target,
forward and training-step equivalence with the CPU, the ops a target would raise on or run on the CPU,
compiles per step and useful-token throughput on varied lengths against a fixed shape; a table, pass rates
and JSON). ``xlaport zoo`` runs it from the command line.
"""

from __future__ import annotations

from .registry import FAMILIES, REGISTRY, TASKS, ModelSpec, get, names, parse_overrides
from .sweep import (
    ModelResult,
    RunResult,
    StageResult,
    SweepConfig,
    SweepResult,
    draw_lengths,
    init_optimizer_state,
    run_model,
    sweep,
)

__all__ = [
    "ModelSpec",
    "REGISTRY",
    "FAMILIES",
    "TASKS",
    "get",
    "names",
    "parse_overrides",
    "SweepConfig",
    "SweepResult",
    "ModelResult",
    "StageResult",
    "RunResult",
    "draw_lengths",
    "init_optimizer_state",
    "run_model",
    "sweep",
]
