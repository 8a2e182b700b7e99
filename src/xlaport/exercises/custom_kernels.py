"""Chapter *Custom kernels*: a kernel port's forward and gradients, and a Pallas block shape."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from ..text import sci
from .common import Check, _fail, _ints, _none, _ok, guarded

__all__ = ["check_kernel_port", "check_block_shape"]


@guarded("kernel port")
def check_kernel_port(
    fn: Callable[..., Any] | None, reference: Callable[..., Any], inputs: Sequence[Any], tol: float
) -> Check:
    """A port of a kernel: forward and the gradient of every floating input within ``tol`` of the reference."""
    name = "kernel port"
    if fn is None:
        return _none(name)
    a = [x.detach().clone().requires_grad_(x.is_floating_point()) for x in inputs]
    b = [x.detach().clone().requires_grad_(x.is_floating_point()) for x in inputs]
    try:
        ya = fn(*a)
    except Exception as e:
        return _fail(name, f"raised {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
    yb = reference(*b)
    if tuple(ya.shape) != tuple(yb.shape):
        return _fail(name, f"output shape {tuple(ya.shape)}, the reference gives {tuple(yb.shape)}")
    err = float((ya.detach() - yb.detach()).abs().max())
    if not math.isfinite(err) or err > tol:
        return _fail(name, f"forward max |error| {err:.2e} > {tol:.0e}")
    g = __import__("torch").randn_like(yb)
    yb.backward(g)
    try:
        ya.backward(g)
    except RuntimeError:
        return _fail(name, "the output has no gradient: the port is not differentiable")
    worst = 0.0
    for i, (xa, xb) in enumerate(zip(a, b)):
        if xb.grad is None:
            continue
        if xa.grad is None:
            return _fail(name, f"no gradient for input {i}: the port is not differentiable")
        gerr = float((xa.grad - xb.grad).abs().max())
        if not math.isfinite(gerr) or gerr > tol:
            return _fail(name, f"gradient of input {i}: max |error| {gerr:.2e} > {tol:.0e}")
        worst = max(worst, gerr)
    return _ok(name, f"forward {sci(err)}, gradients {sci(worst)} from the reference (tolerance {tol:.0e})")


@guarded("block shape")
def check_block_shape(
    block: Sequence[int] | None, array_shape: Sequence[int], tile: tuple[int, int] = (8, 128)
) -> Check:
    """A Pallas TPU block: each of the last two dims divisible by the tile (8, 128) or equal to the array's."""
    name = "block shape"
    shape = _ints("array_shape", array_shape)
    if block is None:
        return _none(name)
    try:
        blk = _ints("block", block)
    except ValueError as e:
        return _fail(name, str(e))
    if len(blk) != len(shape):
        return _fail(name, f"block has {len(blk)} dims, the array {len(shape)}")
    for d, (b, n, t) in enumerate(zip(blk[-2:], shape[-2:], tile)):
        axis = len(shape) - 2 + d
        if b > n:
            return _fail(name, f"dim {axis}: block {b} is larger than the array's {n}")
        if b % t and b != n:
            return _fail(name, f"dim {axis}: block {b} is neither a multiple of {t} nor the full dim {n}")
    grid = [math.ceil(n / b) for n, b in zip(shape, blk)]
    return _ok(name, f"block {tuple(blk)} fits the ({tile[0]}, {tile[1]}) tile; grid {tuple(grid)}")
