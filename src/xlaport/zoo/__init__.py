"""A zoo of tiny Hugging Face architectures, and a sweep that runs each one forward, training and on varied lengths.

Modules: :mod:`~xlaport.zoo.registry` (``ModelSpec`` and ``REGISTRY``: configs built locally with random
weights, no downloads; torch-free to import), :mod:`~xlaport.zoo.config` (``SweepConfig``, checked when it is
made, and the lengths it draws), :mod:`~xlaport.zoo.results` (what a sweep measured: records, a table, pass
rates and JSON) and :mod:`~xlaport.zoo.sweep` (the runner: per model and target, forward and training-step
equivalence with the CPU, the ops a target would raise on or run on the CPU, compiles per step and
useful-token throughput on varied lengths against a fixed shape). ``xlaport zoo`` runs it from the command line.
"""

from __future__ import annotations

from .config import SweepConfig, draw_lengths
from .registry import FAMILIES, REGISTRY, TASKS, ModelSpec, get, names, parse_overrides
from .results import ModelResult, RunResult, StageResult, SweepResult
from .sweep import init_optimizer_state, run_model, sweep

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
