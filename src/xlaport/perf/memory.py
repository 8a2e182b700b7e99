"""How many chips a step needs to fit: parameters, gradients, optimizer state and activations, FSDP-sharded.

With FSDP over ``n`` chips each holds ``1/n`` of the parameters, gradients and optimizer state, plus
its share of the activations (the batch splits across chips), plus one gathered layer at a time
(ignored here: small next to the rest for a deep model). ``usable`` is the fraction of HBM a program
can use (the runtime, the compiler's scratch and fragmentation take the rest); 0.9 is an assumption,
not a vendor figure.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..validate import fraction
from .machine import Machine
from .trace import StepTrace

__all__ = ["Fit", "bytes_per_chip", "fewest_chips"]


@dataclass(frozen=True)
class Fit:
    machine: str
    chips: int
    bytes_per_chip: float
    hbm_bytes: float
    usable: float
    limited_by_batch: bool  # more chips than samples: activations cannot split further
    sample_fits: bool = True  # False: one sample's activations exceed a chip (needs tensor/sequence parallelism)

    @property
    def fraction_used(self) -> float:
        return self.bytes_per_chip / self.hbm_bytes


def bytes_per_chip(trace: StepTrace, chips: int) -> float:
    """Bytes each of ``chips`` chips holds under FSDP (activations split by batch, never below one sample)."""
    n = max(1, int(chips))
    act_split = min(n, max(1, trace.items))
    working = trace.activation_bytes if trace.mode == "training" else trace.io_bytes
    return trace.state_bytes / n + working / act_split


def fewest_chips(trace: StepTrace, m: Machine, usable: float = 0.9, limit: int = 1 << 20) -> Fit:
    """The fewest chips of ``m`` whose HBM holds the step under FSDP. When one sample's activations alone
    exceed a chip, ``sample_fits`` is False and ``chips`` assumes activations could be split as well."""
    u = fraction("usable", usable)
    cap = m.hbm_bytes * u
    working = trace.activation_bytes if trace.mode == "training" else trace.io_bytes
    per_sample = working / max(1, trace.items)
    if per_sample >= cap:
        # FSDP alone cannot help: count the chips as if activations split too (tensor/sequence parallelism)
        n = max(1, math.ceil((trace.state_bytes + working) / cap))
        return Fit(m.id, n, (trace.state_bytes + working) / n, m.hbm_bytes, u, True, sample_fits=False)
    n = max(1, math.ceil((trace.state_bytes + working) / cap))
    while bytes_per_chip(trace, n) > cap and n < limit:
        n += 1
    return Fit(
        machine=m.id,
        chips=n,
        bytes_per_chip=bytes_per_chip(trace, n),
        hbm_bytes=m.hbm_bytes,
        usable=u,
        limited_by_batch=n > trace.items,
    )
