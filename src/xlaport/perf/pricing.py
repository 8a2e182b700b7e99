"""Cost per step, per image and per million tokens, with the time band carried through.

Every figure is a ``(low, high)`` pair: the fast end of the band gives the low cost.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..validate import positive
from .roofline import Band

__all__ = ["StepCost", "step_cost"]


@dataclass(frozen=True)
class StepCost:
    machine: str
    chips: int
    usd_per_chip_hour: float
    usd_per_step: tuple[float, float]
    usd_per_item: tuple[float, float] | None
    usd_per_million_tokens: tuple[float, float] | None
    tokens_per_s_per_chip: tuple[float, float] | None

    def as_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def step_cost(
    b: Band, usd_per_chip_hour: float, *, items: int = 0, tokens: int = 0, steps_per_item: float = 1.0
) -> StepCost:
    """Cost of one step of band ``b``; per item when ``items`` (samples per step; an image that takes
    ``steps_per_item`` steps, e.g. 28 denoising steps, costs that many steps), per million tokens when ``tokens``."""
    p = positive("usd_per_chip_hour", usd_per_chip_hour)
    lo, hi = (b.chips * p / 3600.0 * t for t in (b.low_s, b.high_s))
    per_item = (lo * steps_per_item / items, hi * steps_per_item / items) if items else None
    per_mtok = (lo / tokens * 1e6, hi / tokens * 1e6) if tokens else None
    tps = (tokens / b.chips / b.high_s, tokens / b.chips / b.low_s) if tokens else None
    return StepCost(b.machine, b.chips, p, (lo, hi), per_item, per_mtok, tps)
