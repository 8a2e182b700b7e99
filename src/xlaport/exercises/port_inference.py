"""Chapter *Port an inference loop*: prompt buckets for a static KV cache, and a top-p sampler of static shapes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..text import plural
from .common import Verdict, fails, guarded, passes, raised

__all__ = ["check_prompt_buckets", "check_static_sampler"]

# Traffic the check feeds the reader's choose_buckets: (prompt lengths, new tokens, prefill budget), none the chapter's.
_TRAFFIC = (
    ((5, 9, 17, 30, 31, 70), 12, 3),
    ((100, 130, 260, 511, 511), 64, 2),
    ((3, 3, 4), 5, 1),
    ((40, 41, 900), 100, 2),
)


def _plan_problem(plan: Any, lengths: tuple[int, ...], new_tokens: int, budget: int) -> str | None:
    try:
        raw, max_len = plan
        bks = sorted({int(b) for b in raw})
        max_len = int(max_len)
    except (TypeError, ValueError):
        return "it must return (buckets, max_len), e.g. ([8, 16], 32)"
    if not bks:
        return "no buckets: every prompt needs one to pad to"
    if bks[0] < 1 or max_len < 1:
        return "buckets and max_len must be positive"
    longest = max(lengths)
    if longest > bks[-1]:
        return f"the {longest}-token prompt fits no bucket (the largest is {bks[-1]})"
    if bks[-1] + new_tokens > max_len:
        return f"max_len {max_len} cannot hold the {bks[-1]}-token bucket plus {new_tokens} new tokens"
    used = sorted({next(b for b in bks if b >= n) for n in lengths})
    if len(used) > budget:
        return f"{len(used)} prefill programs (buckets {used}); the budget is {budget}"
    if used[-1] >= 2 * longest:
        return f"the {longest}-token prompt pads to {used[-1]}: more than twice its length is padding"
    if max_len > 2 * (used[-1] + new_tokens):
        return f"a cache of {max_len} for at most {used[-1] + new_tokens} positions: the rest is memory never used"
    return None


@guarded(
    "prompt buckets",
    must_be="your function choose_buckets(prompt_lengths, new_tokens, budget), not one plan: the check runs it on traffic you have not seen",
)
def check_prompt_buckets(choose_buckets: Callable[..., Any]) -> Verdict:
    """``choose_buckets(prompt_lengths, new_tokens, budget) -> (buckets, max_len)`` for a static KV cache, run on
    traffic the chapter never shows: every prompt fits a bucket, the cache holds the largest bucket used plus the new
    tokens, at most ``budget`` prefill programs (one per bucket used), and neither the padding of the longest prompt
    nor the cache more than twice what is needed."""
    for lengths, new_tokens, budget in _TRAFFIC:
        where = f"prompts {list(lengths)}, {new_tokens} new tokens, budget {budget}"
        try:
            plan = choose_buckets(list(lengths), new_tokens, budget)
        except Exception as e:
            return fails(f"{where}: {raised(e, 'choose_buckets')}")
        problem = _plan_problem(plan, lengths, new_tokens, budget)
        if problem:
            return fails(f"{where}: {problem}")
    return passes(f"{plural(len(_TRAFFIC), 'traffic mix', 'traffic mixes')}: every prompt fits, within budget")


# ------------------------------------------------------------------------------------------ the sampler
_DATA_DEPENDENT = ("aten::nonzero", "aten::masked_select", "aten::_local_scalar_dense", "aten::unique")


def _sampler_ops(sampler: Callable[..., Any], logits: Any, top_p: float) -> list[str]:
    """The data-dependent ops one call dispatches: host syncs, and indexing with a boolean mask (``aten::index``
    with a bool index: its output size is the mask's count)."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    found: list[str] = []

    class Spy(TorchDispatchMode):
        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            op = f"aten::{func._schema.name.split('::')[-1]}"
            if op.startswith(_DATA_DEPENDENT):
                found.append(op)
            elif op == "aten::index":
                idx = args[1] if len(args) > 1 else ()
                if any(isinstance(i, torch.Tensor) and i.dtype in (torch.bool, torch.uint8) for i in idx or ()):
                    found.append("aten::index with a boolean mask")
            return func(*args, **(kwargs or {}))

    with Spy():
        sampler(logits, top_p, torch.Generator().manual_seed(0))
    return sorted(set(found))


def _hidden_logits(seed: int) -> Any:
    """Three rows over 40 tokens: row 0 with probabilities 0.5, 0.3, 0.15 and the rest small (at top_p = 0.9 the
    nucleus is exactly the first three: the third crosses top_p), rows 1-2 random."""
    import torch

    g = torch.Generator().manual_seed(seed)
    head = torch.tensor([0.5, 0.3, 0.15])
    tail = torch.full((37,), 0.05 / 37)
    row0 = torch.cat([head, tail])[torch.randperm(40, generator=g)]
    return torch.stack([row0.log(), torch.randn(40, generator=g) * 2, torch.randn(40, generator=g) * 3])


@guarded("static top-p sampler", must_be="your function sampler(logits, top_p, generator)")
def check_static_sampler(sampler: Callable[..., Any], top_p: float = 0.9, draws: int = 300) -> Verdict:
    """``sampler(logits (B, V), top_p, generator) -> (B, 1)`` token ids, run on logits the chapter never shows:
    every token inside the nucleus (the fewest tokens whose probability reaches ``top_p``), every nucleus token
    drawn about as often as its renormalised probability says, the same tokens for the same generator seed, and no
    host sync or data-dependent shape in its ops."""
    import torch

    logits = _hidden_logits(seed=17)
    probs = torch.softmax(logits, -1)
    sp, idx = probs.sort(-1, descending=True)
    cum = sp.cumsum(-1)
    nuclei = [idx[b, : int((cum[b] < top_p).sum()) + 1].tolist() for b in range(logits.shape[0])]
    try:
        bad = _sampler_ops(sampler, logits.clone(), top_p)
    except Exception as e:
        return fails(raised(e, "the sampler"))
    if bad:
        return fails(f"{', '.join(bad)}: a host sync or a data-dependent shape in every decode step")
    gen = torch.Generator().manual_seed(5)
    seen = torch.zeros_like(probs)
    for d in range(draws):
        try:
            out = sampler(logits.clone(), top_p, gen)
        except Exception as e:
            return fails(raised(e, "the sampler"))
        if not isinstance(out, torch.Tensor) or tuple(out.shape) != (logits.shape[0], 1):
            got = tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
            return fails(f"output {got}: a static sampler returns (batch, 1) token ids every time")
        if out.dtype.is_floating_point:
            return fails(f"output dtype {out.dtype}: token ids are integers (gather from the sorted order)")
        for b in range(logits.shape[0]):
            tok = int(out[b, 0])
            if tok not in nuclei[b]:
                return fails(
                    f"row {b}: token {tok} is outside the top-p nucleus of {plural(len(nuclei[b]), 'token')} "
                    f"(draw {d})",
                )
            seen[b, tok] += 1
    for b, nucleus in enumerate(nuclei):
        mass = float(probs[b, nucleus].sum())
        for tok in nucleus:
            expect = draws * float(probs[b, tok]) / mass
            if expect >= 20 and seen[b, tok] < expect / 3:
                kept = int((seen[b] > 0).sum())
                how = (
                    "always one token: that is argmax, not sampling"
                    if kept == 1
                    else (f"token {tok} drawn {int(seen[b, tok])} times in {draws}, expected about {expect:.0f}")
                )
                return fails(
                    f"row {b}: {how} (the token whose probability crosses top_p belongs to the nucleus too)"
                    if kept > 1 and tok == nucleus[-1]
                    else f"row {b}: {how}",
                )

    def run(seed: int) -> Any:
        # 20 draws from one generator: a sampler that ignores it (the global RNG) repeats all 20 by chance with
        # probability below 1e-8 on these logits, where a single draw would repeat about one time in three.
        g = torch.Generator().manual_seed(seed)
        return torch.cat([sampler(logits.clone(), top_p, g) for _ in range(20)], dim=1)

    if not torch.equal(run(1), run(1)):
        return fails("the same generator seed gave different tokens: draw with the generator passed in")
    return passes(
        f"(batch, 1) every time; {draws} draws all inside the nucleus, in proportion; no host sync or "
        "data-dependent shape",
    )
