"""What a target does with each op a function dispatches: supported, decomposed, falls back, raises.

>>> from xlaport import ops
>>> print(ops.coverage(ops.aten_ops(model, x), "tpu").table())

How a decomposition counts. For an op the target has no kernel for, :func:`coverage` applies
the dispatcher's own order for the target's dispatch key (torch
``OperatorEntry::computeDispatchTableEntry``): a ``CompositeExplicitAutogradNonFunctional`` kernel
(used by ``PrivateUse1`` backends such as TorchTPU and TorchNeuron, never by ``XLA``), then
``CompositeExplicitAutograd``, then ``CompositeImplicitAutograd``, else the backend's fallback. A
composite kernel is *run* on the traced example inputs under the tracer, and the op counts as
``decomposed`` only when every op it calls is supported, recursively; ``mm`` reaches TorchTPU as
``mm.out`` this way.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import torch
from torch.utils import _pytree as pytree

from .fallback import execution_mode
from .support import SupportTable, support_table
from .trace import COMPOSITE_ORDER, OpCall, OpRecorder, OpTrace, copy_arg, lookup_overload, normalise

__all__ = ["OpSupport", "Coverage", "coverage", "composite_key", "verdict", "worst", "STATUSES"]

STATUSES: tuple[str, ...] = ("supported", "decomposed", "falls back", "raises", "unknown")
_DK = torch._C.DispatchKey
_SHORT = {
    "CompositeExplicitAutogradNonFunctional": "CEANF",
    "CompositeExplicitAutograd": "CEA",
    "CompositeImplicitAutograd": "CIA",
}
_MAX_DEPTH = 6
# Ops every backend runs but that copy a value to the host: a sync, hence a graph cut (torch_xla counts it as a fallback).
_SYNC_OPS = {
    "aten::_local_scalar_dense": "kernel, but copies a value to the host (sync; torch_xla counts it as a fallback)"
}


def composite_key(op: str, dispatch_key: str) -> str | None:
    """The composite kernel the dispatcher would use for ``op`` on a backend key without its own kernel."""
    for k in COMPOSITE_ORDER:
        if k == "CompositeExplicitAutogradNonFunctional" and dispatch_key == "XLA":
            continue  # the dispatcher leaves XLA and Lazy out of this alias
        if torch._C._dispatch_has_kernel_for_dispatch_key(op, k):
            return k
    return None


def _expand(op: str, key: str, example: tuple[tuple[Any, ...], dict[str, Any]]) -> dict[str, OpCall] | None:
    """Run ``op``'s composite kernel ``key`` on copies of the example inputs; the ops it calls."""
    args, kwargs = pytree.tree_map(copy_arg, example)
    rec = OpRecorder()
    try:
        with rec:
            lookup_overload(op)._op_dk(getattr(_DK, key), *args, **kwargs)
    except Exception:  # a composite that cannot run on these copies: undecided
        return None
    return rec.calls


@dataclass(frozen=True)
class OpSupport:
    """What one target does with one op."""

    op: str
    status: str  # one of STATUSES
    count: int
    via: str  # how that was decided
    site: str
    default: str  # what the target does by default with this op


@dataclass(frozen=True)
class Coverage:
    """Per-op verdicts of one target for a trace or a list of op names."""

    target: str
    title: str
    cpu_fallback: bool
    rows: tuple[OpSupport, ...]
    confidence: str
    source: str

    def __iter__(self) -> Iterator[OpSupport]:
        return iter(self.rows)

    def __getitem__(self, op: str) -> OpSupport:
        op = normalise(op)
        for r in self.rows:
            if r.op == op:
                return r
        raise KeyError(op)

    def with_status(self, *statuses: str) -> list[str]:
        return [r.op for r in self.rows if r.status in statuses]

    @property
    def raises(self) -> list[str]:
        return self.with_status("raises")

    @property
    def fallbacks(self) -> list[str]:
        return self.with_status("falls back")

    @property
    def ok(self) -> bool:
        """No op raises and none falls back."""
        return not self.with_status("raises", "falls back")

    def summary(self) -> dict[str, int]:
        return {s: sum(1 for r in self.rows if r.status == s) for s in STATUSES}

    def table(self, only_problems: bool = False) -> str:
        rows = [r for r in self.rows if not only_problems or r.status not in ("supported", "decomposed")]
        head = f"{self.title}: {len(self.rows)} ops, " + ", ".join(f"{n} {s}" for s, n in self.summary().items() if n)
        mode = (
            ("CPU fallback " + ("on" if self.cpu_fallback else "off"))
            if self.target == "tpu"
            else "falls back to CPU by default"
        )
        head += f" ({mode}; confidence {self.confidence})"
        if not rows:
            return head
        w = max(len(r.op) for r in rows)
        ws = max(len(r.status) for r in rows)
        lines = [head, f"{'op':<{w}}  {'status':<{ws}}  {'count':>5}  how decided | first call site"]
        lines += [f"{r.op:<{w}}  {r.status:<{ws}}  {r.count:>5}  {r.via} | {r.site}" for r in rows]
        return "\n".join(lines)


def worst(statuses: Iterable[str]) -> str:
    rank = {"supported": 0, "decomposed": 0, "unknown": 1, "falls back": 2, "raises": 3}
    return max(statuses, key=lambda s: rank[s], default="supported")


def _missing_status(table: SupportTable, fallback_on: bool) -> tuple[str, str]:
    if table.missing == "raise":
        if fallback_on:
            return "falls back", "no kernel: CPU fallback (switched on)"
        return "raises", "no kernel: NotImplementedError (CPU fallback off, the default)"
    if not table.complete:
        return "unknown", "not in the documented list; if unsupported it falls back to CPU (the default)"
    return "falls back", "no kernel: CPU fallback (the default)"


def verdict(
    op: str, table: SupportTable, fallback_on: bool, example: Any, depth: int = 0
) -> tuple[str, str, list[str]]:
    """(status, how decided, missing ops underneath) for one op overload."""
    if table.has_kernel(op):
        if op in table.kernel_fallbacks:
            return "falls back", "kernel that calls the CPU fallback itself (measured)", [op]
        return "supported", _SYNC_OPS.get(op, "kernel"), []
    key = composite_key(op, table.dispatch_key)
    if key is None or depth >= _MAX_DEPTH:
        status, how = _missing_status(table, fallback_on)
        return status, how, [op] if status in ("raises", "falls back") else []
    short = _SHORT[key]
    if example is None:
        return "unknown", f"composite ({short}); no example inputs to check what it calls", []
    inner = _expand(op, key, example)
    if inner is None:
        return "unknown", f"composite ({short}); could not run it on the traced inputs", []
    # an op whose composite re-dispatches itself (detach, alias-like ops) needs nothing more from the backend
    parts = [
        (name, *verdict(name, table, fallback_on, c.example, depth + 1))
        for name, c in inner.items()
        if name.startswith("aten::") and name != op
    ]
    if not parts:
        return "decomposed", f"composite ({short}); needs no other backend op", []
    status = worst(p[1] for p in parts)
    missing = [m for p in parts for m in p[3]]
    if status in ("supported", "decomposed"):
        return "decomposed", f"composite ({short}) -> " + ", ".join(p[0].removeprefix("aten::") for p in parts), []
    bad = [p[0].removeprefix("aten::") for p in parts if p[1] == status]
    return status, f"composite ({short}) -> {', '.join(bad)} ({status})", missing


def coverage(ops: OpTrace | Iterable[str], target: str, *, cpu_fallback: bool | None = None) -> Coverage:
    """What ``target`` (``"tpu"``, ``"neuron"`` or ``"xla"``) does with each op.

    ``ops`` is an :class:`OpTrace` from :func:`aten_ops` (counts, call sites and
    example inputs, so composite ops can be checked) or op names such as
    ``"aten::unique_dim"`` or ``"linalg_cholesky_ex"``. ``cpu_fallback`` matters for
    TorchTPU only (off by default there; Neuron and torch_xla always fall back);
    ``None`` takes the current :data:`execution_mode` switch.
    """
    table = support_table(target)
    fallback_on = execution_mode.enable_cpu_fallback if cpu_fallback is None else bool(cpu_fallback)
    if isinstance(ops, OpTrace):
        calls = list(ops)
    elif isinstance(ops, str) or not isinstance(ops, Iterable):
        raise ValueError("coverage needs an OpTrace from aten_ops() or a list of op names, not " + type(ops).__name__)
    else:
        calls = []
        for name in ops:
            n = normalise(name)
            lookup_overload(n)
            calls.append(OpCall(n, count=0))
    if table.missing == "raise":
        default = "raises NotImplementedError unless CPU fallback is switched on"
    else:
        default = "falls back to CPU"
    rows = []
    for c in calls:
        if not c.op.startswith("aten::"):
            rows.append(OpSupport(c.op, "unknown", c.count, "not an ATen op", c.site, ""))
            continue
        status, how, _ = verdict(c.op, table, fallback_on, c.example)
        rows.append(
            OpSupport(
                c.op,
                status,
                c.count,
                how,
                c.site if c.sites else "",
                default if status in ("raises", "falls back") else "",
            )
        )
    return Coverage(target, table.title, fallback_on, tuple(rows), table.confidence, table.source)
