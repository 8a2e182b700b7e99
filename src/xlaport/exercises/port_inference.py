"""Chapter *Port an inference loop*: prompt buckets for a static KV cache, and a top-p sampler of static shapes."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ..text import plural
from .common import Check, _fail, _ints, _none, _ok, guarded

__all__ = ["check_prompt_buckets", "check_static_sampler"]


@guarded("prompt buckets")
def check_prompt_buckets(
    prompt_lengths: Iterable[int], answer: tuple[Sequence[int], int] | None, new_tokens: int, budget: int
) -> Check:
    """``answer = (buckets, max_len)`` for a static KV cache: every prompt fits, the cache holds bucket + new tokens,
    and at most ``budget`` prefill programs (one per bucket used)."""
    name = "prompt buckets"
    lens = _ints("prompt_lengths", prompt_lengths)
    if answer is None:
        return _none(name)
    try:
        bks_raw, max_len = answer
        bks = sorted(set(_ints("buckets", bks_raw)))
        max_len = int(max_len)
    except (TypeError, ValueError):
        return _fail(name, "answer must be (buckets, max_len), e.g. ([8, 16], 32)")
    too_long = [n for n in lens if n > bks[-1]]
    if too_long:
        return _fail(name, f"the {max(too_long)}-token prompt fits no bucket (the largest is {bks[-1]})")
    if bks[-1] + new_tokens > max_len:
        return _fail(name, f"max_len {max_len} cannot hold the {bks[-1]}-token bucket plus {new_tokens} new tokens")
    used = sorted({next(b for b in bks if b >= n) for n in lens})
    if len(used) > budget:
        return _fail(name, f"{len(used)} prefill programs (buckets {used}); the budget is {budget}")
    return _ok(
        name, f"{plural(len(used), 'prefill program')} for buckets {used}, one decode program for a cache of {max_len}"
    )


_DATA_DEPENDENT = ("aten::nonzero", "aten::masked_select", "aten::_local_scalar_dense", "aten::unique")


@guarded("static top-p sampler")
def check_static_sampler(
    sampler: Callable[..., Any] | None, logits: Sequence[Any], top_p: float, seed: int = 0
) -> Check:
    """``sampler(logits (B, V), top_p, generator) -> (B, 1)`` token ids: one output shape, no host sync or
    data-dependent shape in its ops, and every token inside the nucleus (the fewest tokens whose probability
    reaches ``top_p``)."""
    import torch

    from ..ops.trace import aten_ops

    name = "static top-p sampler"
    if sampler is None:
        return _none(name)
    shapes = set()
    wrong_shape = None
    for i, lg in enumerate(logits):
        gen = torch.Generator().manual_seed(seed + i)
        try:
            out = sampler(lg, top_p, gen)
        except Exception as e:  # the reader's code: report, never raise
            return _fail(name, f"the sampler raised {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
        shapes.add(tuple(out.shape))
        if tuple(out.shape) != (lg.shape[0], 1):
            wrong_shape = tuple(out.shape)
            continue
        probs = torch.softmax(lg.float(), -1)
        sp, idx = probs.sort(-1, descending=True)
        cum = sp.cumsum(-1)
        for b in range(lg.shape[0]):
            n_keep = int((cum[b] < top_p).sum()) + 1
            nucleus = set(idx[b, :n_keep].tolist())
            tok = int(out[b, 0])
            if tok not in nucleus:
                return _fail(
                    name, f"row {b} of logits {i}: token {tok} is outside the top-p nucleus of {n_keep} tokens"
                )
    if len(shapes) > 1 or wrong_shape is not None:
        return _fail(name, f"output shapes {sorted(shapes)}: a static sampler returns (batch, 1) every time")
    trace = aten_ops(lambda lg: sampler(lg, top_p, torch.Generator().manual_seed(seed)), logits[0])
    bad = sorted({n for n in trace.names if n.startswith(_DATA_DEPENDENT)})
    if bad:
        return _fail(name, f"{', '.join(bad)}: a host sync or a data-dependent shape in every decode step")
    return _ok(
        name,
        f"one output shape {shapes.pop()}, every token in the nucleus, no host sync in {len(trace.names)} op calls",
    )
