"""Chapter *Pricing math*: a price per million tokens, and a break-even chip-hour price."""

from __future__ import annotations

from typing import Any

from .common import Check, _fail, _none, _ok, guarded

__all__ = ["check_usd_per_million_tokens", "check_break_even_price"]


@guarded("price per million tokens")
def check_usd_per_million_tokens(
    answer: float | None, tokens_per_s_per_chip: float, usd_per_chip_hour: float, utilisation: float = 1.0
) -> Check:
    """The reader's price per million tokens against ``xlaport.cost.usd_per_million_tokens`` (within 1 %)."""
    from ..cost import usd_per_million_tokens

    name = "price per million tokens"
    want = usd_per_million_tokens(tokens_per_s_per_chip, usd_per_chip_hour, utilisation)
    if answer is None:
        return _none(name)
    got = float(answer)
    if abs(got / want - 1) <= 0.01:
        return _ok(name, f"${got:.4g} per million tokens")
    hint = ""
    if utilisation < 1 and abs(got / (want * utilisation) - 1) <= 0.01:
        hint = f": the chip is busy {utilisation:.0%} of the paid hours, and idle hours are paid too"
    elif abs(got / (want * 1e6) - 1) <= 0.01 or abs(got / (want / 1e6) - 1) <= 0.01:
        hint = ": off by a factor of a million (per token vs per million tokens)"
    elif abs(got / (want * 3600) - 1) <= 0.01 or abs(got / (want / 3600) - 1) <= 0.01:
        hint = ": off by 3600 (seconds vs hours)"
    return _fail(name, f"${got:.4g}, expected about ${want:.4g}{hint}")


@guarded("break-even price")
def check_break_even_price(
    answer: float | None, flop_per_month: float, current: Any, proposed: Any, migration: Any, horizon_months: float
) -> Check:
    """The current chip-hour price at which the move nets zero over the horizon (within 1 % of the price)."""
    from dataclasses import replace

    from ..cost import decide

    name = "break-even price"
    if answer is None:
        return _none(name)
    price = float(answer)
    if price <= 0:
        return _fail(name, "a price must be positive")
    d = decide(flop_per_month, replace(current, usd_per_chip_hour=price), proposed, migration, horizon_months)
    scale = decide(flop_per_month, current, proposed, migration, horizon_months).current_monthly_usd
    exact = d.net_over_horizon_usd
    hi = decide(flop_per_month, replace(current, usd_per_chip_hour=price * 1.01), proposed, migration, horizon_months)
    lo = decide(flop_per_month, replace(current, usd_per_chip_hour=price * 0.99), proposed, migration, horizon_months)
    if lo.net_over_horizon_usd <= 0 <= hi.net_over_horizon_usd or abs(exact) <= 1e-9 * max(1.0, scale):
        return _ok(
            name,
            f"${price:.2f}/chip-hour: the move nets {abs(exact) if abs(exact) < 0.5 else exact:,.0f} USD over {horizon_months:g} months",
        )
    side = "still pays" if exact > 0 else "still loses"
    way = "lower" if exact > 0 else "higher"
    return _fail(name, f"at ${price:.2f}/chip-hour the move {side} {abs(exact):,.0f} USD: the break-even is {way}")
