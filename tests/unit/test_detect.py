"""Accelerator detection reads sysfs and /dev only: fake trees stand in for real machines."""

from __future__ import annotations

import os
import sys
import types
from pathlib import Path

import pytest
import torch

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


def test_banner_and_cli_say_when_torch_tpu_was_autoloaded(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import sys
    import types

    import xlaport
    from xlaport.cli import main

    monkeypatch.delitem(sys.modules, "torch_tpu", raising=False)
    assert "\n" not in xlaport.target("cpu").banner()
    monkeypatch.setitem(sys.modules, "torch_tpu", types.ModuleType("torch_tpu"))
    monkeypatch.setattr(detect, "tpu_chips", lambda *a, **k: [])
    banner = xlaport.target("cpu").banner()
    assert banner.splitlines()[1].startswith("[xlaport] WARNING: import torch autoloaded torch_tpu")
    assert "TORCH_DEVICE_BACKEND_AUTOLOAD=0" in banner
    assert main(["target", "cpu"]) == 0
    assert "TORCH_DEVICE_BACKEND_AUTOLOAD=0" in capsys.readouterr().out
