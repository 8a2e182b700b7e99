"""What the zoo sweep runs: :class:`SweepConfig`, checked when it is made, and the lengths it draws.

>>> from xlaport.zoo import SweepConfig
>>> SweepConfig(models=("llama",), fixed_len=500)
Traceback (most recent call last):
ValueError: fixed_len must be at most 120 (the zoo configs hold 128 positions), got 500

Torch-free to import.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..validate import integer, number, positive
from . import registry

__all__ = ["SweepConfig", "draw_lengths", "SWEEP_TARGETS"]

SWEEP_TARGETS: tuple[str, ...] = ("tpu", "neuron", "cuda", "cpu")


@dataclass(frozen=True)
class SweepConfig:
    """What the sweep runs. Lengths are in tokens (patches for image models)."""

    models: tuple[str, ...] = ()  # () = the whole registry
    targets: tuple[str, ...] = ("tpu",)
    seed: int = 0
    batch: int = 2
    fixed_len: int = 48  # the fixed shape, and the longest an item can be
    min_len: int = 8
    median_len: float = 20
    sigma: float = 0.6
    steps: int = 4  # varied-length training steps
    precision: str | None = None  # None: each target's own default
    cliff_ratio: float = 0.5
    lr: float = 1e-3
    layers: int | None = None  # None: the registry's (2)
    retie: bool = False  # call model.tie_weights() after .to(device), as HF's Trainer does on XLA
    overrides: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        """Check every field (one-line ValueError) and fill in ``models``: a config that exists is a valid one."""
        models = tuple(self.models) or registry.names()
        for m in models:
            registry.get(m)
        if len(set(models)) != len(models):
            raise ValueError(f"a model is listed twice: {list(models)}")
        targets = tuple(self.targets)
        if not targets:
            raise ValueError("give at least one target")
        for t in targets:
            if t not in SWEEP_TARGETS:
                raise ValueError(f"unknown target {t!r}; the sweep runs on: {', '.join(SWEEP_TARGETS)}")
        seed = integer("seed", self.seed, minimum=0)
        batch = integer("batch", self.batch, minimum=1)
        fixed = integer("fixed_len", self.fixed_len, minimum=4)
        lo = integer("min_len", self.min_len, minimum=2)
        if lo > fixed:
            raise ValueError(f"min_len ({lo}) must not exceed fixed_len ({fixed})")
        if fixed > 120:
            raise ValueError(f"fixed_len must be at most 120 (the zoo configs hold 128 positions), got {fixed}")
        median = number("median_len", self.median_len)
        if not lo <= median <= fixed:
            raise ValueError(f"median_len must lie between min_len ({lo}) and fixed_len ({fixed}), got {median}")
        sigma = positive("sigma", self.sigma)
        steps = integer("steps", self.steps, minimum=1)
        ratio = positive("cliff_ratio", self.cliff_ratio)
        if ratio > 1:
            raise ValueError(f"cliff_ratio must be in (0, 1], got {ratio}")
        lr = positive("lr", self.lr)
        layers = None if self.layers is None else integer("layers", self.layers, minimum=1)
        if layers is not None and layers > 12:
            raise ValueError(f"layers must be at most 12, got {layers}")
        if self.precision is not None:
            from ..numerics.precision import MODES

            if self.precision not in MODES:
                raise ValueError(f"unknown matmul precision {self.precision!r}; choose one of: {', '.join(MODES)}")
        for name, value in (
            ("models", models),
            ("targets", targets),
            ("seed", seed),
            ("batch", batch),
            ("fixed_len", fixed),
            ("min_len", lo),
            ("median_len", median),
            ("sigma", sigma),
            ("steps", steps),
            ("cliff_ratio", ratio),
            ("lr", lr),
            ("layers", layers),
            ("retie", bool(self.retie)),
            ("overrides", dict(self.overrides)),
        ):
            object.__setattr__(self, name, value)

    def validated(self) -> SweepConfig:
        """The config itself: it was checked when it was made (kept for callers that ask)."""
        return self


def draw_lengths(config: SweepConfig) -> list[list[int]]:
    """``steps`` batches of ``batch`` lengths, log-normal around ``median_len``, clipped to [min_len, fixed_len]."""
    rng = random.Random(config.seed)
    out = []
    for _ in range(config.steps):
        out.append(
            [
                min(
                    config.fixed_len,
                    max(config.min_len, round(rng.lognormvariate(math.log(config.median_len), config.sigma))),
                )
                for _ in range(config.batch)
            ]
        )
    return out
