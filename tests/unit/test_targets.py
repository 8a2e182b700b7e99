"""Target selection for every case (detection monkeypatched), compile rules, and the no-libtpu guarantee."""

from __future__ import annotations

import sys
import textwrap
import types
import warnings

import pytest
import torch

from conftest import Runner
from xlaport import detect, targets
from xlaport.targets import target


@pytest.fixture
def nothing(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """A machine with no accelerator of any kind."""
    monkeypatch.setattr(detect, "tpu_chips", lambda *a, **k: [])
    monkeypatch.setattr(detect, "neuron_devices", lambda *a, **k: [])
    monkeypatch.setattr(detect, "neuron_importable", lambda: False)
    monkeypatch.setattr(detect, "cuda_available", lambda: False)
    return monkeypatch


@pytest.fixture
def emulator(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Stand in for the XLA device so selection tests do not import torch_xla."""
    calls: list[str] = []

    def fake() -> torch.device:
        calls.append("xla")
        return torch.device("cpu")

    monkeypatch.setattr(targets, "xla_device", fake)
    return calls


def test_auto_on_a_plain_machine_is_cpu(nothing: pytest.MonkeyPatch) -> None:
    t = target("auto")
    assert (t.name, t.device.type, t.emulated) == ("cpu", "cpu", False)


def test_auto_prefers_tpu_then_neuron_then_cuda(nothing: pytest.MonkeyPatch) -> None:
    chip = detect.TpuChip("0000:00:04.0", "v6e", "7")
    nothing.setattr(targets, "_real_device", lambda kind: torch.device("meta"))
    nothing.setitem(sys.modules, "torch_tpu", types.ModuleType("torch_tpu"))  # what a TPU VM would import
    nothing.setattr(detect, "cuda_available", lambda: True)
    nothing.setattr(torch.cuda, "get_device_name", lambda i=0: "FakeGPU")
    assert (target("auto").name, target("auto").emulated) == ("cuda", False)
    nothing.setattr(detect, "neuron_devices", lambda *a, **k: ["/dev/neuron0"])
    nothing.setattr(detect, "neuron_importable", lambda: True)
    assert (target("auto").name, target("auto").emulated) == ("neuron", False)
    nothing.setattr(detect, "tpu_chips", lambda *a, **k: [chip])
    t = target("auto")
    assert (t.name, t.emulated, t.backend) == ("tpu", False, "tpu")
    assert "v6e" in t.banner() and "(real)" in t.banner()


def test_neuron_devices_without_torch_neuronx_are_not_used(nothing: pytest.MonkeyPatch, emulator: list[str]) -> None:
    nothing.setattr(detect, "neuron_devices", lambda *a, **k: ["/dev/neuron0"])
    assert target("auto").name == "cpu"
    t = target("neuron")
    assert t.emulated and emulator == ["xla"]


def test_tpu_and_neuron_are_emulated_without_hardware(nothing: pytest.MonkeyPatch, emulator: list[str]) -> None:
    for name in ("tpu", "neuron"):
        t = target(name)
        assert t.emulated and t.name == name and t.backend == "openxla"
        assert "(emulated)" in t.banner() and t.profile.name == name
    assert emulator == ["xla", "xla"]


def test_emulation_can_be_refused(nothing: pytest.MonkeyPatch) -> None:
    with pytest.raises(RuntimeError, match="no TPU found"):
        target("tpu", allow_emulation=False)
    with pytest.raises(RuntimeError, match="no Trainium found"):
        target("neuron", allow_emulation=False)


def test_cuda_without_a_gpu_runs_on_cpu_and_says_so(nothing: pytest.MonkeyPatch) -> None:
    t = target("cuda")
    assert t.device.type == "cpu" and t.emulated
    assert "no CUDA device" in t.banner()


@pytest.mark.parametrize("bad", ["gpu", "", "TPU v6e", None, 3])
def test_unknown_target_is_a_one_line_error(bad: object) -> None:
    with pytest.raises(ValueError, match="unknown target") as e:
        target(bad)  # type: ignore[arg-type]
    assert "\n" not in str(e.value)


def test_target_names_are_case_insensitive(nothing: pytest.MonkeyPatch) -> None:
    assert target("CPU").name == "cpu"


def test_tpu_compile_rejects_dynamic_true_with_torchtpus_message(
    nothing: pytest.MonkeyPatch, emulator: list[str]
) -> None:
    t = target("tpu")
    with pytest.raises(NotImplementedError, match=r"TPU backend does not support torch.compile\(\.\.\., dynamic=True"):
        t.compile(lambda x: x, dynamic=True)


def test_compile_applies_profile_defaults(nothing: pytest.MonkeyPatch, emulator: list[str]) -> None:
    seen: dict[str, object] = {}

    def fake_compile(fn: object, **kw: object) -> object:
        backend = kw["backend"]  # a wrapped backend (e.g. storage-offset guards) names what it wraps
        kw["backend"] = getattr(backend, "inner_name", backend)
        seen.update(kw)
        return fn

    nothing.setattr(torch, "compile", fake_compile)
    target("tpu").compile(lambda x: x)
    assert seen == {"backend": "openxla", "dynamic": False}
    seen.clear()
    target("tpu").compile(lambda x: x, dynamic=None)  # the caller's choice wins where allowed
    assert seen["dynamic"] is None
    seen.clear()
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        target("neuron").compile(lambda x: x, mode="max-autotune")
    assert seen == {"backend": "openxla", "fullgraph": True, "dynamic": False}
    assert any("mode='max-autotune' ignored" in str(x.message) for x in w)
    seen.clear()
    target("cpu").compile(lambda x: x, mode="reduce-overhead")
    assert seen == {"backend": "inductor", "mode": "reduce-overhead"}


def test_detection_here_never_touches_torch_tpu_libtpu_or_the_network(fresh_python: Runner) -> None:
    """On this machine (no TPU): resolving every target imports neither torch_tpu nor libtpu, opens no socket."""
    code = textwrap.dedent(
        """
        import socket, sys
        def no_network(*a, **k):
            raise AssertionError("network access attempted")
        socket.socket.connect = no_network
        socket.create_connection = no_network
        import xlaport
        from xlaport import detect
        assert detect.tpu_chips() == [], "this test expects a machine without a TPU"
        for name in ("auto", "cpu", "cuda", "tpu", "neuron"):
            xlaport.target(name)
        bad = sorted(m for m in sys.modules if m.split(".")[0] in ("torch_tpu", "libtpu"))
        assert not bad, bad
        print("clean")
        """
    )
    out = fresh_python(code)
    assert "clean" in out.stdout, out.stdout


def test_emulated_target_really_compiles_on_xla(fresh_python: Runner) -> None:
    """End to end in a subprocess: an emulated tpu target compiles one program per shape, counted."""
    code = textwrap.dedent(
        """
        import torch, xlaport
        t = xlaport.target("tpu")
        f = t.compile(lambda x: (x * 2).sum())
        before = t.compiles()
        for n in (4, 4, 8):
            f(torch.ones(n, device=t.device)); t.sync()
        print("compiles", t.compiles() - before, t.device.type)
        """
    )
    out = fresh_python(code, fork=True)
    line = next(ln for ln in out.stdout.splitlines() if ln.startswith("compiles"))
    n, dev = int(line.split()[1]), line.split()[2]
    assert dev == "xla" and n >= 2, line  # shapes 4 and 8 need two programs


def test_emulated_sync_runs_the_pending_graph(fresh_python: Runner) -> None:
    """``Target.sync`` on XLA cuts the lazy graph and executes it (``torch_xla.sync(wait=True)``):
    afterwards the result is device data, not pending IR; ``Target.executions`` counts exactly that
    one program, and reading the value executes nothing more."""
    code = textwrap.dedent(
        """
        import torch, xlaport
        t = xlaport.target("tpu")
        import torch_xla
        x = torch.arange(6.0, device=t.device)
        t.sync()
        y = (x * 2 + 1).sum()
        pending = "aten::" in torch_xla._XLAC._get_xla_tensors_text([y])
        runs0 = t.executions()
        t.sync()
        runs1 = t.executions()
        done = "aten::" not in torch_xla._XLAC._get_xla_tensors_text([y])
        value = y.item()
        runs2 = t.executions()
        print("result", pending, runs1 - runs0, runs2 - runs1, value, done, xlaport.target("cpu").executions())
        """
    )
    out = fresh_python(code, fork=True)
    line = next(ln for ln in out.stdout.splitlines() if ln.startswith("result")).split()
    assert line[1] == "True", out.stdout  # before sync: y was a pending lazy graph
    assert int(line[2]) == 1, out.stdout  # sync executed exactly that graph
    assert line[5] == "True", out.stdout  # and left y as device data
    assert int(line[3]) == 0, out.stdout  # reading the value afterwards executed nothing
    assert float(line[4]) == 36.0, out.stdout  # sum(2x + 1) for x = 0..5
    assert line[6] == "None", out.stdout  # CPU has no execution counter


def test_a_chapter_need_the_target_cannot_meet_is_said_in_the_banner_and_stops_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The CPU target compiles no graphs; without torch_xla installed the torch_xla need fails too (as in a TorchTPU
    environment); each unmet need is one banner line and one part of CannotRunHere's one-line message."""
    import importlib.util

    import xlaport
    from xlaport.targets import CannotRunHere

    cpu = xlaport.target("cpu")
    needs = {"compiler": "the storm is a compile per shape", "torch_xla": "fix 4 reads its cache"}
    assert cpu.unmet({"torch_xla": "x"}) == {}  # installed here
    assert list(cpu.unmet(needs)) == ["compiler"]
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "torch_xla" else real(name, *a))
    lines = cpu.banner(needs=needs).splitlines()
    said = [ln for ln in lines if ln.startswith("[xlaport] this chapter cannot run here")]
    assert len(said) == 2 and "the storm is a compile per shape" in said[0] and "fix 4 reads its cache" in said[1]
    with pytest.raises(CannotRunHere) as e:
        cpu.require(needs)
    assert "\n" not in str(e.value) and "compiles whole graphs" in str(e.value) and "torch_xla" in str(e.value)
    assert cpu.banner() == lines[0]  # no needs, no extra lines
    with pytest.raises(ValueError, match="unknown need 'gpu'"):
        cpu.unmet({"gpu": "x"})
