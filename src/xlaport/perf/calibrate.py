"""How much of the roofline real training runs achieve, fitted on published runs and checked on held-out ones.

A roofline floor is theory: every matmul at the chip's peak. Published runs (:mod:`xlaport.perf.published`) say how
far above that floor real jobs land. For a training run the floor per token per chip is its model FLOPs per token
over the chip's peak at the run's precision, so the fraction achieved is the run's MFU:

    achieved = flop_per_token x tokens_per_s_per_chip / peak

with FLOPs per token counted as torchtitan counts them (``6 x (N - embedding) + 12 x layers x d_model x seq``; the
attention term without causal halving; for a mixture of experts N is the active parameters). The fit takes, per
(chip family, software stack, regime), the median achieved fraction of the runs that are not held out, falling
back to the same family and stack in any regime, then the family, then every fitted run. Regimes: ``dense``,
``moe`` (a mixture of experts: routing and all-to-all keep it well below a dense model's fraction), and
``fp8 on a bf16 peak`` (an fp8 run on a chip whose table has no fp8 peak, so its fraction of the bf16 peak runs
high). The expected time is the floor over that fraction. The interval comes from how far fitted runs fall from
their group's median when each is left out of it (the 10th to 90th percentile of those ratios, all groups
together), never wider than :data:`MAX_WIDTH` from end to end.

>>> from xlaport.perf.calibrate import fit, evaluate
>>> rows = evaluate(fit())     # one row per training run: predicted and measured tokens/s per chip, error
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from .published import PublishedRun, runs

__all__ = [
    "MAX_WIDTH",
    "Calibration",
    "Prediction",
    "flop_per_token",
    "achieved",
    "regime",
    "fit",
    "predict",
    "evaluate",
]

MAX_WIDTH = 2.0  # the interval's high end over its low end, at most


def _peak(chip: str, precision: str) -> tuple[float, str]:
    """The chip's dense peak for the run's precision, and which peak it is: fp8 where the run is fp8 and the chip
    table has an fp8 peak, else bf16 (the chip table's only peak for H100 and H200)."""
    from .. import cost

    c = cost.chip(chip)
    if precision.lower().startswith("fp8") and "peak_fp8_dense" in c.facts:
        return c.facts["peak_fp8_dense"].value, "fp8"
    return c.peak_bf16_flop_per_s, "bf16"


def flop_per_token(run: PublishedRun) -> float | None:
    """Model FLOPs per trained token, torchtitan's count; None where the run does not give the architecture."""
    e = run.extra
    n = e.get("active_params_b") or e.get("params_b")
    layers, d, seq = e.get("layers"), e.get("hidden"), run.seq_len
    if not (n and layers and d and seq):
        return None
    embedding = (e.get("vocab") or 0) * d
    return 6.0 * (float(n) * 1e9 - embedding) + 12.0 * layers * d * seq


def achieved(run: PublishedRun) -> float | None:
    """The fraction of the chip's peak the training run reached (its MFU in torchtitan's count); the run's own MFU
    where it gives only that (MaxText's synthetic v5e runs); None where neither can be read."""
    if run.kind != "training":
        return None
    f = flop_per_token(run)
    tps = run.measured.get("tokens_per_s_per_chip")
    if f and tps:
        return f * tps / _peak(run.chip, run.precision)[0]
    mfu = run.measured.get("mfu")
    return float(mfu) if mfu else None


def _family(run: PublishedRun) -> str:
    from .. import cost

    return str(cost.chip(run.chip).family)


def regime(run: PublishedRun) -> str:
    """``moe``, ``fp8 on a bf16 peak`` or ``dense`` (see the module's docstring)."""
    if run.extra.get("active_params_b"):
        return "moe"
    if run.precision.lower().startswith("fp8") and _peak(run.chip, run.precision)[1] == "bf16":
        return "fp8 on a bf16 peak"
    return "dense"


Group = tuple[str, str, str]  # (chip family, stack, regime)


@dataclass(frozen=True)
class Calibration:
    """Achieved fractions of the fitted (not held-out) training runs by group, and the interval's spread."""

    by_group: dict[Group, list[tuple[str, float]]]  # (family, stack, regime) -> [(run id, fraction)]
    spread: tuple[float, float]  # (low, high) ratios of a run's fraction to its group's median, left out of it

    def fractions(self, family: str, stack: str, kind: str) -> tuple[list[tuple[str, float]], str]:
        """The fitted runs a prediction for (family, stack, regime) rests on, and at which level they were found."""
        levels = [
            (f"{family}/{stack}/{kind}", lambda g: g == (family, stack, kind)),
            (f"{family}/{stack}, any regime", lambda g: g[:2] == (family, stack)),
            (f"{family}, any stack", lambda g: g[0] == family),
            ("every fitted run", lambda g: True),
        ]
        for name, keep in levels:
            got = [x for g, xs in self.by_group.items() if keep(g) for x in xs]
            if got:
                return got, name
        return [], "none"


@dataclass(frozen=True)
class Prediction:
    run_id: str
    held_out: bool
    floor_s_per_token: float  # per chip: model FLOPs per token / peak
    expected_tokens_per_s: float
    interval_tokens_per_s: tuple[float, float]  # (low, high)
    measured_tokens_per_s: float
    rests_on: tuple[str, ...]  # the fitted runs behind the fraction
    level: str

    @property
    def error(self) -> float:
        """Measured over expected throughput, minus 1 (positive: the run was faster than predicted)."""
        return self.measured_tokens_per_s / self.expected_tokens_per_s - 1

    @property
    def inside(self) -> bool:
        lo, hi = self.interval_tokens_per_s
        return lo * (1 - 1e-9) <= self.measured_tokens_per_s <= hi * (1 + 1e-9)


def _quantile(xs: Sequence[float], q: float) -> float:
    xs = sorted(xs)
    pos = q * (len(xs) - 1)
    lo, hi = math.floor(pos), math.ceil(pos)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def fit(published: Sequence[PublishedRun] | None = None) -> Calibration:
    """Fit on the training runs that are not held out."""
    groups: dict[Group, list[tuple[str, float]]] = {}
    for r in published if published is not None else runs():
        a = achieved(r)
        if r.held_out or a is None:
            continue
        groups.setdefault((_family(r), r.stack, regime(r)), []).append((r.id, a))
    ratios = []
    for xs in groups.values():
        for i, (_, a) in enumerate(xs):
            others = [b for j, (_, b) in enumerate(xs) if j != i]
            if others:
                ratios.append(a / statistics.median(others))
    spread = (_quantile(ratios, 0.1), _quantile(ratios, 0.9)) if len(ratios) >= 2 else (1 / 1.2, 1.2)
    return Calibration(groups, spread)


def predict(
    cal: Calibration, family: str, stack: str, kind: str, floor_s: float
) -> tuple[float, tuple[float, float], list[str], str]:
    """Expected time, (fast, slow) interval, the runs behind it and the level of the fit, for a step of ``kind``
    (a regime) whose roofline floor is ``floor_s``."""
    got, level = cal.fractions(family, stack, kind)
    if not got:
        raise ValueError("no fitted published run to calibrate against")
    mid = statistics.median(a for _, a in got)
    lo, hi = cal.spread
    if hi / lo > MAX_WIDTH:  # keep the interval within MAX_WIDTH, centred where the spread is
        centre = math.sqrt(lo * hi)
        lo, hi = centre / math.sqrt(MAX_WIDTH), centre * math.sqrt(MAX_WIDTH)
    expected = floor_s / mid
    return expected, (expected / hi, expected / lo), [i for i, _ in got], level


def evaluate(cal: Calibration, published: Sequence[PublishedRun] | None = None) -> list[Prediction]:
    """Predict every training run that gives tokens per second per chip and an architecture, held out or not."""
    out = []
    for r in published if published is not None else runs():
        f = flop_per_token(r)
        tps = r.measured.get("tokens_per_s_per_chip")
        if r.kind != "training" or not f or not tps:
            continue
        floor = f / _peak(r.chip, r.precision)[0]
        t, (fast, slow), ids, level = predict(cal, _family(r), r.stack, regime(r), floor)
        out.append(Prediction(r.id, r.held_out, floor, 1 / t, (1 / slow, 1 / fast), float(tps), tuple(ids), level))
    return out
