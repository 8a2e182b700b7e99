"""What a target does with one ATen op and its inputs, following the dispatcher's own route.

:func:`decide` is the one place that answers it; the static report (:func:`xlaport.ops.coverage`), the
emulated missing-op rule (:func:`xlaport.ops.emulate_missing_ops`) and the zoo sweep's "emulator fault"
attribution all ask it.

The route, for a backend key without its own kernel for ``op`` (torch ``OperatorEntry::computeDispatchTableEntry``):
a ``CompositeExplicitAutogradNonFunctional`` kernel (used by ``PrivateUse1`` backends such as TorchTPU and
TorchNeuron, never by ``XLA``), then ``CompositeExplicitAutograd``, then ``CompositeImplicitAutograd``, else the
backend's fallback. A *structured* functional or in-place op (``structured_delegate`` in PyTorch's
``native_functions.yaml``) has a generated ``CompositeExplicitAutogradNonFunctional`` kernel that allocates its
output (``empty_strided``) and calls the delegate ``.out`` kernel: that route is known without running anything,
so ``aten::upsample_bicubic2d`` is served by TorchTPU's ``upsample_bicubic2d.out``. Any other composite is *run*
on copies of the inputs under the tracer, and counts as decomposed only when every op it calls is supported,
recursively; without inputs its verdict is ``unknown``.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import torch
from torch.utils import _pytree as pytree

from .support import SupportTable
from .trace import COMPOSITE_ORDER, OpCall, OpRecorder, copy_arg, lookup_overload

__all__ = ["Decision", "decide", "composite_key", "structured_delegate", "worst", "RANK"]

_DK = torch._C.DispatchKey
_SHORT = {
    "CompositeExplicitAutogradNonFunctional": "CEANF",
    "CompositeExplicitAutograd": "CEA",
    "CompositeImplicitAutograd": "CIA",
}
_MAX_DEPTH = 6
# Ops every backend runs but that copy a value to the host: a sync, hence a graph cut (torch_xla counts it as a fallback).
_SYNC_OPS = {
    "aten::_local_scalar_dense": "kernel, but copies a value to the host (sync; torch_xla counts it as a fallback)"
}
# What the generated structured CompositeExplicitAutogradNonFunctional kernel allocates its output with.
_ALLOCATOR = "aten::empty_strided"
RANK = {"supported": 0, "decomposed": 0, "unknown": 1, "falls back": 2, "raises": 3}


@dataclass(frozen=True)
class Decision:
    """What one target does with one op: ``status``, how that was decided, and the missing ops underneath."""

    status: str  # supported | decomposed | falls back | raises | unknown
    how: str
    missing: tuple[str, ...] = ()

    @property
    def runs(self) -> bool:
        """The target runs the op on its own kernels (directly or through a composite)."""
        return self.status in ("supported", "decomposed")


def worst(statuses: Iterable[str]) -> str:
    return max(statuses, key=lambda s: RANK[s], default="supported")


def composite_key(op: str, dispatch_key: str) -> str | None:
    """The composite kernel the dispatcher would use for ``op`` on a backend key without its own kernel."""
    for k in COMPOSITE_ORDER:
        if k == "CompositeExplicitAutogradNonFunctional" and dispatch_key == "XLA":
            continue  # the dispatcher leaves XLA and Lazy out of this alias
        if torch._C._dispatch_has_kernel_for_dispatch_key(op, k):
            return k
    return None


@functools.cache
def _delegates() -> dict[str, str]:
    """``aten::x[.ov]`` -> its ``structured_delegate``, from the installed torchgen's ``native_functions.yaml``."""
    import torchgen
    import yaml

    path = os.path.join(os.path.dirname(torchgen.__file__), "packaged", "ATen", "native", "native_functions.yaml")
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    with open(path, encoding="utf-8") as f:
        entries = yaml.load(f, Loader=loader)
    out = {}
    for e in entries:
        d = e.get("structured_delegate")
        if d:
            name = e["func"].split("(", 1)[0]
            out[f"aten::{name}"] = f"aten::{d}"
    return out


def structured_delegate(op: str) -> str | None:
    """The ``.out`` op whose kernel a structured ``op`` calls (``aten::mm`` -> ``aten::mm.out``), else None."""
    return _delegates().get(op)


def _missing(table: SupportTable, fallback_on: bool, op: str) -> Decision:
    if table.missing == "raise":
        if fallback_on:
            return Decision("falls back", "no kernel: CPU fallback (switched on)", (op,))
        return Decision("raises", "no kernel: NotImplementedError (CPU fallback off, the default)", (op,))
    if not table.complete:
        return Decision("unknown", "not in the documented list; if unsupported it falls back to CPU (the default)")
    return Decision("falls back", "no kernel: CPU fallback (the default)", (op,))


def _expand(op: str, key: str, inputs: tuple[tuple[Any, ...], dict[str, Any]]) -> dict[str, OpCall] | None:
    """Run ``op``'s composite kernel ``key`` on copies of the inputs; the ops it calls."""
    args, kwargs = pytree.tree_map(copy_arg, inputs)
    rec = OpRecorder()
    try:
        with rec:
            lookup_overload(op)._op_dk(getattr(_DK, key), *args, **kwargs)
    except Exception:  # a composite that cannot run on these copies: undecided
        return None
    return rec.calls


def _combine(op: str, short: str, parts: list[tuple[str, Decision]]) -> Decision:
    if not parts:
        return Decision("decomposed", f"composite ({short}); needs no other backend op")
    status = worst(d.status for _, d in parts)
    missing = tuple(m for _, d in parts for m in d.missing)
    if status in ("supported", "decomposed"):
        return Decision(
            "decomposed", f"composite ({short}) -> " + ", ".join(n.removeprefix("aten::") for n, _ in parts)
        )
    bad = [n.removeprefix("aten::") for n, d in parts if d.status == status]
    return Decision(status, f"composite ({short}) -> {', '.join(bad)} ({status})", missing)


def decide(
    op: str,
    table: SupportTable,
    inputs: tuple[tuple[Any, ...], dict[str, Any]] | None = None,
    *,
    fallback_on: bool = False,
    depth: int = 0,
) -> Decision:
    """What the target of ``table`` does with ``op`` (``aten::x[.ov]``) called with ``inputs`` ``(args, kwargs)``.

    ``fallback_on``: TorchTPU's CPU-fallback switch (tables whose missing ops fall back ignore it). Without
    ``inputs`` a composite other than a structured op's cannot be followed and the answer is ``unknown``.
    Tensors in ``inputs`` may live on ``meta`` (no compute) or the CPU; they are copied, never changed.
    """
    if table.has_kernel(op):
        if op in table.kernel_fallbacks:
            return Decision("falls back", "kernel that calls the CPU fallback itself (measured)", (op,))
        return Decision("supported", _SYNC_OPS.get(op, "kernel"))
    key = composite_key(op, table.dispatch_key)
    if key is None or depth >= _MAX_DEPTH:
        return _missing(table, fallback_on, op)
    short = _SHORT[key]
    delegate = structured_delegate(op) if key == "CompositeExplicitAutogradNonFunctional" else None
    if delegate is not None:
        parts = [(n, decide(n, table, None, fallback_on=fallback_on, depth=depth + 1)) for n in (_ALLOCATOR, delegate)]
        d = _combine(op, f"{short}, structured", parts)
        return d
    if inputs is None:
        return Decision("unknown", f"composite ({short}); no example inputs to check what it calls")
    inner = _expand(op, key, inputs)
    if inner is None:
        return Decision("unknown", f"composite ({short}); could not run it on the given inputs")
    # an op whose composite re-dispatches itself (detach, alias-like ops) needs nothing more from the backend
    parts = [
        (name, decide(name, table, c.example, fallback_on=fallback_on, depth=depth + 1))
        for name, c in inner.items()
        if name.startswith("aten::") and name != op
    ]
    return _combine(op, short, parts)
