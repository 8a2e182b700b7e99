"""What makes a training step fit a chip: the ladder of fixes, climbed one rung at a time.

A step that does not fit in a chip's HBM has four usual fixes, each with a price, tried here in the order of that
price (cheapest first) and kept as they are climbed:

1. **gradient accumulation**: the same global batch as ``k`` micro-batches, one after another, in one compiled
   program. Activations shrink with the micro-batch; the update is the same; the FLOPs are the same, in ``k``
   smaller pieces (smaller matrix multiplies run further from the chip's peak).
2. **activation checkpointing**: each layer keeps only its input and recomputes the rest in the backward pass
   (:func:`xlaport.perf.estimate.checkpointed`): activations shrink to one layer's worth plus the layer inputs, for
   one more forward pass of FLOPs.
3. **bf16 optimizer state**: AdamW's two moments in 2 bytes an element instead of 4; no time, some precision
   (the targets' support differs: the chapter says which).
4. **FSDP**: parameters, gradients and optimizer state sharded over ``n`` chips
   (:func:`xlaport.perf.memory.fewest_chips`, rounded up to a count that splits the batch evenly), at the price of
   the all-gathers and reduce-scatters each step.

:func:`climb` returns every rung with what a chip then holds; :func:`first_fit` the first rung that fits. The byte
counts are the estimator's (saved activations from the traced step, state from the optimizer's update rule, in the
traced dtype: a bf16 model's weights and gradients in bf16, AdamW's moments in fp32, no fp32 master copy), not a
compiler's: the chapter *Will it fit?* measures where the two part. ``usable`` (0.9 by default) is an assumption,
not a vendor figure. Torch-free.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from ..validate import fraction
from .machine import Machine
from .memory import bytes_per_chip, fewest_chips
from .trace import StepTrace

__all__ = ["RUNGS", "Rung", "first_fit", "climb", "largest_micro_batch"]

#: The rungs, in the order they are tried.
RUNGS = ("as is", "gradient accumulation", "activation checkpointing", "bf16 optimizer state", "FSDP")


@dataclass(frozen=True)
class Rung:
    """One rung of the ladder on one chip, with every cheaper rung below it applied."""

    fix: str  # one of RUNGS
    chips: int
    micro_batch: int  # samples per micro-batch (the global batch when nothing is accumulated; FSDP splits it)
    bytes_per_chip: float
    hbm_bytes: float
    usable: float
    recompute_share: float  # FLOPs added by recomputation, as a share of the step's FLOPs (0 without checkpointing)

    @property
    def fits(self) -> bool:
        return self.bytes_per_chip <= self.hbm_bytes * self.usable


def _working(trace: StepTrace, micro_batch: int) -> float:
    """Activations a micro-batch of ``micro_batch`` samples keeps (they scale with the samples)."""
    return trace.activation_bytes * micro_batch / max(1, trace.items)


def largest_micro_batch(trace: StepTrace, budget_bytes: float) -> int | None:
    """The largest micro-batch that divides the step's batch and whose activations fit ``budget_bytes`` beside the
    step's state (parameters, gradients, optimizer state); None when not even one sample does."""
    room = budget_bytes - trace.state_bytes
    for u in sorted((d for d in range(1, trace.items + 1) if trace.items % d == 0), reverse=True):
        if _working(trace, u) <= room:
            return u
    return None


def _forward_share(trace: StepTrace) -> float:
    total = trace.flop + trace.vector_flop
    fwd = sum(o.flop + o.vector_flop for o in trace.ops if o.phase == "forward")
    return fwd / total if total else 0.0


def climb(trace: StepTrace, m: Machine, model: Any = None, usable: float = 0.9) -> list[Rung]:
    """Every rung of :data:`RUNGS` for a training ``trace`` on chip ``m``, each with the rungs below it applied.
    ``model`` (with a transformers-style ``config``) lets checkpointing know the layers; without it that rung keeps
    every activation, as the estimator does."""
    from .estimate import checkpointed

    if trace.mode != "training":
        raise ValueError(f"the ladder climbs a training step, got a {trace.mode} trace")
    u = fraction("usable", usable)
    cap = m.hbm_bytes * u
    rungs: list[Rung] = []

    def rung(fix: str, t: StepTrace, share: float) -> None:
        micro = t.items if fix == "as is" else (largest_micro_batch(t, cap) or 1)
        rungs.append(Rung(fix, 1, micro, t.state_bytes + _working(t, micro), m.hbm_bytes, u, share))

    rung("as is", trace, 0.0)
    rung("gradient accumulation", trace, 0.0)
    ckpt = checkpointed(trace, model) if model is not None else trace
    share = _forward_share(trace) if ckpt is not trace else 0.0
    rung("activation checkpointing", ckpt, share)
    bf16 = dataclasses.replace(ckpt, optimizer_state_bytes=ckpt.optimizer_state_bytes / 2)
    rung("bf16 optimizer state", bf16, share)
    fit = fewest_chips(bf16, m, usable=u)
    # a data-parallel batch splits evenly: the fewest chips at or above the fit that divide it (beyond the batch,
    # the fit's own count: the activations cannot split further)
    n = next((c for c in range(fit.chips, bf16.items + 1) if bf16.items % c == 0), fit.chips)
    rungs.append(Rung("FSDP", n, bf16.items, bytes_per_chip(bf16, n), m.hbm_bytes, u, share))
    return rungs


def first_fit(rungs: list[Rung]) -> Rung:
    """The first rung that fits (FSDP, the last, always does: on as many chips as it takes)."""
    if not rungs:
        raise ValueError("first_fit needs the rungs of climb()")
    return next((r for r in rungs if r.fits), rungs[-1])
