"""TorchTPU's CPU-fallback switch, and its missing-op behaviour applied to the emulator.

The emulated ``tpu`` target mimics TorchTPU's missing-op fallback (:func:`emulate_missing_ops`,
rule ``missing-op`` in ``reference/data/profiles.toml``): an op that neither TorchTPU nor
torch_xla has a kernel for raises TorchTPU's ``NotImplementedError`` unless
:data:`execution_mode` ``.enable_cpu_fallback`` is True, which mirrors
``torch_tpu._internal.execution_mode.enable_cpu_fallback``; then it warns with TorchTPU's text
and torch_xla's real CPU fallback runs (counted by :func:`fallback_counts`).
"""

from __future__ import annotations

import contextlib
import sys
import warnings
from collections.abc import Iterator
from typing import Any

import torch
from torch.utils import _pytree as pytree

from .. import metrics
from .support import support_table
from .trace import lookup_overload, op_name

__all__ = [
    "TpuFallbackWarning",
    "execution_mode",
    "cpu_fallback",
    "fallback_counts",
    "emulate_missing_ops",
    "emulated_ops",
]


class TpuFallbackWarning(UserWarning):
    """TorchTPU's warning when an op without a TPU kernel runs on the CPU instead."""


class _ExecutionMode:
    """Mirror of ``torch_tpu._internal.execution_mode``: ``execution_mode.enable_cpu_fallback = True``."""

    def __init__(self) -> None:
        self._enabled = False

    @property
    def enable_cpu_fallback(self) -> bool:
        return self._enabled

    @enable_cpu_fallback.setter
    def enable_cpu_fallback(self, value: bool) -> None:
        if not isinstance(value, bool):
            raise ValueError(f"enable_cpu_fallback takes True or False, not {value!r}")
        self._enabled = value
        real = sys.modules.get("torch_tpu._internal.execution_mode")
        if real is not None:  # a real TPU target is in use: switch TorchTPU itself (never imported here)
            real.enable_cpu_fallback = value  # type: ignore[attr-defined]

    def __repr__(self) -> str:
        return f"execution_mode(enable_cpu_fallback={self._enabled})"


execution_mode = _ExecutionMode()


@contextlib.contextmanager
def cpu_fallback(enabled: bool = True) -> Iterator[None]:
    """``with ops.cpu_fallback(): ...`` switches TorchTPU's CPU fallback on for a block."""
    old = execution_mode.enable_cpu_fallback
    execution_mode.enable_cpu_fallback = enabled
    try:
        yield
    finally:
        execution_mode.enable_cpu_fallback = old


def fallback_counts() -> dict[str, int]:
    """CPU fallbacks executed so far on the XLA device, per ATen op (torch_xla's ``aten::*`` counters).

    Empty where torch_xla is not loaded: nothing can fall back through it. Subtract two readings to
    count what one step did (or use ``xlaport.metrics.snapshot().delta(...)``). Never imports torch_xla.
    """
    return metrics.snapshot().fallbacks


# ---------------------------------------------------------------- the emulated missing-op rule
_EMULATION: dict[str, Any] = {"lib": None, "ops": ()}


def _tpu_op_name(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
    """The op TorchTPU's fallback would name: ``func`` itself, or the first missing op its composite calls."""
    from .coverage import composite_key, verdict  # coverage reads execution_mode from here

    name = op_name(func)
    key = composite_key(name, "PrivateUse1")
    if key is None:
        return name
    meta = pytree.tree_map(
        lambda a: torch.empty_like(a, device="meta") if isinstance(a, torch.Tensor) else a, (args, kwargs)
    )
    _, _, missing = verdict(name, support_table("tpu"), False, meta)
    return missing[0] if missing else name


def emulate_missing_ops(rule: Any) -> tuple[str, ...]:
    """Make XLA:CPU behave like TorchTPU for ops that neither has a kernel for. Idempotent.

    ``rule`` is the ``missing_op`` rule of the tpu profile (its ``message`` and
    ``warning`` templates). For each ATen op that torch_xla runs through its CPU
    fallback and TorchTPU 0.2.0 has no kernel for, a kernel for the ``XLA``
    dispatch key is registered that raises ``NotImplementedError(message)``, or,
    with :data:`execution_mode` ``.enable_cpu_fallback`` on, warns and calls the
    kernel torch_xla had there (its real CPU fallback, counted in its metrics).
    Returns the ops covered.
    """
    if _EMULATION["lib"] is not None:
        return _EMULATION["ops"]
    from .coverage import composite_key

    message: str = rule.message
    warning: str = rule.extra.get("warning", message)
    tpu = support_table("tpu")
    xla = support_table("xla")  # read (and cached) before the kernels below join the XLA key
    names = [n for n in torch._C._dispatch_get_all_op_names() if n.startswith("aten::")]
    lib = torch.library.Library("aten", "IMPL")
    covered = []
    for name in names:
        if tpu.has_kernel(name) or xla.has_kernel(name):
            continue
        if composite_key(name, "XLA") is not None:  # XLA runs a composite; its parts are checked on their own
            continue
        if not torch._C._dispatch_has_computed_kernel_for_dispatch_key(name, "XLA"):
            continue
        original = torch._C._dispatch_get_computed_kernel_for_dispatch_key(name, "XLA")

        def kernel(keyset: Any, *args: Any, _orig: Any = original, _name: str = name, **kwargs: Any) -> Any:
            func = lookup_overload(_name)
            shown = _tpu_op_name(func, args, kwargs)
            if not execution_mode.enable_cpu_fallback:
                raise NotImplementedError(message.format(op=shown))
            warnings.warn(warning.format(op=shown), TpuFallbackWarning, stacklevel=2)
            return _orig.call_boxed(keyset, *args, **kwargs)

        base, _, ov = name.removeprefix("aten::").partition(".")
        lib.impl(f"{base}.{ov}" if ov else base, kernel, "XLA", with_keyset=True)
        covered.append(name)
    _EMULATION["lib"], _EMULATION["ops"] = lib, tuple(covered)
    return _EMULATION["ops"]


def emulated_ops() -> tuple[str, ...]:
    """The ops :func:`emulate_missing_ops` has hooked in this process (empty before it ran)."""
    return tuple(_EMULATION["ops"])
