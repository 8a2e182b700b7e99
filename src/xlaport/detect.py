"""Find real accelerators without starting them.

TPU detection repeats the PCI scan that ``torch_tpu`` itself does before it
initialises (``torch_tpu/_internal/utils/hardware.py`` in the 0.2.0 wheel): look
for Google's PCI vendor id on a TPU device id that is exposed through VFIO. Only
when this finds a chip may anything import ``torch_tpu`` or start libtpu, because
libtpu on a machine without a TPU asks a cloud metadata server for its topology
over the network. Nothing in this module imports torch_tpu, libtpu or
torch_neuronx.

The device ids are the wheel's own table (``scripts/torch_tpu_facts.py`` extracts it into
``reference/data/torch_tpu-0.2.0-facts.json`` and ``tests/unit/test_torch_tpu_facts.py`` checks this module
against it). That table includes TPU v4, which TorchTPU's announced support list does not:
:attr:`TpuChip.announced` tells the two apart.
"""

from __future__ import annotations

import glob
import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "TpuChip",
    "tpu_chips",
    "torch_tpu_autoloaded",
    "torch_xla_importable",
    "AUTOLOAD_SWITCH",
    "neuron_devices",
    "neuron_importable",
    "cuda_available",
    "TORCHTPU_ANNOUNCED",
    "TORCHTPU_ANNOUNCED_SOURCE",
]

GOOGLE_PCI_VENDOR = 0x1AE0
# Device ids the torch_tpu 0.2.0 loader scans for: _TOPOLOGY_BY_TPU_PCI_DEVICE_ID in
# torch_tpu/_internal/utils/hardware.py. The wheel names 0x0076 "TPU v7"; Google sells it as TPU7x (Ironwood).
TPU_PCI_DEVICES = {0x005E: "v4", 0x0062: "v5p", 0x0063: "v5e", 0x006F: "v6e", 0x0076: "v7x"}
# The generations TorchTPU announces support for. The loader also recognises v4 (above); v4 is not announced.
TORCHTPU_ANNOUNCED = frozenset({"v5e", "v5p", "v6e", "v7x"})
TORCHTPU_ANNOUNCED_SOURCE = (
    "PyTorch Get Started, Additional Platforms: TorchTPU, https://pytorch.org/get-started/additional-platforms/"
)


@dataclass(frozen=True)
class TpuChip:
    pci_address: str
    generation: str
    vfio_group: str | None

    @property
    def announced(self) -> bool:
        """Whether TorchTPU 0.2.0 announces support for this generation (v4: recognised, not announced)."""
        return self.generation in TORCHTPU_ANNOUNCED


def _read_hex(path: Path) -> int | None:
    try:
        return int(path.read_text().strip(), 16)
    except (OSError, ValueError):
        return None


def tpu_chips(
    sysfs: str | os.PathLike[str] = "/sys/bus/pci/devices", dev: str | os.PathLike[str] = "/dev"
) -> list[TpuChip]:
    """TPU chips that torch_tpu 0.2.0 would use: Google vendor id, known device id, VFIO node present.

    Chips the loader recognises but TorchTPU does not announce support for (TPU v4) are included; check
    :attr:`TpuChip.announced`.
    """
    root = Path(sysfs)
    chips: list[TpuChip] = []
    if not root.is_dir():
        return chips
    for entry in sorted(root.iterdir()):
        if _read_hex(entry / "vendor") != GOOGLE_PCI_VENDOR:
            continue
        generation = TPU_PCI_DEVICES.get(_read_hex(entry / "device") or -1)
        if generation is None:
            continue
        group = None
        link = entry / "iommu_group"
        if link.exists():
            group = os.path.basename(os.path.realpath(link))
        if group is None or not (Path(dev) / "vfio" / group).exists():
            continue
        chips.append(TpuChip(entry.name, generation, group))
    return chips


# PyTorch imports every installed package that registers a ``torch.backends`` entry point when ``import torch``
# runs (torch/__init__.py, _import_device_backends) unless this variable is "0" in the environment at that moment.
AUTOLOAD_SWITCH = "TORCH_DEVICE_BACKEND_AUTOLOAD"


def torch_tpu_autoloaded(pci: str | os.PathLike[str] | None = None) -> bool:
    """torch_tpu is imported in this process although this machine has no TPU.

    That happens when torch_tpu is installed: its ``torch.backends`` entry point (``torch_tpu._loader:load``) is
    imported by ``import torch`` itself, which also loads libtpu's PJRT plugin; the first ``backward()`` then asks
    every registered backend for its devices and libtpu tries the cloud metadata server. Setting
    ``TORCH_DEVICE_BACKEND_AUTOLOAD=0`` before Python starts prevents it. Never imports anything.
    """
    import sys

    return "torch_tpu" in sys.modules and not (tpu_chips() if pci is None else tpu_chips(pci))


def neuron_devices(dev: str | os.PathLike[str] = "/dev") -> list[str]:
    """Neuron device nodes (``/dev/neuron0`` ...) present on this machine."""
    return sorted(glob.glob(os.path.join(os.fspath(dev), "neuron[0-9]*")))


def torch_xla_importable() -> bool:
    """Whether torch_xla (the emulator's backend) is installed (checked without importing it); a TorchTPU or
    TorchNeuron environment has none."""
    return importlib.util.find_spec("torch_xla") is not None


def neuron_importable() -> bool:
    """Whether ``torch_neuronx`` is installed (checked without importing it)."""
    return importlib.util.find_spec("torch_neuronx") is not None


def cuda_available() -> bool:
    import torch

    return bool(torch.cuda.is_available())
