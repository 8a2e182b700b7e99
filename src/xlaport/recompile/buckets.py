"""Pad variable lengths to a few fixed buckets so a static-shape compiler builds a few programs.

XLA (TorchTPU, TorchNeuron, torch_xla) compiles one executable per input shape. A batch
padded to its own longest item has a new shape almost every step; a batch padded to the
smallest *bucket* that holds it has one of ``len(buckets)`` shapes.

>>> from xlaport.recompile.buckets import choose_buckets, bucket_for, BucketCollate
>>> choose_buckets([130, 250, 700, 990], "pow2")        # powers of two covering the range
[256, 512, 1024]
>>> choose_buckets(observed, "quantile:3")              # 3 buckets at the 1/3, 2/3, 1 quantiles
>>> choose_buckets(observed, "mult128")                 # every multiple of 128 in the range
>>> bucket_for(700, [256, 512, 1024])
1024
>>> loader = DataLoader(ds, batch_size=4, collate_fn=BucketCollate([256, 512, 1024]))

Policies: ``pow2`` (powers of two from the one that holds the shortest observed length to
the one that holds the longest), ``quantile:K`` (K buckets at evenly spaced quantiles of
the observed lengths, each rounded up to a multiple of ``round_to``; the last is the
longest length rounded up), ``multK`` (multiples of K; ``mult128`` matches the 128-wide
tiles of TPU MXUs). Padded positions get ``value`` (0) and ``mask`` False, so a mask-aware
model gives the same results on valid positions (``tests/unit/test_buckets.py`` checks it).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from typing import Any

import torch
from torch.utils.flop_counter import FlopCounterMode, sdpa_flop_count

__all__ = [
    "choose_buckets",
    "parse_policy",
    "bucket_for",
    "pad_to_length",
    "pad_batch",
    "BucketCollate",
    "padding_waste",
    "forward_flops",
    "POLICIES",
]

POLICIES: tuple[str, ...] = ("pow2", "quantile:K", "multK")
_POLICY = re.compile(r"^(pow2|quantile:(\d+)|mult(\d+))$")


def parse_policy(policy: str) -> tuple[str, int]:
    """``"pow2"`` -> ``("pow2", 2)``, ``"quantile:4"`` -> ``("quantile", 4)``, ``"mult128"`` -> ``("mult", 128)``."""
    m = _POLICY.match(policy.strip()) if isinstance(policy, str) else None
    if not m:
        raise ValueError(
            f"unknown bucket policy {policy!r}; use 'pow2', 'quantile:K' (e.g. quantile:4) or 'multK' (e.g. mult128)"
        )
    if m.group(2):
        k = int(m.group(2))
        if not 1 <= k <= 64:
            raise ValueError(f"quantile bucket count must be 1..64, got {k}")
        return "quantile", k
    if m.group(3):
        k = int(m.group(3))
        if k < 1:
            raise ValueError(f"bucket multiple must be >= 1, got {k}")
        return "mult", k
    return "pow2", 2


def _lengths(lengths: Iterable[int]) -> list[int]:
    try:
        out = [int(n) for n in lengths]
    except (TypeError, ValueError):
        raise ValueError("lengths must be an iterable of positive integers") from None
    if not out or min(out) < 1:
        raise ValueError(f"lengths must be a non-empty list of positive integers, got {out[:8]!r}")
    return out


def _round_up(n: int, m: int) -> int:
    return -(-n // m) * m


def choose_buckets(lengths: Iterable[int], policy: str = "pow2", *, round_to: int = 8) -> list[int]:
    """Bucket sizes (sorted, distinct) for the observed ``lengths`` under ``policy``.

    Every observed length fits the largest bucket. ``round_to`` (quantile policy only)
    rounds each bucket up to a multiple, so sizes stay friendly to vector units.
    """
    ls = sorted(_lengths(lengths))
    kind, k = parse_policy(policy)
    if not isinstance(round_to, int) or round_to < 1:
        raise ValueError(f"round_to must be a positive int, got {round_to!r}")
    if kind == "pow2":
        lo, hi = (max(0, math.ceil(math.log2(n))) for n in (ls[0], ls[-1]))
        return [2**e for e in range(lo, hi + 1)]
    if kind == "mult":
        return list(range(_round_up(ls[0], k), _round_up(ls[-1], k) + 1, k))
    # quantile: the length at quantile j/k (nearest rank), rounded up
    out = []
    for j in range(1, k + 1):
        idx = min(len(ls) - 1, max(0, math.ceil(j / k * len(ls)) - 1))
        out.append(_round_up(ls[idx], round_to))
    return sorted(set(out))


def bucket_for(length: int, buckets: Sequence[int]) -> int:
    """The smallest bucket that holds ``length``; ValueError if none does."""
    if not buckets:
        raise ValueError("buckets is empty")
    n = int(length)
    if n < 1:
        raise ValueError(f"length must be >= 1, got {length!r}")
    fits = [b for b in buckets if b >= n]
    if not fits:
        raise ValueError(f"length {n} is longer than the largest bucket {max(buckets)}; add a bucket or truncate")
    return min(fits)


def pad_to_length(x: torch.Tensor, length: int, dim: int = -1, value: float = 0.0) -> torch.Tensor:
    """Pad ``x`` with ``value`` along ``dim`` up to ``length`` (ValueError if it is longer)."""
    cur = x.shape[dim]
    if cur > length:
        raise ValueError(f"cannot pad a dimension of size {cur} down to {length}")
    if cur == length:
        return x
    shape = list(x.shape)
    shape[dim] = length - cur
    return torch.cat([x, x.new_full(shape, value)], dim=dim)


def pad_batch(
    items: Sequence[torch.Tensor],
    length: int | None = None,
    buckets: Sequence[int] | None = None,
    dim: int = -1,
    value: float = 0.0,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Stack variable-length ``items`` (same shape except ``dim``), padded along ``dim``.

    The padded length is ``length`` if given, else the bucket of the longest item if
    ``buckets`` is given, else the longest item. Returns ``(batch, mask, lengths)``: mask is
    (B, T) bool, True on valid positions.
    """
    if not items:
        raise ValueError("pad_batch needs at least one item")
    lens = torch.tensor([int(t.shape[dim]) for t in items], dtype=torch.long)
    longest = int(lens.max())
    if length is None:
        length = bucket_for(longest, buckets) if buckets else longest
    batch = torch.stack([pad_to_length(t, length, dim, value) for t in items])
    mask = torch.arange(length)[None, :] < lens[:, None]
    return batch, mask, lens


class BucketCollate:
    """DataLoader ``collate_fn``: pads each batch of ``(features, tokens)`` samples.

    ``features`` is (n_mels, T_i) with T_i varying; ``tokens`` (S,) is stacked as is. With
    ``buckets`` the time axis is padded to the batch's bucket; with ``fixed`` to one fixed
    length; with neither to the batch's longest item (what most CUDA code does, and what
    makes a storm on XLA). Returns a dict: ``features``, ``mask``, ``lengths``, ``tokens``.
    """

    def __init__(self, buckets: Sequence[int] | None = None, fixed: int | None = None, value: float = 0.0) -> None:
        if buckets is not None and fixed is not None:
            raise ValueError("give buckets or fixed, not both")
        if buckets is not None:
            if not buckets or any(int(b) < 1 for b in buckets):
                raise ValueError(f"buckets must be positive lengths, got {list(buckets)!r}")
            buckets = sorted({int(b) for b in buckets})
        if fixed is not None and int(fixed) < 1:
            raise ValueError(f"fixed length must be >= 1, got {fixed!r}")
        self.buckets = buckets
        self.fixed = None if fixed is None else int(fixed)
        self.value = value

    def __call__(self, samples: Sequence[tuple[torch.Tensor, torch.Tensor]]) -> dict[str, Any]:
        if not samples:
            raise ValueError("empty batch")
        feats = [s[0] for s in samples]
        batch, mask, lens = pad_batch(feats, length=self.fixed, buckets=self.buckets, dim=-1, value=self.value)
        tokens = torch.stack([s[1] for s in samples])
        return {"features": batch, "mask": mask, "lengths": lens, "tokens": tokens}


def padding_waste(lengths: Iterable[int], padded: Iterable[int]) -> float:
    """Share of positions that are padding: 1 - sum(lengths) / sum(padded)."""
    ls, ps = _lengths(lengths), _lengths(padded)
    if len(ls) != len(ps):
        raise ValueError(f"lengths and padded differ in count ({len(ls)} vs {len(ps)})")
    if any(p < n for n, p in zip(ls, ps)):
        raise ValueError("a padded length is shorter than its length")
    return 1.0 - sum(ls) / sum(ps)


def _cpu_sdpa_flops(query: Any, key: Any, value: Any, *args: Any, out_shape: Any = None, **kwargs: Any) -> int:
    return int(sdpa_flop_count(query, key, value))


def forward_flops(fn: Any, *args: Any, **kwargs: Any) -> int:
    """FLOPs of ``fn(*args, **kwargs)`` (under ``torch.no_grad``) counted by ``torch.utils.flop_counter``.

    PyTorch 2.9's counter has no formula for the fused CPU attention kernel
    (``aten._scaled_dot_product_flash_attention_for_cpu``) that ``F.scaled_dot_product_attention``
    uses on CPU, so it would count attention as free; this adds the counter's own SDPA
    formula (``sdpa_flop_count``: 2 matmuls, ``4·B·H·Tq·Tk·D``) for it. A model and inputs on
    the ``meta`` device give the same count without doing the arithmetic.
    """
    mapping = {torch.ops.aten._scaled_dot_product_flash_attention_for_cpu: _cpu_sdpa_flops}
    with FlopCounterMode(display=False, custom_mapping=mapping) as fc, torch.no_grad():
        fn(*args, **kwargs)
    return int(fc.get_total_flops())
