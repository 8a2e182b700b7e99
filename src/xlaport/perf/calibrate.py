"""How much of the roofline real runs achieve, fitted on published runs and checked on held-out ones.

A roofline floor is theory: every matmul at the chip's peak, every byte at full bandwidth. Published runs
(:mod:`xlaport.perf.published`) say how far above that floor real jobs land. Each run's floor is computed in the
unit it published:

* **training**: seconds per token per chip, the model FLOPs per token over the chip's bf16 peak, so the fraction
  achieved is the run's MFU on the bf16 peak (``flop_per_token x tokens_per_s_per_chip / peak``), FLOPs per token
  counted as torchtitan counts them (``6 x (N - embedding) + 12 x layers x d_model x seq``; for a mixture of
  experts N is the active parameters). An fp8 run is its own regime: measured on the same bf16 basis it shows
  what fp8 bought in practice (about half of the doubled peak); :func:`mfu` gives it on its own precision's peak;
* **prefill** (time to first token), **decode** (time per output token) and **serving** (seconds per output token
  per chip): the floors of :mod:`xlaport.perf.inference`, tensor-parallel over the run's chips, at the run's
  weight and cache precision.

achieved = floor / measured. The fit takes, per (chip family, software stack, regime), the median achieved fraction
of the runs that are not held out, falling back (and saying so) to the same family and stack for the same kind of
step, then the same family and stack, then the family for that kind, then every fitted run of that kind. Training
never borrows from inference or the reverse. Regimes: ``dense`` or ``moe`` (routing and all-to-all keep a mixture
of experts well below a dense model), with `` fp8`` for an fp8 training run; for inference the kind
(``serving``, ``decode``, ``prefill``) and `` moe``. The expected time is the floor over that fraction. The
interval comes from how far fitted runs fall from their group's median when each is left out of it (the 10th to
90th percentile of those ratios, training and inference apart), never wider than :data:`MAX_WIDTH` end to end.

>>> from xlaport.perf.calibrate import fit, evaluate
>>> rows = evaluate(fit())     # one row per run it can predict: expected, interval, measured, error
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .published import PublishedRun, runs

if TYPE_CHECKING:
    from .inference import Decoder

__all__ = [
    "MAX_WIDTH",
    "SIDES",
    "Calibration",
    "Prediction",
    "flop_per_token",
    "floor",
    "measured",
    "achieved",
    "mfu",
    "regime",
    "fit",
    "predict",
    "evaluate",
    "unpredictable",
    "held_out_summary",
]

MAX_WIDTH = 2.0  # the interval's high end over its low end, at most
SIDES = ("training", "inference")
UNITS = {
    "training": "s per token per chip",
    "prefill": "s to the first token",
    "decode": "s per output token",
    "serving": "s per output token per chip",
}


def _peak(chip: str, precision: str) -> tuple[float, str]:
    """The chip's dense peak for the run's precision, and which peak it is: fp8 where the run is fp8 and the chip
    table has an fp8 peak, else bf16."""
    from .. import cost

    c = cost.chip(chip)
    if _fp8(precision) and "peak_fp8_dense" in c.facts:
        return c.facts["peak_fp8_dense"].value, "fp8"
    return c.peak_bf16_flop_per_s, "bf16"


def _fp8(precision: str) -> bool:
    return precision.lower().startswith("fp8")


def _side(run: PublishedRun) -> str:
    return "inference" if run.inference else "training"


def flop_per_token(run: PublishedRun) -> float | None:
    """Model FLOPs per trained token, torchtitan's count; None where the run does not give the architecture."""
    e = run.extra
    n = e.get("active_params_b") or e.get("params_b")
    layers, d, seq = e.get("layers"), e.get("hidden"), run.seq_len
    if not (n and layers and d and seq):
        return None
    embedding = (e.get("vocab") or 0) * d
    return 6.0 * (float(n) * 1e9 - embedding) + 12.0 * layers * d * seq


def _decoder(run: PublishedRun) -> Decoder | None:
    from .inference import decoder

    e = run.extra
    need = ("layers", "hidden", "heads", "kv_heads")
    total = e.get("params_b")
    if not total or any(not e.get(k) for k in need):
        return None
    return decoder(
        float(total) * 1e9,
        int(e["layers"]),
        int(e["hidden"]),
        int(e["heads"]),
        int(e["kv_heads"]),
        active=float(e["active_params_b"]) * 1e9 if e.get("active_params_b") else None,
        head_dim=int(e["head_dim"]) if e.get("head_dim") else None,
        vocab=int(e.get("vocab") or 0),
    )


def _cache_bytes(precision: str) -> float:
    return 1.0 if "kv-cache fp8" in precision.lower() or "kv cache fp8" in precision.lower() else 2.0


def floor(run: PublishedRun) -> tuple[float | None, str]:
    """The run's roofline floor in the unit of :data:`UNITS` for its kind, or (None, why it cannot be computed)."""
    from .inference import decode_s, prefill_s, serving
    from .machine import chip

    if run.kind == "training":
        f = flop_per_token(run)
        if not f:
            return None, "the source gives no architecture or sequence length"
        return f / _peak(run.chip, "bf16")[0], ""
    model = _decoder(run)
    if model is None:
        return None, "the source gives no architecture (layers, hidden, heads, KV heads and parameters)"
    if not run.chips:
        return None, "the source gives no chip count"
    e = run.extra
    i, o = e.get("input_len"), e.get("output_len")
    if i is None or (run.kind == "serving" and o is None):
        return None, "the source gives no input and output lengths"
    m = chip(run.chip)
    kw = {"weight_bytes": 1.0 if _fp8(run.precision) else 2.0, "peak_flop_per_s": _peak(run.chip, run.precision)[0]}
    batch = int(e.get("batch") or e.get("concurrency") or 1)
    if run.kind == "prefill":
        return prefill_s(model, m, run.chips, batch, int(i), **kw), ""
    if run.kind == "decode":
        return decode_s(model, m, run.chips, batch, int(i), kv_bytes=_cache_bytes(run.precision), **kw), ""
    conc = e.get("concurrency")
    if conc is not None and e.get("num_prompts"):
        conc = min(int(conc), int(e["num_prompts"]))
    s = serving(
        model,
        m,
        run.chips,
        int(i),
        int(o or 1),
        int(conc) if conc else None,
        kv_bytes=_cache_bytes(run.precision),
        **kw,
    )
    return 1.0 / s.output_tokens_per_s_per_chip, ""


def measured(run: PublishedRun) -> float | None:
    """The run's measured time in the unit of :data:`UNITS` for its kind (None where it published none)."""
    ms = run.measured
    if run.kind == "training":
        tps = ms.get("tokens_per_s_per_chip")
        return 1.0 / tps if tps else None
    if run.kind == "prefill":
        return ms["ttft_p50_ms"] / 1e3 if "ttft_p50_ms" in ms else None
    if run.kind == "decode":
        return ms["tpot_p50_ms"] / 1e3 if "tpot_p50_ms" in ms else None
    tps = ms.get("output_tokens_per_s_per_chip") or ms.get("derived_output_tokens_per_s_per_chip")
    if not tps and ms.get("output_tokens_per_s") and run.chips:
        tps = ms["output_tokens_per_s"] / run.chips
    return 1.0 / tps if tps else None


def achieved(run: PublishedRun) -> float | None:
    """The fraction of the roofline floor the run reached (floor over measured time); for training its MFU on the
    bf16 peak, or the run's own MFU where it gives only that (MaxText's synthetic v5e runs). None where neither side
    can be read."""
    f, _ = floor(run)
    t = measured(run)
    if f and t:
        return f / t
    if run.kind == "training" and run.measured.get("mfu"):
        return float(run.measured["mfu"])
    return None


def mfu(run: PublishedRun) -> float | None:
    """A training run's MFU on the peak of its own precision (fp8 where the chip table has one)."""
    f, t = flop_per_token(run), run.measured.get("tokens_per_s_per_chip")
    if run.kind != "training" or not f or not t:
        return float(run.measured["mfu"]) if run.kind == "training" and run.measured.get("mfu") else None
    return f * t / _peak(run.chip, run.precision)[0]


def _family(run: PublishedRun) -> str:
    from .. import cost

    return str(cost.chip(run.chip).family)


def regime(run: PublishedRun) -> str:
    """``dense``, ``moe``, ``dense fp8``, ``moe fp8`` for training; ``serving``, ``decode``, ``prefill`` (with
    `` moe``) for inference (see the module's docstring)."""
    moe = bool(run.extra.get("active_params_b"))
    if run.kind == "training":
        return ("moe" if moe else "dense") + (" fp8" if _fp8(run.precision) else "")
    return run.kind + (" moe" if moe else "")


Group = tuple[str, str, str, str]  # (chip family, stack, kind, regime)


@dataclass(frozen=True)
class Calibration:
    """Achieved fractions of the fitted (not held-out) runs by group, and each side's interval spread."""

    by_group: dict[Group, list[tuple[str, float]]]  # (family, stack, kind, regime) -> [(run id, fraction)]
    spread: dict[str, tuple[float, float]]  # side -> (low, high) ratios of a run's fraction to its group's median

    def fractions(self, family: str, stack: str, kind: str, regime: str) -> tuple[list[tuple[str, float]], str]:
        """The fitted runs a prediction rests on, and at which level they were found."""
        side = "training" if kind == "training" else "inference"

        def same_side(g: Group) -> bool:
            return (g[2] == "training") == (side == "training")

        levels = [
            (f"{family}/{stack}/{regime}", lambda g: g == (family, stack, kind, regime)),
            (f"{family}/{stack}/{kind}", lambda g: g[:3] == (family, stack, kind)),
            (f"{family}/{stack}, any {side}", lambda g: g[:2] == (family, stack) and same_side(g)),
            (f"{family}/{kind}, any stack", lambda g: g[0] == family and g[2] == kind),
            (f"every fitted {kind} run", lambda g: g[2] == kind),
            (f"every fitted {side} run", same_side),
        ]
        for name, keep in levels:
            got = [x for g, xs in self.by_group.items() if keep(g) for x in xs]
            if got:
                return got, name
        return [], "none"


@dataclass(frozen=True)
class Prediction:
    """One published run predicted from the fit: times in the unit of its kind (:data:`UNITS`)."""

    run_id: str
    kind: str
    held_out: bool
    floor_s: float
    expected_s: float
    interval_s: tuple[float, float]  # (fast, slow)
    measured_s: float
    rests_on: tuple[str, ...]  # the fitted runs behind the fraction
    level: str

    @property
    def unit(self) -> str:
        return UNITS[self.kind]

    @property
    def error(self) -> float:
        """Measured throughput over expected throughput, minus 1 (= expected time / measured time - 1; positive: the
        run was faster than predicted)."""
        return self.expected_s / self.measured_s - 1

    @property
    def inside(self) -> bool:
        fast, slow = self.interval_s
        return fast * (1 - 1e-9) <= self.measured_s <= slow * (1 + 1e-9)

    # training runs publish tokens per second per chip: the same numbers as rates
    @property
    def expected_tokens_per_s(self) -> float:
        return 1 / self.expected_s

    @property
    def interval_tokens_per_s(self) -> tuple[float, float]:
        return 1 / self.interval_s[1], 1 / self.interval_s[0]

    @property
    def measured_tokens_per_s(self) -> float:
        return 1 / self.measured_s


def _quantile(xs: Sequence[float], q: float) -> float:
    xs = sorted(xs)
    pos = q * (len(xs) - 1)
    lo, hi = math.floor(pos), math.ceil(pos)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def fit(published: Sequence[PublishedRun] | None = None) -> Calibration:
    """Fit on the runs that are not held out."""
    groups: dict[Group, list[tuple[str, float]]] = {}
    for r in published if published is not None else runs():
        a = achieved(r)
        if r.held_out or a is None:
            continue
        groups.setdefault((_family(r), r.stack, r.kind, regime(r)), []).append((r.id, a))
    spread = {}
    for side in SIDES:
        ratios = []
        for g, xs in groups.items():
            if (g[2] == "training") != (side == "training"):
                continue
            for i, (_, a) in enumerate(xs):
                others = [b for j, (_, b) in enumerate(xs) if j != i]
                if others:
                    ratios.append(a / statistics.median(others))
        spread[side] = (_quantile(ratios, 0.1), _quantile(ratios, 0.9)) if len(ratios) >= 2 else (1 / 1.2, 1.2)
    return Calibration(groups, spread)


def predict(
    cal: Calibration, family: str, stack: str, kind: str, regime: str, floor_s: float
) -> tuple[float, tuple[float, float], list[str], str]:
    """Expected time, (fast, slow) interval, the runs behind it and the level of the fit, for a step of ``kind``
    (``training``, ``prefill``, ``decode``, ``serving``) and ``regime`` whose roofline floor is ``floor_s``."""
    if kind not in UNITS:
        raise ValueError(f"kind must be one of {', '.join(UNITS)}, got {kind!r}")
    got, level = cal.fractions(family, stack, kind, regime)
    if not got:
        raise ValueError("no fitted published run to calibrate against")
    mid = statistics.median(a for _, a in got)
    lo, hi = cal.spread["training" if kind == "training" else "inference"]
    if hi / lo > MAX_WIDTH:  # keep the interval within MAX_WIDTH, centred where the spread is
        centre = math.sqrt(lo * hi)
        lo, hi = centre / math.sqrt(MAX_WIDTH), centre * math.sqrt(MAX_WIDTH)
    expected = floor_s / mid
    return expected, (expected / hi, expected / lo), [i for i, _ in got], level


def evaluate(cal: Calibration, published: Sequence[PublishedRun] | None = None) -> list[Prediction]:
    """Predict every run whose floor and measured time can both be read, held out or not."""
    out = []
    for r in published if published is not None else runs():
        f, _ = floor(r)
        t = measured(r)
        if not f or not t:
            continue
        e, (fast, slow), ids, level = predict(cal, _family(r), r.stack, r.kind, regime(r), f)
        out.append(Prediction(r.id, r.kind, r.held_out, f, e, (fast, slow), t, tuple(ids), level))
    return out


def unpredictable(published: Sequence[PublishedRun] | None = None) -> list[tuple[str, str]]:
    """(run id, why) for each run the fit cannot predict: what its source leaves out."""
    out = []
    for r in published if published is not None else runs():
        f, why = floor(r)
        if f is None:
            out.append((r.id, why))
        elif measured(r) is None:
            out.append((r.id, "the source gives the run's MFU only, not its throughput"))
    return out


def held_out_summary(rows: Sequence[Prediction]) -> dict[str, dict[str, float]]:
    """Per side (training, inference): how many held-out runs were predicted, how many fell inside their interval,
    and the median |error|: the aims' measures."""
    out = {}
    for side in SIDES:
        held = [p for p in rows if p.held_out and (p.kind == "training") == (side == "training")]
        out[side] = {
            "n": float(len(held)),
            "inside": float(sum(p.inside for p in held)),
            "median_abs_error": statistics.median(abs(p.error) for p in held) if held else math.nan,
        }
    return out
