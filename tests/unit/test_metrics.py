"""xlaport.metrics: one reader of backend counters, with deltas; never imports a backend itself."""

from __future__ import annotations

import json

import pytest

from conftest import Runner
from xlaport import metrics


def test_snapshot_arithmetic() -> None:
    a = metrics.Snapshot(
        "xla", {"UncachedCompile": 2, "aten::nonzero": 1}, {"CompileTime": (2, 1.5), "ExecuteTime": (3, 0.1)}
    )
    b = metrics.Snapshot(
        "xla",
        {"UncachedCompile": 5, "CachedCompile": 4, "aten::nonzero": 1, "aten::unique_dim": 2},
        {"CompileTime": (5, 4.0), "ExecuteTime": (10, 0.5), "TransferFromDeviceTime": (7, 0.2)},
    )
    d = b.delta(a)
    assert (d.compiles, d.cached_compiles, d.executions, d.transfers_from_device) == (3, 4, 7, 7)
    assert d.compile_s == pytest.approx(2.5)
    assert d.fallbacks == {"aten::unique_dim": 2}  # zero deltas are left out
    assert b.fallbacks == {"aten::nonzero": 1, "aten::unique_dim": 2}
    assert d.counter("CachedCompile") == 4 and d.counter("nope") == 0
    assert json.dumps(d.as_dict())  # plain data


def test_torch_tpu_counts_cache_misses() -> None:
    a = metrics.Snapshot("torch_tpu", {"CacheRequests": 3, "CacheHits": 1})
    b = metrics.Snapshot("torch_tpu", {"CacheRequests": 7, "CacheHits": 4})
    d = b.delta(a)
    assert (d.compiles, d.cached_compiles) == (1, 3)
    assert d.compile_s is None and d.executions is None and d.fallbacks == {}


def test_no_backend_counts_nothing() -> None:
    s = metrics.Snapshot("none")
    assert (s.compiles, s.cached_compiles, s.compile_s, s.executions, s.transfers_from_device) == (None,) * 5


def test_bad_delta_is_one_line_error() -> None:
    with pytest.raises(ValueError, match="earlier Snapshot"):
        metrics.Snapshot("xla").delta({})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="cannot subtract"):
        metrics.Snapshot("xla").delta(metrics.Snapshot("none"))
    with pytest.raises(ValueError, match="lists of names"):
        metrics.snapshot(extra="PersistentCacheHit")
    with pytest.raises(ValueError, match="lists of names"):
        metrics.snapshot(times="CompileTime")


def test_without_a_backend_nothing_is_imported(fresh_python: Runner) -> None:
    code = """
        import sys
        from xlaport import metrics
        s = metrics.snapshot(wait=True)
        assert s.backend == "none" and s.compiles is None, s
        assert not [m for m in sys.modules if m.startswith(("torch_xla", "torch_tpu"))]
        print("clean")
    """
    assert "clean" in fresh_python(code).stdout


def test_faked_torch_tpu_is_read_through_cache_stats(fresh_python: Runner) -> None:
    code = """
        import sys, types, torch
        stats = types.SimpleNamespace(num_cache_reqs=5, num_cache_hits=2)
        sys.modules["torch_tpu"] = types.ModuleType("torch_tpu")
        torch.tpu = types.SimpleNamespace(_get_cache_stats=lambda: stats)
        from xlaport import detect
        detect.tpu_chips = lambda *a, **k: ["a TPU"]   # a TPU VM: torch_tpu was imported for its chip
        from xlaport import metrics
        before = metrics.snapshot()
        stats.num_cache_reqs += 2
        print("result", before.backend, before.compiles, metrics.snapshot().delta(before).compiles)
    """
    assert fresh_python(code).stdout.split()[-4:] == ["result", "torch_tpu", "3", "2"]


def test_xla_counts_compiles_executions_and_fallbacks(fresh_python: Runner) -> None:
    """On XLA:CPU: a new shape compiles once, a repeat compiles nothing, torch.nonzero falls back to CPU."""
    code = """
        import json, torch, torch_xla
        from xlaport import metrics
        dev = torch_xla.device()
        def step(n):
            y = (torch.arange(n, device=dev) * 2 + 1).sum()
            torch_xla.sync(wait=True)
            return y
        s0 = metrics.snapshot(wait=True)
        step(5)
        s1 = metrics.snapshot(wait=True)
        step(5)
        s2 = metrics.snapshot(wait=True)
        torch.nonzero(torch.arange(6, device=dev) % 2).cpu()
        s3 = metrics.snapshot(wait=True)
        print(json.dumps([s1.delta(s0).as_dict(), s2.delta(s1).as_dict(), s3.delta(s2).fallbacks]))
    """
    first, again, fallbacks = json.loads(fresh_python(code, timeout=300, fork=True).stdout.strip().splitlines()[-1])
    assert first["backend"] == "xla" and first["compiles"] == 1 and first["executions"] == 1, first
    assert first["compile_s"] > 0
    assert again["compiles"] == 0 and again["executions"] == 1, again
    assert fallbacks.get("aten::nonzero", 0) >= 1, fallbacks


def test_an_autoloaded_torch_tpu_without_a_chip_is_not_the_backend(fresh_python: Runner) -> None:
    """``import torch`` autoloads torch_tpu wherever it is installed; on a machine without a TPU it counts nothing, so
    the counters are read as from no backend, not as TorchTPU cache misses that are always zero."""
    code = """
        import sys, types, torch
        sys.modules["torch_tpu"] = types.ModuleType("torch_tpu")
        torch.tpu = types.SimpleNamespace(_get_cache_stats=lambda: 1 / 0)   # never read
        from xlaport import detect, metrics
        detect.tpu_chips = lambda *a, **k: []
        s = metrics.snapshot()
        print("result", metrics.backend(), s.backend, s.compiles)
    """
    assert fresh_python(code).stdout.split()[-4:] == ["result", "none", "none", "None"]
