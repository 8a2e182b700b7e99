"""Chapter *Recompile storms*: buckets within a compile budget."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ..text import plural
from .common import Check, _fail, _ints, _none, _ok, guarded

__all__ = ["check_buckets"]


@guarded("buckets")
def check_buckets(
    lengths: Iterable[int], buckets: Sequence[int] | None, budget: int, max_waste: float | None = None
) -> Check:
    """Pad each batch length to the smallest bucket that holds it: at most ``budget`` programs, waste within bounds.

    ``max_waste`` is the largest allowed share of padded positions (0.2 = 20 %).
    """
    from ..recompile.buckets import padding_waste

    name = "buckets"
    lens = _ints("lengths", lengths)
    if buckets is None:
        return _none(name)
    try:
        bks = sorted(set(_ints("buckets", buckets)))
    except ValueError as e:
        return _fail(name, str(e))
    if not bks:
        return _fail(name, "no buckets")
    too_long = [n for n in lens if n > bks[-1]]
    if too_long:
        return _fail(name, f"the {max(too_long)}-frame batch fits no bucket (the largest is {bks[-1]})")
    used: dict[int, list[int]] = {}
    for n in lens:
        used.setdefault(next(b for b in bks if b >= n), []).append(n)
    compiles = len(used)
    if compiles > budget:
        lone = min(used.items(), key=lambda kv: (len(kv[1]), -kv[0]))  # the rarest bucket, the largest on a tie
        return _fail(
            name,
            f"{compiles} compiles; the budget is {budget}: the {max(lone[1])}-frame batch got its own bucket ({lone[0]})",
        )
    waste = padding_waste(lens, [next(b for b in bks if b >= n) for n in lens])
    if max_waste is not None and waste > max_waste:
        worst = max(used.items(), key=lambda kv: sum(kv[0] - n for n in kv[1]))
        return _fail(
            name,
            f"{plural(compiles, 'compile')} (budget {budget}) but {waste:.0%} of the padded frames are padding "
            f"(limit {max_waste:.0%}); most is wasted in bucket {worst[0]}",
        )
    return _ok(name, f"{plural(compiles, 'compile')} (budget {budget}), {waste:.0%} padding, buckets {bks}")
