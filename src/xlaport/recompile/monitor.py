"""Watch a training or inference loop for recompiles: per step, how long it took, how many
compiles it started, how long they took and why they happened.

>>> from xlaport.recompile import RecompileMonitor
>>> with RecompileMonitor(sync=t.sync) as mon:
...     for mel, tokens in batches:
...         with mon.step(mel, tokens):          # tensors given here name the step's shape key
...             loss = step_fn(mel, tokens)
>>> print(mon.table())
>>> mon.summary().ratio                          # first compile step / median cached step, in CPU time
>>> mon.verdict()                                # Verdict(storm=True, reason='...')
>>> mon.plot()

Signals, each read from the backend itself (through :mod:`xlaport.metrics`) and used only where it exists:

- **XLA** (torch_xla already imported by the caller; this module never imports it): the
  ``UncachedCompile`` counter and the ``CompileTime`` metric of ``torch_xla.debug.metrics``.
  Lazy mode (``torch_xla.sync()``) and ``torch.compile(backend="openxla")`` both compile
  through them, so one XLA executable per new graph shows up as one ``UncachedCompile``.
- **Dynamo** (``torch.compile`` with any backend): each frame compile with its time and, on a recompile, the
  guard-failure text that ``TORCH_LOGS=recompiles`` would print (``tensor 'x' size mismatch at index 2. expected
  888, actual 961``), read from torch's structured trace by :mod:`xlaport.recompile.dynamo_events`, so nothing is
  printed and nothing in torch is wrapped. The recompile-limit warning (``torch._dynamo hit
  config.recompile_limit (8)``) is caught there too; after it, Dynamo runs the frame eagerly (on CUDA, silently).
- **TorchTPU** (only when ``torch_tpu`` is already imported, i.e. on a real TPU VM): cache
  misses from ``torch.tpu._get_cache_stats()`` (``num_cache_reqs - num_cache_hits``).
- **Inputs**: tensors passed to :meth:`RecompileMonitor.step` give the step a shape key
  (shape, dtype, storage offset of each input; value of Python scalars). When a backend
  compiles without saying why (XLA lazy mode), the reason is the difference between this
  key and the previous step's key, marked ``[inferred]``.

A step's ``compiles`` is the primary source's count: XLA ``UncachedCompile`` when torch_xla
is loaded, else TorchTPU cache misses, else Dynamo frame compiles. The other sources stay in
their own columns (under ``openxla`` one Dynamo compile usually brings 2-4 XLA compiles).
Where a signal is missing its column is ``None`` and the monitor still times steps.

Overhead: :meth:`RecompileMonitor.measure_overhead` times empty monitored steps
(``with mon.step(x): pass``: the counter and metric reads at entry and exit, the shape
key, the record; no ``sync``), discards their records, and returns seconds per step. The
chapter ``notebooks/recompile_storms.ipynb`` divides it by the median cached step of its
model and asserts the share is at most 2%; ``tests/unit/test_recompile.py`` checks it stays
well under a millisecond on XLA:CPU.
"""

from __future__ import annotations

import math
import re
import statistics
import time
from collections.abc import Callable, Hashable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any

import torch

from .. import metrics
from ..text import plural
from .dynamo_events import EVENTS, CompileEvent

__all__ = [
    "RecompileMonitor",
    "StepRecord",
    "CompileEvent",
    "Summary",
    "Verdict",
    "StepCosts",
    "step_costs",
    "shape_key",
    "describe_key_change",
    "parse_reason",
    "REASON_KINDS",
]

# What a guard failure (or an inferred key change) was about.
REASON_KINDS: tuple[str, ...] = (
    "shape",
    "dtype",
    "stride",
    "storage_offset",
    "device",
    "requires_grad",
    "python_constant",
    "object_identity",
    "type",
    "length",
    "graph",
    "other",
)

_REASON_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("shape", re.compile(r"size mismatch|\.size\(\)\[\d+\]|\bsize\(\d*\)")),
    ("dtype", re.compile(r"dtype mismatch")),
    ("stride", re.compile(r"stride mismatch|\.stride\(\)")),
    ("storage_offset", re.compile(r"storage_offset|storage offset")),
    ("device", re.compile(r"device mismatch|device index mismatch")),
    ("requires_grad", re.compile(r"requires_grad mismatch")),
    ("length", re.compile(r"\blen\(")),
    ("object_identity", re.compile(r"___check_obj_id|ID_MATCH|id\(.*\) ==")),
    ("type", re.compile(r"___check_type_id|TYPE_MATCH|type\(")),
    ("python_constant", re.compile(r"^\s*[\w\[\]'\".]+\s*==\s*\S+")),
)
_ID_PREFIX = re.compile(r"^\s*-?\s*\d+/\d+:\s*")  # "0/7: " (frame/compile id of the failing entry)


def parse_reason(text: str) -> tuple[str, str]:
    """Classify one guard-failure line; returns ``(kind, cleaned text)``.

    ``"0/7: tensor 'mel' size mismatch at index 2. expected 888, actual 961"`` ->
    ``("shape", "tensor 'mel' size mismatch at index 2. expected 888, actual 961")``.
    ``"k == 1.0   # def f(...)"`` -> ``("python_constant", "k == 1.0")``.
    """
    if not isinstance(text, str):
        raise ValueError(f"a recompile reason must be a string, got {type(text).__name__}")
    line = text.strip().splitlines()[0] if text.strip() else ""
    line = _ID_PREFIX.sub("", line)
    line = line.split("  #", 1)[0].rstrip()  # drop Dynamo's trailing source comment
    for kind, pat in _REASON_PATTERNS:
        if pat.search(line):
            return kind, line
    return "other", line


# --------------------------------------------------------------------------- shape keys
def _describe_input(x: Any) -> Hashable:
    if isinstance(x, torch.Tensor):
        from .guards import logical_storage_offset  # XLA views report offset 0; this gives the real one

        return ("tensor", tuple(x.shape), str(x.dtype).replace("torch.", ""), logical_storage_offset(x), x.device.type)
    if isinstance(x, (bool, int, float, str)) or x is None:
        return ("py", type(x).__name__, x)
    if isinstance(x, (list, tuple)):
        return ("seq", len(x), tuple(_describe_input(v) for v in x))
    return ("obj", type(x).__name__)


def shape_key(*inputs: Any) -> tuple[Hashable, ...]:
    """The part of the inputs a static-shape compiler specialises on.

    Tensors give (shape, dtype, storage offset, device type); Python scalars give their
    value (Dynamo guards on it, TorchTPU's cache fingerprint includes it); lists and tuples
    are described element by element; other objects by type only.
    """
    return tuple(_describe_input(x) for x in inputs)


def _fmt_input(d: Any) -> str:
    if isinstance(d, tuple) and d and d[0] == "tensor":
        return f"{d[2]}{list(d[1])}" + (f"+{d[3]}" if d[3] else "")
    if isinstance(d, tuple) and d and d[0] == "py":
        return repr(d[2])
    return str(d)


def describe_key_change(old: tuple[Hashable, ...] | None, new: tuple[Hashable, ...]) -> tuple[str, str]:
    """Say which input differs between two :func:`shape_key` results: ``(kind, text)``."""
    if old is None:
        return "shape", "first step: " + ", ".join(_fmt_input(d) for d in new)
    if len(old) != len(new):
        return "length", f"number of inputs {len(old)} -> {len(new)}"
    for i, (a, b) in enumerate(zip(old, new)):
        if a == b:
            continue
        if isinstance(a, tuple) and isinstance(b, tuple) and a[:1] == b[:1] == ("tensor",):
            for kind, j in (("shape", 1), ("dtype", 2), ("storage_offset", 3), ("device", 4)):
                if a[j] != b[j]:
                    return kind, f"input {i} {kind.replace('_', ' ')} {_fmt_v(a[j])} -> {_fmt_v(b[j])}"
        if isinstance(a, tuple) and isinstance(b, tuple) and a[:1] == b[:1] == ("py",):
            return "python_constant", f"input {i} value {a[2]!r} -> {b[2]!r}"
        return "type", f"input {i} {_fmt_input(a)} -> {_fmt_input(b)}"
    return "graph", "same inputs as the previous step: the traced graph itself changed"


def _fmt_v(v: Any) -> str:
    return str(list(v)) if isinstance(v, tuple) else str(v)


# --------------------------------------------------------------------------- records
@dataclass
class StepRecord:
    """What one monitored step did. ``None`` means that signal is not available here.

    ``wall_s`` is the time you waited; ``cpu_s`` the CPU time this process spent in the step, all its threads
    together (``time.process_time``). Other programs on a busy machine stretch the first and hardly touch the
    second, so compare steps by ``cpu_s`` and report ``wall_s``.
    """

    index: int
    wall_s: float
    compiles: int
    compile_s: float | None
    source: str
    cpu_s: float = 0.0
    key: tuple[Hashable, ...] | None = None
    new_key: bool = False
    xla_compiles: int | None = None
    xla_cached: int | None = None
    xla_compile_s: float | None = None
    dynamo_compiles: int = 0
    dynamo_compile_s: float = 0.0
    tpu_cache_misses: int | None = None
    limit_hit: bool = False
    reasons: list[str] = field(default_factory=list)
    kinds: list[str] = field(default_factory=list)
    label: str | None = None

    @property
    def compiled(self) -> bool:
        return self.compiles > 0 or self.dynamo_compiles > 0

    def row(self) -> dict[str, Any]:
        d = asdict(self)
        d["reasons"] = "; ".join(self.reasons)
        d["kinds"] = ",".join(self.kinds)
        d["key"] = _fmt_key(self.key)
        return d


def _ms(ms: float) -> str:
    """A step time in ms to the precision a timer on a busy machine supports: 2001, 43.1, 0.27."""
    return f"{ms:.0f}" if ms >= 100 else f"{ms:.1f}" if ms >= 10 else f"{ms:.2f}"


def _clip(text: str, width: int) -> str:
    """``text`` whole when it fits in ``width`` characters, else cut at a word and marked with an ellipsis."""
    if len(text) <= width:
        return text
    return text[: text.rfind(" ", 0, width - 1) if " " in text[: width - 1] else width - 1].rstrip(" ,;:") + "…"


def _fmt_key(key: tuple[Hashable, ...] | None) -> str:
    return "" if key is None else " ".join(_fmt_input(d) for d in key)


@dataclass(frozen=True)
class Verdict:
    storm: bool
    reason: str

    def __bool__(self) -> bool:
        return self.storm


@dataclass(frozen=True)
class Summary:
    """Totals over the recorded steps. ``cpu_s`` is the CPU time of this process over the steps (see
    :class:`StepRecord`). ``ratio`` = the first compiling step's CPU time divided by the median CPU time of the steps
    that compiled nothing (``nan`` if either is missing): CPU time, so that a busy machine does not move it;
    ``first_compile_step_s`` and ``steady_median_s`` are the same steps' wall times."""

    steps: int
    compiles: int
    compile_steps: int
    compile_s: float | None
    wall_s: float
    cpu_s: float
    first_compile_step_s: float
    steady_median_s: float
    ratio: float
    distinct_keys: int
    dynamo_compiles: int
    recompile_limit_hit: bool
    source: str
    storm: bool
    verdict: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def __str__(self) -> str:
        cs = "n/a" if self.compile_s is None else f"{self.compile_s:.2f} s"
        return (
            f"{plural(self.steps, 'step')}, {plural(self.compiles, 'compile')} ({self.source}) in "
            f"{plural(self.compile_steps, 'step')}, "
            f"compile {cs}, wall {self.wall_s:.2f} s, first compile step {self.first_compile_step_s:.3f} s, "
            + (
                f"cached step median {self.steady_median_s * 1e3:.2f} ms, ratio {self.ratio:.0f}x in CPU time, "
                if math.isfinite(self.steady_median_s) and math.isfinite(self.ratio)
                else "no cached step (every step compiled), "
            )
            + f"{self.distinct_keys} distinct shape keys"
            + (", Dynamo recompile limit hit" if self.recompile_limit_hit else "")
            + f" | {self.verdict}"
        )


@dataclass(frozen=True)
class StepCosts:
    """What a compiling step costs against a cached one, from one pass that compiled and passes that did not.

    ``cached_s`` is the best (smallest) of the cached passes' median steps, as ``timeit`` takes the best of its
    repeats: a slower pass means something else used the CPU, not that the step got dearer. ``clock`` says which
    time the seconds are: ``"cpu"``, this process's CPU time (what other programs on the machine hardly change), or
    ``"wall"``.
    """

    first_compile_s: float
    compile_step_s: float
    pass_medians_s: tuple[float, ...]
    cached_s: float
    clock: str = "cpu"

    @property
    def ratio(self) -> float:
        """The median compiling step over a cached step."""
        return self.compile_step_s / self.cached_s

    @property
    def first_ratio(self) -> float:
        """The first step (it compiles) over a cached step."""
        return self.first_compile_s / self.cached_s

    def __str__(self) -> str:
        medians = ", ".join(f"{m * 1e3:.2f}" for m in self.pass_medians_s)
        clock = "CPU time" if self.clock == "cpu" else "wall time"
        return (
            f"in {clock}: compiling step (median) {self.compile_step_s:.2f} s, cached step {self.cached_s * 1e3:.2f} ms "
            f"(pass medians {medians} ms): {self.ratio:.0f}x\n"
            f"first step {self.first_compile_s:.2f} s: {self.first_ratio:.0f}x a cached step"
        )


CLOCKS: tuple[str, ...] = ("cpu", "wall")


def _seconds(rec: StepRecord, clock: str) -> float:
    return rec.cpu_s if clock == "cpu" else rec.wall_s


def step_costs(compiling: RecompileMonitor, cached: Sequence[RecompileMonitor], clock: str = "cpu") -> StepCosts:
    """Price a compiling step against a cached one: ``compiling`` is a pass whose first step compiled, ``cached``
    are passes over the same shapes (their steps need not be free of compiles, but should be).

    ``clock="cpu"`` (the default) prices steps in this process's CPU time, which a busy machine hardly changes;
    ``"wall"`` in the time waited, which it stretches unevenly (a millisecond step most of all)."""
    if not isinstance(compiling, RecompileMonitor) or not all(isinstance(m, RecompileMonitor) for m in cached):
        raise ValueError("step_costs() takes a RecompileMonitor and a sequence of RecompileMonitors")
    if clock not in CLOCKS:
        raise ValueError(f"step_costs(): clock must be 'cpu' or 'wall', not {clock!r}")
    compiled = [_seconds(r, clock) for r in compiling.records if r.compiled]
    if not compiling.records or not compiling.records[0].compiled:
        raise ValueError(f"step_costs(): the first step of {compiling.name!r} did not compile")
    if not cached or any(not m.records for m in cached):
        raise ValueError("step_costs() needs at least one cached pass, each with at least one step")
    medians = tuple(statistics.median(_seconds(r, clock) for r in m.records) for m in cached)
    best = min(medians)
    if best <= 0:
        raise ValueError(f"step_costs(): a cached pass's median step took {best} s of {clock} time")
    return StepCosts(_seconds(compiling.records[0], clock), statistics.median(compiled), medians, best, clock)


_SOURCES: tuple[str, ...] = ("auto", "xla", "torch_tpu", "dynamo")


# Per step the monitor needs compiles and compile time only: read nothing else (it runs twice per step).
_STEP_TIMES: tuple[str, ...] = ("CompileTime",)


# --------------------------------------------------------------------------- the monitor
class RecompileMonitor:
    """Record per-step wall time, compiles, compile time and recompile reasons.

    Use as a context manager (installs the Dynamo hooks; they are process-wide and
    reference-counted, removed when the last monitor exits) and wrap each step in
    ``with monitor.step(*inputs):``. ``sync`` (e.g. ``xlaport.target("tpu").sync``) is called
    at the end of every step inside the timed region, so lazy/asynchronous work is counted
    in the step that queued it. ``storm_window`` and ``storm_share`` set the verdict: a storm
    is a compile in more than ``storm_share`` of the last ``storm_window`` steps (the very
    first step is never counted) or a Dynamo recompile limit hit. ``source`` picks the signal
    that ``compiles`` counts (``"auto"``: XLA if torch_xla is loaded, else TorchTPU, else Dynamo;
    pass ``"dynamo"`` to count Dynamo frame compiles of CPU tensors in a torch_xla process).
    """

    def __init__(
        self,
        name: str = "",
        *,
        sync: Callable[[], None] | None = None,
        storm_window: int = 10,
        storm_share: float = 0.3,
        source: str = "auto",
    ) -> None:
        if not isinstance(name, str):
            raise ValueError(f"name must be a string, got {type(name).__name__}")
        if sync is not None and not callable(sync):
            raise ValueError("sync must be a callable that waits for queued device work, or None")
        if not isinstance(storm_window, int) or isinstance(storm_window, bool) or storm_window < 2:
            raise ValueError(f"storm_window must be an int >= 2, got {storm_window!r}")
        if not isinstance(storm_share, (int, float)) or not 0 < storm_share < 1:
            raise ValueError(f"storm_share must be a number strictly between 0 and 1, got {storm_share!r}")
        if source not in _SOURCES:
            raise ValueError(f"source must be one of {', '.join(_SOURCES)}, got {source!r}")
        self.name = name
        self.sync = sync
        self._source = source
        self.storm_window = storm_window
        self.storm_share = float(storm_share)
        self.records: list[StepRecord] = []
        self.unattributed: list[CompileEvent] = []
        self._pending: list[CompileEvent] | None = None
        self._active = False
        self._keys: set[tuple[Hashable, ...]] = set()
        self._last_key: tuple[Hashable, ...] | None = None
        self._in_step = False

    # ------------------------------------------------------------ lifecycle
    def start(self) -> RecompileMonitor:
        if not self._active:
            EVENTS.subscribe(self._on_event)
            self._active = True
        return self

    def close(self) -> None:
        if self._active:
            EVENTS.unsubscribe(self._on_event)
            self._active = False

    def __enter__(self) -> RecompileMonitor:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _on_event(self, ev: CompileEvent) -> None:
        if ev.reason is not None and ev.kind is None:
            ev.kind, ev.reason = parse_reason(ev.reason)
        (self._pending if self._pending is not None else self.unattributed).append(ev)

    @property
    def source(self) -> str:
        """Which signal ``compiles`` counts: ``"xla"``, ``"torch_tpu"`` or ``"dynamo"``."""
        if self._source != "auto":
            return self._source
        kind = metrics.backend()
        return "dynamo" if kind == "none" else kind

    @property
    def signals(self) -> dict[str, bool]:
        """Which signals are available in this process right now."""
        return {
            "xla_metrics": metrics.xla_loaded(),
            "torch_tpu_cache": metrics.snapshot(fallbacks=False).backend == "torch_tpu",
            "dynamo_events": EVENTS.installed,
        }

    # ------------------------------------------------------------ steps
    @contextmanager
    def step(
        self, *inputs: Any, key: tuple[Hashable, ...] | None = None, label: str | None = None
    ) -> Iterator[StepRecord]:
        """Time one step. ``inputs`` (or an explicit ``key``) name its shape key."""
        if self._in_step:
            raise ValueError("RecompileMonitor.step() does not nest: finish the current step first")
        self.start()
        if key is None and inputs:
            key = shape_key(*inputs)
        before = metrics.snapshot(fallbacks=False, times=_STEP_TIMES)
        if self._source == "xla" and before.backend != "xla":
            raise ValueError("source='xla' but torch_xla is not imported in this process")
        if self._source == "torch_tpu" and before.backend != "torch_tpu":
            raise ValueError("source='torch_tpu' but torch_tpu is not imported in this process")
        rec = StepRecord(
            index=len(self.records), wall_s=0.0, compiles=0, compile_s=None, source="", key=key, label=label
        )
        self._pending = []
        self._in_step = True
        t0, c0 = time.perf_counter(), time.process_time()
        try:
            yield rec
            if self.sync is not None:
                self.sync()
        finally:
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
            self._in_step = False
            events, self._pending = self._pending, None
            rec.cpu_s = cpu
            self._finish(rec, wall, events, metrics.snapshot(fallbacks=False, times=_STEP_TIMES).delta(before))

    def _finish(self, rec: StepRecord, wall: float, events: list[CompileEvent], d: metrics.Snapshot) -> None:
        rec.wall_s = wall
        dyn = [e for e in events if e.source == "dynamo"]
        rec.dynamo_compiles = len(dyn)
        rec.dynamo_compile_s = sum(e.seconds or 0.0 for e in dyn)
        for e in events:
            if e.source in ("dynamo", "dynamo-failed", "dynamo-limit") and e.reason is not None:
                prefix = "recompile limit hit; last reason: " if e.source == "dynamo-limit" else ""
                rec.reasons.append(prefix + e.reason)
                rec.kinds.append(e.kind or "other")
            if e.source == "dynamo-limit":
                rec.limit_hit = True
        if d.backend == "xla":
            rec.xla_compiles, rec.xla_cached, rec.xla_compile_s = d.compiles, d.cached_compiles, d.compile_s
        elif d.backend == "torch_tpu":
            rec.tpu_cache_misses = d.compiles
        want = self._source
        if want == "dynamo":
            rec.source, rec.compiles, rec.compile_s = "dynamo", rec.dynamo_compiles, rec.dynamo_compile_s
        elif rec.xla_compiles is not None and want in ("auto", "xla"):
            rec.source, rec.compiles, rec.compile_s = "xla", rec.xla_compiles, rec.xla_compile_s
        elif rec.tpu_cache_misses is not None and want in ("auto", "torch_tpu"):
            rec.source, rec.compiles, rec.compile_s = "torch_tpu", rec.tpu_cache_misses, None
        else:
            rec.source, rec.compiles, rec.compile_s = "dynamo", rec.dynamo_compiles, rec.dynamo_compile_s
        if rec.key is not None:
            rec.new_key = rec.key not in self._keys
            if rec.compiles > 0 and not rec.reasons:
                kind, text = (
                    describe_key_change(self._last_key, rec.key)
                    if rec.new_key
                    else (
                        "graph",
                        "shape key seen before: the traced graph changed (a baked-in constant, a view offset, other ops)",
                    )
                )
                rec.reasons.append(f"[inferred] {text}")
                rec.kinds.append(kind)
            self._keys.add(rec.key)
            self._last_key = rec.key
        elif rec.compiles > 0 and not rec.reasons:
            rec.reasons.append(f"[{rec.source}] compiled a new program (no inputs given to name the shape key)")
            rec.kinds.append("other")
        self.records.append(rec)

    # ------------------------------------------------------------ reports
    def reset(self) -> None:
        """Forget recorded steps (hooks stay installed)."""
        self.records.clear()
        self.unattributed.clear()
        self._keys.clear()
        self._last_key = None

    def summary(self) -> Summary:
        recs = self.records
        compile_recs = [r for r in recs if r.compiled]
        steady = [r.wall_s for r in recs if not r.compiled]
        steady_med = statistics.median(steady) if steady else math.nan
        first = compile_recs[0].wall_s if compile_recs else math.nan
        steady_cpu = statistics.median(r.cpu_s for r in recs if not r.compiled) if steady else math.nan
        first_cpu = compile_recs[0].cpu_s if compile_recs else math.nan
        cs = [r.compile_s for r in recs]
        v = self.verdict()
        return Summary(
            steps=len(recs),
            compiles=sum(r.compiles for r in recs),
            compile_steps=len(compile_recs),
            compile_s=None if any(c is None for c in cs) or not recs else float(sum(c for c in cs if c is not None)),
            wall_s=float(sum(r.wall_s for r in recs)),
            cpu_s=float(sum(r.cpu_s for r in recs)),
            first_compile_step_s=float(first),
            steady_median_s=float(steady_med),
            ratio=float(first_cpu / steady_cpu) if steady and compile_recs and steady_cpu > 0 else math.nan,
            distinct_keys=len({r.key for r in recs if r.key is not None}),
            dynamo_compiles=sum(r.dynamo_compiles for r in recs),
            recompile_limit_hit=any(r.limit_hit for r in recs)
            or any(e.source == "dynamo-limit" for e in self.unattributed),
            source=recs[-1].source if recs else self.source,
            storm=v.storm,
            verdict=v.reason,
        )

    def verdict(self) -> Verdict:
        limit = [r for r in self.records if r.limit_hit]
        if limit or any(e.source == "dynamo-limit" for e in self.unattributed):
            where = f" at step {limit[0].index}" if limit else ""
            return Verdict(True, f"storm: Dynamo recompile limit hit{where}; the frame now runs uncompiled (eager)")
        recent = self.records[1:][-self.storm_window :]
        if len(recent) < 2:
            return Verdict(False, "too few steps to judge")
        n = sum(1 for r in recent if r.compiled)
        share = n / len(recent)
        if share > self.storm_share and n >= 2:
            return Verdict(
                True, f"storm: {n} of the last {len(recent)} steps compiled ({share:.0%} > {self.storm_share:.0%})"
            )
        return Verdict(False, f"no storm: {n} of the last {len(recent)} steps compiled")

    def rows(self) -> list[dict[str, Any]]:
        return [r.row() for r in self.records]

    def table(self, max_rows: int | None = 40, reasons: bool = True) -> str:
        """A plain-text table, one line per step (compile steps marked ``*``), each recompile's reason on a line of its
        own under its step (so that a row stays narrow enough for a phone)."""
        if max_rows is not None and (not isinstance(max_rows, int) or max_rows < 1):
            raise ValueError(f"max_rows must be a positive int or None, got {max_rows!r}")
        head = f"{'step':>4} {'':1} {'wall ms':>8} {'compiles':>8} {'compile s':>9} {'dynamo':>6}  shape key"
        lines = [head, "-" * max(len(head), 50)]
        recs = self.records if max_rows is None else self.records[:max_rows]
        for r in recs:
            cs = "" if r.compile_s is None else f"{r.compile_s:.3f}"
            lines.append(
                f"{r.index:>4} {'*' if r.compiled else '':1} {_ms(r.wall_s * 1e3):>8} {r.compiles:>8} {cs:>9} "
                f"{r.dynamo_compiles:>6}  {_fmt_key(r.key)}".rstrip()
            )
            if reasons and r.reasons:
                more = len(r.reasons) - 1
                lines.append(
                    "       why: " + _clip(r.reasons[0], 110) + (f" (+{plural(more, 'more reason')})" if more else "")
                )
        if max_rows is not None and len(self.records) > max_rows:
            lines.append(f"... {len(self.records) - max_rows} more steps")
        return "\n".join(lines)

    def plot(self, ax: Any = None, label: str | None = None, color: str | None = None, logy: bool = True) -> Any:
        """Step wall time per step, steps that compiled circled in the series' own colour. Returns the Axes.

        Call it once per series on the same Axes: the legend sits under the plotting area (never over the
        data) and holds one entry per series, "label (N compiled)", plus one entry saying what a circle means.
        """
        import matplotlib.pyplot as plt
        from matplotlib.lines import Line2D
        from matplotlib.ticker import MaxNLocator
        from matplotlib.transforms import ScaledTranslation

        if ax is None:
            _, ax = plt.subplots(figsize=(5.5, 3.4))
        xs = [r.index for r in self.records]
        ys = [r.wall_s * 1e3 for r in self.records]
        cx = [r.index for r in self.records if r.compiled]
        cy = [r.wall_s * 1e3 for r in self.records if r.compiled]
        lab = f"{label or self.name or 'steps'} ({len(cx)} compiled)"
        (line,) = ax.plot(xs, ys, marker=".", lw=1, color=color, label=lab)
        if cx:
            ax.scatter(cx, cy, s=46, facecolors="none", edgecolors=line.get_color(), linewidths=1.4, zorder=3)
        if logy:
            from ..plots import plain_log_ticks

            ax.set_yscale("log")
            plain_log_ticks(ax.yaxis)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlabel("step")
        ax.set_ylabel("step wall time (ms)")
        handles, labels = ax.get_legend_handles_labels()
        ring = Line2D([], [], ls="none", marker="o", markersize=7, markerfacecolor="none", markeredgecolor="0.35")
        # Below the axes (a fixed 0.55 in under their lower edge, clear of the tick labels and the x label), so that
        # the figure keeps the width of a phone's column (xlaport.plots).
        below = ax.transAxes + ScaledTranslation(0, -0.55, ax.figure.dpi_scale_trans)
        ax.legend(
            [*handles, ring],
            [*labels, "circled: a step that compiled"],
            loc="upper left",
            bbox_to_anchor=(0, 0),
            bbox_transform=below,
            frameon=False,
        )
        return ax

    def measure_overhead(self, n: int = 200, inputs: Sequence[Any] = (), clock: str = "cpu") -> float:
        """Seconds the monitor itself adds to one step (mean of ``n`` empty monitored steps), in this process's CPU
        time (``clock="cpu"``, the default: what other programs on a busy machine hardly change) or in wall time.

        The empty steps run the full bookkeeping (backend counter reads at entry and exit,
        the shape key of ``inputs``, the record) without ``sync``; their records are
        discarded afterwards, so the monitor's history is unchanged.
        """
        if not isinstance(n, int) or n < 1:
            raise ValueError(f"n must be a positive int, got {n!r}")
        if clock not in CLOCKS:
            raise ValueError(f"measure_overhead(): clock must be 'cpu' or 'wall', not {clock!r}")
        now = time.process_time if clock == "cpu" else time.perf_counter
        saved = (list(self.records), set(self._keys), self._last_key, self.sync)
        self.sync = None
        try:
            t0 = now()
            for _ in range(n):
                with self.step(*inputs):
                    pass
            return (now() - t0) / n
        finally:
            self.records[:] = saved[0]
            self._keys, self._last_key, self.sync = saved[1], saved[2], saved[3]
