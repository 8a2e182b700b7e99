"""Chapter *Pricing math*: a price per million tokens, and a break-even chip-hour price."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from .common import Verdict, fails, guarded, passes, raised

__all__ = ["check_usd_per_million_tokens", "check_break_even_price", "HIDDEN_SERVING", "hidden_scenarios"]

#: The serving workloads the price check asks about: (tokens/s per busy chip, USD per chip-hour, busy share).
HIDDEN_SERVING = ((2500.0, 2.7, 0.4), (800.0, 1.2, 0.9), (12000.0, 4.1, 0.25), (5000.0, 3.0, 1.0))


@guarded("price per million tokens", must_be="a function price(tokens_per_s, usd_per_chip_hour, busy), not a number")
def check_usd_per_million_tokens(price: Callable[..., Any]) -> Verdict:
    """``price(tokens_per_s_per_chip, usd_per_chip_hour, busy) -> USD per million tokens`` against
    ``xlaport.cost.usd_per_million_tokens`` (within 1 %) on the workloads of :data:`HIDDEN_SERVING`."""
    from ..cost import usd_per_million_tokens

    done = []
    for tps, usd, busy in HIDDEN_SERVING:
        want = usd_per_million_tokens(tps, usd, busy)
        where = f"for {tps:,.0f} tokens/s at ${usd:.2f}/chip-hour, busy {busy:.0%}"
        try:
            got = float(price(tps, usd, busy))
        except Exception as e:
            return fails(f"{where}: {raised(e, 'it')}")
        if math.isfinite(got) and abs(got / want - 1) <= 0.01:
            done.append(f"${got:.4g}")
            continue
        hint = ""
        if busy < 1 and abs(got / (want * busy) - 1) <= 0.01:
            hint = f": the chip is busy {busy:.0%} of the paid hours, and idle hours are paid too"
        elif busy < 1 and abs(got / (want * busy * busy) - 1) <= 0.01:
            hint = ": multiplied by the busy share instead of dividing by it"
        elif abs(got / (want * 1e6) - 1) <= 0.01 or abs(got / (want / 1e6) - 1) <= 0.01:
            hint = ": off by a factor of a million (per token vs per million tokens)"
        elif abs(got / (want * 3600) - 1) <= 0.01 or abs(got / (want / 3600) - 1) <= 0.01:
            hint = ": off by 3600 (seconds vs hours)"
        return fails(f"{where}: ${got:.4g}, expected about ${want:.4g}{hint}")
    return passes(f"right for {len(done)} unseen workloads: {', '.join(done)} per million tokens")


def hidden_scenarios() -> list[tuple[float, Any, Any, Any, float]]:
    """The ``(flop_per_month, current, proposed, migration, horizon_months)`` the break-even check asks about: other
    chips, prices, kernel counts and horizons than the chapter's profiles."""
    from ..cost import Migration, Side

    return [
        (
            1e21,
            Side("h100_sxm", 4.0, 0.4),
            Side("tpu_v6e", 2.7, 0.35),
            Migration(3, 2, 8, usd_per_person_week=5000),
            24,
        ),
        (5e20, Side("h200", 5.0, 0.45), Side("tpu_v5e", 1.2, 0.3), Migration(6, 3, 10, usd_per_person_week=6000), 18),
        (
            3e21,
            Side("h100_sxm", 3.5, 0.35),
            Side("tpu_v6e", 2.7, 0.4),
            Migration(0, 2, 4, usd_per_person_week=5000),
            12,
        ),
    ]


@guarded("break-even price", must_be="a function break_even(flop_per_month, current, proposed, migration, horizon)")
def check_break_even_price(break_even: Callable[..., Any]) -> Verdict:
    """``break_even(flop_per_month, current, proposed, migration, horizon_months) -> USD per current chip-hour``: the
    current chip-hour price at which the move nets zero over the horizon (within 1 % of the price), asked about the
    scenarios of :func:`hidden_scenarios`."""
    from dataclasses import replace

    from ..cost import decide

    done = []
    for flop, current, proposed, migration, horizon in hidden_scenarios():
        where = f"for {current.chip} -> {proposed.chip}, {migration.kernels:g} kernels, {horizon:g} months"
        try:
            price = float(break_even(flop, current, proposed, migration, horizon))
        except Exception as e:
            return fails(f"{where}: {raised(e, 'it')}")
        if not math.isfinite(price) or price <= 0:
            return fails(f"{where}: ${price:.2f}/chip-hour: a price must be positive")

        exact, hi, lo = (
            decide(flop, replace(current, usd_per_chip_hour=p), proposed, migration, horizon).net_over_horizon_usd
            for p in (price, price * 1.01, price * 0.99)
        )
        scale = decide(flop, current, proposed, migration, horizon).current_monthly_usd
        if lo <= 0 <= hi or abs(exact) <= 1e-9 * max(1.0, scale):
            done.append(f"${price:.2f}")
            continue
        side = "still pays" if exact > 0 else "still loses"
        way = "lower" if exact > 0 else "higher"
        hint = ""
        if abs(price - proposed.usd_per_chip_hour) < 1e-9:
            hint = " (that is the new chip's price, not the current chip's break-even)"
        elif abs(price - current.usd_per_chip_hour) < 1e-9:
            hint = " (that is today's price of the current chip)"
        return fails(
            f"{where}: at ${price:.2f}/chip-hour the move {side} {abs(exact):,.0f} USD: the break-even is {way}{hint}",
        )
    return passes(f"the move nets zero at {', '.join(done)} per chip-hour in {len(done)} unseen scenarios")
