"""Import JAX for the kernels, safely: on a machine without a TPU, JAX must never look for one.

JAX probes for accelerators when its first backend starts; looking for a TPU loads libtpu, which
calls a cloud metadata server. :func:`jax` therefore sets ``JAX_PLATFORMS=cpu`` (unless the caller
set it, or a PCI scan finds a TPU) *before* JAX is first imported, and imports nothing from libtpu.
"""

from __future__ import annotations

import os
import sys
from types import ModuleType
from typing import Any

from .. import detect

__all__ = ["jax", "on_tpu", "interpret_params", "races_found"]


_ON_TPU: list[bool] = []  # the PCI scan's answer, once per process


def on_tpu() -> bool:
    """True on a TPU VM (PCI scan, no device started): kernels then run compiled, not interpreted."""
    if not _ON_TPU:
        _ON_TPU.append(bool(detect.tpu_chips()))
    return _ON_TPU[0]


def jax() -> ModuleType:
    """The ``jax`` module, imported CPU-only unless this machine has a TPU.

    Raises ``RuntimeError`` with the install line when JAX is missing.
    """
    if "jax" not in sys.modules and not on_tpu():
        os.environ.setdefault("JAX_PLATFORMS", "cpu")
    try:
        import jax as _jax
    except ImportError:  # pragma: no cover - depends on the environment
        raise RuntimeError("the Pallas kernels need JAX: pip install jax==0.7.1 jaxlib==0.7.1") from None
    return _jax


def interpret_params(*, detect_races: bool = False, cores: int = 1) -> Any:
    """``pltpu.InterpretParams`` for TPU interpret mode on CPU (``None`` on a real TPU: run compiled).

    ``cores`` simulates that many TensorCores per chip, so that grid axes marked ``"parallel"`` are
    split between cores and the race detector can see two cores write one block.
    """
    if cores < 1 or int(cores) != cores:
        raise ValueError(f"cores must be a whole number >= 1, got {cores!r}")
    if on_tpu():
        return None
    jax()
    from jax.experimental.pallas import tpu as pltpu

    # Uninitialized VMEM reads as NaN, so a kernel that forgets to initialise an accumulator fails loudly.
    return pltpu.InterpretParams(detect_races=detect_races, num_cores_per_device=int(cores), uninitialized_memory="nan")


def races_found() -> bool:
    """Whether the last interpret-mode run with ``detect_races=True`` found a data race.

    JAX 0.7 keeps the detector's verdict in ``jax._src.pallas.mosaic.interpret.races`` (documented on
    ``InterpretParams.detect_races``); a JAX without it raises ``RuntimeError`` rather than answer wrong.
    """
    jax()
    try:
        from jax._src.pallas.mosaic import interpret as _interpret
    except ImportError as e:  # pragma: no cover - depends on the JAX version
        raise RuntimeError(f"this JAX has no TPU interpret-mode race detector: {e}") from None
    state = getattr(_interpret, "races", None)
    if state is None:
        raise RuntimeError("no interpret-mode run with detect_races=True has finished in this process")
    return bool(state.races_found)
