"""Chapter *Recompile storms*: a bucket rule that keeps a job within a compile budget."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..text import plural
from .common import ArgumentError, Verdict, _ints, fails, guarded, passes, raised

__all__ = ["check_buckets", "hidden_batch_lengths"]

# The jobs the check feeds the reader's rule: (seed, median, sigma, utterances, batch, shortest, longest) of
# lognormal utterance lengths, a longer tail than the chapter's (every one has batches past its 300 frames).
_HIDDEN = ((2029, 200, 0.5, 96, 4, 40, 900), (4057, 300, 0.3, 50, 2, 100, 800), (5018, 150, 0.5, 80, 4, 40, 700))


def hidden_batch_lengths() -> list[list[int]]:
    """The batch lengths (each batch's longest utterance) of the jobs the check runs a bucket rule on."""
    import numpy as np

    out = []
    for seed, median, sigma, n, batch, lo, hi in _HIDDEN:
        raw = np.random.default_rng(seed).lognormal(np.log(median), sigma, n).round()
        lens = np.clip(raw, lo, hi).astype(int)
        out.append([int(max(lens[i : i + batch])) for i in range(0, n, batch)])
    return out


def _verdict(lens: list[int], bks: list[int], budget: int, max_waste: float | None) -> tuple[bool, str]:
    """Pad each length to the smallest bucket that holds it: (within the budget and the waste limit, why)."""
    from ..recompile.buckets import padding_waste

    too_long = [n for n in lens if n > bks[-1]]
    if too_long:
        return False, f"the {max(too_long)}-frame batch fits no bucket (the largest is {bks[-1]})"
    used: dict[int, list[int]] = {}
    for n in lens:
        used.setdefault(next(b for b in bks if b >= n), []).append(n)
    compiles = len(used)
    if compiles > budget:
        lone = min(used.items(), key=lambda kv: (len(kv[1]), -kv[0]))  # the rarest bucket, the largest on a tie
        return False, (
            f"{compiles} compiles; the budget is {budget}: the {max(lone[1])}-frame batch got its own bucket ({lone[0]})"
        )
    waste = padding_waste(lens, [next(b for b in bks if b >= n) for n in lens])
    if max_waste is not None and waste > max_waste:
        worst = max(used.items(), key=lambda kv: sum(kv[0] - n for n in kv[1]))
        return False, (
            f"{plural(compiles, 'compile')} (budget {budget}) but {waste:.0%} of the padded frames are padding "
            f"(limit {max_waste:.0%}); most is wasted in bucket {worst[0]}"
        )
    return True, f"{plural(compiles, 'compile')}, {waste:.0%} padding"


def _check_budget(budget: int, max_waste: float | None) -> None:
    _ints("budget", [budget])
    if max_waste is not None and not 0 <= max_waste < 1:
        raise ArgumentError(f"max_waste must be a share in [0, 1), got {max_waste!r}")


@guarded(
    "buckets",
    must_be="a function choose(lengths, budget) -> buckets, not a list of buckets",
    arguments=_check_budget,
)
def check_buckets(
    choose: Callable[[list[int], int], Sequence[int]], budget: int, max_waste: float | None = None
) -> Verdict:
    """``choose(lengths, budget) -> buckets``: a bucket rule, run on jobs the chapter never shows
    (:func:`hidden_batch_lengths`). Each batch is padded to the smallest bucket that holds it; every job must use at
    most ``budget`` programs and, if ``max_waste`` is given, pad at most that share of its frames.
    """
    budget = _ints("budget", [budget])[0]
    jobs = hidden_batch_lengths()
    report = []
    for j, lens in enumerate(jobs):
        try:
            got: Any = choose(list(lens), budget)
        except Exception as e:
            return fails(f"on job {j} ({len(lens)} batches): {raised(e, 'it')}")
        try:
            bks = sorted(set(_ints("buckets", got)))
        except ValueError as e:
            return fails(f"on job {j}: it returned {got!r:.60}: {e}")
        if not bks:
            return fails(f"on job {j}: it returned no buckets")
        ok, why = _verdict(lens, bks, budget, max_waste)
        if not ok:
            return fails(f"on a job with batches of {min(lens)}-{max(lens)} frames, buckets {bks}: {why}")
        report.append(why)
    return passes(f"{len(jobs)} jobs the chapter never shows, each within the budget of {budget}: " + "; ".join(report))
