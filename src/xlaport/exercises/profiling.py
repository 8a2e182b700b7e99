"""Chapter *Where the time goes*: the busy share of a trace window, and what overlapping host and device can buy."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from .common import Verdict, fails, guarded, passes, raised

__all__ = ["check_busy_share", "check_overlap_rate", "HIDDEN_TRACES", "HIDDEN_SIDES"]

#: (spans as (start_ms, duration_ms), window start, window end) the busy-share check asks about.
HIDDEN_TRACES = (
    (((0.0, 4.0), (2.0, 4.0), (10.0, 2.0)), 0.0, 20.0),  # two overlapping, one apart: 8 of 20
    (((1.0, 3.0), (1.5, 1.0), (2.0, 1.0)), 0.0, 10.0),  # nested inside the first: 3 of 10
    (((-5.0, 10.0), (8.0, 6.0)), 0.0, 10.0),  # both cross the window's edges: 7 of 10
    (((0.0, 1.0), (1.0, 1.0), (2.0, 1.0)), 0.0, 4.0),  # touching, not overlapping: 3 of 4
    (((3.0, 2.0),), 0.0, 5.0),
)


def _busy(spans: Any, a: float, b: float) -> float:
    """The share of ``[a, b]`` covered by ``spans``, by :func:`xlaport.perf.xla_trace.busy` (the chapter's own)."""
    from ..perf.xla_trace import Event, busy

    return busy([Event("span", "", x, d, "op") for x, d in spans], a, b) / (b - a)


@guarded("busy share", must_be="a function share(spans, window_start, window_end), not a number")
def check_busy_share(share: Callable[..., Any]) -> Verdict:
    """``share(spans, window_start, window_end) -> fraction``: the share of the window during which at least one span
    ran, within 1e-6, on :data:`HIDDEN_TRACES`."""
    done = []
    for spans, a, b in HIDDEN_TRACES:
        want = _busy(spans, a, b)
        where = f"for spans {list(spans)} in the window {a:g}..{b:g} ms"
        try:
            got = float(share([tuple(x) for x in spans], a, b))
        except Exception as e:
            return fails(f"{where}: {raised(e, 'it')}")
        if math.isfinite(got) and abs(got - want) <= 1e-6:
            done.append(f"{got:.0%}")
            continue
        hint = ""
        summed = sum(d for _, d in spans) / (b - a)
        clipped_sum = sum(max(0.0, min(x + d, b) - max(x, a)) for x, d in spans) / (b - a)
        if abs(got - summed) <= 1e-6 or abs(got - clipped_sum) <= 1e-6:
            hint = ": overlapping spans are counted twice; merge them first"
        elif abs(got - _busy(spans, min(x for x, _ in spans), max(x + d for x, d in spans)) * 1) <= 1e-6:
            hint = ": measure against the window given, not the spans' own extent"
        elif got > 1 + 1e-9:
            hint = ": a share is at most 1"
        return fails(f"{where}: {got:.4g}, expected {want:.4g}{hint}")
    return passes(f"right on {len(done)} unseen traces: {', '.join(done)}")


#: (host_ms, device_ms) the overlap check asks about.
HIDDEN_SIDES = ((12.0, 3.0), (5.0, 5.0), (2.0, 40.0), (7.5, 6.0))


@guarded("overlap rate", must_be="a function rate(host_ms, device_ms) returning (steps_per_s, speedup)")
def check_overlap_rate(rate: Callable[..., Any]) -> Verdict:
    """``rate(host_ms, device_ms) -> (steps_per_s, speedup)`` with perfect overlap, within 0.1 %, on
    :data:`HIDDEN_SIDES`."""
    done = []
    for host, dev in HIDDEN_SIDES:
        want = (1000.0 / max(host, dev), (host + dev) / max(host, dev))
        where = f"for {host:g} ms on the host and {dev:g} ms on the device"
        try:
            got = rate(host, dev)
            steps, gain = float(got[0]), float(got[1])
        except Exception as e:
            return fails(f"{where}: {raised(e, 'it')} (return a pair: steps per second, speed-up)")
        if abs(steps / want[0] - 1) <= 1e-3 and abs(gain / want[1] - 1) <= 1e-3:
            done.append(f"{steps:.0f}/s (x{gain:.2f})")
            continue
        hint = ""
        if abs(steps - 1000.0 / (host + dev)) <= 1e-3 * steps:
            hint = ": that is the rate one after the other; with overlap the slower side sets the pace"
        elif abs(steps - 1000.0 / min(host, dev)) <= 1e-3 * steps:
            hint = ": the faster side cannot set the pace, the slower one does"
        elif abs(steps - 1.0 / max(host, dev)) <= 1e-3 * steps:
            hint = ": the times are in milliseconds; a rate per second needs 1000 / ms"
        return fails(f"{where}: ({steps:.4g}, {gain:.4g}), expected ({want[0]:.4g}, {want[1]:.4g}){hint}")
    return passes(f"right on {len(done)} unseen steps: {', '.join(done)}")
