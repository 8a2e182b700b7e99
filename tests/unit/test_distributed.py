"""xlaport.distributed: HLO collective counts, the process launcher, SPMD meshes, stream rules, the toy model."""

from __future__ import annotations

import json
import os
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
import torch

from conftest import Runner
from xlaport.distributed import hlo, streams, toy
from xlaport.distributed.launch import Job, call, free_ports, launch
from xlaport.distributed.mesh import cpu_devices_env, mesh_shape
from xlaport.profiles import profile
from xlaport.reference import data_text

# ---------------------------------------------------------------------------------------------- hlo

HLO = textwrap.dedent(
    """\
    HloModule SyncTensorsGraph.7, is_scheduled=true, entry_computation_layout={(f32[16,32]{1,0})->f32[]}

    %add.clone (x: f32[], y: f32[]) -> f32[] {
      %x = f32[] parameter(0)
      %y = f32[] parameter(1)
      ROOT %add = f32[] add(%x, %y)
    }

    %rs.body (p: f32[64,32]) -> f32[16,32] {
      %p = f32[64,32]{1,0} parameter(0)
      ROOT %reduce-scatter.9 = f32[16,32]{1,0} reduce-scatter(%p), channel_id=9, replica_groups={{0,1,2,3}}, dimensions={0}, to_apply=%add.clone
    }

    ENTRY %SyncTensorsGraph.7 (p0: f32[16,32]) -> f32[] {
      %p0 = f32[16,32]{1,0} parameter(0)
      %all-gather = f32[64,32]{1,0} all-gather(%p0), channel_id=1, replica_groups={{0,1,2,3}}, dimensions={0}, use_global_device_ids=true
      %all-gather-start.2 = (f32[16]{0}, f32[64]{0}) all-gather-start(%p1), channel_id=2, replica_groups=[1,4]<=[4], dimensions={0}
      %all-gather-done.2 = f32[64]{0} all-gather-done(%all-gather-start.2)
      %all-reduce.1 = f32[] all-reduce(%s), channel_id=3, replica_groups={{0,1,2,3}}, to_apply=%add.clone
      %all-reduce.2 = (f32[2]{0}, f32[3]{0}) all-reduce(%a, %b), channel_id=4, replica_groups={{0,1},{2,3}}, to_apply=%add.clone
      %async-start = ((f32[64,32]{1,0}), f32[16,32]{1,0}) async-start(%all-gather), calls=%rs.body
      %async-done = f32[16,32]{1,0} async-done(%async-start)
      %cp = f32[16,32]{1,0} collective-permute(%p0), source_target_pairs={{0,1},{1,0}}
      ROOT %r = f32[] add(%x0, %y0)
    }
    """
)


def test_collectives_counts_sync_async_and_wrapped_ops() -> None:
    c = hlo.collectives(HLO)
    assert c.module == "SyncTensorsGraph.7"
    assert c.counts == {
        "all-gather": 2,
        "all-reduce": 2,
        "reduce-scatter": 1,
        "all-to-all": 0,
        "collective-permute": 1,
        "collective-broadcast": 0,
        "send": 0,
        "recv": 0,
    }
    gathers = c.of("all-gather")
    assert [g.is_async for g in gathers] == [False, True]
    assert gathers[0].dims == (64, 32) and gathers[0].dimensions == (0,)
    assert gathers[0].replica_groups == "{{0,1,2,3}}"
    (rs,) = c.of("reduce-scatter")
    assert rs.is_async and rs.dims == (16, 32)  # counted at the async-start, once
    scalar, tup = c.of("all-reduce")
    assert scalar.dims == () and tup.dims == ()  # a scalar and a tuple have no single shape
    assert tup.replica_groups == "{{0,1},{2,3}}"
    assert c.total == 6


def test_collectives_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="HLO text"):
        hlo.collectives(b"HloModule x")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown collective 'all-gathers'"):
        hlo.collectives(HLO).count("all-gathers")
    assert hlo.collectives("HloModule empty\n").counts["all-gather"] == 0


def test_read_dump_reads_only_optimized_modules(tmp_path: Path) -> None:
    (tmp_path / "module_0000.SyncTensorsGraph.7.cpu_after_optimizations.txt").write_text(HLO)
    (tmp_path / "module_0000.SyncTensorsGraph.7.cpu_after_optimizations-buffer-assignment.txt").write_text(HLO)
    (tmp_path / "module_0000.SyncTensorsGraph.7.before_optimizations.txt").write_text(HLO)
    (tmp_path / "module_0001.SyncTensorsGraph.9.cpu_after_optimizations.txt").write_text("HloModule m\n")
    found = hlo.read_dump(tmp_path)
    assert list(found) == ["module_0000.SyncTensorsGraph.7", "module_0001.SyncTensorsGraph.9"]
    assert found["module_0000.SyncTensorsGraph.7"].counts["all-gather"] == 2
    assert list(hlo.read_dump(tmp_path, modules=["module_0001"])) == ["module_0001.SyncTensorsGraph.9"]
    with pytest.raises(ValueError, match="no XLA dump directory"):
        hlo.read_dump(tmp_path / "missing")


def test_dump_flags() -> None:
    assert hlo.dump_flags("/tmp/d") == "--xla_dump_to=/tmp/d --xla_dump_hlo_as_text"
    assert hlo.dump_flags("/tmp/d", "--xla_foo=1").startswith("--xla_foo=1 --xla_dump_to=/tmp/d")
    with pytest.raises(ValueError, match="without spaces"):
        hlo.dump_flags("/tmp/my dump")


# ---------------------------------------------------------------------------------------------- launch


def report(rank: int, world_size: int, tag: str) -> dict[str, object]:
    import os

    return {"rank": rank, "world": world_size, "tag": tag, "port": os.environ["MASTER_PORT"], "pid": os.getpid()}


def second(rank: int, world_size: int) -> int:
    import os

    return int(os.environ["MASTER_PORT"])


def fail_on_one(rank: int, world_size: int) -> None:
    import sys
    import time

    if rank == 1:
        print("rank one gives up", file=sys.stderr)
        raise SystemExit(3)
    time.sleep(60)  # a rank waiting forever, as one stuck in a collective would


def sleeper(rank: int, world_size: int, pidfile: str) -> None:
    import os
    import time

    with open(f"{pidfile}.{rank}", "w") as f:
        f.write(str(os.getpid()))
    time.sleep(60)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/status")
    return not (status.exists() and "State:\tZ" in status.read_text())


def test_launch_runs_each_call_on_every_rank_with_its_own_port() -> None:
    job = launch(call(report, tag="a"), call(second), nprocs=2, timeout_s=60)
    assert isinstance(job, Job)
    results = job.result()
    assert [r["report"]["rank"] for r in results] == [0, 1]
    assert {r["report"]["world"] for r in results} == {2}
    assert {r["report"]["tag"] for r in results} == {"a"}
    assert len({r["report"]["pid"] for r in results}) == 2  # separate processes
    assert results[0]["report"]["port"] == results[1]["report"]["port"]  # one rendezvous per call
    assert int(results[0]["report"]["port"]) != results[0]["second"]  # a fresh port for the next call
    assert job.wall_s is not None and not job.running
    assert not job._dir.exists()  # files removed
    assert job.result() is results  # cached


def test_launch_failure_kills_the_other_ranks_and_reports_stderr() -> None:
    job = launch(call(fail_on_one), nprocs=2, timeout_s=60)
    start = time.monotonic()
    with pytest.raises(RuntimeError, match=r"rank 1 of 2 exited with status 3:\n.*rank one gives up"):
        job.result()
    assert time.monotonic() - start < 30, "the waiting rank was not killed"
    assert not job.running and not job._dir.exists()
    with pytest.raises(RuntimeError):  # the error is kept
        job.result()


def test_launch_timeout_kills_everything(tmp_path: Path) -> None:
    pidfile = str(tmp_path / "pid")
    job = launch(call(sleeper, pidfile=pidfile), nprocs=2, timeout_s=1)
    with pytest.raises(TimeoutError, match=r"still running after 1 s"):
        job.result()
    pids = [int(Path(f"{pidfile}.{r}").read_text()) for r in range(2)]
    assert not any(_alive(p) for p in pids), "a timed-out rank is still alive"


def test_launch_context_manager_cleans_up(tmp_path: Path) -> None:
    pidfile = str(tmp_path / "pid")
    with launch(call(sleeper, pidfile=pidfile), nprocs=1, timeout_s=60) as job:
        for _ in range(200):
            if Path(f"{pidfile}.0").exists():
                break
            time.sleep(0.05)
        assert job.running
    assert not job.running and not job._dir.exists()


def test_launch_and_call_reject_bad_input() -> None:
    with pytest.raises(ValueError, match="not a lambda"):
        call(lambda rank, world: 0)
    offset = 3

    def closure(rank: int, world_size: int) -> int:
        return rank + offset

    with pytest.raises(ValueError, match="closure over offset"):
        call(closure)
    with pytest.raises(ValueError, match="plain function"):
        call(print)
    with pytest.raises(ValueError, match="JSON-serialisable"):
        call(report, tag=object())
    with pytest.raises(ValueError, match="at least one call"):
        launch(nprocs=2)
    with pytest.raises(ValueError, match="pass call"):
        launch(report, nprocs=2)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="called once per launch"):
        launch(call(second), call(second), nprocs=1)
    for bad in (0, 1.5, "two"):
        with pytest.raises(ValueError, match="nprocs"):
            launch(call(second), nprocs=bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="at most 64"):
        launch(call(second), nprocs=65)
    with pytest.raises(ValueError, match="timeout_s must be > 0"):
        launch(call(second), nprocs=1, timeout_s=0)
    with pytest.raises(ValueError, match="env must map names to strings"):
        launch(call(second), nprocs=1, env={"OMP_NUM_THREADS": 1})  # type: ignore[dict-item]


def test_free_ports() -> None:
    ports = free_ports(3)
    assert len(set(ports)) == 3 and all(0 < p < 65536 for p in ports)
    with pytest.raises(ValueError, match="n must be"):
        free_ports(0)


# ---------------------------------------------------------------------------------------------- mesh


def test_cpu_devices_env_and_mesh_shape(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("XLA_FLAGS", raising=False)
    monkeypatch.delenv("XLAPORT_XLA_CPU_OPT", raising=False)
    fast = "--xla_backend_optimization_level=0"
    assert cpu_devices_env(4) == {"PJRT_DEVICE": "CPU", "CPU_NUM_DEVICES": "4", "XLA_FLAGS": fast}
    monkeypatch.setenv("XLAPORT_XLA_CPU_OPT", "default")
    assert cpu_devices_env(4) == {"PJRT_DEVICE": "CPU", "CPU_NUM_DEVICES": "4"}
    with pytest.raises(ValueError, match="n must be"):
        cpu_devices_env(0)
    assert mesh_shape(4) == (4, 1)
    assert mesh_shape(8, (2, 4)) == (2, 4)
    assert mesh_shape(4, axes=("fsdp",)) == (4,)
    with pytest.raises(ValueError, match="holds 6 devices, but there are 4"):
        mesh_shape(4, (2, 3))
    with pytest.raises(ValueError, match="2 dims but 3 axis names"):
        mesh_shape(4, (4, 1), axes=("a", "b", "c"))
    with pytest.raises(ValueError, match="distinct non-empty names"):
        mesh_shape(4, axes=("fsdp", "fsdp"))


def test_spmd_mesh_and_shards_on_four_emulated_devices(fresh_python: Runner) -> None:
    out = fresh_python(
        """
        import json
        import torch_xla
        from torch_xla.experimental.spmd_fully_sharded_data_parallel import SpmdFullyShardedDataParallel
        from xlaport.distributed.mesh import shard_table, spmd_mesh
        from xlaport.distributed.toy import mlp

        mesh = spmd_mesh(4)
        model = SpmdFullyShardedDataParallel(mlp(0).to(torch_xla.device()))
        rows = [[r.name, list(r.shape), r.spec, [list(s) for s in r.shard_shapes], list(r.bytes_per_device), r.sharded]
                for r in shard_table(model)]
        print(json.dumps({"axes": list(mesh.axis_names), "shape": list(mesh.mesh_shape), "rows": rows}))
        """,
        env=cpu_devices_env(4),
    )
    d = json.loads(out.stdout.strip().splitlines()[-1])
    assert d["axes"] == ["fsdp", "model"] and d["shape"] == [4, 1]
    by_name = {r[0].removeprefix("_orig_module."): r for r in d["rows"]}
    assert set(by_name) == {"0.weight", "0.bias", "2.weight", "2.bias"}
    for name, shape, spec, shards, nbytes, sharded in by_name.values():
        elements = 1
        for s in shape:
            elements *= s
        assert sharded and len(shards) == 4, name
        assert nbytes == [elements // 4 * 4] * 4, f"{name}: a quarter of the float32 parameter on each device"
        assert len(set(map(tuple, shards))) == 1, name
        assert spec.startswith("{devices=["), spec
    assert by_name["2.weight"][3][0] == [8, 16]  # FSDPv2 shards the largest dimension


def test_spmd_mesh_names_cpu_num_devices_when_the_count_is_wrong(fresh_python: Runner) -> None:
    out = fresh_python(
        """
        from xlaport.distributed.mesh import spmd_mesh
        try:
            spmd_mesh(4)
        except ValueError as e:
            print("ERR", e)
        """,
        env=cpu_devices_env(2),
    )
    assert "ERR torch_xla sees 2 device(s), not 4" in out.stdout and "CPU_NUM_DEVICES=4" in out.stdout


# ---------------------------------------------------------------------------------------------- streams


class _FakeTarget:
    def __init__(self, name: str, device: str) -> None:
        self.profile = profile(name)
        self.device = torch.device(device)
        self.synced = 0

    def sync(self) -> None:
        self.synced += 1


def _run(dm: streams.EmulatedStreams) -> dict[str, streams.Attempt]:
    side = dm.Stream()
    start, end = dm.Event(enable_timing=True), dm.Event(enable_timing=True)
    start.record()

    def in_stream() -> str:
        with dm.stream(side):
            return "ran"

    def finish() -> None:
        end.record()
        end.synchronize()

    seen = {
        "stream": streams.attempt(dm, in_stream),
        "current_stream": streams.attempt(dm, lambda: dm.current_stream()),
        "synchronize": streams.attempt(dm, lambda: dm.synchronize()),
        "Stream.wait_stream": streams.attempt(dm, lambda: side.wait_stream(dm.default_stream())),
        "Event.wait": streams.attempt(dm, lambda: start.wait()),
        "Stream.query": streams.attempt(dm, lambda: side.query()),
        "Stream.priority_range": streams.attempt(dm, lambda: side.priority_range()),
        "Event.ipc_handle": streams.attempt(dm, lambda: start.ipc_handle()),
        "Event.synchronize": streams.attempt(dm, finish),
        "Event.elapsed_time": streams.attempt(dm, lambda: start.elapsed_time(end)),
    }
    return seen


def test_emulated_tpu_streams_follow_torchtpu() -> None:
    t = _FakeTarget("tpu", "xla")
    dm = streams.stream_api(t)
    assert isinstance(dm, streams.EmulatedStreams) and "emulated" in dm.kind
    seen = _run(dm)
    assert seen["stream"].outcome == "no-op" and seen["stream"].value == "ran"
    assert seen["Stream.wait_stream"].outcome == "no-op" and seen["Event.wait"].outcome == "no-op"
    msg = "Streams and Events are not fully implemented in TorchTPU. Please file a feature request describing your use case."
    for call_name in ("Stream.query", "Stream.priority_range", "Event.ipc_handle"):
        assert (seen[call_name].outcome, seen[call_name].error, seen[call_name].message) == (
            "raises",
            "NotImplementedError",
            msg,
        )
    current, sync = seen["current_stream"].message or "", seen["synchronize"].message or ""
    assert seen["current_stream"].error == "RuntimeError"
    assert current.startswith("current_stream is internal to TorchTPU")
    assert current.endswith("Use torch.accelerator.current_stream instead.")
    assert sync.endswith("Use torch.accelerator.synchronize instead.")
    assert seen["Event.elapsed_time"].outcome == "host-timed" and seen["Event.elapsed_time"].value >= 0
    assert seen["Event.synchronize"].outcome == "works" and t.synced >= 1
    for call_name, a in seen.items():
        ok, why = streams.agrees(t.profile, dm, call_name, a)
        assert ok, f"{call_name}: {why}"


def test_stream_context_switches_only_where_the_rules_let_it() -> None:
    neuron = streams.stream_api(_FakeTarget("neuron", "xla"))
    side = neuron.Stream()
    with neuron.stream(side):
        assert neuron.current_stream() is side  # TorchNeuron documents working streams
    assert neuron.current_stream() is not side
    cpu = streams.stream_api(_FakeTarget("cpu", "cpu"))
    assert isinstance(cpu, streams.EmulatedStreams) and "no stream rules" in cpu.kind
    assert {a.outcome for a in _run(cpu).values()} - {"works"} == {"raises"}  # only the emulator's missing IPC


def test_tpu_stream_rules_agree_with_the_wheels_api_surface() -> None:
    surface = json.loads(data_text("torch_tpu-0.2.0-api-surface.json"))
    p = profile("tpu")
    raising = {c for r in p.of_kind("stream_api") if r.extra["behaviour"] == "raises" for c in r.extra["names"]}
    wheel = {
        f"{cls.removeprefix('Tpu')}.{m}"
        for cls in ("TpuStream", "TpuEvent")
        for m in surface["streams"][cls]["raises_not_implemented"]
    }
    assert raising == wheel
    assert "wait" in surface["streams"]["TpuEvent"]["no_op"] and streams.behaviour(p, "Event.wait").outcome == "no-op"
    assert (
        surface["streams"]["TpuStreamContext"]["non_functional"] and streams.behaviour(p, "stream").outcome == "no-op"
    )
    legacy = {n for n, v in surface["device_module_stages"].items() if v.get("internal_from_torch") == "2.11"}
    for call_name in ("current_stream", "set_stream", "synchronize"):
        assert call_name in legacy and streams.behaviour(p, call_name).error == "RuntimeError"


def test_stream_rules_are_well_formed() -> None:
    for name in ("tpu", "neuron"):
        for r in profile(name).of_kind("stream_api"):
            assert set(r.extra["names"]) <= set(streams.STREAM_CALLS), f"{name}/{r.id}: unknown calls"
            assert r.extra["behaviour"] in streams.OUTCOMES, f"{name}/{r.id}"
            if r.extra["behaviour"] == "raises":
                assert r.error and r.message, f"{name}/{r.id}: a raising rule needs error and message"
    assert all(streams.behaviour(profile("cpu"), c).rule is None for c in streams.STREAM_CALLS)


def test_agrees_catches_wrong_outcomes_and_messages() -> None:
    p = profile("tpu")
    dm = streams.EmulatedStreams(p)
    right = streams.Attempt("raises", "NotImplementedError", p.rule("stream-query-raises").message)
    assert streams.agrees(p, dm, "Stream.query", right)[0]
    assert not streams.agrees(p, dm, "Stream.query", streams.Attempt("raises", "NotImplementedError", "other"))[0]
    assert not streams.agrees(p, dm, "Stream.query", streams.Attempt("works"))[0]
    assert not streams.agrees(p, dm, "stream", streams.Attempt("works"))[0]  # the emulator must show the no-op
    assert streams.agrees(p, object(), "stream", streams.Attempt("works"))[0]  # a real module cannot
    with pytest.raises(ValueError, match="unknown stream call"):
        streams.agrees(p, dm, "Stream.launch", right)
    with pytest.raises(ValueError, match="unknown stream call"):
        streams.behaviour(p, "bogus")


def test_stream_api_and_events_reject_bad_use() -> None:
    with pytest.raises(ValueError, match="needs an xlaport Target"):
        streams.stream_api("tpu")
    dm = streams.EmulatedStreams(profile("neuron"))
    a, b = dm.Event(), dm.Event()
    a.record()
    b.record()
    with pytest.raises(ValueError, match="enable_timing"):
        a.elapsed_time(b)
    c, d = dm.Event(enable_timing=True), dm.Event(enable_timing=True)
    with pytest.raises(ValueError, match="record both events"):
        c.elapsed_time(d)
    cpu_stream: Any = torch.cpu.Stream()  # torch.cpu's Stream exists for device-generic code and has no query()
    assert streams.attempt(torch.cpu, lambda: cpu_stream.query()).error == "AttributeError"


# ---------------------------------------------------------------------------------------------- profiles


def test_distributed_rules_cover_both_targets() -> None:
    statuses = {"supported", "experimental", "placeholder", "absent"}
    ids = {}
    for name in ("tpu", "neuron"):
        rules = profile(name).of_kind("distributed")
        ids[name] = {r.id for r in rules}
        for r in rules:
            assert r.extra["status"] in statuses, f"{name}/{r.id}: status {r.extra['status']!r}"
            assert r.extra.get("feature") and r.extra.get("advice"), f"{name}/{r.id}: feature and advice needed"
    assert ids["tpu"] == ids["neuron"] and len(ids["tpu"]) >= 5
    assert profile("tpu").rule("dist-stream-overlap").extra["status"] == "placeholder"
    assert profile("neuron").rule("dist-pipeline").extra["status"] == "supported"


def test_new_rule_kinds_are_documented_in_the_data_file() -> None:
    header = data_text("profiles.toml").split("\n[", 1)[0]
    for kind in ("stream_api", "distributed"):
        assert f"#   {kind}" in header, f"rule kind {kind} is not described in profiles.toml's header"


# ---------------------------------------------------------------------------------------------- toy


def test_toy_model_and_batches_are_deterministic_and_leave_the_global_rng_alone() -> None:
    torch.manual_seed(123)
    before = torch.rand(3)
    torch.manual_seed(123)
    a, b = toy.mlp(1), toy.mlp(1)
    after = torch.rand(3)
    assert torch.equal(before, after), "mlp() moved the global generator"
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))
    assert not torch.equal(next(toy.mlp(2).parameters()), next(a.parameters()))
    x, y = toy.teacher_batches(steps=3, batch=8, seed=0)
    assert x.shape == (3, 8, toy.FEATURES) and y.shape == (3, 8) and int(y.max()) < toy.CLASSES
    x2, y2 = toy.teacher_batches(steps=3, batch=8, seed=0)
    assert torch.equal(x, x2) and torch.equal(y, y2)


def test_sgd_reference_learns() -> None:
    x, y = toy.teacher_batches(steps=10, batch=64, seed=0)
    losses = toy.sgd_reference(x, y, seed=0, lr=1.0)
    assert len(losses) == 10 and sum(losses[-3:]) < sum(losses[:3]) - 0.3


def test_toy_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="seed must be"):
        toy.mlp(-1)
    with pytest.raises(ValueError, match="steps must be"):
        toy.teacher_batches(0, 8, 0)
    with pytest.raises(ValueError, match=r"x must be \(steps, batch, features\)"):
        toy.sgd_reference(torch.zeros(4, 32), torch.zeros(4, dtype=torch.long), 0, 0.1)
    x, y = toy.teacher_batches(2, 8, 0)
    with pytest.raises(ValueError, match="lr must be > 0"):
        toy.sgd_reference(x, y, 0, 0)
    with pytest.raises(ValueError, match="more than classes=2"):
        toy.sgd_reference(x, y, 0, 0.1, classes=2)


def test_fsdp_layout_arithmetic_rejects_bad_input() -> None:
    from xlaport.distributed.mesh import fsdp_bytes_per_device, largest_parameter

    shapes = {"w": (8, 4), "b": (4,)}
    assert largest_parameter(shapes) == 32 and fsdp_bytes_per_device(shapes, 2, 1) == 4 * 4 + 2
    with pytest.raises(ValueError, match="n_devices must be a whole number"):
        fsdp_bytes_per_device(shapes, 2.5)
    with pytest.raises(ValueError, match="dimensions must be positive"):
        fsdp_bytes_per_device({"w": (0, 4)}, 2)
    with pytest.raises(ValueError, match="no parameter shapes"):
        largest_parameter({})


def test_digests_tell_tensors_apart_by_a_single_bit() -> None:
    from xlaport.distributed.toy import digests

    a = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    b = a.clone()
    b.view(torch.int32)[0, 0] ^= 1  # one bit of one element
    assert digests({"w": a}) == digests({"w": a.clone()})
    assert digests({"w": a}) != digests({"w": b})


def test_fsdp2_mlp_needs_a_process_group() -> None:
    from xlaport.distributed.toy import fsdp2_mlp

    with pytest.raises(ValueError, match="needs a process group"):
        fsdp2_mlp(0)
