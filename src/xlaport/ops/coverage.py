"""What a target does with each op a function dispatches: supported, decomposed, falls back, raises.

>>> from xlaport import ops
>>> print(ops.coverage(ops.aten_ops(model, x), "tpu").table())

Each verdict is :func:`xlaport.ops.route.decide`'s, the same function the emulator and the zoo sweep ask:
the dispatcher's route for the target's dispatch key, so that ``mm`` reaches TorchTPU as ``mm.out``
(a structured op's route is known by name; any other composite is run on the traced example inputs).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from .fallback import execution_mode
from .route import Decision, composite_key, decide, worst
from .support import SupportTable, support_table
from .trace import OpCall, OpTrace, lookup_overload, normalise

__all__ = ["OpSupport", "Coverage", "coverage", "composite_key", "verdict", "worst", "STATUSES"]

STATUSES: tuple[str, ...] = ("supported", "decomposed", "falls back", "raises", "unknown")


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


def verdict(op: str, table: SupportTable, fallback_on: bool, example: Any) -> Decision:
    """:func:`~xlaport.ops.route.decide` for one op overload with its traced example inputs (or None)."""
    return decide(op, table, example, fallback_on=fallback_on)


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
        d = decide(c.op, table, c.example, fallback_on=fallback_on)
        status, how = d.status, d.how
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
