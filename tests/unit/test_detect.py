"""Accelerator detection reads sysfs and /dev only: fake trees stand in for real machines."""

from __future__ import annotations

import os
import sys
import types
from pathlib import Path

import pytest
import torch

from conftest import Runner
from xlaport import detect, targets


def _pci(root: Path, addr: str, vendor: int, device: int, group: str | None) -> None:
    d = root / "sys" / addr
    d.mkdir(parents=True)
    (d / "vendor").write_text(f"0x{vendor:04x}\n")
    (d / "device").write_text(f"0x{device:04x}\n")
    if group is not None:
        g = root / "groups" / group
        g.mkdir(parents=True, exist_ok=True)
        os.symlink(g, d / "iommu_group")


def test_tpu_found_only_with_google_vendor_known_device_and_vfio(tmp_path: Path) -> None:
    (tmp_path / "dev" / "vfio").mkdir(parents=True)
    (tmp_path / "dev" / "vfio" / "7").touch()
    _pci(tmp_path, "0000:00:04.0", 0x1AE0, 0x006F, "7")  # v6e behind VFIO: found
    _pci(tmp_path, "0000:00:05.0", 0x1AE0, 0x006F, "8")  # no /dev/vfio/8: not usable
    _pci(tmp_path, "0000:00:06.0", 0x1AE0, 0x0027, "7")  # a Google device that is not a TPU torch_tpu knows
    _pci(tmp_path, "0000:00:07.0", 0x10DE, 0x2330, "7")  # an NVIDIA GPU
    _pci(tmp_path, "0000:00:08.0", 0x10DE, 0x005E, "7")  # v4's device id under another vendor
    _pci(tmp_path, "0000:00:09.0", 0x1AE0, 0x0062, None)  # no iommu_group link
    chips = detect.tpu_chips(tmp_path / "sys", tmp_path / "dev")
    assert [(c.pci_address, c.generation, c.vfio_group) for c in chips] == [("0000:00:04.0", "v6e", "7")]


# (PCI device id, generation, announced by TorchTPU): the wheel's table, v4 included but not announced.
GENERATIONS = [(0x005E, "v4", False), (0x0062, "v5p", True), (0x0063, "v5e", True), (0x006F, "v6e", True)]
GENERATIONS.append((0x0076, "v7x", True))


@pytest.mark.parametrize(("device", "generation", "announced"), GENERATIONS)
def test_each_tpu_generation_is_found(tmp_path: Path, device: int, generation: str, announced: bool) -> None:
    (tmp_path / "dev" / "vfio").mkdir(parents=True)
    (tmp_path / "dev" / "vfio" / "3").touch()
    _pci(tmp_path, "0000:00:04.0", 0x1AE0, device, "3")
    _pci(tmp_path, "0000:00:05.0", 0x1AE0, device, "3")  # a second chip in the same group
    chips = detect.tpu_chips(tmp_path / "sys", tmp_path / "dev")
    assert [c.generation for c in chips] == [generation, generation]
    assert all(c.announced is announced for c in chips)


def test_tpu_generations_are_the_wheels_and_announced_ones_are_a_subset() -> None:
    assert {g for _, g, _ in GENERATIONS} == set(detect.TPU_PCI_DEVICES.values())
    assert {"v5e", "v5p", "v6e", "v7x"} == detect.TORCHTPU_ANNOUNCED
    assert set(detect.TPU_PCI_DEVICES.values()) > detect.TORCHTPU_ANNOUNCED
    assert "https://" in detect.TORCHTPU_ANNOUNCED_SOURCE


@pytest.mark.parametrize(("device", "generation", "announced"), GENERATIONS)
def test_banner_says_when_a_found_chip_is_outside_the_announced_list(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, device: int, generation: str, announced: bool
) -> None:
    """The real-TPU path on a fake sysfs tree: torch_tpu is imported only after the scan finds a chip."""
    (tmp_path / "dev" / "vfio").mkdir(parents=True)
    (tmp_path / "dev" / "vfio" / "3").touch()
    scan = detect.tpu_chips
    monkeypatch.setattr(detect, "tpu_chips", lambda: scan(tmp_path / "sys", tmp_path / "dev"))
    monkeypatch.setattr(targets, "_real_device", lambda p: torch.device("meta"))
    monkeypatch.delitem(sys.modules, "torch_tpu", raising=False)
    monkeypatch.setattr(targets, "xla_device", lambda: torch.device("cpu"))  # the emulator, without torch_xla
    assert targets.target("tpu").emulated and "torch_tpu" not in sys.modules  # no chip yet: nothing imported
    _pci(tmp_path, "0000:00:04.0", 0x1AE0, device, "3")
    monkeypatch.setitem(sys.modules, "torch_tpu", types.ModuleType("torch_tpu"))  # what a TPU VM would import
    monkeypatch.setattr(detect, "torch_tpu_package", lambda: detect.TorchTpuPackage("torch_tpu", "0.2.0", "google"))
    t = targets.target("tpu", allow_emulation=False)
    assert not t.emulated and f"real TPU {generation}, 1 chip" in t.banner()
    assert ("outside TorchTPU's announced support" in t.banner()) is (not announced)
    if not announced:
        assert detect.TORCHTPU_ANNOUNCED_SOURCE in t.banner()


def test_no_sysfs_means_no_tpu(tmp_path: Path) -> None:
    assert detect.tpu_chips(tmp_path / "missing", tmp_path) == []


def test_neuron_devices(tmp_path: Path) -> None:
    assert detect.neuron_devices(tmp_path) == []
    (tmp_path / "neuron0").touch()
    (tmp_path / "neuron1").touch()
    (tmp_path / "neuronx").touch()  # not a device node name
    assert [Path(p).name for p in detect.neuron_devices(tmp_path)] == ["neuron0", "neuron1"]


# ---------------------------------------------------------------- torch_tpu autoloaded by import torch
def test_torch_tpu_autoloaded_only_when_imported_without_a_chip(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys
    import types

    monkeypatch.delitem(sys.modules, "torch_tpu", raising=False)
    assert not detect.torch_tpu_autoloaded(tmp_path)  # nothing imported it
    monkeypatch.setitem(sys.modules, "torch_tpu", types.ModuleType("torch_tpu"))
    assert detect.torch_tpu_autoloaded(tmp_path)  # imported, and this (empty) PCI bus has no TPU


def _no_skip_switch(monkeypatch: pytest.MonkeyPatch) -> None:
    """TPU_SKIP_MDS_QUERY unset for the test, and restored (removed) afterwards whatever the test set."""
    monkeypatch.setenv(detect.SKIP_METADATA_SWITCH, "restored-after-the-test")
    monkeypatch.delenv(detect.SKIP_METADATA_SWITCH)


def test_banner_and_cli_say_when_torch_tpu_was_autoloaded(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import xlaport
    from xlaport.cli import main

    _no_skip_switch(monkeypatch)
    monkeypatch.delitem(sys.modules, "torch_tpu", raising=False)
    assert "\n" not in xlaport.target("cpu").banner()
    assert detect.SKIP_METADATA_SWITCH not in os.environ  # nothing autoloaded: nothing set
    monkeypatch.setitem(sys.modules, "torch_tpu", types.ModuleType("torch_tpu"))
    monkeypatch.setattr(detect, "tpu_chips", lambda *a, **k: [])
    monkeypatch.setattr(detect, "torch_tpu_package", lambda: detect.TorchTpuPackage("torch_tpu", "0.2.0", "google"))
    banner = xlaport.target("cpu").banner()
    line = banner.splitlines()[1]
    assert line.startswith(
        "[xlaport] import torch autoloaded TorchTPU on a machine without a TPU: TPU_SKIP_MDS_QUERY=1"
    )
    assert "TPU_SKIP_MDS_QUERY=1" in line and "TORCH_DEVICE_BACKEND_AUTOLOAD=0" in line
    assert os.environ[detect.SKIP_METADATA_SWITCH] == "1"
    assert main(["target", "cpu"]) == 0
    assert "TPU_SKIP_MDS_QUERY=1 is set for this process" in capsys.readouterr().out


def test_keep_libtpu_offline_keeps_what_the_reader_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch_tpu", types.ModuleType("torch_tpu"))
    monkeypatch.setattr(detect, "tpu_chips", lambda *a, **k: [])
    monkeypatch.setattr(detect, "torch_tpu_package", lambda: detect.TorchTpuPackage("torch_tpu", "0.2.0", "google"))
    env: dict[str, str] = {}
    assert "TPU_SKIP_MDS_QUERY=1 is set for this process" in (detect.keep_libtpu_offline(env) or "") and env == {
        "TPU_SKIP_MDS_QUERY": "1"
    }
    env = {"TPU_SKIP_MDS_QUERY": "1"}
    assert "TPU_SKIP_MDS_QUERY=1 is set" in (detect.keep_libtpu_offline(env) or "") and env == {
        "TPU_SKIP_MDS_QUERY": "1"
    }
    env = {"TPU_SKIP_MDS_QUERY": "0"}  # the reader's value stands, and the line says what it risks
    line = detect.keep_libtpu_offline(env) or ""
    assert env == {"TPU_SKIP_MDS_QUERY": "0"} and line.startswith("[xlaport] WARNING:") and "may wait" in line
    monkeypatch.setattr(detect, "tpu_chips", lambda *a, **k: ["a chip"])  # a TPU here: libtpu is wanted
    env = {}
    assert detect.keep_libtpu_offline(env) is None and env == {}


def _fake_torch_tpu(root: Path, metadata: str, entry_point: bool = False) -> Path:
    """A torch_tpu package with a dist-info of the given METADATA under ``root`` (nothing of either vendor's code)."""
    pkg = root / "torch_tpu"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "_loader.py").write_text("def load():\n    pass\n")
    info = root / "torch_tpu-0.0.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: torch_tpu\n" + metadata)
    if entry_point:
        (info / "entry_points.txt").write_text("[torch.backends]\ntorch_tpu = torch_tpu._loader:load\n")
    return root


GOOGLE_METADATA = (
    "Version: 0.2.0\nHome-page: https://github.com/google-pytorch/torch_tpu\nRequires-Dist: libtpu>=0.0.50\n"
)
SOPHGO_METADATA = "Version: 2.1.0.post1\nAuthor: sophgo\nHome-page: https://github.com/sophgo/torch-tpu\n"


@pytest.mark.parametrize(
    ("metadata", "vendor", "said"),
    [
        (GOOGLE_METADATA, "google", "TorchTPU 0.2.0 (Google's torch_tpu)"),
        (SOPHGO_METADATA, "sophgo", "Sophgo's torch_tpu 2.1.0.post1 (a PyTorch backend for Sophgo chips"),
        ("Version: 9\nAuthor: someone\n", "unknown", "not recognisably Google's TorchTPU"),
    ],
)
def test_the_two_torch_tpus_are_told_apart_by_their_metadata(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, metadata: str, vendor: str, said: str
) -> None:
    monkeypatch.syspath_prepend(str(_fake_torch_tpu(tmp_path, metadata)))
    detect.torch_tpu_package.cache_clear()
    try:
        pkg = detect.torch_tpu_package()
        assert pkg is not None and pkg.vendor == vendor and said in pkg.describe()
        assert pkg.is_torchtpu == (vendor == "google")
    finally:
        detect.torch_tpu_package.cache_clear()


def test_sophgos_torch_tpu_is_never_called_torchtpu(monkeypatch: pytest.MonkeyPatch) -> None:
    _no_skip_switch(monkeypatch)
    sophgo = detect.TorchTpuPackage("torch_tpu", "2.1.0.post1", "sophgo")
    monkeypatch.setattr(detect, "torch_tpu_package", lambda: sophgo)
    monkeypatch.setitem(sys.modules, "torch_tpu", types.ModuleType("torch_tpu"))
    monkeypatch.setattr(detect, "tpu_chips", lambda *a, **k: [])
    line = detect.keep_libtpu_offline() or ""
    assert "Sophgo's torch_tpu 2.1.0.post1" in line and "TorchTPU 2" not in line and "libtpu" not in line
    assert detect.SKIP_METADATA_SWITCH not in os.environ  # it starts no libtpu: nothing to set
    # a Google TPU with Sophgo's torch_tpu installed: one line, no import of the wrong backend
    monkeypatch.setattr(detect, "tpu_chips", lambda *a, **k: [detect.TpuChip("0000:00:04.0", "v6e", "7")])
    with pytest.raises(targets.CannotRunHere, match="the torch_tpu installed is Sophgo's torch_tpu"):
        targets.target("tpu")


@pytest.mark.parametrize("order", ["torch first", "xlaport first"])
def test_an_autoloaded_torch_tpu_without_a_switch_is_defused_before_any_backward(
    fresh_python: Runner, tmp_path: Path, order: str
) -> None:
    """A reader who installed a TorchTPU environment on a CPU machine and set no switch: ``import torch`` autoloads
    torch_tpu (here a stand-in with the same entry point and metadata). Whichever is imported first, xlaport sets
    TPU_SKIP_MDS_QUERY=1 before the program can call backward(), and the banner says so."""
    site = _fake_torch_tpu(tmp_path, GOOGLE_METADATA, entry_point=True)
    first = "import torch, xlaport" if order == "torch first" else "import xlaport, torch"
    code = f"""
        import os, sys
        {first}
        assert "torch_tpu" in sys.modules, "the entry point was not autoloaded"
        set_at_import = os.environ.get("TPU_SKIP_MDS_QUERY")
        banner = xlaport.target("auto").banner()
        x = torch.ones(2, requires_grad=True)
        (x * 3).sum().backward()
        print(set_at_import, os.environ.get("TPU_SKIP_MDS_QUERY"), x.grad.tolist())
        print(banner.splitlines()[-1])
    """
    out = fresh_python(
        code, env={"PYTHONPATH": f"{site}{os.pathsep}{Path(detect.__file__).parents[1]}"},
        unset=["TORCH_DEVICE_BACKEND_AUTOLOAD", "TPU_SKIP_MDS_QUERY"],
    ).stdout.splitlines()  # fmt: skip
    expected_at_import = (
        "1" if order == "torch first" else "None"
    )  # xlaport first: torch (and so torch_tpu) comes later
    assert out[-2] == f"{expected_at_import} 1 [3.0, 3.0]", out
    assert out[-1].startswith(
        "[xlaport] import torch autoloaded TorchTPU on a machine without a TPU: TPU_SKIP_MDS_QUERY=1"
    )
