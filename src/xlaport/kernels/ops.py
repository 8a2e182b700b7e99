"""The ported kernels as PyTorch ops: ``rmsnorm`` and ``matmul_bias_relu``, forward and backward.

Each is a pair of custom ops made by :func:`xlaport.kernels.bridge.pallas_op` (the forward and its
backward, both Pallas kernels), joined with ``register_autograd``; their fake implementations let
``torch.compile`` trace a model that uses them. :class:`RMSNorm` is a drop-in for ``torch.nn.RMSNorm``.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn

from . import _jax
from .bridge import SUPPORTED_DTYPES, pallas_op

__all__ = ["rmsnorm", "matmul_bias_relu", "RMSNorm"]


def _check_float(name: str, t: Any) -> None:
    if not isinstance(t, torch.Tensor):
        raise ValueError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if t.dtype not in SUPPORTED_DTYPES:
        raise ValueError(f"{name} must be float32 or bfloat16, got {t.dtype}")


def _check_rmsnorm(x: Any, weight: Any, eps: Any) -> None:
    _check_float("x", x)
    _check_float("weight", weight)
    if weight.dim() != 1:
        raise ValueError(f"weight must be 1-D (the normalized width), got shape {tuple(weight.shape)}")
    if x.dim() < 1 or x.shape[-1] != weight.shape[0]:
        raise ValueError(f"x's last dimension must equal weight's size {weight.shape[0]}, got x {tuple(x.shape)}")
    if x.numel() == 0:
        raise ValueError(f"x is empty (shape {tuple(x.shape)})")
    if x.dtype != weight.dtype:
        raise ValueError(f"x and weight must share a dtype, got {x.dtype} and {weight.dtype}")
    if not isinstance(eps, (int, float)) or not math.isfinite(eps) or eps <= 0:
        raise ValueError(f"eps must be a finite number > 0, got {eps!r}")


def _op_suffix(eps: float) -> str:
    return repr(float(eps)).replace("-", "m").replace("+", "").replace(".", "p")


# Ops are registered once per eps and looked up in plain dicts: torch.compile traces a dict lookup,
# whereas it would trace into a functools.cache wrapper (and the registration) on every compile.
_RMSNORM_OPS: dict[float, Any] = {}
_MATMUL_OPS: dict[str, Any] = {}


def _rmsnorm_ops(eps: float) -> Any:
    """The forward op for ``eps`` (registered with its backward on first use)."""
    op = _RMSNORM_OPS.get(eps)
    if op is None:
        op = _RMSNORM_OPS[eps] = _register_rmsnorm(eps)
    return op


def _register_rmsnorm(eps: float) -> Any:
    from . import pallas_kernels as pk

    interp = _jax.interpret_params()
    suffix = _op_suffix(eps)

    def fwd(x: Any, w: Any) -> Any:
        return pk.rmsnorm_fwd(x, w, eps=eps, interpret=interp)

    def bwd(dy: Any, x: Any, w: Any, rstd: Any) -> Any:
        return pk.rmsnorm_bwd(dy, x, w, rstd, interpret=interp)

    fwd_op = pallas_op(
        f"xlaport::rmsnorm_fwd_{suffix}",
        fwd,
        fake=lambda x, w: (torch.empty_like(x), x.new_empty((x.shape[0], 1), dtype=torch.float32)),
        num_inputs=2,
        num_outputs=2,
    )
    bwd_op = pallas_op(
        f"xlaport::rmsnorm_bwd_{suffix}",
        bwd,
        fake=lambda dy, x, w, rstd: (torch.empty_like(x), torch.empty_like(w)),
        num_inputs=4,
        num_outputs=2,
    )

    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: tuple[Any, ...]) -> None:
        x, w = inputs
        ctx.save_for_backward(x, w, output[1])

    def backward(ctx: Any, dy: torch.Tensor, _drstd: Any) -> tuple[torch.Tensor, torch.Tensor]:
        x, w, rstd = ctx.saved_tensors
        dx, dw = bwd_op(dy.contiguous(), x, w, rstd)
        return dx, dw

    fwd_op.register_autograd(backward, setup_context=setup_context)
    return fwd_op


def rmsnorm(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """RMSNorm over the last dimension with the Pallas kernels (same result as ``F.rms_norm``).

    Differentiable in ``x`` and ``weight``; traceable by ``torch.compile`` (fake implementation).
    Bad shapes or dtypes raise a one-line ``ValueError``.
    """
    _check_rmsnorm(x, weight, eps)
    y, _rstd = _rmsnorm_ops(float(eps))(x.reshape(-1, x.shape[-1]).contiguous(), weight.contiguous())
    return y.reshape(x.shape)


def _matmul_ops() -> Any:
    op = _MATMUL_OPS.get("op")
    if op is None:
        op = _MATMUL_OPS["op"] = _register_matmul()
    return op


def _register_matmul() -> Any:
    from . import pallas_kernels as pk

    interp = _jax.interpret_params()

    def fwd(a: Any, b: Any, bias: Any) -> Any:
        return pk.matmul_bias_relu(a, b, bias, interpret=interp)

    def bwd(dy: Any, a: Any, b: Any, out: Any) -> Any:
        jnp = _jax.jax().numpy
        dz = jnp.where(out > 0, dy, jnp.zeros_like(dy))  # ReLU's gradient, from the saved output
        return pk.matmul(dz, b.T, interpret=interp), pk.matmul(a.T, dz, interpret=interp), dz.sum(0)

    fwd_op = pallas_op(
        "xlaport::matmul_bias_relu",
        fwd,
        fake=lambda a, b, bias: a.new_empty((a.shape[0], b.shape[1])),
        num_inputs=3,
    )
    bwd_op = pallas_op(
        "xlaport::matmul_bias_relu_bwd",
        bwd,
        fake=lambda dy, a, b, out: (torch.empty_like(a), torch.empty_like(b), b.new_empty((b.shape[1],))),
        num_inputs=4,
        num_outputs=3,
    )

    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
        a, b, _bias = inputs
        ctx.save_for_backward(a, b, output)

    def backward(ctx: Any, dy: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        a, b, out = ctx.saved_tensors
        da, db, dbias = bwd_op(dy.contiguous(), a, b, out)
        return da, db, dbias

    fwd_op.register_autograd(backward, setup_context=setup_context)
    return fwd_op


def matmul_bias_relu(a: torch.Tensor, b: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """``relu(a @ b + bias)`` with the tiled Pallas kernel (fused epilogue); differentiable."""
    for name, t in (("a", a), ("b", b), ("bias", bias)):
        _check_float(name, t)
    if a.dim() != 2 or b.dim() != 2 or bias.dim() != 1:
        raise ValueError(
            f"need a (M, K), b (K, N), bias (N,); got {tuple(a.shape)}, {tuple(b.shape)}, {tuple(bias.shape)}"
        )
    if a.shape[1] != b.shape[0] or b.shape[1] != bias.shape[0] or a.numel() == 0 or b.numel() == 0:
        raise ValueError(f"shapes do not chain: a {tuple(a.shape)} @ b {tuple(b.shape)} + bias {tuple(bias.shape)}")
    if not a.dtype == b.dtype == bias.dtype:
        raise ValueError(f"a, b and bias must share a dtype, got {a.dtype}, {b.dtype}, {bias.dtype}")
    return _matmul_ops()(a.contiguous(), b.contiguous(), bias.contiguous())


class RMSNorm(nn.Module):
    """Drop-in for ``torch.nn.RMSNorm(dim, eps)`` (elementwise affine) that runs the Pallas kernels."""

    def __init__(self, dim: int, eps: float = 1e-6) -> None:
        super().__init__()
        if isinstance(dim, bool) or not isinstance(dim, int) or dim < 1:
            raise ValueError(f"dim must be a whole number >= 1, got {dim!r}")
        _check_rmsnorm(torch.ones(dim), torch.ones(dim), eps)
        self.eps = float(eps)
        self.weight = nn.Parameter(torch.ones(dim))
        _rmsnorm_ops(self.eps)  # register the ops now, outside any torch.compile trace

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return rmsnorm(x, self.weight, self.eps)
