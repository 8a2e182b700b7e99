"""A machine as the roofline sees it: peak matrix FLOP/s, memory bandwidth, link bandwidth, memory, price.

:func:`chip` builds one from the sourced chip facts (``reference/data/hardware.toml``); a measured
machine (this CPU, see :mod:`xlaport.perf.bench`) is built directly. ``per_op_s`` is a fixed cost per
op call (eager dispatch on a CPU); compiled programs on an accelerator are modelled without it.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import cost
from ..validate import non_negative, positive

__all__ = ["Machine", "chip", "chips"]


@dataclass(frozen=True)
class Machine:
    """The numbers a roofline needs. Bandwidths in bytes/s; ``link_bytes_per_s`` as the vendor states it
    (mostly bidirectional; the collective model uses half of it per direction)."""

    id: str
    name: str
    peak_flop_per_s: float
    hbm_bytes_per_s: float
    hbm_bytes: float = float("inf")
    link_bytes_per_s: float = 0.0
    usd_per_hour: float | None = None
    vector_flop_per_s: float = 0.0  # 0: vector FLOPs are assumed hidden under memory traffic
    per_op_s: float = 0.0

    def __post_init__(self) -> None:
        positive("peak_flop_per_s", self.peak_flop_per_s)
        positive("hbm_bytes_per_s", self.hbm_bytes_per_s)
        non_negative("link_bytes_per_s", self.link_bytes_per_s)
        non_negative("per_op_s", self.per_op_s)
        non_negative("vector_flop_per_s", self.vector_flop_per_s)

    @property
    def ridge(self) -> float:
        """FLOPs per byte at which an op stops being memory-bound."""
        return self.peak_flop_per_s / self.hbm_bytes_per_s


def chip(chip_id: str, *, price_term: str = "on_demand", usd_per_hour: float | None = None) -> Machine:
    """A chip from the data file; its published price for ``price_term`` unless ``usd_per_hour`` is given."""
    c = cost.chip(chip_id)
    price = usd_per_hour
    if price is None and c.has_price(price_term):
        price = c.usd_per_chip_hour(price_term)
    return Machine(
        id=c.id,
        name=c.name,
        peak_flop_per_s=c.peak_bf16_flop_per_s,
        hbm_bytes_per_s=c.hbm_bytes_per_s,
        hbm_bytes=c.hbm_bytes,
        link_bytes_per_s=c.link_bytes_per_s,
        usd_per_hour=price,
    )


def chips() -> list[Machine]:
    """Every chip in the data file."""
    return [chip(c) for c in cost.chip_names()]
