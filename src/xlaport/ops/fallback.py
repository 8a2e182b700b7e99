"""TorchTPU's CPU-fallback switch, and its missing-op behaviour applied to the emulator.

The emulated ``tpu`` target mimics TorchTPU's missing-op fallback (:func:`emulate_missing_ops`,
rule ``missing-op`` in ``reference/data/profiles.toml``): an op that TorchTPU would not run
(:func:`xlaport.ops.route.decide`) raises TorchTPU's ``NotImplementedError`` unless
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

__all__ = [
    "TpuFallbackWarning",
    "execution_mode",
    "cpu_fallback",
    "fallback_counts",
    "emulate_missing_ops",
    "emulated_ops",
    "emulation_plan",
    "undecided_calls",
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
_EMULATION: dict[str, Any] = {"lib": None, "plan": {}, "undecided": {}}


def _on_meta(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
    return pytree.tree_map(
        lambda a: torch.empty_like(a, device="meta") if isinstance(a, torch.Tensor) else a, (args, kwargs)
    )


def _signature(tree: Any) -> tuple[Any, ...] | None:
    """What a composite's route can depend on: dtypes, shapes, strides and the other arguments (None: unhashable)."""
    leaves = []
    for a in pytree.tree_leaves(tree):
        leaves.append((a.dtype, tuple(a.shape), a.stride(), a.layout) if isinstance(a, torch.Tensor) else a)
    out = tuple(leaves)
    try:
        hash(out)
    except TypeError:
        return None
    return out


def emulate_missing_ops(rule: Any) -> tuple[str, ...]:
    """Make XLA:CPU behave like TorchTPU for every op TorchTPU would not run. Idempotent.

    ``rule`` is the ``missing_op`` rule of the tpu profile (its ``message`` and ``warning`` templates).
    For each ATen op that reaches the ``XLA`` key as itself (no composite there) and that
    :func:`xlaport.ops.route.decide` does not let TorchTPU 0.2.0 run, a kernel for the ``XLA`` key is
    registered that raises ``NotImplementedError(message)`` naming the op TorchTPU's fallback would
    name (for ``linalg_cholesky_ex``: ``linalg_cholesky_ex.L``, the ``.out`` kernel its structured
    composite calls), or, with :data:`execution_mode` ``.enable_cpu_fallback`` on, warns and calls the
    kernel torch_xla had there (its CPU fallback, counted in its metrics, or its own kernel). An op
    whose route depends on its inputs (a composite that is not a structured op's) is decided by
    ``decide`` at each call, on ``meta`` copies of the inputs. Ops TorchTPU runs are left to torch_xla,
    which may run them through its CPU fallback: the emulator's cost, not the target's.
    Returns the ops covered.
    """
    if _EMULATION["lib"] is not None:
        return tuple(_EMULATION["plan"])
    from .route import composite_key, decide

    message: str = rule.message
    warning: str = rule.extra.get("warning", message)
    tpu = support_table("tpu")
    support_table("xla")  # read (and cached) before the kernels below join the XLA key
    names = [n for n in torch._C._dispatch_get_all_op_names() if n.startswith("aten::")]
    lib = torch.library.Library("aten", "IMPL")
    plan: dict[str, str] = {}
    undecided: dict[str, int] = _EMULATION["undecided"]
    decided: dict[Any, Any] = {}  # (op, input signature) -> Decision: a training loop asks the same question often
    for name in names:
        if composite_key(name, "XLA") is not None:  # XLA runs a composite, as TorchTPU does: its parts decide
            continue
        if not torch._C._dispatch_has_computed_kernel_for_dispatch_key(name, "XLA"):
            continue
        static = decide(name, tpu)
        if static.runs:
            continue
        mode = "decide" if static.status == "unknown" else "raise"
        shown_static = static.missing[0] if static.missing else name
        original = torch._C._dispatch_get_computed_kernel_for_dispatch_key(name, "XLA")

        def kernel(
            keyset: Any,
            *args: Any,
            _orig: Any = original,
            _name: str = name,
            _mode: str = mode,
            _shown: str = shown_static,
            **kwargs: Any,
        ) -> Any:
            shown = _shown
            if _mode == "decide":
                sig = (_name, _signature((args, kwargs)))
                d = decided.get(sig) if sig[1] is not None else None
                if d is None:
                    d = decide(_name, tpu, _on_meta(args, kwargs))
                    if sig[1] is not None:
                        decided[sig] = d
                if d.status == "unknown":  # the composite cannot run on meta copies: let torch_xla run it
                    undecided[_name] = undecided.get(_name, 0) + 1
                if d.status != "raises" and d.status != "falls back":
                    return _orig.call_boxed(keyset, *args, **kwargs)
                shown = d.missing[0] if d.missing else _name
            if not execution_mode.enable_cpu_fallback:
                raise NotImplementedError(message.format(op=shown))
            warnings.warn(warning.format(op=shown), TpuFallbackWarning, stacklevel=2)
            return _orig.call_boxed(keyset, *args, **kwargs)

        base, _, ov = name.removeprefix("aten::").partition(".")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # "Overriding a previously registered kernel": intended
            # allow_override: torch_xla registers a few kernels from Python (upsample_trilinear3d)
            lib.impl(f"{base}.{ov}" if ov else base, kernel, "XLA", with_keyset=True, allow_override=True)
        plan[name] = mode
    _EMULATION["lib"], _EMULATION["plan"] = lib, plan
    return tuple(plan)


def emulated_ops() -> tuple[str, ...]:
    """The ops :func:`emulate_missing_ops` has hooked in this process (empty before it ran)."""
    return tuple(_EMULATION["plan"])


def emulation_plan() -> dict[str, str]:
    """Per hooked op: ``"raise"`` (TorchTPU raises on it whatever its inputs) or ``"decide"`` (at each call)."""
    return dict(_EMULATION["plan"])


def undecided_calls() -> dict[str, int]:
    """Calls of ``"decide"`` ops whose route could not be followed on meta copies (torch_xla ran them)."""
    return dict(_EMULATION["undecided"])
