"""One way to get a device for a target, real where present, emulated where not.

>>> from xlaport.targets import target
>>> t = target("tpu")          # real TorchTPU on a TPU VM, else XLA:CPU emulation
>>> print(t.banner())
>>> model = model.to(t.device)
>>> step = t.compile(train_step)   # the target's torch.compile defaults
>>> t.sync()

Real detection never starts a device that is not there (see :mod:`xlaport.detect`).
Emulation runs the real XLA compiler through torch_xla's CPU PJRT device and
applies the target's documented rules from :mod:`xlaport.profiles`.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import os
import platform
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeVar, cast

import torch

from . import detect, metrics, xla_cpu
from .profiles import Profile, profile
from .text import plural

# `import torch` above may have autoloaded TorchTPU (its torch.backends entry point) on a machine without a TPU:
# keep libtpu from waiting on the cloud metadata server before anything asks it for devices (xlaport.detect).
detect.keep_libtpu_offline()

__all__ = ["Target", "target", "TARGET_NAMES", "NEEDS", "CannotRunHere", "xla_device", "autoload_warning"]

TargetName = Literal["cuda", "tpu", "neuron", "cpu", "auto"]
TARGET_NAMES: tuple[str, ...] = ("cuda", "tpu", "neuron", "cpu", "auto")
EMULATOR_BACKEND = "openxla"  # torch_xla's Dynamo backend: Dynamo -> AOTAutograd -> XLA

F = TypeVar("F", bound=Callable[..., Any])
# What a chapter can declare it needs (Target.require), and what each means. Chapters that need one of these say so
# in their banner and stop with CannotRunHere where the target cannot give it: the CPU path of a TPU VM or a laptop
# without torch_xla (make rehearse-tpu-vm).
NEEDS: dict[str, str] = {
    "compiler": "a device that compiles whole graphs (XLA:CPU as the emulator, or a real TPU or Trainium)",
    "torch_xla": "torch_xla (PyTorch/XLA), which a TorchTPU or TorchNeuron environment does not install",
}


class CannotRunHere(RuntimeError):
    """A chapter needs what this target cannot give (see :data:`NEEDS`); the message says what and why."""


_ERRORS: dict[str, type[Exception]] = {
    "NotImplementedError": NotImplementedError,
    "RuntimeError": RuntimeError,
    "ValueError": ValueError,
}


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def xla_device() -> torch.device:
    """torch_xla's device on the CPU PJRT client (the emulator). Imports torch_xla.

    Note: importing torch_xla changes Dynamo's global config for the whole process
    (``automatic_dynamic_shapes`` becomes False, ``specialize_float`` True).
    """
    xla_cpu.configure()  # PJRT_DEVICE=CPU and the emulator's compile level, before torch_xla starts
    try:
        import torch_xla
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise RuntimeError(
            f"emulating tpu/neuron needs torch_xla 2.9 (pip install torch==2.9.0 torch_xla==2.9.0); import failed: {e}"
        ) from None
    return torch_xla.device()


@dataclass
class Target:
    """A device plus the behaviour of the platform it stands for.

    ``name`` is what the code was written for (``"tpu"``); ``device`` is where the
    tensors really live (``tpu:0``, or ``xla:0`` when emulated); ``emulated`` says
    which. ``profile`` holds the target's documented rules, each with a source.
    """

    name: str
    device: torch.device
    emulated: bool
    profile: Profile
    backend: str
    detail: str

    # ----------------------------------------------------------------- facts
    @property
    def kind(self) -> str:
        return "emulated" if self.emulated else "real"

    @property
    def on_xla(self) -> bool:
        return self.device.type == "xla"

    @property
    def autocast_device_type(self) -> str:
        return self.device.type

    @property
    def amp_dtype(self) -> torch.dtype | None:
        name = self.profile.amp_dtype
        return getattr(torch, name) if name else None

    def versions(self) -> dict[str, str]:
        v = {"python": platform.python_version(), "torch": torch.__version__}
        for dist in ("torch_xla", "torch_tpu", "torch-neuronx"):
            ver = _version(dist)
            if ver and ((dist == "torch_xla" and self.on_xla) or (dist != "torch_xla" and not self.emulated)):
                v[dist] = ver
        return v

    def banner(self, needs: Mapping[str, str] | None = None) -> str:
        """One line: target, real or emulated, how, and the versions in use. With ``needs`` (as for
        :meth:`require`), a second line for each need this target cannot meet, with the chapter's reason."""
        vers = " ".join(f"{k} {v}" for k, v in self.versions().items())
        lines = [
            f"[xlaport] target={self.name} ({self.kind}) device={self.device} backend={self.backend} | {self.detail} | {vers}"
        ]
        lines += [f"[xlaport] this chapter cannot run here: {msg}" for msg in self.unmet(needs or {}).values()]
        warning = autoload_warning()
        return "\n".join([*lines, warning] if warning else lines)

    def unmet(self, needs: Mapping[str, str]) -> dict[str, str]:
        """The needs (``{need: why the chapter has it}``, needs from :data:`NEEDS`) this target cannot meet, each
        with a one-line message."""
        out = {}
        for need, why in needs.items():
            if need not in NEEDS:
                raise ValueError(f"unknown need {need!r}; choose from: {', '.join(NEEDS)}")
            if need == "compiler":
                met = self.on_xla or (not self.emulated and self.device.type in ("tpu", "neuron"))
            else:
                met = detect.torch_xla_importable()
            if not met:
                out[need] = f"it needs {NEEDS[need]}; {why}; here the target is {self.device} ({self.kind})"
        return out

    def require(self, needs: Mapping[str, str]) -> None:
        """Raise :class:`CannotRunHere` (one line) if this target cannot meet ``needs``."""
        unmet = self.unmet(needs)
        if unmet:
            raise CannotRunHere(" | ".join(unmet.values()))

    # ----------------------------------------------------------------- work
    def compile(self, fn: F, **kwargs: Any) -> F:
        """``torch.compile`` with the target's defaults and refusals applied.

        Keywords the caller passes win over defaults, except values the real target
        rejects, which raise the target's own error (e.g. ``dynamic=True`` on TPU).
        """
        for rule in self.profile.of_kind("compile_reject"):
            if rule.key in kwargs and kwargs[rule.key] == rule.value:
                raise _ERRORS.get(rule.error or "", RuntimeError)(rule.message or rule.summary)
        for rule in self.profile.of_kind("compile_ignore"):
            if rule.key in kwargs and kwargs[rule.key] not in (None, "default"):
                warnings.warn(f"{self.name}: {rule.key}={kwargs[rule.key]!r} ignored ({rule.summary})", stacklevel=2)
                kwargs.pop(rule.key)
        opts = {**self.profile.compile_defaults, **kwargs}
        requested = opts.get("backend", self.backend)
        opts["backend"] = self._backend_for(requested)
        if self.emulated and requested == self.profile.compile_backend and self.profile.has("storage-offset-guard"):
            from .recompile.guards import with_storage_offset_guards  # the real backend installs these itself

            opts["backend"] = with_storage_offset_guards(opts["backend"])
        if opts["backend"] != "inductor":
            opts.pop("mode", None)  # only Inductor understands mode=
        return cast(F, torch.compile(fn, **opts))

    def _backend_for(self, requested: Any) -> Any:
        if not isinstance(requested, str):
            return requested
        if self.emulated and requested in ("tpu", "neuron"):
            return EMULATOR_BACKEND
        return requested

    def sync(self) -> None:
        """Wait for queued device work: the place where lazy or async execution really happens.

        On XLA this cuts the pending lazy graph and blocks until its execution finishes
        (``torch_xla.sync(wait=True)``). ``xm.wait_device_ops()`` would wait too, but it added
        about 2 ms per call on XLA:CPU here even with nothing pending, which is a fifth of a
        small model's step and would blur the step times the chapters measure. To count the
        programs that ran, use :meth:`executions`, which waits for torch_xla's bookkeeping too.
        """
        if self.on_xla:
            import torch_xla

            torch_xla.sync(wait=True)
        elif self.device.type == "cuda":
            torch.cuda.synchronize()
        elif self.device.type in ("tpu", "neuron"):
            torch.accelerator.synchronize()

    def autocast(self, enabled: bool = True) -> contextlib.AbstractContextManager[Any]:
        """``torch.autocast`` with the target's mixed-precision dtype, always passed explicitly (bf16 on TPU and on
        Neuron, where AWS names no default and PyTorch's default for the device would be float16)."""
        dtype = self.amp_dtype
        if dtype is None or not enabled:
            return contextlib.nullcontext()
        return torch.autocast(device_type=self.autocast_device_type, dtype=dtype)

    def compiles(self) -> int | None:
        """Programs compiled so far on this device (cache misses), or None where the backend does not say.

        XLA (emulated targets): torch_xla's ``UncachedCompile`` counter. Real TPU: TorchTPU's
        compilation-cache misses. Both read through :func:`xlaport.metrics.snapshot`.
        """
        if not (self.on_xla or (self.device.type == "tpu" and not self.emulated)):
            return None
        return metrics.snapshot(fallbacks=False, times=()).compiles

    def executions(self) -> int | None:
        """Programs executed so far on this device, or None where the backend does not say.

        XLA (emulated targets): torch_xla's ``ExecuteTime`` metric count. torch_xla records it
        from a completion callback that can run just after :meth:`sync` has the results, so this
        first waits for those callbacks (``snapshot(wait=True)``, about 2 ms on XLA:CPU): call
        it outside the region you time.
        """
        if not self.on_xla:
            return None
        return metrics.snapshot(wait=True, fallbacks=False, times=("ExecuteTime",)).executions

    def manual_seed(self, seed: int) -> None:
        """Seed torch's generators for this target (host and device)."""
        torch.manual_seed(seed)
        if self.on_xla:
            import torch_xla.core.xla_model as xm

            xm.set_rng_state(seed)


def autoload_warning() -> str | None:
    """The banner's line when ``import torch`` autoloaded a torch_tpu on a machine without a TPU, else None: what
    :func:`xlaport.detect.keep_libtpu_offline` did about it (it is called here again, so it holds whenever torch
    was imported)."""
    return detect.keep_libtpu_offline()


def _real_device(p: Profile) -> torch.device:
    """The device of a real accelerator whose backend has registered itself (tpu, neuron)."""
    return torch.device(p.device_type)


def _cuda_target(p: Profile) -> Target:
    if detect.cuda_available():
        name = torch.cuda.get_device_name(0)
        return Target("cuda", torch.device("cuda"), False, p, p.compile_backend, f"real CUDA device: {name}")
    return Target(
        "cuda",
        torch.device("cpu"),
        True,
        p,
        p.compile_backend,
        "no CUDA device here: the CUDA code path runs on CPU",
    )


def _emulated(name: str, p: Profile) -> Target:
    device = xla_device()
    for rule in p.of_kind("missing_op") if device.type == "xla" else ():  # missing-op behaviour (xlaport.ops)
        from .ops.fallback import emulate_missing_ops

        emulate_missing_ops(rule)
    return Target(
        name,
        device,
        True,
        p,
        EMULATOR_BACKEND,
        f"emulated on torch_xla XLA:CPU (PJRT_DEVICE={os.environ.get('PJRT_DEVICE')}, {xla_cpu.describe()}), "
        f"{p.title} rules applied, compile backend '{p.compile_backend}' -> '{EMULATOR_BACKEND}'",
    )


def _tpu_target(p: Profile, allow_emulation: bool) -> Target:
    chips = detect.tpu_chips()
    if chips:
        pkg = detect.torch_tpu_package()
        if pkg is None or pkg.vendor == "sophgo":
            found = "no torch_tpu is installed" if pkg is None else f"the torch_tpu installed is {pkg.describe()}"
            raise CannotRunHere(f"this machine has a TPU, but {found}: pip install -r requirements-tpu.txt")
        # Only now is it safe to let torch_tpu start libtpu.
        import torch_tpu  # noqa: F401  (registers the 'tpu' device)

        gens = sorted({c.generation for c in chips})
        detail = f"real TPU {'/'.join(gens)}, {plural(len(chips), 'chip')}"
        unannounced = sorted({c.generation for c in chips if not c.announced})
        if unannounced:
            announced = ", ".join(sorted(detect.TORCHTPU_ANNOUNCED))
            detail += (
                f"; TPU {'/'.join(unannounced)} is recognised by torch_tpu 0.2.0's PCI scan but outside TorchTPU's "
                f"announced support ({announced}; {detect.TORCHTPU_ANNOUNCED_SOURCE})"
            )
        return Target("tpu", _real_device(p), False, p, p.compile_backend, detail)
    if not allow_emulation:
        raise RuntimeError("no TPU found by PCI scan (Google vendor 0x1ae0 behind VFIO)")
    return _emulated("tpu", p)


def _neuron_target(p: Profile, allow_emulation: bool) -> Target:
    devs = detect.neuron_devices()
    if devs and detect.neuron_importable():
        return Target(
            "neuron",
            _real_device(p),
            False,
            p,
            p.compile_backend,
            f"real Trainium, {plural(len(devs), 'Neuron device')}",
        )
    if not allow_emulation:
        raise RuntimeError("no Trainium found (/dev/neuron* with torch_neuronx installed)")
    return _emulated("neuron", p)


def target(name: str = "auto", *, allow_emulation: bool = True) -> Target:
    """Get the target ``name``: ``"cuda"``, ``"tpu"``, ``"neuron"``, ``"cpu"`` or ``"auto"``.

    ``"auto"`` picks the real accelerator present (TPU, then Trainium, then CUDA),
    else CPU. ``"tpu"`` and ``"neuron"`` use the real device when present and the
    XLA:CPU emulator otherwise (``allow_emulation=False`` makes that an error).
    ``"cuda"`` without a GPU runs the CUDA code path on CPU and says so.

    The environment variable ``XLAPORT_TARGET`` (e.g. ``auto``), when set, replaces ``name``: ``make verify`` runs
    every chapter on the machine's own accelerator that way without editing the parameters cells.
    """
    override = os.environ.get("XLAPORT_TARGET", "").strip()
    if override:
        if override.lower() not in TARGET_NAMES:
            raise ValueError(f"XLAPORT_TARGET={override!r} is not a target; choose one of: {', '.join(TARGET_NAMES)}")
        name = override
    if not isinstance(name, str) or name.lower() not in TARGET_NAMES:
        raise ValueError(f"unknown target {name!r}; choose one of: {', '.join(TARGET_NAMES)}")
    name = name.lower()
    if name == "auto":
        if detect.tpu_chips():
            return _tpu_target(profile("tpu"), allow_emulation=False)
        if detect.neuron_devices() and detect.neuron_importable():
            return _neuron_target(profile("neuron"), allow_emulation=False)
        if detect.cuda_available():
            return _cuda_target(profile("cuda"))
        p = profile("cpu")
        return Target("cpu", torch.device("cpu"), False, p, p.compile_backend, "no accelerator found: CPU")
    if name == "tpu":
        return _tpu_target(profile("tpu"), allow_emulation)
    if name == "neuron":
        return _neuron_target(profile("neuron"), allow_emulation)
    if name == "cuda":
        return _cuda_target(profile("cuda"))
    p = profile("cpu")
    return Target("cpu", torch.device("cpu"), False, p, p.compile_backend, "CPU")
