"""Pricing math: MFU, throughput, cost per token/image/run, and whether a migration pays back.

Hardware facts (peak FLOP/s, memory, prices) live in ``data/hardware.toml``, each value with its
source, date and evidence marker; this module loads them and does the arithmetic. Units are in
the names: ``_flop_per_s``, ``_usd``, ``_per_chip_hour``, ``_s``, ``_months``.

Conventions (the chapter explains them):

- FLOPs per token follow PaLM, Appendix B (https://arxiv.org/abs/2204.02311): training costs
  ``6·N + 12·L·H·Q·T`` (N = parameters without the input embedding, L layers, H query heads,
  Q head dim, T sequence length); inference (forward only) is a third of that, ``2·N + 4·L·H·Q·T``.
  torchtitan computes the training form the same way (``get_nparams_and_flops``).
- MFU = achieved FLOP/s / peak dense BF16 FLOP/s of the chips used.
- Utilisation = the fraction of paid chip-hours that do useful work (1.0 = never idle).
- A month is ``hours_per_month`` (730) hours.

Bad input (negative, zero, NaN, infinite, unknown chip) raises ``ValueError`` with one line.
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass, field, replace
from functools import cache
from importlib import resources
from typing import Any, Literal

__all__ = [
    "DATA_FILE", "Fact", "Chip", "Side", "Migration", "Decision",
    "chip", "chip_names", "claim", "claims", "model_config", "data_info", "hours_per_month",
    "reference_rows", "claim_rows", "reference_markdown",
    "decoder_params", "flop_per_token", "mfu_fraction", "tokens_per_s", "usd_per_million_tokens",
    "tokens_per_s_per_chip_for_usd_per_million_tokens", "usd_per_item", "items_per_usd",
    "train_time_s", "train_cost_usd",
    "monthly_compute_usd", "one_time_usd", "break_even_months", "decide", "sensitivity",
    "break_even_current_usd_per_chip_hour", "relative_rounding",
]

DATA_FILE = "hardware.toml"
Mode = Literal["training", "inference"]
PriceTerm = Literal["on_demand", "1yr", "3yr"]
PRICE_TERMS: tuple[str, ...] = ("on_demand", "1yr", "3yr")
_EVIDENCE = {"V", "V2", "U"}
_FACT_KEYS = ("value", "unit", "source", "date", "evidence")


# --------------------------------------------------------------------------------------------
# Input checks: one-line ValueErrors


def _number(name: str, x: Any) -> float:
    if isinstance(x, bool):
        raise ValueError(f"{name} must be a number, got {x!r}")
    try:
        v = float(x)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number, got {x!r}") from None
    if math.isnan(v) or math.isinf(v):
        raise ValueError(f"{name} must be a finite number, got {x!r}")
    return v


def _positive(name: str, x: Any) -> float:
    v = _number(name, x)
    if v <= 0:
        raise ValueError(f"{name} must be > 0, got {x!r}")
    return v


def _non_negative(name: str, x: Any) -> float:
    v = _number(name, x)
    if v < 0:
        raise ValueError(f"{name} must be >= 0, got {x!r}")
    return v


def _fraction(name: str, x: Any) -> float:
    """A fraction in (0, 1]: MFU, utilisation."""
    v = _positive(name, x)
    if v > 1:
        raise ValueError(f"{name} must be a fraction in (0, 1], got {x!r} (write 40% as 0.4)")
    return v


def _unit_interval(name: str, x: Any) -> float:
    """A fraction in [0, 1): a loss or a discount."""
    v = _non_negative(name, x)
    if v >= 1:
        raise ValueError(f"{name} must be in [0, 1), got {x!r}")
    return v


# --------------------------------------------------------------------------------------------
# The data file


@dataclass(frozen=True)
class Fact:
    """One sourced value from ``hardware.toml``."""

    key: str
    value: float
    unit: str
    source: str
    date: str
    evidence: str
    note: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def verified(self) -> bool:
        """True only when read in the primary source (evidence ``V``)."""
        return self.evidence == "V"


def _fact(key: str, d: dict[str, Any]) -> Fact:
    missing = [k for k in _FACT_KEYS if k not in d or d[k] in ("", None)]
    if missing:
        raise ValueError(f"{DATA_FILE}: {key} lacks {', '.join(missing)}")
    if d["evidence"] not in _EVIDENCE:
        raise ValueError(f"{DATA_FILE}: {key} has evidence {d['evidence']!r}, expected one of V, V2, U")
    extra = {k: v for k, v in d.items() if k not in (*_FACT_KEYS, "note")}
    return Fact(key=key, value=float(d["value"]), unit=str(d["unit"]), source=str(d["source"]),
                date=str(d["date"]), evidence=str(d["evidence"]), note=str(d.get("note", "")), extra=extra)


@dataclass(frozen=True)
class Chip:
    """One accelerator chip and its sourced facts."""

    id: str
    name: str
    vendor: str
    family: str
    facts: dict[str, Fact]

    @property
    def peak_bf16_flop_per_s(self) -> float:
        return self.facts["peak_bf16_dense"].value

    @property
    def hbm_bytes(self) -> float:
        f = self.facts["hbm"]
        return f.value * {"GB": 1e9, "GiB": 2.0**30}[f.unit]

    def price_fact(self, term: str = "on_demand") -> Fact:
        if term not in PRICE_TERMS:
            raise ValueError(f"unknown price term {term!r}; use one of {', '.join(PRICE_TERMS)}")
        key = f"usd_per_chip_hour_{term}"
        if key not in self.facts:
            have = [t for t in PRICE_TERMS if f"usd_per_chip_hour_{t}" in self.facts]
            raise ValueError(f"no published {term} price for {self.id} (published: {', '.join(have) or 'none'}); "
                             "pass your own price")
        return self.facts[key]

    def usd_per_chip_hour(self, term: str = "on_demand") -> float:
        return self.price_fact(term).value

    def has_price(self, term: str = "on_demand") -> bool:
        return f"usd_per_chip_hour_{term}" in self.facts


@cache
def _raw() -> dict[str, Any]:
    text = resources.files("xlaport").joinpath("data", DATA_FILE).read_text(encoding="utf-8")
    return tomllib.loads(text)


@cache
def _chips() -> dict[str, Chip]:
    out = {}
    for cid, d in _raw()["chips"].items():
        facts = {k: _fact(f"chips.{cid}.{k}", v) for k, v in d.items() if isinstance(v, dict)}
        if "peak_bf16_dense" not in facts:
            raise ValueError(f"{DATA_FILE}: chip {cid} has no peak_bf16_dense")
        out[cid] = Chip(id=cid, name=d["name"], vendor=d["vendor"], family=d["family"], facts=facts)
    return out


@cache
def _claims() -> dict[str, Fact]:
    return {k: _fact(f"claims.{k}", v) for k, v in _raw()["claims"].items()}


def chip_names() -> tuple[str, ...]:
    """The chip ids in the data file (``tpu_v6e``, ``h100_sxm``, ...)."""
    return tuple(_chips())


def chip(name: str) -> Chip:
    """A chip by id; a one-line ValueError names the known ids otherwise."""
    chips = _chips()
    if not isinstance(name, str) or name not in chips:
        raise ValueError(f"unknown chip {name!r}; known: {', '.join(chips)}")
    return chips[name]


def claims() -> dict[str, Fact]:
    """Published figures (vendor claims, the seed's figures) with their sources."""
    return dict(_claims())


def claim(name: str) -> Fact:
    c = _claims()
    if name not in c:
        raise ValueError(f"unknown claim {name!r}; known: {', '.join(c)}")
    return c[name]


def model_config(name: str) -> dict[str, Any]:
    """A model's shape or a pipeline's defaults from the data file (with ``source``)."""
    models = _raw()["models"]
    if name not in models:
        raise ValueError(f"unknown model {name!r}; known: {', '.join(models)}")
    return dict(models[name])


def data_info() -> dict[str, str]:
    """Which data file the facts come from and when it was compiled."""
    meta = _raw()["meta"]
    return {"file": f"xlaport/data/{DATA_FILE}", "compiled": str(meta["compiled"]), "read": str(meta["read"]),
            "research": str(meta["research"])}


def hours_per_month() -> float:
    return float(_raw()["meta"]["hours_per_month"])


def reference_rows() -> list[dict[str, Any]]:
    """Every chip fact as a row for the book's reference table.

    Keys: ``chip``, ``quantity``, ``value``, ``unit``, ``source``, ``date``, ``verified`` (bool),
    ``evidence`` (V/V2/U), ``note``.
    """
    rows = []
    for c in _chips().values():
        for q, f in c.facts.items():
            rows.append({"chip": c.name, "quantity": q, "value": f.value, "unit": f.unit, "source": f.source,
                         "date": f.date, "verified": f.verified, "evidence": f.evidence, "note": f.note})
    return rows


def claim_rows() -> list[dict[str, Any]]:
    """Every published figure (vendor claims, the seed's figures) as a row for the book.

    Keys: ``claim``, ``value``, ``unit``, ``chip`` (id or ``""``), ``chips`` (count or ``None``),
    ``source``, ``date``, ``verified``, ``evidence``, ``note``.
    """
    return [{"claim": k, "value": f.value, "unit": f.unit, "chip": str(f.extra.get("chip", "")),
             "chips": f.extra.get("chips"), "source": f.source, "date": f.date, "verified": f.verified,
             "evidence": f.evidence, "note": f.note} for k, f in _claims().items()]


# --------------------------------------------------------------------------------------------
# FLOPs, MFU, throughput


def decoder_params(*, vocab_size: int, hidden_size: int, intermediate_size: int, num_hidden_layers: int,
                   num_attention_heads: int, num_key_value_heads: int, head_dim: int,
                   tie_word_embeddings: bool = False, **_: Any) -> tuple[int, int]:
    """(total parameters, input-embedding parameters) of a Llama/Qwen-style decoder.

    Counts Q/K/V/O projections (grouped-query attention, no biases), a gated MLP (three matrices),
    RMSNorm weights (two per layer, final, and per-head q/k norms as Qwen3 has), the input
    embedding and, unless tied, the output head.
    """
    for k, v in dict(vocab_size=vocab_size, hidden_size=hidden_size, intermediate_size=intermediate_size,
                     num_hidden_layers=num_hidden_layers, num_attention_heads=num_attention_heads,
                     num_key_value_heads=num_key_value_heads, head_dim=head_dim).items():
        _positive(k, v)
    d, q = hidden_size, num_attention_heads * head_dim
    kv = num_key_value_heads * head_dim
    attn = d * q + 2 * d * kv + q * d
    mlp = 3 * d * intermediate_size
    norms = 2 * d + 2 * head_dim
    layer = attn + mlp + norms
    embedding = vocab_size * d
    head = 0 if tie_word_embeddings else vocab_size * d
    total = num_hidden_layers * layer + embedding + head + d
    return total, embedding


def flop_per_token(n_params: float, mode: Mode = "training", *, n_layers: int = 0, n_heads: int = 0,
                   head_dim: int = 0, seq_len: int = 0) -> float:
    """Model FLOPs per token (PaLM, Appendix B): ``6N`` training / ``2N`` inference, plus attention.

    ``n_params`` excludes the input embedding (a lookup, not a matmul). The attention term
    ``12·L·H·Q·T`` (training) or ``4·L·H·Q·T`` (inference) is added when all four of
    ``n_layers``, ``n_heads``, ``head_dim``, ``seq_len`` are given; leave them 0 to omit it.
    """
    n = _positive("n_params", n_params)
    if mode not in ("training", "inference"):
        raise ValueError(f"mode must be 'training' or 'inference', got {mode!r}")
    attn = [_non_negative(k, v) for k, v in
            (("n_layers", n_layers), ("n_heads", n_heads), ("head_dim", head_dim), ("seq_len", seq_len))]
    if any(attn) and not all(attn):
        raise ValueError("attention term needs all of n_layers, n_heads, head_dim, seq_len (or none)")
    per_matmul = 6.0 if mode == "training" else 2.0
    attention = 2 * per_matmul * math.prod(attn) if all(attn) else 0.0
    return per_matmul * n + attention


def mfu_fraction(tokens_per_s: float, flop_per_token: float, peak_flop_per_s: float, n_chips: float = 1) -> float:
    """Model FLOPs utilisation: achieved model FLOP/s over the peak of ``n_chips`` chips (a fraction)."""
    t = _positive("tokens_per_s", tokens_per_s)
    f = _positive("flop_per_token", flop_per_token)
    p = _positive("peak_flop_per_s", peak_flop_per_s)
    n = _positive("n_chips", n_chips)
    return t * f / (n * p)


def tokens_per_s(mfu: float, flop_per_token: float, peak_flop_per_s: float, n_chips: float = 1) -> float:
    """Tokens/s that ``n_chips`` chips reach at a given MFU (the inverse of :func:`mfu_fraction`)."""
    m = _fraction("mfu", mfu)
    f = _positive("flop_per_token", flop_per_token)
    p = _positive("peak_flop_per_s", peak_flop_per_s)
    n = _positive("n_chips", n_chips)
    return m * n * p / f


# --------------------------------------------------------------------------------------------
# Cost per unit of work


def usd_per_million_tokens(tokens_per_s_per_chip: float, usd_per_chip_hour: float, utilisation: float = 1.0) -> float:
    """USD per 1e6 tokens: a chip-hour's price over the tokens it produces while busy."""
    t = _positive("tokens_per_s_per_chip", tokens_per_s_per_chip)
    p = _positive("usd_per_chip_hour", usd_per_chip_hour)
    u = _fraction("utilisation", utilisation)
    return p / (t * 3600.0 * u) * 1e6


def tokens_per_s_per_chip_for_usd_per_million_tokens(usd_per_million_tokens: float, usd_per_chip_hour: float,
                                                      utilisation: float = 1.0) -> float:
    """The per-chip throughput a quoted price per million tokens implies (inverse of the above)."""
    c = _positive("usd_per_million_tokens", usd_per_million_tokens)
    p = _positive("usd_per_chip_hour", usd_per_chip_hour)
    u = _fraction("utilisation", utilisation)
    return p / (c / 1e6) / 3600.0 / u


def usd_per_item(seconds_per_step: float, steps_per_item: float, usd_per_chip_hour: float, n_chips: float = 1,
                 utilisation: float = 1.0) -> float:
    """USD per image (or per any item that takes ``steps_per_item`` steps on ``n_chips`` chips)."""
    s = _positive("seconds_per_step", seconds_per_step)
    k = _positive("steps_per_item", steps_per_item)
    p = _positive("usd_per_chip_hour", usd_per_chip_hour)
    n = _positive("n_chips", n_chips)
    u = _fraction("utilisation", utilisation)
    return s * k * n / 3600.0 * p / u


def items_per_usd(seconds_per_step: float, steps_per_item: float, usd_per_chip_hour: float, n_chips: float = 1,
                  utilisation: float = 1.0) -> float:
    """Images (items) per dollar: ``1 / usd_per_item``."""
    return 1.0 / usd_per_item(seconds_per_step, steps_per_item, usd_per_chip_hour, n_chips, utilisation)


def train_time_s(n_tokens: float, tokens_per_s: float) -> float:
    """Seconds to process ``n_tokens`` at ``tokens_per_s`` (whole system)."""
    return _positive("n_tokens", n_tokens) / _positive("tokens_per_s", tokens_per_s)


def train_cost_usd(n_tokens: float, tokens_per_s_per_chip: float, usd_per_chip_hour: float,
                   utilisation: float = 1.0) -> float:
    """USD to train on ``n_tokens``: chip-hours (independent of chip count) times price."""
    chip_hours = train_time_s(n_tokens, tokens_per_s_per_chip) / 3600.0
    return chip_hours * _positive("usd_per_chip_hour", usd_per_chip_hour) / _fraction("utilisation", utilisation)


# --------------------------------------------------------------------------------------------
# Migration: one-time effort against a monthly saving


@dataclass(frozen=True)
class Side:
    """One way to run the workload: a chip, its price, the MFU reached and the utilisation."""

    chip: str
    usd_per_chip_hour: float
    mfu: float
    utilisation: float = 1.0

    def __post_init__(self) -> None:
        chip(self.chip)
        _positive("usd_per_chip_hour", self.usd_per_chip_hour)
        _fraction("mfu", self.mfu)
        _fraction("utilisation", self.utilisation)

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
        for k in ("kernels", "person_weeks_per_kernel", "port_person_weeks", "validation_person_weeks",
                  "team_size", "disruption_weeks", "ongoing_person_weeks_per_month"):
            _non_negative(k, getattr(self, k))
        _positive("usd_per_person_week", self.usd_per_person_week)
        _unit_interval("velocity_loss", self.velocity_loss)

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
    return _positive("flop_per_month", flop_per_month) * side.usd_per_useful_flop


def one_time_usd(m: Migration) -> float:
    """Engineering plus lost velocity, in USD."""
    return (m.engineering_person_weeks + m.lost_velocity_person_weeks) * m.usd_per_person_week


def break_even_months(one_time_usd: float, monthly_saving_usd: float) -> float:
    """Months until the saving repays the one-time cost; ``inf`` when there is no saving."""
    c = _non_negative("one_time_usd", one_time_usd)
    s = _number("monthly_saving_usd", monthly_saving_usd)
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


def decide(flop_per_month: float, current: Side, proposed: Side, migration: Migration,
           horizon_months: float = 24) -> Decision:
    """Compare running ``flop_per_month`` on ``current`` vs ``proposed`` after paying ``migration``."""
    h = _positive("horizon_months", horizon_months)
    cur = monthly_compute_usd(flop_per_month, current)
    new = monthly_compute_usd(flop_per_month, proposed)
    once = one_time_usd(migration)
    saving = cur - new - migration.ongoing_usd_per_month
    return Decision(current_monthly_usd=cur, proposed_monthly_usd=new,
                    ongoing_usd_per_month=migration.ongoing_usd_per_month, monthly_saving_usd=saving,
                    one_time_usd=once, break_even_months=break_even_months(once, saving), horizon_months=h,
                    net_over_horizon_usd=saving * h - once)


def break_even_current_usd_per_chip_hour(flop_per_month: float, current: Side, proposed: Side,
                                         migration: Migration, horizon_months: float = 24) -> float:
    """The current side's price per chip-hour at which migrating nets exactly zero over the horizon.

    Pay less than this now and staying is cheaper; pay more and the move wins.
    """
    h = _positive("horizon_months", horizon_months)
    needed = (monthly_compute_usd(flop_per_month, proposed) + migration.ongoing_usd_per_month
              + one_time_usd(migration) / h)
    return needed / monthly_compute_usd(flop_per_month, current) * current.usd_per_chip_hour


def relative_rounding(x: float) -> float:
    """Half a unit in the last significant digit of ``x``, relative to ``x`` (918e12 -> 0.5/918).

    Used as the tolerance when a published total is compared with a product of rounded figures.
    """
    v = _number("x", x)
    if v == 0:
        raise ValueError("x must be non-zero")
    mantissa, _, exp = f"{abs(v):.12e}".partition("e")
    digits = mantissa.replace(".", "").rstrip("0") or "0"
    unit = 10.0 ** (int(exp) - (len(digits) - 1))
    return 0.5 * unit / abs(v)


def sensitivity(flop_per_month: float, current: Side, proposed: Side, migration: Migration,
                horizon_months: float = 24, factors: tuple[float, ...] = (0.8, 1.25)) -> list[dict[str, Any]]:
    """How the decision moves when one input changes by each factor, the others held.

    Inputs varied: utilisation on each side, MFU on each side, the proposed side's price (a
    discount is a factor < 1), and the engineering cost (every person-week, one-time and
    ongoing). Fractions are capped at 1. Returns rows with ``input``, ``factor``, ``value``,
    ``break_even_months``, ``net_over_horizon_usd``.
    """
    base = decide(flop_per_month, current, proposed, migration, horizon_months)
    rows: list[dict[str, Any]] = [{"input": "baseline", "factor": 1.0, "value": float("nan"),
                                   "break_even_months": base.break_even_months,
                                   "net_over_horizon_usd": base.net_over_horizon_usd}]
    knobs = (("current utilisation", "current", "utilisation"), ("proposed utilisation", "proposed", "utilisation"),
             ("current MFU", "current", "mfu"), ("proposed MFU", "proposed", "mfu"),
             ("proposed price", "proposed", "usd_per_chip_hour"))
    for label, which, attr in knobs:
        for f in factors:
            _positive("factor", f)
            side = current if which == "current" else proposed
            v = getattr(side, attr) * f
            if attr != "usd_per_chip_hour":
                v = min(v, 1.0)
            changed = replace(side, **{attr: v})
            d = decide(flop_per_month, changed if which == "current" else current,
                       changed if which == "proposed" else proposed, migration, horizon_months)
            rows.append({"input": label, "factor": f, "value": v, "break_even_months": d.break_even_months,
                         "net_over_horizon_usd": d.net_over_horizon_usd})
    for f in factors:
        m = replace(migration, usd_per_person_week=migration.usd_per_person_week * f)
        d = decide(flop_per_month, current, proposed, m, horizon_months)
        rows.append({"input": "engineering cost", "factor": f, "value": m.usd_per_person_week,
                     "break_even_months": d.break_even_months, "net_over_horizon_usd": d.net_over_horizon_usd})
    return rows


def _fmt_value(value: Any, unit: str) -> str:
    if isinstance(value, float) and unit == "FLOP/s":
        return f"{value / 1e12:,.0f} TFLOP/s"
    if isinstance(value, float):
        return f"{value:,.4g} {unit}"
    return f"{value} {unit}"


def reference_markdown() -> str:
    """The book's hardware-facts reference page, rendered from ``data/hardware.toml`` at build time."""
    def cell(x: Any) -> str:
        return str(x).replace("|", "\\|").replace("\n", " ")

    info = data_info()
    lines = [
        "# Hardware facts",
        "",
        "**Every chip figure the pricing chapter uses lives in one data file, each value with its source, its "
        f"date and how well it is established.** This page is generated from `{info['file']}` (compiled "
        f"{info['compiled']}) when the site is built; `xlaport cost chips` prints the same facts. Evidence: "
        "**V** read in the primary source, **V2** seen only through a copy, **U** unverified.",
        "",
        "| chip | quantity | value | evidence | source (date) | note |",
        "|---|---|---|---|---|---|",
    ]
    for r in reference_rows():
        lines.append(f"| {cell(r['chip'])} | `{r['quantity']}` | {cell(_fmt_value(r['value'], r['unit']))} | "
                     f"{r['evidence']} | {cell(r['source'])} ({r['date']}) | {cell(r['note'])} |")
    lines += ["", "## Published figures the chapter checks", "",
              "| claim | value | evidence | source (date) | note |", "|---|---|---|---|---|"]
    for r in claim_rows():
        lines.append(f"| `{r['claim']}` | {cell(_fmt_value(r['value'], r['unit']))} | {r['evidence']} | "
                     f"{cell(r['source'])} ({r['date']}) | {cell(r['note'])} |")
    return "\n".join(lines) + "\n"
