"""Chapter *Distributed*: a port of CUDA stream code, and the fewest chips for FSDP."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..distributed.mesh import fsdp_bytes_per_device, largest_parameter
from ..text import plural
from .common import ArgumentError, Check, _fail, _ints, _none, _ok, guarded

__all__ = ["check_stream_port", "check_fsdp_chips"]


@guarded("stream port")
def check_stream_port(
    fn: Callable[..., Any] | None, original: Callable[..., Any], inputs: Sequence[Any], target: str = "tpu"
) -> Check:
    """``fn(dm, *inputs)``, a port of the CUDA stream code ``original(dm, *inputs)``: on ``target``'s stream rules
    (``xlaport.distributed.streams``) no call it makes raises or does nothing, and its outputs equal the
    original's run in program order (no stream rules: the ``cpu`` profile)."""
    import torch

    from ..distributed.streams import EmulatedStreams
    from ..profiles import profile

    name = "stream port"
    rules = profile(target)
    ref = original(EmulatedStreams(profile("cpu")), *inputs)
    want = ref if isinstance(ref, (tuple, list)) else (ref,)
    if not all(isinstance(w, torch.Tensor) for w in want):
        raise ArgumentError("the original stream code must return a tensor or a tuple of tensors")
    if fn is None:
        return _none(name)
    dm = EmulatedStreams(rules)
    try:
        got = fn(dm, *inputs)
    except Exception as e:
        text = str(e).splitlines()[0] if str(e) else ""
        if dm.log and dm.log[-1][1] == "raises":  # a stream call the target's rules say raises
            return _fail(name, f"`{dm.log[-1][0]}` raises {type(e).__name__} on {target}: {text}")
        return _fail(name, f"raised {type(e).__name__}: {text}")
    dead = list(dict.fromkeys(c for c, outcome, _ in dm.log if outcome == "no-op"))
    if dead:
        return _fail(
            name,
            f"{', '.join(f'`{c}`' for c in dead)} {'does' if len(dead) == 1 else 'do'} nothing on {target}: dead "
            "code that promises an overlap it does not get; delete it",
        )
    have = got if isinstance(got, (tuple, list)) else (got,)
    if len(have) != len(want):
        return _fail(name, f"{plural(len(have), 'output')}, the CUDA version returns {len(want)}")
    for i, (h, w) in enumerate(zip(have, want)):
        if not isinstance(h, torch.Tensor) or tuple(h.shape) != tuple(w.shape):
            return _fail(name, f"output {i}: not a tensor of shape {tuple(w.shape)}")
        if not w.numel():
            continue
        err = float((h.detach().cpu().double() - w.detach().cpu().double()).abs().max())
        if not math.isfinite(err) or err > 1e-5 * (1 + float(w.detach().abs().max())):
            return _fail(name, f"output {i} differs from the CUDA version's by {err:.2e}")
    left = sorted({c for c, _, _ in dm.log})
    return _ok(
        name,
        f"same outputs as the CUDA version; no stream call raises or does nothing on {target}"
        + (f" ({len(left)} that run left: {', '.join(left)})" if left else " (no stream call left)"),
    )


@guarded("FSDP chips")
def check_fsdp_chips(
    answer: int | None,
    shapes: Mapping[str, Sequence[int]],
    budget_bytes: float,
    batch: int,
    state_bytes_per_param: float = 16,
    gathered_bytes_per_param: float = 4,
) -> Check:
    """``answer``: the fewest chips over which FSDP fits a model of parameter ``shapes`` in ``budget_bytes`` per chip.

    Per chip: every parameter's training state (``state_bytes_per_param``, 16 = float32 parameter, gradient and
    AdamW's two moments) sharded as :func:`xlaport.distributed.mesh.fsdp_bytes_per_device` computes, plus the largest parameter gathered
    whole (``gathered_bytes_per_param``), as FSDP does before a layer uses it. The global ``batch`` must split
    evenly over the chips.
    """
    name = "FSDP chips"
    if not shapes:
        raise ArgumentError("shapes is empty")
    if not budget_bytes > 0:
        raise ArgumentError(f"budget_bytes must be positive, got {budget_bytes!r}")
    batch = _ints("batch", [batch])[0]
    try:
        largest = largest_parameter(shapes) * float(gathered_bytes_per_param)
        fsdp_bytes_per_device(shapes, 1, state_bytes_per_param)
    except ValueError as e:
        raise ArgumentError(str(e)) from None

    def need(n: int) -> float:
        return fsdp_bytes_per_device(shapes, n, state_bytes_per_param) + largest

    if answer is None:
        return _none(name)
    try:
        n = int(answer)
    except (TypeError, ValueError):
        return _fail(name, f"answer must be a whole number of chips, got {answer!r}")
    if n != answer or n < 1:
        return _fail(name, f"answer must be a whole number of chips >= 1, got {answer!r}")
    if batch % n:
        return _fail(name, f"the global batch of {batch} does not split evenly over {n} chips")
    if need(n) > budget_bytes:
        return _fail(
            name,
            f"{_size(need(n))} per chip on {n} chips (sharded state {_size(need(n) - largest)} + the "
            f"largest parameter gathered whole {_size(largest)}); the budget is {_size(budget_bytes)}",
        )
    fewer = next((m for m in range(1, n) if batch % m == 0 and need(m) <= budget_bytes), None)
    if fewer is not None:
        return _fail(name, f"fits ({_size(need(n))} per chip), but {fewer} chips fit too ({_size(need(fewer))})")
    return _ok(
        name,
        f"{n} chips: {_size(need(n))} per chip of a {_size(budget_bytes)} budget"
        + (f"; {prev} chips would need {_size(need(prev))}" if (prev := _smaller_divisor(batch, n)) else ""),
    )


def _size(n_bytes: float) -> str:
    """Bytes for a message: GB with one decimal, or MB below a tenth of a GB (never "0.0 GB")."""
    return f"{n_bytes / 1e9:.1f} GB" if n_bytes >= 1e8 else f"{n_bytes / 1e6:.1f} MB"


def _smaller_divisor(batch: int, n: int) -> int | None:
    return next((m for m in range(n - 1, 0, -1) if batch % m == 0), None)
