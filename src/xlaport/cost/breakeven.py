"""Whether a migration pays back: one-time effort against a monthly saving, and how sensitive that is."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..validate import fraction, non_negative, number, positive, unit_interval
from .facts import chip

__all__ = [
    "Side",
    "Migration",
    "Decision",
    "monthly_compute_usd",
    "one_time_usd",
    "break_even_months",
    "decide",
    "break_even_current_usd_per_chip_hour",
    "relative_rounding",
    "sensitivity",
    "decision_table",
    "sensitivity_table",
]


@dataclass(frozen=True)
class Side:
    """One way to run the workload: a chip, its price, the MFU reached and the utilisation."""

    chip: str
    usd_per_chip_hour: float
    mfu: float
    utilisation: float = 1.0

    def __post_init__(self) -> None:
        chip(self.chip)
        positive("usd_per_chip_hour", self.usd_per_chip_hour)
        fraction("mfu", self.mfu)
        fraction("utilisation", self.utilisation)

    @property
    def peak_flop_per_s(self) -> float:
        return chip(self.chip).peak_bf16_flop_per_s

    @property
    def usd_per_useful_flop(self) -> float:
        return self.usd_per_chip_hour / (3600.0 * self.mfu * self.peak_flop_per_s * self.utilisation)


@dataclass(frozen=True)
class Migration:
    """Effort to move: kernels to rewrite (Pallas/NKI), porting and recompile work, validation,
    all in person-weeks at a loaded cost, plus the team's lost velocity while it happens.

    ``ongoing_person_weeks_per_month`` is the recurring extra: kernels that a team on a frontier
    architecture keeps writing, now twice (or in Pallas/NKI instead of Triton/CUDA)."""

    kernels: float = 0
    person_weeks_per_kernel: float = 2.0
    port_person_weeks: float = 4.0
    validation_person_weeks: float = 4.0
    usd_per_person_week: float = 5000.0
    team_size: float = 1
    velocity_loss: float = 0.0
    disruption_weeks: float = 0.0
    ongoing_person_weeks_per_month: float = 0.0

    def __post_init__(self) -> None:
        for k in (
            "kernels",
            "person_weeks_per_kernel",
            "port_person_weeks",
            "validation_person_weeks",
            "team_size",
            "disruption_weeks",
            "ongoing_person_weeks_per_month",
        ):
            non_negative(k, getattr(self, k))
        positive("usd_per_person_week", self.usd_per_person_week)
        unit_interval("velocity_loss", self.velocity_loss)

    @property
    def engineering_person_weeks(self) -> float:
        return self.kernels * self.person_weeks_per_kernel + self.port_person_weeks + self.validation_person_weeks

    @property
    def lost_velocity_person_weeks(self) -> float:
        return self.team_size * self.velocity_loss * self.disruption_weeks

    @property
    def ongoing_usd_per_month(self) -> float:
        return self.ongoing_person_weeks_per_month * self.usd_per_person_week


def monthly_compute_usd(flop_per_month: float, side: Side) -> float:
    """USD a month to do ``flop_per_month`` useful model FLOPs on ``side``."""
    return positive("flop_per_month", flop_per_month) * side.usd_per_useful_flop


def one_time_usd(m: Migration) -> float:
    """Engineering plus lost velocity, in USD."""
    return (m.engineering_person_weeks + m.lost_velocity_person_weeks) * m.usd_per_person_week


def break_even_months(one_time_usd: float, monthly_saving_usd: float) -> float:
    """Months until the saving repays the one-time cost; ``inf`` when there is no saving."""
    c = non_negative("one_time_usd", one_time_usd)
    s = number("monthly_saving_usd", monthly_saving_usd)
    if s <= 0:
        return math.inf
    return c / s


@dataclass(frozen=True)
class Decision:
    """The outcome of :func:`decide`; ``monthly_saving_usd`` is net of ongoing engineering."""

    current_monthly_usd: float
    proposed_monthly_usd: float
    ongoing_usd_per_month: float
    monthly_saving_usd: float
    one_time_usd: float
    break_even_months: float
    horizon_months: float
    net_over_horizon_usd: float

    @property
    def migrate(self) -> bool:
        """Worth it within the horizon: the move repays itself and more."""
        return self.net_over_horizon_usd > 0


def decide(
    flop_per_month: float, current: Side, proposed: Side, migration: Migration, horizon_months: float = 24
) -> Decision:
    """Compare running ``flop_per_month`` on ``current`` vs ``proposed`` after paying ``migration``."""
    h = positive("horizon_months", horizon_months)
    cur = monthly_compute_usd(flop_per_month, current)
    new = monthly_compute_usd(flop_per_month, proposed)
    once = one_time_usd(migration)
    saving = cur - new - migration.ongoing_usd_per_month
    return Decision(
        current_monthly_usd=cur,
        proposed_monthly_usd=new,
        ongoing_usd_per_month=migration.ongoing_usd_per_month,
        monthly_saving_usd=saving,
        one_time_usd=once,
        break_even_months=break_even_months(once, saving),
        horizon_months=h,
        net_over_horizon_usd=saving * h - once,
    )


def break_even_current_usd_per_chip_hour(
    flop_per_month: float, current: Side, proposed: Side, migration: Migration, horizon_months: float = 24
) -> float:
    """The current side's price per chip-hour at which migrating nets exactly zero over the horizon.

    Pay less than this now and staying is cheaper; pay more and the move wins.
    """
    h = positive("horizon_months", horizon_months)
    needed = (
        monthly_compute_usd(flop_per_month, proposed) + migration.ongoing_usd_per_month + one_time_usd(migration) / h
    )
    return needed / monthly_compute_usd(flop_per_month, current) * current.usd_per_chip_hour


def relative_rounding(x: float) -> float:
    """Half a unit in the last significant digit of ``x``, relative to ``x`` (918e12 -> 0.5/918).

    Used as the tolerance when a published total is compared with a product of rounded figures.
    """
    v = number("x", x)
    if v == 0:
        raise ValueError("x must be non-zero")
    mantissa, _, exp = f"{abs(v):.12e}".partition("e")
    digits = mantissa.replace(".", "").rstrip("0") or "0"
    unit = 10.0 ** (int(exp) - (len(digits) - 1))
    return 0.5 * unit / abs(v)


def sensitivity(
    flop_per_month: float,
    current: Side,
    proposed: Side,
    migration: Migration,
    horizon_months: float = 24,
    factors: tuple[float, ...] = (0.8, 1.25),
) -> list[dict[str, Any]]:
    """How the decision moves when one input changes by each factor, the others held.

    Inputs varied: utilisation on each side, MFU on each side, the proposed side's price (a
    discount is a factor < 1), and the engineering cost (every person-week, one-time and
    ongoing). Fractions are capped at 1. Returns rows with ``input``, ``factor``, ``value``,
    ``break_even_months``, ``net_over_horizon_usd``.
    """
    base = decide(flop_per_month, current, proposed, migration, horizon_months)
    rows: list[dict[str, Any]] = [
        {
            "input": "baseline",
            "factor": 1.0,
            "value": float("nan"),
            "break_even_months": base.break_even_months,
            "net_over_horizon_usd": base.net_over_horizon_usd,
        }
    ]
    knobs = (
        ("current utilisation", "current", "utilisation"),
        ("proposed utilisation", "proposed", "utilisation"),
        ("current MFU", "current", "mfu"),
        ("proposed MFU", "proposed", "mfu"),
        ("proposed price", "proposed", "usd_per_chip_hour"),
    )
    for label, which, attr in knobs:
        for f in factors:
            positive("factor", f)
            side = current if which == "current" else proposed
            v = getattr(side, attr) * f
            if attr != "usd_per_chip_hour":
                v = min(v, 1.0)
            changed = replace(side, **{attr: v})
            d = decide(
                flop_per_month,
                changed if which == "current" else current,
                changed if which == "proposed" else proposed,
                migration,
                horizon_months,
            )
            rows.append(
                {
                    "input": label,
                    "factor": f,
                    "value": v,
                    "break_even_months": d.break_even_months,
                    "net_over_horizon_usd": d.net_over_horizon_usd,
                }
            )
    for f in factors:
        m = replace(migration, usd_per_person_week=migration.usd_per_person_week * f)
        d = decide(flop_per_month, current, proposed, m, horizon_months)
        rows.append(
            {
                "input": "engineering cost",
                "factor": f,
                "value": m.usd_per_person_week,
                "break_even_months": d.break_even_months,
                "net_over_horizon_usd": d.net_over_horizon_usd,
            }
        )
    return rows


def _months(x: float) -> str:
    return "never" if math.isinf(x) else f"{x:.1f}"


def decision_table(
    decisions: Mapping[str, Decision],
    break_even_usd_per_chip_hour: Mapping[str, float] | None = None,
    migrations: Mapping[str, Migration] | None = None,
) -> Any:
    """Decisions of :func:`decide` side by side as a markdown table: one column per name (a profile), one row per
    quantity; with ``break_even_usd_per_chip_hour`` (from :func:`break_even_current_usd_per_chip_hour`) the price
    below which staying wins, with ``migrations`` the person-weeks behind the one-time cost."""
    from ..notebook import markdown_table

    if (
        not isinstance(decisions, Mapping)
        or not decisions
        or not all(isinstance(d, Decision) for d in decisions.values())
    ):
        raise ValueError("decision_table() needs a non-empty mapping of name -> Decision (from cost.decide)")
    for what, extra in (("break_even_usd_per_chip_hour", break_even_usd_per_chip_hour), ("migrations", migrations)):
        if extra is not None and set(extra) != set(decisions):
            raise ValueError(f"decision_table(): {what} needs the same names as decisions: {sorted(decisions)}")
    ds = list(decisions.values())
    rows: list[list[Any]] = [
        ["compute per month, now (USD)", *(f"{d.current_monthly_usd:,.0f}" for d in ds)],
        ["compute per month, after (USD)", *(f"{d.proposed_monthly_usd:,.0f}" for d in ds)],
        ["ongoing engineering per month (USD)", *(f"{d.ongoing_usd_per_month:,.0f}" for d in ds)],
        ["one-time cost (USD)", *(f"{d.one_time_usd:,.0f}" for d in ds)],
    ]
    if migrations is not None:
        ms = [migrations[k] for k in decisions]
        rows.append(["one-time: person-weeks of work", *(f"{m.engineering_person_weeks:.0f}" for m in ms)])
        rows.append(["one-time: person-weeks of lost velocity", *(f"{m.lost_velocity_person_weeks:.0f}" for m in ms)])
    rows += [
        ["saving per month (USD)", *(f"{d.monthly_saving_usd:,.0f}" for d in ds)],
        ["break-even (months)", *(_months(d.break_even_months) for d in ds)],
        *(
            [
                [
                    f"net over {ds[0].horizon_months:g} months (USD)",
                    *(f"{d.net_over_horizon_usd:,.0f}" for d in ds),
                ]
            ]
            if len({d.horizon_months for d in ds}) == 1
            else [["net over the horizon (USD)", *(f"{d.net_over_horizon_usd:,.0f}" for d in ds)]]
        ),
        ["verdict", *("MIGRATE" if d.migrate else "STAY" for d in ds)],
    ]
    if break_even_usd_per_chip_hour is not None:
        prices = [break_even_usd_per_chip_hour[k] for k in decisions]
        rows.append(["staying wins below (USD per current chip-hour)", *(f"{p:.2f}" for p in prices)])
    return markdown_table(rows, ["", *decisions])


def sensitivity_table(rows: Sequence[Mapping[str, Any]]) -> Any:
    """The rows of :func:`sensitivity` as a markdown table: input, factor, the input's new value, the net over
    the horizon and the break-even month."""
    from ..notebook import markdown_table

    keys = ("input", "factor", "value", "net_over_horizon_usd", "break_even_months")
    if not rows or any(not isinstance(r, Mapping) or any(k not in r for k in keys) for r in rows):
        raise ValueError("sensitivity_table() needs the non-empty rows of cost.sensitivity()")
    from ..text import usd

    def value(r: Mapping[str, Any]) -> str:
        if r["input"] == "baseline":
            return ""
        if "utilisation" in r["input"] or "MFU" in r["input"]:
            return f"{r['value']:.0%}"
        return f"${r['value']:,.2f}" if r["value"] < 100 else usd(r["value"])

    out = [
        (r["input"], f"×{r['factor']:g}", value(r), usd(r["net_over_horizon_usd"]), _months(r["break_even_months"]))
        for r in rows
    ]
    return markdown_table(out, ["input", "factor", "value", "net over the horizon", "break-even month"])
