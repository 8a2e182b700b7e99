"""Find the first inf/NaN in a forward or backward pass and name the op that made it.

Two ways in, both recording into one :class:`NonFiniteFinder`:

- **Eager** (CPU, CUDA, the XLA device in lazy mode, TorchTPU/TorchNeuron eager):
  ``with finder:`` installs a ``TorchDispatchMode`` that sees every ATen op of the
  forward *and* of the backward (autograd runs its formulas through the same
  dispatcher), plus forward hooks that name the module each forward op ran in.
  In the backward it names the autograd node (``SoftmaxBackward0``), i.e. the
  forward op whose derivative produced the bad value.
- **Compiled**: ``torch.compile(fn, backend=finder.backend())``. A compiled graph
  is opaque to a dispatch mode (Dynamo does not compile while one is active, so
  ``with finder:`` around a compiled call watches the *eager* semantics instead).
  The backend runs the real AOTAutograd pipeline (the same joint trace, partition
  and autocast handling as ``inductor``/``openxla``) and then interprets the
  forward and backward ATen graphs node by node, checking every output. This shows
  what AOTAutograd did to the program (e.g. a backward traced under the forward's
  autocast, pytorch/pytorch#153044), not the numerics of Inductor's or XLA's
  generated kernels.

On an XLA device the checks stay lazy: each check is a tiny reduction added to the
graph, and all of them are read back in one transfer when results are asked for,
so the finder does not cut the graph after every op. The price is one larger graph
to compile: ask for results (``finder.first``) after every step, and watch one step
at a time. (Measured on XLA:CPU on a loaded 2-core machine: a few dozen checks
compile in seconds; ~360 checks of a 2-layer transformer step took minutes.)

>>> finder = NonFiniteFinder(model)
>>> with finder:
...     loss = model(x).sum()
...     loss.backward()
>>> print(finder.first)        # None on a clean run
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

__all__ = ["NonFinite", "NonFiniteFinder", "is_finite", "assert_finite", "nonfinite_grads", "nonfinite_state"]


@dataclass(frozen=True)
class NonFinite:
    """One op output that held inf or NaN."""

    index: int  # position among the checked op outputs, in execution order
    op: str  # ATen overload, e.g. "aten._softmax.default"
    phase: str  # "forward" or "backward"
    where: str  # module path (forward), autograd node (eager backward) or FX node (compiled)
    dtype: str
    shape: tuple[int, ...]
    n_nan: int
    n_inf: int
    inputs_finite: bool  # False: the op only passed on a bad value it was given
    source: str  # "eager" or "compiled"

    def __str__(self) -> str:
        origin = "made here (inputs finite)" if self.inputs_finite else "passed on (an input was already non-finite)"
        where = f" in {self.where}" if self.where else ""
        return (
            f"{self.phase} op #{self.index} {self.op}{where} [{self.source}]: "
            f"{self.n_nan} NaN, {self.n_inf} inf in {self.dtype}{list(self.shape)}; {origin}"
        )


@dataclass
class _Pending:
    index: int
    op: str
    phase: str
    where: str
    dtype: str
    shape: tuple[int, ...]
    source: str
    flags: torch.Tensor | None  # [n_nan, n_inf, n_bad_inputs] on the output's device
    known: tuple[int, int, bool] | None = None  # resolved (n_nan, n_inf, inputs_finite)


def _float_tensors(obj: Any) -> list[torch.Tensor]:
    leaves, _ = tree_flatten(obj)
    return [t for t in leaves if isinstance(t, torch.Tensor) and (t.is_floating_point() or t.is_complex())]


def _on_lazy_device(t: torch.Tensor) -> bool:
    return t.device.type == "xla"


def _flags(out: torch.Tensor, inputs: list[torch.Tensor]) -> torch.Tensor:
    """[n_nan, n_inf, n_nonfinite_inputs] as one int64 tensor on ``out``'s device."""
    with torch.no_grad():
        o = out.detach()
        n_nan = torch.isnan(o).sum()
        n_inf = torch.isinf(o).sum()
        bad_in = torch.zeros((), dtype=torch.int64, device=o.device)
        for t in inputs:
            if t.numel() and t.device == o.device:
                bad_in = bad_in + (~torch.isfinite(t.detach())).any().to(torch.int64)
        return torch.stack([n_nan.to(torch.int64), n_inf.to(torch.int64), bad_in])


class _Mode(TorchDispatchMode):
    def __init__(self, finder: NonFiniteFinder) -> None:
        super().__init__()
        self.finder = finder

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        if func in _SKIP or getattr(func, "is_view", False):
            return out
        node = torch._C._current_autograd_node()
        if node is not None:
            phase, where = "backward", type(node).__name__
        else:
            stack = self.finder._module_stack
            phase, where = "forward", (stack[-1] if stack else "")
        self.finder._check(str(func), phase, where, out, _float_tensors((args, kwargs)), "eager")
        return out


# Ops that only move or alias data: checking them would report a value already reported.
_SKIP = {
    torch.ops.aten.detach.default,
    torch.ops.aten.alias.default,
    torch.ops.aten.clone.default,
    torch.ops.aten.copy_.default,
    torch.ops.aten.lift_fresh.default,
    torch.ops.aten.empty_like.default,
    torch.ops.aten.empty.memory_format,
    torch.ops.aten.empty_strided.default,
}  # casts (aten._to_copy) are checked: fp32 -> fp16 overflows there


def _module_path(dynamo_source: str) -> str:
    """``L['self']._modules['blocks']._modules['0']`` -> ``blocks.0`` (Dynamo's names for submodules)."""
    path = re.sub(r"\._modules\['([^']*)'\]", r".\1", dynamo_source)
    path = re.sub(r"^L\['[^']*'\]\.?", "", path)
    return path or "(root)"


class _CheckingInterpreter(torch.fx.Interpreter):
    def __init__(self, gm: torch.fx.GraphModule, finder: NonFiniteFinder, phase: str) -> None:
        super().__init__(gm)
        self.finder = finder
        self.phase = phase

    def run_node(self, n: torch.fx.Node) -> Any:
        out = super().run_node(n)
        if n.op == "call_function" and isinstance(n.target, torch._ops.OpOverload):
            if n.target in _SKIP or n.target.is_view:
                return out
            # forward nodes carry nn_module_stack; backward nodes the forward's, as fwd_nn_module_stack
            stack = n.meta.get("nn_module_stack") or n.meta.get("fwd_nn_module_stack") or {}
            module = _module_path(next(reversed(stack.values()))[0]) if stack else ""
            where = f"{n.name}" + (f" ({module})" if module else "")
            inputs = _float_tensors([self.env[a] for a in n.all_input_nodes if a in self.env])
            self.finder._check(str(n.target), self.phase, where, out, inputs, "compiled")
        return out


class NonFiniteFinder:
    """Records every op output that holds inf/NaN, in execution order; see the module doc.

    ``model`` (optional) names modules in forward reports. ``max_checks`` bounds the
    number of op outputs checked (each check keeps three integers; on XLA the checks
    are lazy tensors until read), so a long loop cannot grow without limit.
    """

    def __init__(self, model: torch.nn.Module | None = None, *, max_checks: int = 200_000) -> None:
        if model is not None and not isinstance(model, torch.nn.Module):
            raise ValueError(f"model must be a torch.nn.Module or None, got {type(model).__name__}")
        if not isinstance(max_checks, int) or isinstance(max_checks, bool) or max_checks < 1:
            raise ValueError(f"max_checks must be a positive int, got {max_checks!r}")
        self.model = model
        self.max_checks = max_checks
        self._pending: list[_Pending] = []
        self._module_stack: list[str] = []
        self._hooks: list[Any] = []
        self._mode: _Mode | None = None
        self.checks = 0
        self.truncated = False

    # ------------------------------------------------------------ recording
    def _check(self, op: str, phase: str, where: str, out: Any, inputs: list[torch.Tensor], source: str) -> None:
        for t in _float_tensors(out):
            if self.checks >= self.max_checks:
                self.truncated = True
                return
            self.checks += 1
            p = _Pending(
                self.checks, op, phase, where, str(t.dtype).replace("torch.", ""), tuple(t.shape), source, None
            )
            if t.numel() == 0:
                p.known = (0, 0, True)
            else:
                flags = _flags(t, inputs)
                if _on_lazy_device(t):
                    p.flags = flags  # read back later, all at once
                else:
                    n_nan, n_inf, bad_in = (int(v) for v in flags.tolist())
                    if n_nan == 0 and n_inf == 0:
                        continue  # clean outputs on eager devices are not kept
                    p.known = (n_nan, n_inf, bad_in == 0)
            self._pending.append(p)

    def _resolve(self) -> None:
        lazy = [p for p in self._pending if p.known is None and p.flags is not None]
        if lazy:
            by_device: dict[torch.device, list[_Pending]] = {}
            for p in lazy:
                by_device.setdefault(p.flags.device, []).append(p)  # type: ignore[union-attr]
            for ps in by_device.values():
                values = torch.stack([p.flags for p in ps]).cpu().tolist()  # type: ignore[misc]
                for p, (n_nan, n_inf, bad_in) in zip(ps, values):
                    p.known = (int(n_nan), int(n_inf), int(bad_in) == 0)
                    p.flags = None
        self._pending = [p for p in self._pending if p.known is not None and (p.known[0] or p.known[1])]

    # ------------------------------------------------------------ results
    @property
    def findings(self) -> list[NonFinite]:
        """Every op output that held inf/NaN, in execution order."""
        self._resolve()
        return [
            NonFinite(p.index, p.op, p.phase, p.where, p.dtype, p.shape, p.known[0], p.known[1], p.known[2], p.source)  # type: ignore[index]
            for p in self._pending
        ]

    @property
    def first(self) -> NonFinite | None:
        """The first op output that held inf/NaN, or None if every checked output was finite."""
        found = self.findings
        return found[0] if found else None

    @property
    def origin(self) -> NonFinite | None:
        """The first op that *made* a non-finite value from finite inputs (None if none did)."""
        return next((f for f in self.findings if f.inputs_finite), None)

    def report(self, limit: int = 5) -> str:
        """A few lines for a notebook or a log: how many outputs were checked and the first bad ones."""
        if not isinstance(limit, int) or limit < 1:
            raise ValueError(f"limit must be a positive int, got {limit!r}")
        found = self.findings
        head = f"checked {self.checks} op outputs" + (" (stopped at max_checks)" if self.truncated else "")
        if not found:
            return head + ": all finite"
        lines = [head + f": {len(found)} non-finite"]
        lines += [f"  {f}" for f in found[:limit]]
        if len(found) > limit:
            lines.append(f"  ... {len(found) - limit} more")
        if not found[0].inputs_finite and self.model is not None:
            state = nonfinite_state(self.model)
            if state:
                lines.append(f"  the first bad input was already in the model: {', '.join(state)}")
        return "\n".join(lines)

    def reset(self) -> None:
        """Forget everything recorded so far."""
        self._pending.clear()
        self.checks = 0
        self.truncated = False

    # ------------------------------------------------------------ eager watching
    def __enter__(self) -> NonFiniteFinder:
        if self._mode is not None:
            raise ValueError("this NonFiniteFinder is already active; use one `with` block at a time")
        if self.model is not None:
            for name, mod in self.model.named_modules():
                label = name or "(root)"

                def pre(_m: Any, _a: Any, label: str = label) -> None:
                    self._module_stack.append(label)

                def post(_m: Any, _a: Any, _o: Any) -> None:
                    if self._module_stack:
                        self._module_stack.pop()

                self._hooks.append(mod.register_forward_pre_hook(pre))
                self._hooks.append(mod.register_forward_hook(post, always_call=True))
        self._mode = _Mode(self)
        self._mode.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        mode, self._mode = self._mode, None
        if mode is not None:
            mode.__exit__(*exc)
        for h in self._hooks:
            h.remove()
        self._hooks.clear()
        self._module_stack.clear()

    # ------------------------------------------------------------ compiled watching
    def backend(self) -> Callable[..., Any]:
        """A ``torch.compile`` backend: AOTAutograd, then forward and backward graphs run node by node with checks."""
        from functorch.compile import make_boxed_func
        from torch._dynamo.backends.common import aot_autograd

        def compiler(phase: str) -> Callable[..., Any]:
            def compile_graph(gm: torch.fx.GraphModule, example_inputs: Any) -> Any:
                def run(*args: Any) -> Any:
                    return _CheckingInterpreter(gm, self, phase).run(*args)

                return make_boxed_func(run)

            return compile_graph

        return aot_autograd(fw_compiler=compiler("forward"), bw_compiler=compiler("backward"))


def is_finite(*tensors: torch.Tensor) -> bool:
    """True when every given tensor (and every ``.grad`` you pass) holds only finite values; one readback."""
    if not tensors:
        raise ValueError("is_finite needs at least one tensor")
    flags = []
    for t in tensors:
        if not isinstance(t, torch.Tensor):
            raise ValueError(f"is_finite takes tensors, got {type(t).__name__}")
        flags.append(torch.isfinite(t.detach()).all().to("cpu"))
    return bool(torch.stack(flags).all())


def assert_finite(named: dict[str, torch.Tensor | None], what: str = "") -> None:
    """Raise ValueError naming every entry of ``named`` that holds inf/NaN (None entries are skipped)."""
    if not isinstance(named, dict):
        raise ValueError(f"assert_finite takes a dict of name -> tensor, got {type(named).__name__}")
    bad = [k for k, v in named.items() if v is not None and not is_finite(v)]
    if bad:
        raise ValueError(f"non-finite values{' in ' + what if what else ''}: {', '.join(bad)}")


def _iter_grads(model: torch.nn.Module) -> Iterator[tuple[str, torch.Tensor]]:
    for name, p in model.named_parameters():
        if p.grad is not None:
            yield name, p.grad


def nonfinite_state(model: torch.nn.Module) -> list[str]:
    """Names of parameters and buffers that hold inf/NaN (e.g. a constant that ``model.to(bf16)`` turned into -inf)."""
    if not isinstance(model, torch.nn.Module):
        raise ValueError(f"nonfinite_state takes a torch.nn.Module, got {type(model).__name__}")
    items = [
        (n, t) for n, t in (*model.named_parameters(), *model.named_buffers()) if t.is_floating_point() and t.numel()
    ]
    if not items:
        return []
    flags = torch.stack([(~torch.isfinite(t.detach())).any().to("cpu") for _, t in items])
    return [name for (name, _), bad in zip(items, flags.tolist()) if bad]


def nonfinite_grads(model: torch.nn.Module) -> list[str]:
    """Names of parameters whose ``.grad`` holds inf/NaN (one readback per device)."""
    if not isinstance(model, torch.nn.Module):
        raise ValueError(f"nonfinite_grads takes a torch.nn.Module, got {type(model).__name__}")
    items = list(_iter_grads(model))
    if not items:
        return []
    flags = torch.stack([(~torch.isfinite(g.detach())).any().to("cpu") for _, g in items])
    return [name for (name, _), bad in zip(items, flags.tolist()) if bad]
