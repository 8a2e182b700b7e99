"""The roofline of one traced step on one machine: each op's time, the step's band, the regime per op class.

An op takes ``max(FLOPs / peak, bytes / bandwidth)``: compute-bound when its intensity (FLOPs per
byte) is above the machine's ridge, memory-bound below it. The step's **band**:

* **low** (fast end): perfect fusion and overlap, ``max(matrix FLOPs / peak, fused bytes / bandwidth)``;
* **high** (slow end): no fusion, every op a round trip through memory, op times summed
  (plus ``per_op_s`` per call where the machine has one, i.e. eager dispatch on a CPU).

A compiler lands between the two; eager mode sits at the high end. On several chips the work splits
evenly (data parallel / FSDP) and the collectives (all-gather of parameters forward and backward,
reduce-scatter of gradients) take ``bytes / (link / 2)``; the low end assumes they overlap compute,
the high end adds them. With data parallelism alone the batch splits no finer than one sample per chip; chips
beyond that hold state but add no compute (MFU counts them all). With ``tensor`` > 1 (tensor and sequence
parallelism, as Megatron and torchtitan lay them out) each sample's work splits ``tensor`` ways as well, and each
layer adds two all-reduces of its activations forward and two backward, ``(tokens on the group) x hidden``
elements each, a ring moving ``2 (t-1)/t`` of them over the chip-to-chip link (counted where the trace knows the
model's layers and hidden size).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..validate import integer
from .machine import Machine
from .trace import OpCount, StepTrace

__all__ = [
    "OpTime",
    "Band",
    "op_time",
    "op_times",
    "band",
    "regimes",
    "collective_bytes",
    "ring_allreduce_bytes",
    "tensor_parallel_bytes",
]


@dataclass(frozen=True)
class OpTime:
    op: OpCount
    compute_s: float
    memory_s: float
    overhead_s: float

    @property
    def seconds(self) -> float:
        return max(self.compute_s, self.memory_s) + self.overhead_s

    @property
    def bound(self) -> str:
        return "compute" if self.compute_s >= self.memory_s else "memory"


@dataclass(frozen=True)
class Band:
    """Step time on ``chips`` machines: ``low_s`` (fused, overlapped) to ``high_s`` (unfused, summed)."""

    machine: str
    chips: int
    low_s: float
    high_s: float
    flop: float  # matrix FLOPs of the whole step (all chips)
    compute_s: float  # matrix FLOPs / peak, per chip
    fused_memory_s: float
    unfused_s: float
    collective_s: float
    low_bound: str  # what sets the fast end: compute / memory

    def mfu(self, peak_flop_per_s: float) -> tuple[float, float]:
        """(MFU at the slow end, MFU at the fast end), over all ``chips``."""
        per = self.flop / self.chips / peak_flop_per_s
        return per / self.high_s, per / self.low_s

    def as_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def op_time(op: OpCount, m: Machine, share: float = 1.0) -> OpTime:
    """Time of one op (all its calls) on ``m`` doing ``share`` of the work."""
    compute = op.flop * share / m.peak_flop_per_s
    if m.vector_flop_per_s:
        compute += op.vector_flop * share / m.vector_flop_per_s
    return OpTime(op, compute, op.bytes * share / m.hbm_bytes_per_s, op.calls * m.per_op_s)


def _split(trace: StepTrace, chips: int, tensor: int = 1) -> int:
    """Ways the work splits: data parallel splits the batch, never below one sample per chip; tensor and sequence
    parallelism split each sample ``tensor`` ways more."""
    return max(1, min(chips, (trace.items or 1) * tensor))


def _tensor(chips: int, tensor: int) -> int:
    t = integer("tensor", tensor, minimum=1)
    if t > chips or chips % t:
        raise ValueError(f"tensor must divide the chips ({chips}), got {t}")
    return t


def op_times(trace: StepTrace, m: Machine, chips: int = 1, tensor: int = 1) -> list[OpTime]:
    n = integer("chips", chips, minimum=1)
    share = 1.0 / _split(trace, n, _tensor(n, tensor))
    return [op_time(o, m, share) for o in trace.ops]


def ring_allreduce_bytes(all_reduces: int, elements: float, elem_bytes: float, group: int) -> float:
    """Bytes each chip sends for ``all_reduces`` ring all-reduces of ``elements`` each over a group of ``group``
    chips: a ring moves ``2(g-1)/g`` of the tensor per chip (reduce-scatter, then all-gather). 0 for one chip."""
    return all_reduces * elements * elem_bytes * 2 * (group - 1) / group if group > 1 else 0.0


def tensor_parallel_bytes(trace: StepTrace, chips: int, tensor: int) -> float:
    """Bytes each chip sends for tensor/sequence parallelism in one step (0 without it, or where the trace does not
    know the model's layers and hidden size): per layer two all-reduces forward and two backward of the group's
    activations."""
    n = integer("chips", chips, minimum=1)
    t = _tensor(n, tensor)
    if t == 1 or not (trace.layers and trace.hidden and trace.tokens):
        return 0.0
    elem = trace.param_bytes / trace.params if trace.params else 2.0
    per_group = trace.tokens / (n // t)  # the tokens one tensor-parallel group holds
    per_layer = 4 if trace.mode == "training" else 2
    return ring_allreduce_bytes(per_layer * trace.layers, per_group * trace.hidden, elem, t)


def collective_bytes(trace: StepTrace, chips: int) -> float:
    """Bytes each chip sends for FSDP: parameters all-gathered (forward, and backward in training) and
    gradients reduce-scattered, each moving ``(n-1)/n`` of the full tensor. 0 on one chip."""
    n = integer("chips", chips, minimum=1)
    if n == 1:
        return 0.0
    per = (n - 1) / n
    if trace.mode == "training":
        return per * (2 * trace.param_bytes + trace.grad_bytes)
    return per * trace.param_bytes


def band(trace: StepTrace, m: Machine, chips: int = 1, tensor: int = 1) -> Band:
    """The step's time band on ``chips`` of ``m``, ``tensor``-way tensor/sequence parallel (1: FSDP alone)."""
    n = integer("chips", chips, minimum=1)
    t = _tensor(n, tensor)
    k = _split(trace, n, t)
    compute = trace.flop / k / m.peak_flop_per_s
    # each chip reads every parameter (gathered), its share of gradients and optimizer state, its activations
    reads = 2 if trace.mode == "training" else 1
    fused_bytes = (
        reads * trace.param_bytes
        + (trace.grad_bytes + 2 * trace.optimizer_state_bytes) / n
        + (2 * trace.activation_bytes + trace.io_bytes) / k
    )
    fused = fused_bytes / m.hbm_bytes_per_s
    unfused = sum(o.seconds for o in op_times(trace, m, n, t))
    coll = 0.0
    if n > 1:
        if not m.link_bytes_per_s:
            raise ValueError(f"{m.id} has no chip-to-chip bandwidth; estimate on one chip")
        coll = (collective_bytes(trace, n) + tensor_parallel_bytes(trace, n, t)) / (m.link_bytes_per_s / 2)
    low = max(compute, fused, coll)
    high = max(unfused + coll, low)
    return Band(
        machine=m.id,
        chips=n,
        low_s=low,
        high_s=high,
        flop=trace.flop,
        compute_s=compute,
        fused_memory_s=fused,
        unfused_s=unfused,
        collective_s=coll,
        low_bound="compute" if compute >= max(fused, coll) else ("memory" if fused >= coll else "collective"),
    )


def regimes(trace: StepTrace, m: Machine, chips: int = 1, tensor: int = 1) -> list[dict[str, Any]]:
    """Per op class: FLOPs, bytes, intensity, time (unfused) and whether it is compute- or memory-bound on ``m``."""
    rows: dict[str, dict[str, Any]] = {}
    for t in op_times(trace, m, chips, tensor):
        r = rows.setdefault(
            t.op.op_class,
            {"op_class": t.op.op_class, "calls": 0, "flop": 0.0, "bytes": 0.0, "compute_s": 0.0, "memory_s": 0.0},
        )
        r["calls"] += t.op.calls
        r["flop"] += t.op.flop + t.op.vector_flop
        r["bytes"] += t.op.bytes
        r["compute_s"] += t.compute_s
        r["memory_s"] += t.memory_s
    out = []
    for r in rows.values():
        r["intensity"] = r["flop"] / r["bytes"] if r["bytes"] else float("inf")
        r["seconds"] = max(r["compute_s"], r["memory_s"])
        r["bound"] = "compute" if r["intensity"] >= m.ridge else "memory"
        out.append(r)
    return sorted(out, key=lambda r: -r["seconds"])
