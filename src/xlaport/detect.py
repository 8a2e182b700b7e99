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

import functools
import glob
import importlib.metadata
import importlib.util
import os
import sys
from collections.abc import MutableMapping
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "TpuChip",
    "google_pci_devices",
    "tpu_chips",
    "torch_tpu_autoloaded",
    "TorchTpuPackage",
    "torch_tpu_package",
    "keep_libtpu_offline",
    "torch_xla_importable",
    "AUTOLOAD_SWITCH",
    "SKIP_METADATA_SWITCH",
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


def google_pci_devices(sysfs: str | os.PathLike[str] = "/sys/bus/pci/devices") -> list[str]:
    """PCI addresses of every device with Google's vendor id (a TPU of any generation, known to :data:`TPU_PCI_DEVICES`
    or not). Reads sysfs only."""
    root = Path(sysfs)
    if not root.is_dir():
        return []
    return [e.name for e in sorted(root.iterdir()) if _read_hex(e / "vendor") == GOOGLE_PCI_VENDOR]


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
    ``TORCH_DEVICE_BACKEND_AUTOLOAD=0`` before Python starts prevents it; :func:`keep_libtpu_offline` defuses it
    afterwards. Never imports anything.
    """
    return "torch_tpu" in sys.modules and not (tpu_chips() if pci is None else tpu_chips(pci))


@dataclass(frozen=True)
class TorchTpuPackage:
    """The installed distribution that provides the module ``torch_tpu``, as its metadata describes it.

    Two projects ship that module name: Google's TorchTPU (PyPI ``torch_tpu``, home page
    github.com/google-pytorch/torch_tpu, requires libtpu) and Sophgo's PyTorch backend for its own chips
    (github.com/sophgo/torch-tpu, ``setup(name='torch_tpu', author='sophgo')``), which also registers the
    PrivateUse1 device as ``tpu``. ``vendor`` is ``"google"``, ``"sophgo"`` or ``"unknown"``.
    """

    distribution: str
    version: str
    vendor: str

    @property
    def is_torchtpu(self) -> bool:
        """Google's TorchTPU, the backend this toolkit's ``tpu`` target means."""
        return self.vendor == "google"

    def describe(self) -> str:
        if self.vendor == "google":
            return f"TorchTPU {self.version} (Google's torch_tpu)"
        if self.vendor == "sophgo":
            return f"Sophgo's torch_tpu {self.version} (a PyTorch backend for Sophgo chips, not Google's TorchTPU)"
        return (
            f"torch_tpu {self.version} from the distribution {self.distribution!r} (not recognisably Google's TorchTPU)"
        )


def _vendor(meta: importlib.metadata.PackageMetadata) -> str:
    def field_values(key: str) -> list[str]:
        return [str(v) for v in (meta.get_all(key) or [])]

    where = " ".join(
        field_values("Home-page") + field_values("Project-URL") + field_values("Author") + field_values("Author-email")
    ).lower()
    if "sophgo" in where:
        return "sophgo"
    requires = [r.split(";")[0].strip().lower() for r in field_values("Requires-Dist")]
    if "google-pytorch/torch_tpu" in where or any(r.startswith("libtpu") for r in requires):
        return "google"
    return "unknown"


@functools.lru_cache(maxsize=1)
def torch_tpu_package() -> TorchTpuPackage | None:
    """Which ``torch_tpu`` is installed, read from package metadata (nothing is imported); None when none is.

    Looks for a distribution named ``torch_tpu`` first (both projects' default name), then for any distribution
    whose files provide the top-level module ``torch_tpu``. The answer is cached for the process.
    """
    try:
        if importlib.util.find_spec("torch_tpu") is None:
            return None
    except ValueError:  # imported, but without a spec (a module made at run time): read the metadata all the same
        pass
    names = ["torch_tpu"]
    try:
        importlib.metadata.distribution("torch_tpu")
    except importlib.metadata.PackageNotFoundError:
        names = importlib.metadata.packages_distributions().get("torch_tpu", [])
    for name in names:
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            continue
        return TorchTpuPackage(dist.metadata["Name"] or name, dist.version, _vendor(dist.metadata))
    return TorchTpuPackage("(unknown)", "(unknown)", "unknown")  # a module on the path with no metadata


# libtpu reads this when its PJRT client starts (the string is in libtpu 0.0.52's library): set, it skips the
# queries to the cloud metadata server and, finding no chip, fails at once. JAX sets it itself when its PCI scan
# finds no TPU (jax/_src/cloud_tpu_init.py, jax 0.7.1).
SKIP_METADATA_SWITCH = "TPU_SKIP_MDS_QUERY"


def keep_libtpu_offline(environ: MutableMapping[str, str] | None = None) -> str | None:
    """Defuse an autoloaded TorchTPU on a machine without a TPU, before anything asks it for devices.

    When ``import torch`` has imported Google's torch_tpu here (its ``torch.backends`` entry point) and the PCI scan
    finds no TPU, libtpu would wait on the cloud metadata server at the first ``backward()`` (about 30 s per key,
    many keys). This sets ``TPU_SKIP_MDS_QUERY=1`` in this process's environment (libtpu reads it when its client
    starts, so it is in time until then): libtpu then finds no chip at once and the device count is 0. Measured with
    torch 2.14.1, torch_tpu 0.2.0 and libtpu 0.0.52 on a machine without a TPU: the first ``backward()`` returned in
    3 s, against still waiting after 60 s without it. A value the reader set is kept.

    Returns the line a banner prints (None when there is nothing to say): what was done, and the switch that keeps
    torch_tpu out altogether. Sophgo's torch_tpu, which starts no libtpu, gets a line that names it instead.
    """
    if not torch_tpu_autoloaded():
        return None
    pkg = torch_tpu_package()
    if pkg is not None and pkg.vendor == "sophgo":
        return (
            f"[xlaport] note: the torch_tpu imported here is {pkg.describe()}; its 'tpu' device is not a Google TPU, "
            "and xlaport's tpu target (Google's TorchTPU) is emulated on this machine"
        )
    env = os.environ if environ is None else environ
    given = env.setdefault(SKIP_METADATA_SWITCH, "1")
    what = "TorchTPU" if pkg is None or pkg.is_torchtpu else pkg.describe()
    switch = f"set {AUTOLOAD_SWITCH}=0 before Python starts to keep it out altogether (see the book's pitfalls page)"
    if given.strip().lower() in ("1", "true", "yes"):
        return (
            f"[xlaport] import torch autoloaded {what} on a machine without a TPU: {SKIP_METADATA_SWITCH}={given} is "
            f"set for this process (xlaport sets it where it is unset), so libtpu finds no chip at once instead of "
            f"waiting on the cloud metadata server; {switch}"
        )
    return (
        f"[xlaport] WARNING: import torch autoloaded {what} on a machine without a TPU, and "
        f"{SKIP_METADATA_SWITCH}={given} is set: libtpu may wait on the cloud metadata server at the first "
        f"backward(); unset it, or {switch}"
    )


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
