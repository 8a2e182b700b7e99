"""Chapter *Custom kernels*: a kernel port's forward and gradients, and a Pallas block shape."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from ..text import sci
from .common import ArgumentError, Verdict, _ints, fails, guarded, passes, raised

__all__ = ["check_kernel_port", "check_block_shape", "hidden_rows", "HIDDEN_ARRAYS"]


def hidden_rows() -> list[tuple[Any, Any]]:
    """The ``(x, w)`` a row-wise kernel port runs on: shapes the chapter never shows (a 3-D input included), rows
    with a non-zero mean (where the variance is not the mean of squares) and a row of zeros (where ``eps`` keeps
    the result finite)."""
    import torch

    g = torch.Generator().manual_seed(31)
    x1, w1 = torch.randn(5, 40, generator=g) * 2 + 1, torch.randn(40, generator=g)
    x1[3] = 0.0
    x2, w2 = torch.randn(2, 3, 136, generator=g) + 0.5, torch.rand(136, generator=g) + 0.5
    return [(x1, w1), (x2, w2)]


def _check_reference(reference: Callable[..., Any]) -> None:
    if not callable(reference):
        raise ArgumentError("reference must be the kernel, a function (x, w) -> y")


@guarded("kernel port", must_be="a function rmsnorm(x, w) -> y", arguments=_check_reference)
def check_kernel_port(fn: Callable[..., Any], reference: Callable[..., Any], tol: float) -> Verdict:
    """A port ``fn(x, w)`` of a row-wise kernel ``reference(x, w)`` (normalising over the last dimension): forward and
    the gradients of ``x`` and ``w`` within ``tol`` of the reference (gradients relative to their largest value when it
    is above 1) on inputs the chapter never shows (:func:`hidden_rows`)."""
    import torch

    worst_f = worst_g = 0.0
    for inputs in hidden_rows():
        where = f"on x of shape {tuple(inputs[0].shape)}"
        a = [x.detach().clone().requires_grad_(True) for x in inputs]
        b = [x.detach().clone().requires_grad_(True) for x in inputs]
        try:
            ya = fn(*a)
        except Exception as e:
            return fails(f"{where}: {raised(e, 'it')}")
        yb = reference(*b)
        if not isinstance(ya, torch.Tensor) or tuple(ya.shape) != tuple(yb.shape):
            return fails(
                f"{where}: output shape {tuple(getattr(ya, 'shape', ()))}, the reference gives {tuple(yb.shape)}"
            )
        err = float((ya.detach() - yb.detach()).abs().max())
        if not math.isfinite(err) or err > tol:
            zero = bool((inputs[0].reshape(-1, inputs[0].shape[-1]) == 0).all(-1).any())
            hint = (
                " (a row of zeros is in it: keep eps inside the square root)" if not math.isfinite(err) and zero else ""
            )
            return fails(f"{where}: forward max |error| {err:.2e} > {tol:.0e}{hint}")
        g = torch.randn(yb.shape, generator=torch.Generator().manual_seed(5))
        yb.backward(g)
        try:
            ya.backward(g)
        except RuntimeError:
            return fails(f"{where}: the output has no gradient: the port is not differentiable")
        for i, (xa, xb) in enumerate(zip(a, b)):
            if xa.grad is None:
                return fails(f"{where}: no gradient for input {i}: the port is not differentiable")
            gerr = float((xa.grad - xb.grad).abs().max())
            scale = max(1.0, float(xb.grad.abs().max()))  # a row of zeros has gradients of 1/sqrt(eps)
            if not math.isfinite(gerr) or gerr > tol * scale:
                return fails(
                    f"{where}: gradient of input {i}: max |error| {gerr:.2e} > {tol:.0e}"
                    + (f" x {scale:.3g} (the gradient's scale)" if scale > 1 else ""),
                )
            gerr /= scale
            worst_g = max(worst_g, gerr)
        worst_f = max(worst_f, err)
    return passes(
        f"on 2 inputs the chapter never shows: forward {sci(worst_f)}, gradients {sci(worst_g)} from the reference "
        f"(tolerance {tol:.0e})",
    )


#: The 2-D arrays ``(rows, cols)`` the block-shape check asks for a block of: none is the chapter's.
HIDDEN_ARRAYS = ((24, 96), (1000, 4096), (5, 300), (300, 128), (7, 1), (64, 200))


@guarded("block shape", must_be="a function block_for((rows, cols)) -> (block_rows, block_cols)")
def check_block_shape(
    block_for: Callable[[tuple[int, int]], Sequence[int]],
    tile: tuple[int, int] = (8, 128),
    max_rows: int = 64,
) -> Verdict:
    """``block_for((rows, cols)) -> (block_rows, block_cols)``: a Pallas TPU block for a row-wise kernel such as
    RMSNorm, on arrays the chapter never shows (:data:`HIDDEN_ARRAYS`). Each of the block's dims is a multiple of the
    ``tile`` (8, 128) or the array's whole dim; a block takes whole rows (the kernel reduces over them) and at most
    ``max_rows`` of them (a few rows, so the work splits over a grid)."""
    tile = (int(tile[0]), int(tile[1]))
    grids = []
    for shape in HIDDEN_ARRAYS:
        where = f"for a {shape[0]} x {shape[1]} array"
        try:
            got = block_for((int(shape[0]), int(shape[1])))
            blk = _ints("block", got)
        except ArgumentError as e:
            return fails(f"{where}: {e}")
        except Exception as e:
            return fails(f"{where}: {raised(e, 'it')}")
        if len(blk) != 2:
            return fails(f"{where}: block {tuple(blk)} has {len(blk)} dims, the array 2")
        for axis, (b, n, t) in enumerate(zip(blk, shape, tile)):
            if b > n:
                return fails(f"{where}: dim {axis}: block {b} is larger than the array's {n}")
            if b % t and b != n:
                return fails(f"{where}: dim {axis}: block {b} is neither a multiple of {t} nor the full dim {n}")
        if blk[1] != shape[1]:
            return fails(
                f"{where}: block of {blk[1]} columns: a row-wise norm needs whole rows, all {shape[1]} columns"
            )
        if blk[0] > max_rows:
            return fails(f"{where}: {blk[0]} rows in one block: a few rows (at most {max_rows}) per block")
        grids.append(f"array {tuple(shape)}: block {tuple(blk)}, grid {math.ceil(shape[0] / blk[0])}")
    more = f"; and {len(grids) - 3} more" if len(grids) > 3 else ""
    return passes(f"fits the ({tile[0]}, {tile[1]}) tile on {len(grids)} unseen arrays: " + "; ".join(grids[:3]) + more)
