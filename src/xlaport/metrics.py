"""One reader of the backend's counters: compiles, executions, transfers, CPU fallbacks.

>>> from xlaport import metrics
>>> before = metrics.snapshot()
>>> step()
>>> d = metrics.snapshot().delta(before)
>>> d.compiles, d.compile_s, d.executions, d.fallbacks

What each backend reports:

* **XLA** (torch_xla, the emulator; read only when the process has already imported
  torch_xla, never imported here): the ``UncachedCompile`` and ``CachedCompile`` counters,
  the ``CompileTime``, ``ExecuteTime`` and ``TransferFromDeviceTime``/``TransferToDeviceTime``
  metrics, and one ``aten::<op>`` counter per ATen op that ran through the CPU fallback.
* **TorchTPU** (a real TPU, read only when ``torch_tpu`` is already loaded): its compilation
  cache's requests and hits from ``torch.tpu._get_cache_stats()`` (``num_cache_reqs``,
  ``num_cache_hits``); a miss is a compile.
* Anything else: nothing is counted and every count is ``None``.

:func:`snapshot` reads the counters once; :meth:`Snapshot.delta` subtracts an earlier reading.
``Target.compiles()``/``executions()``, ``RecompileMonitor`` and ``xlaport.ops.fallback_counts``
all read through here.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["Snapshot", "snapshot", "backend", "xla_loaded", "torch_tpu_loaded", "TIME_METRICS", "COUNTERS"]

Backend = Literal["xla", "torch_tpu", "none"]

# XLA counters read on every snapshot (cheap: one call each).
COUNTERS: tuple[str, ...] = ("UncachedCompile", "CachedCompile")
# XLA time metrics: (number of events, total seconds).
TIME_METRICS: tuple[str, ...] = ("CompileTime", "ExecuteTime", "TransferFromDeviceTime", "TransferToDeviceTime")


def xla_loaded() -> bool:
    """True when this process has imported torch_xla (nothing here imports it)."""
    return "torch_xla" in sys.modules


_TPU_HERE: bool | None = None  # the PCI scan's answer, once per process (a chip does not come and go)


def torch_tpu_loaded() -> bool:
    """True when this process has imported torch_tpu for a TPU it has (``xlaport.targets`` does, after a PCI scan).

    A torch_tpu that ``import torch`` autoloaded on a machine without a TPU (its ``torch.backends`` entry point;
    :func:`xlaport.detect.torch_tpu_autoloaded`) compiles nothing and counts nothing: it is not the backend here.
    """
    global _TPU_HERE
    if "torch_tpu" not in sys.modules:
        return False
    if _TPU_HERE is None:
        from . import detect

        _TPU_HERE = bool(detect.tpu_chips())
    return _TPU_HERE


def backend() -> Backend:
    """The backend whose counters :func:`snapshot` reads: ``"xla"``, ``"torch_tpu"`` or ``"none"``."""
    if xla_loaded():
        return "xla"
    if torch_tpu_loaded():
        return "torch_tpu"
    return "none"


@dataclass(frozen=True)
class Snapshot:
    """Backend counters at one moment, or (from :meth:`delta`) what happened between two.

    ``counters`` maps counter names to counts (XLA's own names; for TorchTPU ``CacheRequests`` and
    ``CacheHits``); ``times`` maps XLA time metrics to ``(events, seconds)``.
    """

    backend: Backend
    counters: Mapping[str, int] = field(default_factory=dict)
    times: Mapping[str, tuple[int, float]] = field(default_factory=dict)

    # ------------------------------------------------------------------ derived counts
    @property
    def compiles(self) -> int | None:
        """Programs compiled (XLA ``UncachedCompile``; TorchTPU cache misses); None where not counted."""
        if self.backend == "xla":
            return self.counters.get("UncachedCompile", 0)
        if self.backend == "torch_tpu":
            return self.counters.get("CacheRequests", 0) - self.counters.get("CacheHits", 0)
        return None

    @property
    def cached_compiles(self) -> int | None:
        """Compile requests served from the in-process cache (XLA ``CachedCompile``; TorchTPU hits)."""
        if self.backend == "xla":
            return self.counters.get("CachedCompile", 0)
        if self.backend == "torch_tpu":
            return self.counters.get("CacheHits", 0)
        return None

    @property
    def compile_s(self) -> float | None:
        """Seconds spent compiling (XLA ``CompileTime``); None where the backend does not say."""
        return self.times.get("CompileTime", (0, 0.0))[1] if self.backend == "xla" else None

    @property
    def executions(self) -> int | None:
        """Programs executed (XLA ``ExecuteTime`` events). Read with ``snapshot(wait=True)`` to be exact."""
        return self.times.get("ExecuteTime", (0, 0.0))[0] if self.backend == "xla" else None

    @property
    def transfers_from_device(self) -> int | None:
        """Device-to-host transfers (XLA ``TransferFromDeviceTime`` events): each one is a sync."""
        return self.times.get("TransferFromDeviceTime", (0, 0.0))[0] if self.backend == "xla" else None

    @property
    def fallbacks(self) -> dict[str, int]:
        """CPU fallbacks per ATen op (XLA's ``aten::*`` counters), non-zero ones only."""
        return {k: v for k, v in self.counters.items() if k.startswith("aten::") and v}

    def counter(self, name: str) -> int:
        """Any counter by name (0 when absent), e.g. ``"PersistentCacheHit"``."""
        return int(self.counters.get(name, 0))

    # ------------------------------------------------------------------ arithmetic
    def delta(self, earlier: Snapshot) -> Snapshot:
        """What happened since ``earlier``: every counter and time metric subtracted."""
        if not isinstance(earlier, Snapshot):
            raise ValueError(f"delta() needs an earlier Snapshot, got {type(earlier).__name__}")
        if earlier.backend != self.backend:
            raise ValueError(f"cannot subtract a {earlier.backend!r} snapshot from a {self.backend!r} one")
        counters = {k: v - earlier.counters.get(k, 0) for k, v in self.counters.items()}
        times = {}
        for k, (n, s) in self.times.items():
            n0, s0 = earlier.times.get(k, (0, 0.0))
            times[k] = (n - n0, s - s0)
        return Snapshot(self.backend, counters, times)

    def as_dict(self) -> dict[str, Any]:
        """The derived counts as a plain dict (for JSON, tables and glue)."""
        return {
            "backend": self.backend,
            "compiles": self.compiles,
            "cached_compiles": self.cached_compiles,
            "compile_s": self.compile_s,
            "executions": self.executions,
            "transfers_from_device": self.transfers_from_device,
            "fallbacks": self.fallbacks,
        }


def _xla_snapshot(wait: bool, fallbacks: bool, extra: Iterable[str], time_metrics: Iterable[str]) -> Snapshot:
    import torch_xla.debug.metrics as met

    if wait:
        import torch_xla.core.xla_model as xm

        # torch_xla records ExecuteTime from a completion callback that can run just after the results
        # are ready; waiting for device ops lets those callbacks finish (about 2 ms on XLA:CPU).
        xm.wait_device_ops()
    names: list[str] = [*COUNTERS, *extra]
    if fallbacks:
        names += [n for n in met.counter_names() if n.startswith("aten::")]
    counters = {n: int(met.counter_value(n) or 0) for n in names}
    times = {}
    for name in time_metrics:
        data = met.metric_data(name)
        times[name] = (int(data[0]), float(data[1]) * 1e-9) if data else (0, 0.0)
    return Snapshot("xla", counters, times)


def _torch_tpu_snapshot() -> Snapshot:
    import torch

    try:
        s = torch.tpu._get_cache_stats()  # type: ignore[attr-defined]
        counters = {"CacheRequests": int(s.num_cache_reqs), "CacheHits": int(s.num_cache_hits)}
    except Exception:  # an older or newer torch_tpu without this private call: nothing counted
        return Snapshot("none")
    return Snapshot("torch_tpu", counters)


def snapshot(
    *, wait: bool = False, fallbacks: bool = True, extra: Iterable[str] = (), times: Iterable[str] = TIME_METRICS
) -> Snapshot:
    """Read the backend's counters now. Never imports torch_xla or torch_tpu.

    ``wait=True`` (XLA) first waits for queued device work and its bookkeeping, so that
    ``executions`` is exact: call it outside a region you time. ``fallbacks=False`` skips the
    per-op ``aten::*`` counters (a little faster, for per-step reads). ``extra`` names more XLA
    counters to read, e.g. ``("PersistentCacheHit", "PersistentCacheMiss")``. ``times`` picks the time metrics
    read (each read also copies the metric's recent samples, so a per-step reader asks only for what it uses,
    e.g. ``times=("CompileTime",)``); a metric not read counts as zero.
    """
    if isinstance(extra, str) or isinstance(times, str):
        raise ValueError("extra and times take lists of names, not one string")
    kind = backend()
    if kind == "xla":
        return _xla_snapshot(wait, fallbacks, extra, times)
    if kind == "torch_tpu":
        return _torch_tpu_snapshot()
    return Snapshot("none")
