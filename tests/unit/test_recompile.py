"""RecompileMonitor: each source of compile events, reason parsing, verdicts, reports.

Anything that imports torch_xla runs in a subprocess: the import flips Dynamo's global
config (automatic dynamic shapes off) for the whole process, which would change other tests.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from conftest import Runner
from xlaport.recompile import (
    RecompileMonitor,
    StepRecord,
    describe_key_change,
    parse_reason,
    shape_key,
    step_costs,
)


def _run(fresh_python: Runner, code: str, timeout: int = 240, fork: bool = False) -> dict:
    """Run ``code`` in a fresh interpreter (``fork``: see conftest.run_python); its last stdout line is JSON."""
    return json.loads(fresh_python(code, timeout=timeout, fork=fork).stdout.strip().splitlines()[-1])


# ------------------------------------------------------------------ reason parsing
@pytest.mark.parametrize(
    "text,kind,clean",
    [
        (
            "0/7: tensor 'mel' size mismatch at index 2. expected 888, actual 961",
            "shape",
            "tensor 'mel' size mismatch at index 2. expected 888, actual 961",
        ),
        (
            "0/0: tensor 'x' dtype mismatch. expected Float, actual Double",
            "dtype",
            "tensor 'x' dtype mismatch. expected Float, actual Double",
        ),
        (
            "0/1: k == 1.0                                  # def f(x, k): ...  # t.py:3 in f",
            "python_constant",
            "k == 1.0",
        ),
        ("0/3: flag == True", "python_constant", "flag == True"),
        (
            "0/2: tensor 'x' stride mismatch at index 0. expected 1, actual 2",
            "stride",
            "tensor 'x' stride mismatch at index 0. expected 1, actual 2",
        ),
        (
            "0/4: tensor 'x' requires_grad mismatch. expected requires_grad=0",
            "requires_grad",
            "tensor 'x' requires_grad mismatch. expected requires_grad=0",
        ),
        ("0/5: x.storage_offset() == 3", "storage_offset", "x.storage_offset() == 3"),
        ("0/6: len(L['xs']) == 2", "length", "len(L['xs']) == 2"),
        ("0/6: ___check_obj_id(L['self'], 1403)", "object_identity", "___check_obj_id(L['self'], 1403)"),
        ("Unable to find recompilation reasons", "other", "Unable to find recompilation reasons"),
    ],
)
def test_parse_reason(text: str, kind: str, clean: str) -> None:
    assert parse_reason(text) == (kind, clean)


def test_parse_reason_rejects_non_string() -> None:
    with pytest.raises(ValueError, match="must be a string"):
        parse_reason(None)  # type: ignore[arg-type]


def test_shape_key_and_change() -> None:
    a = torch.zeros(2, 3)
    base = torch.zeros(10)
    k1, k2 = shape_key(a, 1.0), shape_key(torch.zeros(2, 4), 1.0)
    assert k1 != k2
    assert describe_key_change(k1, k2) == ("shape", "input 0 shape [2, 3] -> [2, 4]")
    assert describe_key_change(k1, shape_key(a.double(), 1.0))[0] == "dtype"
    assert describe_key_change(k1, shape_key(a, 2.0)) == ("python_constant", "input 1 value 1.0 -> 2.0")
    assert describe_key_change(shape_key(base[2:5]), shape_key(base[3:6]))[0] == "storage_offset"
    assert describe_key_change(k1, shape_key(a))[0] == "length"
    assert describe_key_change(k1, k1)[0] == "graph"
    assert describe_key_change(None, k1)[1].startswith("first step: float32[2, 3]")


# ------------------------------------------------------------------ argument checks
@pytest.mark.parametrize(
    "kwargs,msg",
    [
        ({"storm_window": 1}, "storm_window"),
        ({"storm_share": 1.5}, "storm_share"),
        ({"sync": 3}, "sync must be a callable"),
        ({"source": "gpu"}, "source must be one of"),
    ],
)
def test_bad_arguments(kwargs: dict, msg: str) -> None:
    with pytest.raises(ValueError, match=msg):
        RecompileMonitor(**kwargs)


def test_steps_do_not_nest_and_table_args() -> None:
    with RecompileMonitor() as mon:
        with mon.step():
            with pytest.raises(ValueError, match="does not nest"):
                with mon.step():
                    pass
        with pytest.raises(ValueError, match="max_rows"):
            mon.table(max_rows=0)


# ------------------------------------------------------------------ no compiler at all
def test_plain_eager_degrades_gracefully(fresh_python: Runner) -> None:
    """No compiler and no torch_xla (a fresh process): steps are recorded, compiles are 0, signals absent."""
    out = _run(
        fresh_python,
        """
        import json, math, sys, torch
        from xlaport.recompile import RecompileMonitor
        with RecompileMonitor("eager") as mon:
            for n in (3, 4, 5):
                x = torch.ones(n)
                with mon.step(x):
                    (x * 2).sum()
        s = mon.summary()
        r = mon.records[0]
        print(json.dumps({"source": s.source, "compiles": s.compiles, "steps": s.steps, "keys": s.distinct_keys,
                          "ratio_nan": math.isnan(s.ratio), "storm": bool(s.storm), "xla": r.xla_compiles,
                          "tpu": r.tpu_cache_misses, "imported": sorted(m for m in ("torch_xla", "torch_tpu") if m in sys.modules)}))
        """,
    )
    assert out == {
        "source": "dynamo",
        "compiles": 0,
        "steps": 3,
        "keys": 3,
        "ratio_nan": True,
        "storm": False,
        "xla": None,
        "tpu": None,
        "imported": [],
    }


# ------------------------------------------------------------------ Dynamo on CPU (no torch_xla)
def test_dynamo_cpu_shapes_constants_and_limit(fresh_python: Runner) -> None:
    out = _run(
        fresh_python,
        """
        import json, sys, torch
        from xlaport.recompile import RecompileMonitor
        res = {}
        @torch.compile(backend="eager", dynamic=False)
        def f(x):
            return x * 2 + 1
        with RecompileMonitor("eager") as mon:
            for n in range(1, 11):           # 10 sizes: 8 compiles, then the limit
                x = torch.ones(n)
                with mon.step(x):
                    f(x)
        s = mon.summary()
        res["eager"] = dict(compiles=s.compiles, limit=s.recompile_limit_hit, storm=s.storm,
                            kinds=[r.kinds for r in mon.records], per_step=[r.compiles for r in mon.records],
                            reason1=mon.records[1].reasons, verdict=s.verdict, compile_s=s.compile_s)
        @torch.compile(backend="aot_eager", dynamic=False)
        def g(x, k):
            return x * k
        with RecompileMonitor("aot") as mon:
            x = torch.ones(4)
            for k, xx in ((1.0, x), (2.0, x), (2.0, x.double()), (2.0, x)):
                with mon.step(xx, k):
                    g(xx, k)
        res["aot"] = dict(per_step=[r.compiles for r in mon.records], kinds=[r.kinds for r in mon.records],
                          reasons=[r.reasons for r in mon.records], ratio=mon.summary().ratio)
        res["xla_loaded"] = "torch_xla" in sys.modules
        print(json.dumps(res))
        """,
    )
    assert out["xla_loaded"] is False
    e = out["eager"]
    assert e["compiles"] == 8 and e["per_step"][:8] == [1] * 8 and e["per_step"][8:] == [0, 0]
    assert e["limit"] and e["storm"] and "recompile limit" in e["verdict"]
    assert e["kinds"][1] == ["shape"] and "size mismatch at index 0. expected 1, actual 2" in e["reason1"][0]
    assert e["kinds"][8] == ["shape", "shape"]  # the 9th size: its guard failure, then the limit warning
    assert e["compile_s"] > 0
    a = out["aot"]
    assert a["per_step"] == [1, 1, 1, 0]
    assert a["kinds"][1] == ["python_constant"] and a["reasons"][1] == [
        "k == 1.0"
    ]  # the guard that failed: it expected 1.0
    assert a["kinds"][2] == ["dtype"]
    # a compiling step against a cached one: measured 156x-528x for this function on a 2-core machine; a cached
    # step takes microseconds, so load moves the ratio a lot, and 20x still catches a compile that went missing
    assert a["ratio"] > 20, a["ratio"]


# ------------------------------------------------------------------ XLA lazy and openxla
def test_xla_lazy_and_openxla(fresh_python: Runner) -> None:
    out = _run(
        fresh_python,
        """
        import json, torch, torch_xla
        from xlaport.recompile import RecompileMonitor
        dev = torch_xla.device()
        res = {}
        with RecompileMonitor("lazy", sync=torch_xla.sync) as mon:
            for n in (3, 4, 3, 5, 3):
                x = torch.ones(n).to(dev)
                with mon.step(x):
                    y = x * 2 + 1
            res["lazy"] = dict(per_step=[r.compiles for r in mon.records], cached=[r.xla_cached for r in mon.records],
                               kinds=[r.kinds for r in mon.records], reasons=[r.reasons for r in mon.records],
                               source=mon.summary().source, distinct=mon.summary().distinct_keys,
                               compile_s=mon.summary().compile_s, overhead=mon.measure_overhead(100, (x,)),
                               steps_after_overhead=len(mon.records), cpu=[r.cpu_s for r in mon.records],
                               cpu_total=mon.summary().cpu_s)
        g = torch.compile(lambda x: x.sin() * 2, backend="openxla", dynamic=False)
        with RecompileMonitor("openxla", sync=torch_xla.sync) as mon:
            for n in (6, 7, 6):
                x = torch.ones(n).to(dev)
                with mon.step(x):
                    g(x)
            res["openxla"] = dict(xla=[r.xla_compiles for r in mon.records], dyn=[r.dynamo_compiles for r in mon.records],
                                  kinds=[r.kinds for r in mon.records], reasons=[r.reasons for r in mon.records])
        print(json.dumps(res))
        """,
        fork=True,
    )
    lz = out["lazy"]
    assert lz["source"] == "xla" and lz["per_step"] == [1, 1, 0, 1, 0] and lz["distinct"] == 3
    assert lz["cached"][2] >= 1 and lz["compile_s"] > 0
    assert lz["kinds"][1] == ["shape"] and lz["reasons"][1] == ["[inferred] input 0 shape [3] -> [4]"]
    assert lz["kinds"][2] == [] and lz["steps_after_overhead"] == 5
    assert lz["overhead"] < 1e-3, lz["overhead"]
    # every step's CPU time is measured, and the summary adds them up
    assert all(c > 0 for c in lz["cpu"]) and lz["cpu_total"] == pytest.approx(sum(lz["cpu"])), lz["cpu"]
    ox = out["openxla"]
    assert ox["dyn"] == [1, 1, 0] and ox["xla"][0] >= 1 and ox["xla"][1] >= 1 and ox["xla"][2] == 0
    assert ox["kinds"][1] == ["shape"] and "expected 6, actual 7" in ox["reasons"][1][0]


# ------------------------------------------------------------------ TorchTPU cache stats (faked package)
def test_torch_tpu_cache_stats(fresh_python: Runner) -> None:
    """With torch_tpu loaded (faked, in a fresh process without torch_xla), compiles are TorchTPU cache misses."""
    out = _run(
        fresh_python,
        """
        import json, sys, types, torch
        stats = types.SimpleNamespace(num_cache_reqs=0, num_cache_hits=0)
        sys.modules["torch_tpu"] = types.ModuleType("torch_tpu")
        torch.tpu = types.SimpleNamespace(_get_cache_stats=lambda: stats)
        from xlaport import detect
        detect.tpu_chips = lambda *a, **k: ["a TPU"]   # a TPU VM: torch_tpu was imported for its chip
        from xlaport.recompile import RecompileMonitor
        with RecompileMonitor("tpu") as mon:
            for miss in (True, False, True):
                with mon.step(key=("k", miss)):
                    stats.num_cache_reqs += 1
                    stats.num_cache_hits += 0 if miss else 1
        print(json.dumps({"compiles": [r.compiles for r in mon.records], "sources": sorted({r.source for r in mon.records}),
                          "compile_s": [mon.records[0].compile_s, mon.summary().compile_s]}))
        """,
    )
    assert out == {"compiles": [1, 0, 1], "sources": ["torch_tpu"], "compile_s": [None, None]}


def test_reports_table_rows_plot() -> None:
    import matplotlib

    matplotlib.use("Agg")
    with RecompileMonitor("demo", source="dynamo") as mon:
        for n in (2, 3):
            with mon.step(torch.ones(n), label=f"n={n}"):
                pass
    txt = mon.table()
    assert txt.splitlines()[0].split()[:2] == ["step", "wall"] and len(txt.splitlines()) == 4
    assert mon.rows()[1]["key"] == "float32[3]" and mon.rows()[1]["label"] == "n=3"
    ax = mon.plot()
    assert ax.get_ylabel() == "step wall time (ms)" and len(ax.lines) == 1
    # Two series on one Axes: each series' compile circles take its own colour; the legend sits under the data.
    import dataclasses

    import matplotlib.colors as mcolors
    import matplotlib.pyplot as plt

    mon.records[:] = [dataclasses.replace(r, compiles=1) for r in mon.records]  # as if both steps compiled
    ax = mon.plot()
    mon.plot(ax=ax, label="again", color="C2")
    rings = ax.collections
    assert len(rings) == 2, "each series circles its compiled steps"
    for line, ring in zip(ax.lines, rings):
        assert mcolors.same_color(ring.get_edgecolor()[0], line.get_color()), "compile circles in the series' colour"
    legend = ax.get_legend()
    texts = [t.get_text() for t in legend.get_texts()]
    assert texts == ["demo (2 compiled)", "again (2 compiled)", "circled: a step that compiled"], texts
    ax.figure.canvas.draw()
    # under the axes and their x label (so the figure keeps a phone column's width), never over the data
    assert legend.get_window_extent().y1 <= ax.xaxis.label.get_window_extent().y0, "legend drawn over the data"
    plt.close("all")
    mon.reset()
    assert mon.records == [] and mon.summary().steps == 0


def _pass(name: str, walls: list[float], compiled: list[bool], cpus: list[float] | None = None) -> RecompileMonitor:
    mon = RecompileMonitor(name, source="dynamo")
    cpus = cpus or walls
    mon.records[:] = [
        StepRecord(i, w, int(c), None, "dynamo", cpu_s=u) for i, (w, c, u) in enumerate(zip(walls, compiled, cpus))
    ]
    return mon


def test_step_costs_prices_a_compiling_step_against_the_best_cached_pass() -> None:
    storm = _pass("storm", [3.0, 1.0, 0.002, 2.0], [True, True, False, True])
    cached = [_pass("p2", [0.004, 0.002, 0.003], [False] * 3), _pass("p3", [0.001, 0.002, 0.009], [False] * 3)]
    cost = step_costs(storm, cached, clock="wall")
    assert cost.first_compile_s == 3.0 and cost.compile_step_s == 2.0  # median of the compiling steps only
    assert cost.pass_medians_s == (0.003, 0.002) and cost.cached_s == 0.002  # the best pass's median
    assert cost.ratio == pytest.approx(1000) and cost.first_ratio == pytest.approx(1500)
    assert str(cost).splitlines() == [
        "in wall time: compiling step (median) 2.00 s, cached step 2.00 ms (pass medians 3.00, 2.00 ms): 1000x",
        "first step 3.00 s: 1500x a cached step",
    ]


def test_step_costs_reads_cpu_time_by_default_where_a_busy_machine_stretches_wall_time() -> None:
    # A busy machine: the cached steps waited 2-5x their CPU time, the compiling steps 1.5x. Priced in wall time the
    # ratio falls from 500x to 300x; in CPU time it stays what the steps cost this process.
    storm = _pass("storm", [1.5, 1.5], [True, True], cpus=[1.0, 1.0])
    cached = [_pass("p2", [0.004, 0.005, 0.010], [False] * 3, cpus=[0.002, 0.002, 0.002])]
    assert step_costs(storm, cached).ratio == pytest.approx(500) and step_costs(storm, cached).clock == "cpu"
    assert step_costs(storm, cached, clock="wall").ratio == pytest.approx(300)
    assert str(step_costs(storm, cached)).startswith("in CPU time: ")
    with pytest.raises(ValueError, match="clock must be 'cpu' or 'wall'"):
        step_costs(storm, cached, clock="gpu")


def test_step_costs_rejects_what_it_cannot_price() -> None:
    cached = [_pass("p2", [0.002], [False])]
    with pytest.raises(ValueError, match="did not compile"):
        step_costs(_pass("no", [1.0, 2.0], [False, True]), cached)
    with pytest.raises(ValueError, match="did not compile"):
        step_costs(_pass("empty", [], []), cached)
    with pytest.raises(ValueError, match="at least one cached pass"):
        step_costs(_pass("storm", [1.0], [True]), [])
    with pytest.raises(ValueError, match="at least one cached pass"):
        step_costs(_pass("storm", [1.0], [True]), [_pass("empty", [], [])])
    with pytest.raises(ValueError, match="RecompileMonitor"):
        step_costs("storm", cached)  # type: ignore[arg-type]


# ------------------------------------------------------------------ persistent-cache check (argument handling)
def test_persistent_cache_check_rejects_bad_input(tmp_path: Path) -> None:
    from xlaport.recompile.persistent_cache import PersistentCacheCheck

    with pytest.raises(ValueError, match="frames"):
        PersistentCacheCheck(frames=2.5)  # type: ignore[arg-type]
    with PersistentCacheCheck(frames=100, cache_dir=tmp_path / "cache") as check:
        with pytest.raises(ValueError, match="no run 'cold'"):
            check.result("cold")
        with pytest.raises(ValueError, match="label"):
            check.start("")
    assert (tmp_path / "cache").is_dir()  # a directory the caller gave is left in place


def test_persistent_cache_check_really_compiles_and_writes(fresh_python: Runner) -> None:
    """Two fresh processes on XLA:CPU: the cold one compiles once and writes one entry; the warm one either loads
    it (a hit, no compile) or says why it could not (a deserialisation failure, then one compile), and never misses.
    As in recompile_storms, the cold run starts before the caller creates its target (which sets XLA_FLAGS and more
    in its environment) and the warm one after: both runs get the environment of the check's creation, else the
    warm run misses (XLA's options are part of the cache key; it did before the check took that copy)."""
    r = _run(
        fresh_python,
        """
        import json, os
        os.environ.pop("XLA_FLAGS", None)
        from xlaport.recompile.persistent_cache import PersistentCacheCheck
        with PersistentCacheCheck(frames=100) as check:
            check.start("cold")
            check.wait("cold")
            import xlaport
            xlaport.target("tpu")
            check.start("warm")
            cold, warm = check.result("cold"), check.result("warm")
        print(json.dumps({"cold": cold.__dict__, "warm": warm.__dict__, "flags": os.environ["XLA_FLAGS"]}))
        """,
        fork=True,
    )
    cold, warm = r["cold"], r["warm"]
    assert "--xla_backend_optimization_level=0" in r["flags"]  # the target did change this process's environment
    assert (cold["compiles"], cold["misses"], cold["hits"]) == (1, 1, 0), cold
    assert cold["files_after"] >= 1, cold
    assert warm["misses"] == 0, f"the warm run missed the cold run's entry: {warm}"
    if warm["hits"]:
        assert warm["compiles"] == 0 and warm["deserialize_failures"] == 0, warm
    else:
        assert warm["deserialize_failures"] == 1 and warm["compiles"] == 1 and warm["errors"], warm


# ------------------------------------------------------------------ the structured-trace contract with torch
def test_torch_still_reports_what_the_monitor_reads(fresh_python: Runner) -> None:
    """A real compile and recompile: the structured trace carries every field the monitor reads. When a newer torch
    renames one, this fails with the field's name and torch's version, not with a monitor that counts no compiles."""
    out = fresh_python(
        """
        import json
        from xlaport.recompile import dynamo_events as de
        print(json.dumps(de.contract_problems()))
        """
    )
    problems = json.loads(out.stdout.strip().splitlines()[-1])
    assert problems == [], "\n".join(problems)


def test_contract_names_a_missing_field(fresh_python: Runner) -> None:
    out = fresh_python(
        """
        import json
        from xlaport.recompile import dynamo_events as de
        de.METRICS_FIELDS = (*de.METRICS_FIELDS, "a_field_torch_never_had")
        print(json.dumps(de.contract_problems()))
        """
    )
    problems = json.loads(out.stdout.strip().splitlines()[-1])
    assert len(problems) == 1 and "'a_field_torch_never_had'" in problems[0] and "dynamo_events.py" in problems[0]


def test_events_from_records() -> None:
    from xlaport.recompile.dynamo_events import event_from_limit_warning, event_from_metrics

    ev = event_from_metrics(
        {"co_name": "f", "entire_frame_compile_time_s": 0.25, "recompile_reason": "0/1: x", "compile_id": "0/2"}
    )
    assert (ev.source, ev.seconds, ev.reason, ev.function, ev.compile_id) == ("dynamo", 0.25, "0/1: x", "f", "0/2")
    refused = event_from_metrics({"fail_type": "RecompileLimitExceeded", "recompile_reason": "0/7: y"})
    assert refused.source == "dynamo-failed" and refused.reason == "0/7: y"
    limit = event_from_limit_warning("torch._dynamo hit config.recompile_limit (8)\n   last reason: 0/7: tensor 'x'")
    assert limit is not None and limit.source == "dynamo-limit" and limit.reason == "0/7: tensor 'x'"
    assert event_from_limit_warning("something else") is None


def test_a_long_reason_is_cut_at_a_word_and_says_how_many_more() -> None:
    from xlaport.recompile.monitor import _clip

    reason = "recompile limit hit; last reason: tensor 'x' size mismatch at index 0. expected 8, actual 9"
    assert _clip(reason, 120) == reason  # the table's width keeps Dynamo's whole sentence
    cut = _clip(reason, 60)
    assert cut.endswith("…") and len(cut) <= 60 and reason.startswith(cut[:-1]) and not cut[:-1].endswith(" ")
    assert _clip("x" * 80, 10) == "x" * 9 + "…"
