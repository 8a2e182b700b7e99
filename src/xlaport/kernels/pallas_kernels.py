"""The chapter's kernels in Pallas (JAX's kernel language; on a TPU, Pallas lowers to Mosaic).

Each port keeps the Triton kernel's arithmetic and changes how it addresses memory:

- ``tl.program_id`` → ``pl.program_id``: the grid index, one kernel instance per block.
- masked ``tl.load`` → a ``BlockSpec`` that hands the kernel a whole VMEM block, plus padding on the host
  to the TPU tile: a float32 block's last two dimensions must be multiples of 8 and 128 (or the whole
  array). RMSNorm divides by the true width ``d``, so zero padding does not change the statistics.
- ``tl.constexpr`` → static Python arguments bound with ``functools.partial`` (and ``static_argnames``).
- ``tl.dot`` → ``jnp.dot(..., preferred_element_type=jnp.float32)`` into a float32 VMEM accumulator.
- partial sums written per program and summed on the host (Liger-style ``dW``) → one output block that
  every grid step revisits, on a grid axis marked ``"arbitrary"`` (sequential), initialised at step 0.

``interpret`` is ``pltpu.InterpretParams`` (TPU interpret mode on CPU) or ``None`` (compile for a TPU);
:func:`xlaport.kernels.interpret_params` picks it for this machine.
"""

from __future__ import annotations

import functools
from typing import Any

from ._jax import jax as _import_jax

_import_jax()  # sets JAX_PLATFORMS=cpu first on machines without a TPU

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax.experimental import pallas as pl  # noqa: E402
from jax.experimental.pallas import tpu as pltpu  # noqa: E402

__all__ = ["TILE", "pad_to_tile", "rmsnorm_fwd", "rmsnorm_bwd", "matmul_bias_relu", "matmul"]

TILE = (8, 128)  # float32 (sublanes, lanes): the last two dims of a block are multiples of these
SEMANTICS = ("parallel", "arbitrary")


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def pad_to_tile(a: Any, rows: int, cols: int) -> Any:
    """Zero-pad a 2-D array so that its shape is a multiple of ``(rows, cols)``."""
    return jnp.pad(a, ((0, (-a.shape[0]) % rows), (0, (-a.shape[1]) % cols)))


def _semantics(*axes: str) -> Any:
    """``dimension_semantics`` for ``pltpu.CompilerParams`` (checked strings; typed loosely for JAX's Literal)."""
    return tuple(axes)


def _check_semantics(name: str, value: str) -> None:
    if value not in SEMANTICS:
        raise ValueError(f"{name} must be one of {SEMANTICS}, got {value!r}")


# ---------------------------------------------------------------------------------------------- RMSNorm
def _rmsnorm_fwd_kernel(x_ref: Any, w_ref: Any, y_ref: Any, rstd_ref: Any, *, eps: float, d: int) -> None:
    x = x_ref[...].astype(jnp.float32)  # the whole (block_rows, D) block is in VMEM: no mask
    rstd = jax.lax.rsqrt(jnp.sum(x * x, axis=-1, keepdims=True) / d + eps)  # padded zeros add nothing
    y_ref[...] = (x * rstd * w_ref[...].astype(jnp.float32)).astype(y_ref.dtype)
    rstd_ref[...] = rstd


@functools.partial(jax.jit, static_argnames=("eps", "block_rows", "interpret"))
def rmsnorm_fwd(x: Any, w: Any, *, eps: float, block_rows: int = 8, interpret: Any = None) -> tuple[Any, Any]:
    """RMSNorm over the last axis of ``x`` (n, d): returns ``y`` (n, d) and ``rstd`` (n, 1), float32."""
    n, d = x.shape
    xp, wp = pad_to_tile(x, block_rows, 128), pad_to_tile(w.reshape(1, d), 1, 128)
    rows, width = xp.shape
    y, rstd = pl.pallas_call(
        functools.partial(_rmsnorm_fwd_kernel, eps=eps, d=d),
        grid=(rows // block_rows,),
        in_specs=[pl.BlockSpec((block_rows, width), lambda i: (i, 0)), pl.BlockSpec((1, width), lambda i: (0, 0))],
        out_specs=[
            pl.BlockSpec((block_rows, width), lambda i: (i, 0)),
            pl.BlockSpec((block_rows, 1), lambda i: (i, 0)),
        ],
        out_shape=[jax.ShapeDtypeStruct((rows, width), x.dtype), jax.ShapeDtypeStruct((rows, 1), jnp.float32)],
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel",)),
        interpret=interpret,
    )(xp, wp)
    return y[:n, :d], rstd[:n]


def _rmsnorm_bwd_kernel(
    dy_ref: Any, x_ref: Any, w_ref: Any, rstd_ref: Any, dx_ref: Any, dw_ref: Any, *, d: int
) -> None:
    x, dy = x_ref[...].astype(jnp.float32), dy_ref[...].astype(jnp.float32)
    rstd = rstd_ref[...]
    g = dy * w_ref[...].astype(jnp.float32)
    c = jnp.sum(g * x, axis=-1, keepdims=True) / d
    dx_ref[...] = ((g - x * rstd * rstd * c) * rstd).astype(dx_ref.dtype)

    @pl.when(pl.program_id(0) == 0)  # the dW block is revisited by every step: zero it once
    def _init() -> None:
        dw_ref[...] = jnp.zeros_like(dw_ref)

    dw_ref[...] += jnp.sum(dy * x * rstd, axis=0, keepdims=True)


@functools.partial(jax.jit, static_argnames=("block_rows", "reduction", "interpret"))
def rmsnorm_bwd(
    dy: Any, x: Any, w: Any, rstd: Any, *, block_rows: int = 8, reduction: str = "arbitrary", interpret: Any = None
) -> tuple[Any, Any]:
    """Gradients of :func:`rmsnorm_fwd`: ``dx`` (n, d) and ``dw`` (d,).

    ``reduction`` is the grid axis's semantics. ``"arbitrary"`` (sequential) is correct: every step adds
    into the same ``dw`` block. ``"parallel"`` lets a TPU split the steps between its cores, which then
    race on that block; the chapter runs it once with the race detector to show exactly that.
    """
    _check_semantics("reduction", reduction)
    n, d = x.shape
    xp, dyp = pad_to_tile(x, block_rows, 128), pad_to_tile(dy, block_rows, 128)
    wp, rp = pad_to_tile(w.reshape(1, d), 1, 128), pad_to_tile(rstd, block_rows, 1)
    rows, width = xp.shape
    block = pl.BlockSpec((block_rows, width), lambda i: (i, 0))
    whole_row = pl.BlockSpec((1, width), lambda i: (0, 0))
    dx, dw = pl.pallas_call(
        functools.partial(_rmsnorm_bwd_kernel, d=d),
        grid=(rows // block_rows,),
        in_specs=[block, block, whole_row, pl.BlockSpec((block_rows, 1), lambda i: (i, 0))],
        out_specs=[block, whole_row],
        out_shape=[jax.ShapeDtypeStruct((rows, width), x.dtype), jax.ShapeDtypeStruct((1, width), jnp.float32)],
        compiler_params=pltpu.CompilerParams(dimension_semantics=_semantics(reduction)),
        interpret=interpret,
    )(dyp, xp, wp, rp)
    return dx[:n, :d], dw[0, :d].astype(w.dtype)


# ---------------------------------------------------------------------------------------------- matmul
def _matmul_kernel(a_ref: Any, b_ref: Any, bias_ref: Any, o_ref: Any, acc_ref: Any, *, nk: int, relu: bool) -> None:
    k = pl.program_id(2)

    @pl.when(k == 0)
    def _init() -> None:
        acc_ref[...] = jnp.zeros_like(acc_ref)

    acc_ref[...] += jnp.dot(a_ref[...], b_ref[...], preferred_element_type=jnp.float32)  # the MXU

    @pl.when(k == nk - 1)  # the fused epilogue, once per output block
    def _epilogue() -> None:
        out = acc_ref[...] + bias_ref[...].astype(jnp.float32)
        o_ref[...] = (jnp.maximum(out, 0.0) if relu else out).astype(o_ref.dtype)


@functools.partial(jax.jit, static_argnames=("bm", "bn", "bk", "relu", "k_semantics", "interpret"))
def matmul_bias_relu(
    a: Any,
    b: Any,
    bias: Any,
    *,
    bm: int = 32,
    bn: int = 128,
    bk: int = 128,
    relu: bool = True,
    k_semantics: str = "arbitrary",
    interpret: Any = None,
) -> Any:
    """``relu(a @ b + bias)`` (or without the ReLU) as one tiled kernel: grid (M/bm, N/bn, K/bk)."""
    _check_semantics("k_semantics", k_semantics)
    if bm % TILE[0] or bn % TILE[1] or bk % TILE[1]:
        raise ValueError(f"blocks must be multiples of the (8, 128) tile: got bm={bm}, bn={bn}, bk={bk}")
    m, _ = a.shape
    n = b.shape[1]
    ap, bp, biasp = pad_to_tile(a, bm, bk), pad_to_tile(b, bk, bn), pad_to_tile(bias.reshape(1, n), 1, bn)
    (mp, kp), np_ = ap.shape, bp.shape[1]
    nk = kp // bk
    out = pl.pallas_call(
        functools.partial(_matmul_kernel, nk=nk, relu=relu),
        grid=(mp // bm, np_ // bn, nk),
        in_specs=[
            pl.BlockSpec((bm, bk), lambda i, j, k: (i, k)),
            pl.BlockSpec((bk, bn), lambda i, j, k: (k, j)),
            pl.BlockSpec((1, bn), lambda i, j, k: (0, j)),
        ],
        out_specs=pl.BlockSpec((bm, bn), lambda i, j, k: (i, j)),
        out_shape=jax.ShapeDtypeStruct((mp, np_), a.dtype),
        scratch_shapes=[pltpu.VMEM((bm, bn), jnp.float32)],
        compiler_params=pltpu.CompilerParams(dimension_semantics=_semantics("parallel", "parallel", k_semantics)),
        interpret=interpret,
    )(ap, bp, biasp)
    return out[:m, :n]


def matmul(a: Any, b: Any, *, interpret: Any = None) -> Any:
    """``a @ b`` with the same kernel (no bias, no ReLU): the backward pass's two matmuls."""
    zero = jnp.zeros((b.shape[1],), a.dtype)
    return matmul_bias_relu(a, b, zero, relu=False, interpret=interpret)
