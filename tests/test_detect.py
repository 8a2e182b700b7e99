"""Accelerator detection reads sysfs and /dev only: fake trees stand in for real machines."""

from __future__ import annotations

import os
from pathlib import Path

from xlaport import detect


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
    _pci(tmp_path, "0000:00:06.0", 0x1AE0, 0x0027, "7")  # a Google device that is not a supported TPU
    _pci(tmp_path, "0000:00:07.0", 0x10DE, 0x2330, "7")  # an NVIDIA GPU
    chips = detect.tpu_chips(tmp_path / "sys", tmp_path / "dev")
    assert [(c.pci_address, c.generation, c.vfio_group) for c in chips] == [("0000:00:04.0", "v6e", "7")]


def test_tpu_generations_are_the_ones_torch_tpu_supports() -> None:
    assert set(detect.TPU_PCI_DEVICES.values()) == {"v5e", "v5p", "v6e", "v7x"}


def test_no_sysfs_means_no_tpu(tmp_path: Path) -> None:
    assert detect.tpu_chips(tmp_path / "missing", tmp_path) == []


def test_neuron_devices(tmp_path: Path) -> None:
    assert detect.neuron_devices(tmp_path) == []
    (tmp_path / "neuron0").touch()
    (tmp_path / "neuron1").touch()
    (tmp_path / "neuronx").touch()  # not a device node name
    assert [Path(p).name for p in detect.neuron_devices(tmp_path)] == ["neuron0", "neuron1"]
