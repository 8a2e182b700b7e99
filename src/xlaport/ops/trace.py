"""Record the ATen ops a function really dispatches, counted, with the Python lines that called them.

>>> from xlaport.ops import aten_ops
>>> trace = aten_ops(model, x)
>>> print(trace.table())

Ops are recorded at the dispatcher's Python key, after ``CompositeImplicitAutograd``
decompositions: what a backend receives.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

import torch
from torch.utils import _pytree as pytree
from torch.utils._python_dispatch import TorchDispatchMode

__all__ = [
    "OpCall",
    "OpTrace",
    "OpRecorder",
    "aten_ops",
    "normalise",
    "lookup_overload",
    "op_name",
    "has_composite",
    "copy_arg",
    "COMPOSITE_ORDER",
]

_THIS_DIR = os.path.dirname(os.path.abspath(__file__))
_TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__))
# Composite kernels in the order the dispatcher tries them for a backend key without its own kernel.
COMPOSITE_ORDER: tuple[str, ...] = (
    "CompositeExplicitAutogradNonFunctional",
    "CompositeExplicitAutograd",
    "CompositeImplicitAutograd",
)


def op_name(func: Any) -> str:
    """``aten::mm`` for the default overload, ``aten::add.Tensor`` otherwise."""
    return func.name() if hasattr(func, "name") else str(func)


def normalise(name: str) -> str:
    """Accept ``aten::x.ov``, ``aten.x.ov``, ``x.ov``, ``aten.x.default``; return ``aten::x[.ov]``."""
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"op name must be a non-empty string, got {name!r}")
    n = name.strip()
    if n.startswith("aten."):
        n = "aten::" + n[len("aten.") :]
    if not n.startswith("aten::"):
        n = "aten::" + n
    if n.endswith(".default"):
        n = n[: -len(".default")]
    return n


def lookup_overload(name: str) -> Any:
    """The OpOverload for ``aten::x[.ov]``; ValueError when PyTorch has no such op."""
    base, _, ov = name.removeprefix("aten::").partition(".")
    packet = getattr(torch.ops.aten, base, None)
    if packet is None:
        raise ValueError(f"unknown ATen op {name!r}")
    try:
        return getattr(packet, ov or "default")
    except AttributeError:
        raise ValueError(f"unknown ATen op {name!r}") from None


@dataclass
class OpCall:
    """One ATen op overload as dispatched: how often, and from which Python lines."""

    op: str
    count: int = 0
    sites: list[str] = field(default_factory=list)
    example: tuple[tuple[Any, ...], dict[str, Any]] | None = field(default=None, repr=False)

    @property
    def site(self) -> str:
        return self.sites[0] if self.sites else "?"


@dataclass
class OpTrace:
    """The ops a call dispatched, in first-seen order."""

    calls: dict[str, OpCall]
    device: str

    def __iter__(self) -> Iterator[OpCall]:
        return iter(self.calls.values())

    def __len__(self) -> int:
        return len(self.calls)

    def __contains__(self, op: object) -> bool:
        return isinstance(op, str) and normalise(op) in self.calls

    def __getitem__(self, op: str) -> OpCall:
        return self.calls[normalise(op)]

    @property
    def names(self) -> list[str]:
        return list(self.calls)

    def counts(self) -> dict[str, int]:
        return {k: v.count for k, v in self.calls.items()}

    def table(self) -> str:
        w = max([len(c.op) for c in self] + [2])
        lines = [f"{'op':<{w}}  {'count':>5}  first call site"]
        lines += [f"{c.op:<{w}}  {c.count:>5}  {c.site}" for c in self]
        return "\n".join(lines)


def has_composite(op: str) -> bool:
    return any(torch._C._dispatch_has_kernel_for_dispatch_key(op, k) for k in COMPOSITE_ORDER)


def copy_arg(a: Any) -> Any:
    if isinstance(a, torch.Tensor):
        return a.detach().clone() if a.device.type != "meta" else torch.empty_like(a)
    return a


_IPYKERNEL_FILE = re.compile(r"ipykernel_\d+[/\\]\d+\.py$")


def _user_site() -> str:
    f: FrameType | None = sys._getframe(2)
    while f is not None:
        fn = os.path.abspath(f.f_code.co_filename)
        if not fn.startswith(_THIS_DIR) and not fn.startswith(_TORCH_DIR) and not fn.startswith("<frozen"):
            # A notebook cell's code lives in ipykernel's temporary file (``/tmp/ipykernel_<pid>/<hash>.py``):
            # name it "cell", not by that hash.
            where = "cell" if _IPYKERNEL_FILE.search(fn) else os.path.basename(fn)
            return f"{where}:{f.f_lineno} in {f.f_code.co_name}"
        f = f.f_back
    return "?"


class OpRecorder(TorchDispatchMode):
    def __init__(self, keep_examples: bool = True) -> None:
        super().__init__()
        self.calls: dict[str, OpCall] = {}
        self.keep_examples = keep_examples

    def __torch_dispatch__(
        self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None
    ) -> Any:
        kwargs = kwargs or {}
        name = op_name(func)
        call = self.calls.get(name)
        if call is None:
            call = self.calls[name] = OpCall(name)
            if self.keep_examples and name.startswith("aten::") and has_composite(name):
                call.example = (pytree.tree_map(copy_arg, args), pytree.tree_map(copy_arg, kwargs))
        call.count += 1
        if len(call.sites) < 3:
            site = _user_site()
            if site not in call.sites:
                call.sites.append(site)
        return func(*args, **kwargs)


def aten_ops(fn: Callable[..., Any], *example_inputs: Any, device: str = "cpu", **kwargs: Any) -> OpTrace:
    """Run ``fn(*example_inputs, **kwargs)`` once and record every ATen op it dispatches.

    ``device="cpu"`` (default) runs the real CPU kernels, so data-dependent ops
    (``unique``, ``nonzero``) work; ``device="meta"`` moves tensor inputs (and a
    copy of ``fn`` when it is an ``nn.Module``) to meta tensors: no memory and no
    compute, but data-dependent ops fail. Ops are recorded at the dispatcher's
    Python key, i.e. after ``CompositeImplicitAutograd`` decompositions, which is
    what a backend receives. Backward ops are recorded when ``fn`` calls
    ``backward()`` itself.
    """
    if not callable(fn):
        raise ValueError(f"aten_ops needs a function or module, got {type(fn).__name__}")
    if device not in ("cpu", "meta"):
        raise ValueError(f"aten_ops traces on 'cpu' or 'meta' tensors, not {device!r}")
    if device == "meta":
        import copy

        if isinstance(fn, torch.nn.Module):
            fn = copy.deepcopy(fn).to("meta")
        example_inputs = pytree.tree_map(lambda a: a.to("meta") if isinstance(a, torch.Tensor) else a, example_inputs)
    rec = OpRecorder()
    with rec:
        fn(*example_inputs, **kwargs)
    return OpTrace(rec.calls, device)
