"""The CUDA side as teams have it: the chapter's kernels in Triton (the style Liger-Kernel and Unsloth ship).

Without a CUDA GPU they run in Triton's interpreter, which must be switched on (``TRITON_INTERPRET=1``)
before ``triton`` is first imported; this module does that when it is the first to import triton and
refuses with a one-line error otherwise. :func:`xlaport.kernels.triton_report` runs it in a fresh
process (``python -m xlaport.kernels.triton_kernels``) so the caller's process is never affected.

Two workarounds for the interpreter in Triton 3.5 with NumPy 2.4 (triton-lang/triton#9171, fixed
after 3.5.0): a loop bound must be a ``tl.constexpr`` (``ROWS_PER_PROG``, ``K``), because the
interpreter turns a runtime integer into a one-element array that NumPy 2.4 no longer converts to int.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import torch

if not torch.cuda.is_available() and os.environ.get("TRITON_INTERPRET") != "1":
    if "triton" in sys.modules:
        raise RuntimeError(
            "triton was imported before TRITON_INTERPRET=1 was set: use xlaport.kernels.triton_report() "
            "(a fresh process) or set TRITON_INTERPRET=1 before anything imports triton"
        )
    os.environ["TRITON_INTERPRET"] = "1"

import triton
import triton.language as tl

__all__ = ["interpreted", "rmsnorm_fwd", "rmsnorm_bwd", "matmul_bias_relu", "check"]


def interpreted() -> bool:
    """True when the kernels run in Triton's CPU interpreter rather than on a GPU."""
    return os.environ.get("TRITON_INTERPRET") == "1"


@triton.jit
def _rmsnorm_fwd_kernel(X, W, Y, RSTD, stride, n_cols, eps, BLOCK: tl.constexpr):  # type: ignore[no-untyped-def]
    row = tl.program_id(0)  # one program per row
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols  # BLOCK is the next power of two: mask the tail
    x = tl.load(X + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(W + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    tl.store(RSTD + row, rstd)
    tl.store(Y + row * stride + cols, x * rstd * w, mask=mask)


@triton.jit
def _rmsnorm_bwd_kernel(  # type: ignore[no-untyped-def]
    DY, X, W, RSTD, DX, DW_PART, stride, n_rows, n_cols, ROWS_PER_PROG: tl.constexpr, BLOCK: tl.constexpr
):
    pid = tl.program_id(0)  # one program per chunk of rows
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    w = tl.load(W + cols, mask=mask, other=0.0).to(tl.float32)
    dw = tl.zeros((BLOCK,), dtype=tl.float32)
    for i in range(0, ROWS_PER_PROG):
        r = pid * ROWS_PER_PROG + i
        m = mask & (r < n_rows)
        x = tl.load(X + r * stride + cols, mask=m, other=0.0).to(tl.float32)
        dy = tl.load(DY + r * stride + cols, mask=m, other=0.0).to(tl.float32)
        rstd = tl.load(RSTD + r, mask=r < n_rows, other=0.0)
        g = dy * w
        c = tl.sum(g * x, axis=0) / n_cols
        tl.store(DX + r * stride + cols, (g - x * rstd * rstd * c) * rstd, mask=m)
        dw += dy * x * rstd
    tl.store(DW_PART + pid * n_cols + cols, dw, mask=mask)  # partial dW per program, summed on the host


@triton.jit
def _matmul_bias_relu_kernel(  # type: ignore[no-untyped-def]
    A, B, BIAS, C, M, N, K: tl.constexpr, sam, sak, sbk, sbn, scm, scn,
    BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
):  # fmt: skip
    pm, pn = tl.program_id(0), tl.program_id(1)
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        a_mask = (rm[:, None] < M) & ((k0 + rk)[None, :] < K)
        b_mask = ((k0 + rk)[:, None] < K) & (rn[None, :] < N)
        a = tl.load(A + rm[:, None] * sam + (k0 + rk)[None, :] * sak, mask=a_mask, other=0.0)
        b = tl.load(B + (k0 + rk)[:, None] * sbk + rn[None, :] * sbn, mask=b_mask, other=0.0)
        acc += tl.dot(a, b)
    bias = tl.load(BIAS + rn, mask=rn < N, other=0.0)
    out = tl.maximum(acc + bias[None, :], 0.0)  # the fused epilogue
    tl.store(C + rm[:, None] * scm + rn[None, :] * scn, out, mask=(rm[:, None] < M) & (rn[None, :] < N))


def rmsnorm_fwd(x: torch.Tensor, w: torch.Tensor, eps: float) -> tuple[torch.Tensor, torch.Tensor]:
    """``(y, rstd)`` for a contiguous 2-D ``x``."""
    n, d = x.shape
    y, rstd = torch.empty_like(x), torch.empty(n, device=x.device, dtype=torch.float32)
    _rmsnorm_fwd_kernel[(n,)](x, w, y, rstd, x.stride(0), d, eps, BLOCK=triton.next_power_of_2(d))
    return y, rstd


def rmsnorm_bwd(
    dy: torch.Tensor, x: torch.Tensor, w: torch.Tensor, rstd: torch.Tensor, programs: int = 4
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(dx, dw)``; ``dw`` is summed on the host from one partial row per program."""
    n, d = x.shape
    dx, part = torch.empty_like(x), torch.empty(programs, d, device=x.device, dtype=torch.float32)
    rows = triton.cdiv(n, programs)
    _rmsnorm_bwd_kernel[(programs,)](
        dy, x, w, rstd, dx, part, x.stride(0), n, d, ROWS_PER_PROG=rows, BLOCK=triton.next_power_of_2(d)
    )
    return dx, part.sum(0).to(w.dtype)


def matmul_bias_relu(a: torch.Tensor, b: torch.Tensor, bias: torch.Tensor, block: int = 16) -> torch.Tensor:
    """``relu(a @ b + bias)`` in one kernel (tiles of ``block``; 16 is the smallest ``tl.dot`` accepts)."""
    (m, k), n = a.shape, b.shape[1]
    c = torch.empty(m, n, device=a.device, dtype=a.dtype)
    grid = (triton.cdiv(m, block), triton.cdiv(n, block))
    _matmul_bias_relu_kernel[grid](
        a, b, bias, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
        BM=block, BN=block, BK=block,
    )  # fmt: skip
    return c


def check(seed: int, rows: int, dim: int, m: int, k: int, n: int, eps: float, device: str = "cpu") -> dict[str, Any]:
    """Run the Triton kernels and PyTorch on the same seeded inputs; max abs error of each output."""
    g = torch.Generator().manual_seed(seed)
    x, w, dy = (torch.randn(*s, generator=g) for s in ((rows, dim), (dim,), (rows, dim)))
    a, b, bias = (torch.randn(*s, generator=g) for s in ((m, k), (k, n), (n,)))
    x, w, dy, a, b, bias = (t.to(device) for t in (x, w, dy, a, b, bias))
    y, rstd = rmsnorm_fwd(x, w, eps)
    dx, dw = rmsnorm_bwd(dy, x, w, rstd)
    xr, wr = x.clone().requires_grad_(), w.clone().requires_grad_()
    ref = torch.nn.functional.rms_norm(xr, (dim,), wr, eps)
    ref.backward(dy)
    c = matmul_bias_relu(a, b, bias)
    err = {
        "rmsnorm_y": (y - ref).abs().max().item(),
        "rmsnorm_dx": (dx - xr.grad).abs().max().item(),  # type: ignore[operator]
        "rmsnorm_dw": (dw - wr.grad).abs().max().item(),  # type: ignore[operator]
        "matmul": (c - torch.relu(a @ b + bias)).abs().max().item(),
    }
    return {"interpreted": interpreted(), "device": str(x.device), "triton": triton.__version__, "errors": err}


if __name__ == "__main__":
    import argparse
    import json

    p = argparse.ArgumentParser(description="run the Triton kernels against PyTorch and print JSON")
    for name in ("seed", "rows", "dim", "m", "k", "n"):
        p.add_argument(f"--{name}", type=int, required=True)
    p.add_argument("--eps", type=float, required=True)
    p.add_argument("--device", default="cpu")
    a = p.parse_args()
    print(json.dumps(check(a.seed, a.rows, a.dim, a.m, a.k, a.n, a.eps, a.device)))
