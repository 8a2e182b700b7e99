"""Chapter *Quantized inference*: int8 weights per output channel, and the decode step a weight read bounds."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from .common import Verdict, fails, guarded, passes, raised

__all__ = ["check_int8_rows", "check_decode_floor", "HIDDEN_WEIGHT_SHAPES", "HIDDEN_DECODERS"]

#: (rows, columns, seed, scale of one outlier row) of the weights the int8 check quantizes.
HIDDEN_WEIGHT_SHAPES = ((6, 16, 1, 1.0), (32, 8, 2, 40.0), (3, 5, 3, 1.0), (64, 64, 4, 100.0))


def _weight(rows: int, cols: int, seed: int, outlier: float) -> torch.Tensor:
    w = torch.randn(rows, cols, generator=torch.Generator().manual_seed(seed)) * 0.05
    w[0] *= outlier
    return w


@guarded("int8 per channel", must_be="a function quantize(w) returning (q, scale)")
def check_int8_rows(quantize: Callable[..., Any]) -> Verdict:
    """``quantize(w) -> (q, scale)``: ``q`` int8 of ``w``'s shape, ``scale`` one per row (``(rows, 1)``), with
    ``q * scale`` within half a step of ``w`` everywhere, on :data:`HIDDEN_WEIGHT_SHAPES`."""
    done = []
    for rows, cols, seed, outlier in HIDDEN_WEIGHT_SHAPES:
        w = _weight(rows, cols, seed, outlier)
        where = f"for a {rows} x {cols} weight" + (f" with a row {outlier:g}x the others" if outlier != 1 else "")
        try:
            out = quantize(w.clone())
            q, scale = out
            q, scale = torch.as_tensor(q), torch.as_tensor(scale)
        except Exception as e:
            return fails(f"{where}: {raised(e, 'it')} (return a tuple (q, scale))")
        if q.dtype != torch.int8:
            return fails(f"{where}: q is {str(q.dtype).removeprefix('torch.')}: store integers, as torch.int8")
        if tuple(q.shape) != (rows, cols):
            return fails(f"{where}: q has shape {tuple(q.shape)}, expected {(rows, cols)}")
        if scale.numel() == 1:
            return fails(f"{where}: one scale for the whole tensor; keep one per row (output channel)")
        if scale.numel() != rows:
            return fails(f"{where}: {scale.numel()} scales, expected one per row: {rows}")
        s = scale.float().reshape(rows, 1)
        if not torch.all(s > 0):
            return fails(f"{where}: every scale must be positive")
        err = (q.float() * s - w).abs() / s
        worst = err.max().item()
        if worst > 0.5 + 1e-3:
            hint = ""
            if torch.equal(q.float(), torch.trunc(w / s).clamp(-128, 127)):
                hint = ": round to the nearest integer, not towards zero"
            elif (w.abs().amax(1, keepdim=True) / s).max().item() > 128:
                hint = ": the scale is too small for the row's largest weight, which is clipped"
            return fails(f"{where}: q x scale is up to {worst:.2f} steps from w, expected at most 0.5{hint}")
        if (w.abs().amax(1) / s.squeeze(1)).min().item() < 100:
            return fails(f"{where}: some rows use less than 100 of the 127 levels: the scale is too large")
        done.append(f"{rows}x{cols}")
    return passes(f"right on {len(done)} unseen weights: {', '.join(done)}")


#: (parameters, bytes per weight, HBM bandwidth in B/s, chips) the decode-floor check asks about.
HIDDEN_DECODERS = ((8.03e9, 2, 1638e9, 1), (8.03e9, 1, 1638e9, 1), (70.6e9, 2, 7380e9, 4), (70.6e9, 1, 2765e9, 8))


@guarded("decode floor", must_be="a function floor(params, bytes_per_weight, hbm_bandwidth, chips)")
def check_decode_floor(floor: Callable[..., Any]) -> Verdict:
    """``floor(params, bytes_per_weight, hbm_bandwidth, chips) -> seconds``: the time to read every weight once,
    spread over ``chips`` chips, on :data:`HIDDEN_DECODERS`."""
    done = []
    for params, per, bw, chips in HIDDEN_DECODERS:
        want = params * per / (bw * chips)
        where = f"for {params / 1e9:g} B weights of {per} byte{'s' if per != 1 else ''} at {bw / 1e9:g} GB/s on {chips} chip{'s' if chips != 1 else ''}"
        try:
            got = float(floor(params, per, bw, chips))
        except Exception as e:
            return fails(f"{where}: {raised(e, 'it')} (return seconds)")
        if abs(got - want) <= 1e-9 * want:
            done.append(f"{want * 1e3:.1f} ms")
            continue
        hint = ""
        if abs(got - want * 8) <= 1e-6 * want or abs(got * 8 - want) <= 1e-6 * want:
            hint = ": bytes, not bits"
        elif abs(got - want * chips) <= 1e-6 * want * chips:
            hint = ": each chip reads its own share of the weights, at the same time"
        elif abs(got - params / (bw * chips)) <= 1e-6 * want:
            hint = ": multiply by the bytes each weight takes"
        return fails(f"{where}: {got:.4g} s, expected {want:.4g} s{hint}")
    return passes(f"right on {len(done)} unseen decoders: {', '.join(done)}")
