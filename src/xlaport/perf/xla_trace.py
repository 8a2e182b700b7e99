"""Where a step's time went, from the trace torch_xla's profiler writes.

``torch_xla.debug.profiler.start_trace(dir)`` ... ``stop_trace()`` writes a Chrome-format trace
(``plugins/profile/<run>/<host>.trace.json.gz``) next to the XProf one (``.xplane.pb``); on XLA:CPU it holds the
host's side (the Python thread handing graphs to XLA, compiles, transfers) and the executable's side (the threads
that run the compiled program, with one event per HLO operation). This module reads it and sorts its events into
what a reader asks about:

* **compile**: XLA compiling a graph (``XLAGraphExecutor::Compile``, ``PjRtComputationClient::Compile``);
* **execute**: the compiled program running (``ThunkExecutor::Execute`` on XLA's threads; on a TPU the device's
  own lines take this place);
* **transfer**: host-to-device and device-to-host copies;
* **op**: one HLO operation inside a running program (``dot.219``, ``fusion.3``), named as in the optimized HLO;
* **annotation**: a span the program marked itself (``xp.Trace("train_step")``);
* **host**: the rest of the Python thread's events (the lazy tensor's graph building and hand-off).

On XLA:CPU the host and the emulated device share the same cores, so the split between them is blurred there in a
way it is not on a TPU: read the kinds' times as where the work is, not as a TPU's idle time. Torch-free.
"""

from __future__ import annotations

import gzip
import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["KINDS", "Event", "busy", "classify", "read_trace", "self_times", "within"]

KINDS = ("compile", "execute", "transfer", "op", "annotation", "host")


@dataclass(frozen=True)
class Event:
    """One complete event of the trace, times in microseconds from the trace's start."""

    name: str
    lane: str  # the thread's name ("python", "tf_XLAEigen/...")
    start_us: float
    dur_us: float
    kind: str  # one of KINDS

    @property
    def end_us(self) -> float:
        return self.start_us + self.dur_us


def classify(name: str, lane: str, args: dict[str, object] | None = None, annotations: Sequence[str] = ()) -> str:
    """The :data:`KINDS` entry of one event."""
    if name in annotations:
        return "annotation"
    if "Compile" in name or name.startswith("CpuCompiler"):
        return "compile"
    if "Transfer" in name or "H2D" in name or "D2H" in name:
        return "transfer"
    if args and "hlo_op" in args:
        return "op"
    if name.startswith("ThunkExecutor::Execute") and "wait" not in name:
        return "execute"
    return "host" if lane == "python" else "other"


def read_trace(directory: str | os.PathLike[str], annotations: Sequence[str] = ()) -> list[Event]:
    """Every complete event of the newest ``*.trace.json.gz`` under ``directory``, sorted by start; events named in
    ``annotations`` are the program's own spans."""
    root = Path(directory)
    if not root.is_dir():
        raise ValueError(f"no profiler output at {str(root)!r} (did start_trace/stop_trace run?)")
    found = sorted(root.rglob("*.trace.json.gz"), key=lambda p: p.stat().st_mtime)
    if not found:
        raise ValueError(f"no *.trace.json.gz under {str(root)!r}: the profiler wrote no trace")
    with gzip.open(found[-1], "rt", encoding="utf-8") as fh:
        data = json.load(fh)
    raw = data.get("traceEvents", []) if isinstance(data, dict) else []
    lanes = {
        (e.get("pid"), e.get("tid")): str(e.get("args", {}).get("name", ""))
        for e in raw
        if e.get("ph") == "M" and e.get("name") == "thread_name"
    }
    out = []
    for e in raw:
        if e.get("ph") != "X" or "dur" not in e:
            continue
        lane = lanes.get((e.get("pid"), e.get("tid")), "")
        name = str(e.get("name", ""))
        kind = classify(name, lane, e.get("args"), annotations)
        out.append(Event(name, lane, float(e["ts"]), float(e["dur"]), kind))
    return sorted(out, key=lambda ev: ev.start_us)


def busy(events: Iterable[Event], start_us: float | None = None, end_us: float | None = None) -> float:
    """Microseconds during which at least one of ``events`` ran (overlaps counted once), clipped to a window."""
    spans = []
    for e in events:
        a = e.start_us if start_us is None else max(e.start_us, start_us)
        b = e.end_us if end_us is None else min(e.end_us, end_us)
        if b > a:
            spans.append((a, b))
    total, cur_a, cur_b = 0.0, None, None
    for a, b in sorted(spans):
        if cur_b is None or a > cur_b:
            if cur_b is not None and cur_a is not None:
                total += cur_b - cur_a
            cur_a, cur_b = a, b
        else:
            cur_b = max(cur_b, b)
    if cur_b is not None and cur_a is not None:
        total += cur_b - cur_a
    return total


def within(events: Iterable[Event], span: Event) -> list[Event]:
    """The events that start inside ``span``."""
    return [e for e in events if span.start_us <= e.start_us < span.end_us]


def self_times(events: Iterable[Event]) -> list[tuple[Event, float]]:
    """Each event with its *self* time in microseconds: its duration less that of the events nested inside it on
    the same lane (XLA:CPU's trace nests a fused computation's operations inside the call that runs them; summing
    durations would count the inner ones twice)."""
    lanes: dict[str, list[Event]] = {}
    for e in events:
        lanes.setdefault(e.lane, []).append(e)
    out: list[tuple[Event, float]] = []
    for evs in lanes.values():
        evs.sort(key=lambda e: (e.start_us, -e.dur_us))
        stack: list[list[Any]] = []  # [event, self time so far]
        for e in evs:
            while stack and stack[-1][0].end_us <= e.start_us:
                done = stack.pop()
                out.append((done[0], done[1]))
            if stack:
                stack[-1][1] -= e.dur_us
            stack.append([e, e.dur_us])
        out.extend((ev, t) for ev, t in reversed(stack))
    return out
