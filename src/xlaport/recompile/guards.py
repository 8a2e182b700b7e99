"""Dynamo guards that a real target adds and stock PyTorch does not.

TorchTPU 0.2.0's compile backend installs an ``EQUALS_MATCH`` Dynamo guard on the
storage offset of every tensor input of each graph it compiles (torch_tpu 0.2.0
wheel, ``_guard_input_storage_offsets``, called from ``TpuBackend.__call__`` in
``torch_tpu/_internal/compile/_backend.py``). Stock Dynamo's ``TENSOR_MATCH`` guard
checks dtype, device, shape and strides but not the storage offset, so on CUDA or
CPU ``f(sigmas[3])`` reuses the graph compiled for ``f(sigmas[2])``. On TPU it
recompiles, once per new offset, until Dynamo's recompile limit (8) sends the frame
to eager.

:func:`with_storage_offset_guards` wraps any Dynamo backend so that it does the
same. :meth:`xlaport.targets.Target.compile` applies it on the emulated ``tpu``
target when the profile has the ``storage-offset-guard`` rule, so the emulator
recompiles exactly where TorchTPU does.

>>> import torch
>>> from xlaport.recompile.guards import with_storage_offset_guards
>>> step = torch.compile(fn, backend=with_storage_offset_guards("aot_eager"))

A recompile caused by this guard is reported by Dynamo (``TORCH_LOGS=recompiles``)
with a reason such as ``sigma.storage_offset() == 2``; :func:`storage_offset_reason`
recognises that text.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

import torch

__all__ = [
    "RULE_ID",
    "GuardedBackend",
    "install_storage_offset_guards",
    "logical_storage_offset",
    "with_storage_offset_guards",
    "storage_offset_reason",
]

RULE_ID = "storage-offset-guard"  # the rule's id in data/profiles.toml

# Dynamo prints a failed EQUALS_MATCH guard on TensorPropertySource(..., STORAGE_OFFSET)
# as "<source name>.storage_offset() == <value at compile time>".
_REASON = re.compile(r"(?P<name>[\w\[\]'\".]+?)\.storage_offset\(\) == (?P<offset>-?\d+)")

Backend = Callable[[torch.fx.GraphModule, Sequence[Any]], Callable[..., Any]]


def storage_offset_reason(text: str) -> tuple[str, int] | None:
    """``(input name, offset it was compiled for)`` if ``text`` is a storage-offset guard failure, else None.

    >>> storage_offset_reason("0/1: sigma.storage_offset() == 1")
    ('sigma', 1)
    """
    if not isinstance(text, str):
        raise ValueError(f"expected a recompile reason string, got {type(text).__name__}")
    m = _REASON.search(text)
    return (m.group("name"), int(m.group("offset"))) if m else None


def _resolve(backend: str | Backend) -> Backend:
    if isinstance(backend, str):
        from torch._dynamo import list_backends, lookup_backend

        try:
            return lookup_backend(backend)  # type: ignore[return-value]
        except Exception:
            raise ValueError(
                f"unknown Dynamo backend {backend!r}; available: {', '.join(list_backends(exclude_tags=()))}"
            ) from None
    if not callable(backend):
        raise ValueError(f"backend must be a Dynamo backend name or a callable, got {type(backend).__name__}")
    return backend


# ---------------------------------------------------------------- logical offsets
# XLA tensors have no storage: torch_xla reports storage_offset() == 0 for every view
# (measured: torch.linspace(1, 0, 21).to(xla)[3].storage_offset() == 0). A TorchTPU
# tensor is backed by real device memory, so the same view reports 3 there. To apply
# TorchTPU's guard on the emulator we compute, for an XLA view, the offset it would
# have on a strided device: replay the view's recorded functionalization ViewMetas
# (torch._C._functionalization.get_view_meta_sequence) as real view ops on a meta
# tensor shaped like its base, and read that tensor's storage_offset().
def _aten_overload(meta_name: str) -> Any:
    name = meta_name[: -len("_ViewMeta")]
    aten = torch.ops.aten
    head, _, tail = name.rpartition("_")
    if head and hasattr(aten, head) and tail in getattr(aten, head).overloads():
        return getattr(getattr(aten, head), tail)
    return getattr(aten, name).default


def _replay(base: torch.Tensor, view_metas: Sequence[Any]) -> torch.Tensor:
    """Apply functionalization ViewMetas as real (aliasing) view ops on ``base``."""
    from torch._C._functionalization import InverseReturnMode  # type: ignore[attr-defined]

    out = base
    for vm in view_metas:
        fields = vm.as_tuple()
        at = next(i for i, f in enumerate(fields) if isinstance(f, InverseReturnMode))
        args = fields[at + 1 :]
        op = _aten_overload(type(vm).__name__)
        params = op._schema.arguments[1:]  # after `self`
        pos = [a for p, a in zip(params, args) if not p.kwarg_only]
        kw = {p.name: a for p, a in zip(params, args) if p.kwarg_only}
        res = op(out, *pos, **kw)
        if isinstance(res, (list, tuple)):
            res = res[fields[1]]  # multi-output views record (has_symbolic_inputs, out_index, ...)
        out = res
    return out


def logical_storage_offset(t: torch.Tensor) -> int:
    """The storage offset ``t`` has, or would have on a device with strided storage.

    For a tensor with real storage this is ``t.storage_offset()``. For an XLA tensor
    (no storage; torch_xla reports 0 for every view) it is the offset of the same
    view of a strided tensor shaped like its base; -1 if the view cannot be replayed.
    """
    if not isinstance(t, torch.Tensor):
        raise ValueError(f"expected a tensor, got {type(t).__name__}")
    if t.device.type != "xla":
        return int(t.storage_offset())
    base = t._base
    if base is None or not torch._is_functional_tensor(t):
        return int(t.storage_offset())
    from torch._C._functionalization import get_view_meta_sequence

    metas = get_view_meta_sequence(t)
    if not metas:
        return int(t.storage_offset())
    try:
        shadow = torch.empty_strided(tuple(base.shape), tuple(base.stride()), dtype=t.dtype, device="meta")
        return int(_replay(shadow, metas).storage_offset())
    except Exception:  # an exotic view op: a stable sentinel keeps the guard deterministic
        return -1


def _xla_offset_guard(builder: Any, guard: Any) -> None:
    """Guard create_fn: logical_storage_offset(<input>) must equal its value now."""
    from torch._dynamo.guards import get_verbose_code_parts

    value = logical_storage_offset(builder.get(guard.originating_source.name()))
    code = f"{guard.originating_source.name()}.storage_offset() == {value}  # logical offset of an XLA view"
    builder.get_guard_manager(guard).add_lambda_guard(
        lambda x, _v=value: logical_storage_offset(x) == _v, get_verbose_code_parts(code, guard)
    )


def install_storage_offset_guards(gm: torch.fx.GraphModule) -> int:
    """Add a guard on the storage offset of each tensor input of ``gm``; returns how many.

    As TorchTPU does: an ``EQUALS_MATCH`` guard on
    ``TensorPropertySource(source, TensorProperty.STORAGE_OFFSET)`` for every tensor
    placeholder. For XLA tensors, whose ``storage_offset()`` is always 0, the guard
    compares :func:`logical_storage_offset` instead. Must run inside a Dynamo compile
    (a backend call); outside one it does nothing.
    """
    from torch._dynamo.guards import GuardBuilder, install_guard
    from torch._dynamo.source import TensorProperty, TensorPropertySource
    from torch._guards import Guard, TracingContext

    if TracingContext.try_get() is None:
        return 0
    n = 0
    for node in gm.graph.find_nodes(op="placeholder"):
        example = node.meta.get("example_value")
        if not isinstance(example, torch.Tensor):
            continue  # SymInt / symbolic float inputs have no storage
        grapharg = node.meta.get("grapharg")
        source = getattr(grapharg, "source", None) or getattr(node, "_dynamo_source", None)
        if source is None:
            continue
        if example.device.type == "xla":
            install_guard(Guard(source, _xla_offset_guard))
        else:
            offset = TensorPropertySource(source, TensorProperty.STORAGE_OFFSET)
            install_guard(offset.make_guard(GuardBuilder.EQUALS_MATCH))
        n += 1
    return n


class GuardedBackend:
    """A Dynamo backend that adds storage-offset guards, then calls ``inner``.

    ``compiles`` counts the graphs it was asked to compile and ``guards`` the
    guards it installed, handy for tests and for a chapter's own bookkeeping.
    """

    def __init__(self, inner: str | Backend) -> None:
        self.inner_name = inner if isinstance(inner, str) else getattr(inner, "__name__", type(inner).__name__)
        self.inner = _resolve(inner)
        self.compiles = 0
        self.guards = 0
        self.__name__ = f"storage_offset_guarded_{self.inner_name}"

    def __call__(self, gm: torch.fx.GraphModule, example_inputs: Sequence[Any], **kwargs: Any) -> Callable[..., Any]:
        self.compiles += 1
        self.guards += install_storage_offset_guards(gm)
        return self.inner(gm, example_inputs, **kwargs)

    def __repr__(self) -> str:
        return f"GuardedBackend({self.inner_name!r}, compiles={self.compiles})"


def with_storage_offset_guards(backend: str | Backend) -> GuardedBackend:
    """Wrap a Dynamo backend (a name such as ``"openxla"`` or a callable) with TorchTPU's storage-offset guards."""
    return GuardedBackend(backend)
