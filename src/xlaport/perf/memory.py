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
from .published import PublishedRun
from .trace import StepTrace

__all__ = ["Fit", "PublishedFit", "bytes_per_chip", "fewest_chips", "published_fit", "tokens_per_chip"]


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


def bytes_per_chip(trace: StepTrace, chips: int, tensor: int = 1) -> float:
    """Bytes each of ``chips`` chips holds under FSDP (activations split by batch, never below one sample, and
    ``tensor`` ways more with tensor/sequence parallelism)."""
    n = max(1, int(chips))
    act_split = min(n, max(1, trace.items) * max(1, int(tensor)))
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


# ---------------------------------------------------------------------------------------------------------------
# A published training run's memory under its own parallelism and activation checkpointing.

# mixed precision: bf16 parameters (2) and fp32 gradients (4) per model replica; fp32 master weights (4) and Adam's
# two fp32 moments (8) sharded over every chip (a distributed optimizer; FSDP shards all of it)
REPLICA_BYTES_PER_PARAM = 6
OPTIMIZER_BYTES_PER_PARAM = 12


@dataclass(frozen=True)
class PublishedFit:
    """What one chip of a published training run holds, and whether it fits."""

    run_id: str
    state_bytes: float  # parameters, gradients and optimizer state on one chip
    activation_bytes: float  # activations kept on the chip
    hbm_bytes: float
    usable: float
    policy: str  # how the activations were counted

    @property
    def bytes_per_chip(self) -> float:
        return self.state_bytes + self.activation_bytes

    @property
    def fits(self) -> bool:
        return self.bytes_per_chip <= self.hbm_bytes * self.usable


def tokens_per_chip(run: PublishedRun) -> float | None:
    """Tokens one chip of a training run holds activations for at once: a micro-batch's sequences split by context
    (``sequence``) and tensor parallelism where the run gives its micro-batch, else the step's tokens over its chips."""
    e, ms = run.extra, run.measured
    if not run.chips:
        return None
    if e.get("micro_batch") and run.seq_len:
        par = run.parallelism
        split = int(par.get("sequence", 1) or 1) * int(par.get("tensor", 1) or 1)
        return float(e["micro_batch"]) * run.seq_len / split
    total = (e.get("global_batch") or 0) * (run.seq_len or 0) or ms.get("global_tokens_per_step")
    if not total and ms.get("step_time_s") and ms.get("tokens_per_s_per_chip"):
        total = ms["step_time_s"] * ms["tokens_per_s_per_chip"] * run.chips
    return float(total) / run.chips if total else None


def published_fit(run: PublishedRun, usable: float = 0.9) -> PublishedFit | None:
    """The run's memory per chip, or None where its source does not give the sizes (parameters, layers, hidden size
    and tokens per step).

    State: :data:`REPLICA_BYTES_PER_PARAM` per parameter sharded over the run's FSDP, tensor, pipeline and expert
    degrees (or its chips over its ``data`` degree where it gives none of them), :data:`OPTIMIZER_BYTES_PER_PARAM`
    over every chip. Activations: each layer's bf16 input for the chip's tokens (full
    recompute of the rest; tensor and sequence parallelism split them with the tokens), plus one layer's own
    activations while it is recomputed (about 16 bytes per token per hidden unit, Korthikanti et al. 2022, without
    dropout). Where the run's policy offloads the layer inputs to the host, or is MaxText's custom remat (which can)
    or unstated and they cannot stay on the chip, they are counted on the host; :attr:`PublishedFit.policy` says
    which."""
    from .. import cost

    u = fraction("usable", usable)
    e = run.extra
    p, layers, hidden = e.get("params_b"), e.get("layers"), e.get("hidden")
    tok = tokens_per_chip(run)
    if run.kind != "training" or not (p and layers and hidden and tok and run.chips):
        return None
    par = run.parallelism
    shard = 1
    for k in ("fsdp", "tensor", "pipeline", "expert"):
        shard *= int(par.get(k, 1) or 1)
    if not any(k in par for k in ("fsdp", "tensor", "pipeline", "expert")):
        shard = run.chips // int(par.get("data", 1) or 1)
    shard = max(1, min(shard, run.chips))  # MaxText counts JAX devices: two per TPU7x chip
    params = float(p) * 1e9
    state = REPLICA_BYTES_PER_PARAM * params / shard + OPTIMIZER_BYTES_PER_PARAM * params / run.chips
    inputs = 2.0 * layers * hidden * tok
    one_layer = 16.0 * hidden * tok
    hbm = cost.chip(run.chip).hbm_bytes
    policy = run.activation_checkpointing.lower()
    offload = "offload" in policy
    lightest = run.stack == "MaxText" and ("custom" in policy or "unknown" in policy)
    if not offload and lightest and state + inputs + one_layer > hbm * u:
        offload = True  # MaxText's custom remat can send the layer inputs to the host; a run that ran must have
    if offload:
        return PublishedFit(run.id, state, one_layer, hbm, u, "layer inputs offloaded to the host")
    return PublishedFit(run.id, state, inputs + one_layer, hbm, u, "layer inputs kept, the rest recomputed")
