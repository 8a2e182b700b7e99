"""Chapter *Serving*: the token buckets vLLM TorchTPU compiles, and how many sequences a chip's HBM can serve."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .common import Verdict, fails, guarded, passes, raised

__all__ = ["check_token_buckets", "check_max_slots", "HIDDEN_BUDGETS", "HIDDEN_SERVERS"]

#: (smallest bucket, max_num_batched_tokens) the bucket check asks about.
HIDDEN_BUDGETS = ((16, 8192), (16, 5000), (16, 16), (32, 100), (16, 2048), (8, 24))


def _buckets(smallest: int, budget: int) -> list[int]:
    out, b = [], smallest
    while b < budget:
        out.append(b)
        b *= 2
    return [*out, budget]


@guarded("token buckets", must_be="a function buckets(smallest, budget)")
def check_token_buckets(buckets: Callable[..., Any]) -> Verdict:
    """``buckets(smallest, budget) -> [bucket, ...]``: powers of two times ``smallest`` below ``budget``, then
    ``budget`` itself, on :data:`HIDDEN_BUDGETS`."""
    done = []
    for smallest, budget in HIDDEN_BUDGETS:
        want = _buckets(smallest, budget)
        where = f"for buckets from {smallest} with a budget of {budget} tokens"
        try:
            got = [int(b) for b in buckets(smallest, budget)]
        except Exception as e:
            return fails(f"{where}: {raised(e, 'it')} (return a list of whole numbers)")
        if got == want:
            done.append(str(len(got)))
            continue
        hint = ""
        if got and got[:-1] == want[:-1] and got[-1] > budget:
            hint = ": the last bucket is the budget itself; a larger one is never used and only costs a compile"
        elif got == want[:-1] or (got and got[-1] < budget):
            hint = ": the budget must be a bucket, or the largest batches fit none"
        elif got and got[0] != smallest:
            hint = f": start at the smallest bucket, {smallest}"
        return fails(f"{where}: {got}, expected {want}{hint}")
    return passes(f"right on {len(done)} unseen budgets ({', '.join(done)} buckets)")


#: (HBM bytes, weight bytes, layers, KV heads, head dim, longest sequence, bytes per value) the slots check asks about.
HIDDEN_SERVERS = (
    (32e9, 16.06e9, 32, 8, 128, 8192, 2),  # Llama 3.1 8B in bf16 on a 32 GB chip
    (96e9, 16.06e9, 32, 8, 128, 2048, 2),
    (96e9, 8.03e9, 32, 8, 128, 4096, 1),  # fp8 weights and cache
    (16e9, 2.5e9, 28, 2, 128, 32768, 2),
    (16e9, 17e9, 32, 8, 128, 2048, 2),  # the weights alone do not fit
)


def _slots(hbm: float, weights: float, layers: int, kv_heads: int, head_dim: int, max_len: int, per: float) -> int:
    per_seq = 2 * layers * kv_heads * head_dim * max_len * per
    return max(0, int((hbm - weights) // per_seq))


@guarded("slots that fit", must_be="a function slots(hbm, weights, layers, kv_heads, head_dim, max_len, bytes_per)")
def check_max_slots(slots: Callable[..., Any]) -> Verdict:
    """``slots(hbm, weights, layers, kv_heads, head_dim, max_len, bytes_per) -> sequences`` whose full KV cache fits
    beside the weights (0 when the weights alone do not), on :data:`HIDDEN_SERVERS`."""
    done = []
    for case in HIDDEN_SERVERS:
        want = _slots(*case)
        hbm, weights, layers, kv, hd, n, per = case
        where = f"for {hbm / 1e9:.0f} GB of HBM, {weights / 1e9:.2f} GB of weights, max_len {n}, {per:g} B per value"
        try:
            got = int(slots(*case))
        except Exception as e:
            return fails(f"{where}: {raised(e, 'it')} (return a whole number)")
        if got == want:
            done.append(str(got))
            continue
        per_seq = 2 * layers * kv * hd * n * per
        hint = ""
        if want and got == int((hbm - weights) // (per_seq / 2)):
            hint = ": the cache holds keys and values, two tensors per layer"
        elif got == int(hbm // per_seq):
            hint = ": the weights take their share of HBM first"
        elif got < 0:
            hint = ": when the weights alone do not fit, no sequence does: 0"
        elif want and got == want + 1:
            hint = ": round down; a sequence whose cache does not fit cannot be served"
        return fails(f"{where}: {got}, expected {want}{hint}")
    return passes(f"right on {len(done)} unseen servers: {', '.join(done)} sequences")
