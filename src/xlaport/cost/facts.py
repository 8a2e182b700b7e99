"""Sourced hardware facts: peak FLOP/s, memory and prices per chip, and published figures to check.

The facts live in ``xlaport/reference/data/hardware.toml``, each value with its source, date and
evidence marker (V primary source, V2 via a copy, U unverified). This module loads and queries
them; :mod:`xlaport.cost.throughput` and :mod:`xlaport.cost.breakeven` do the arithmetic.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from .._data import data_text

__all__ = [
    "DATA_FILE",
    "PRICE_TERMS",
    "Fact",
    "Chip",
    "chip",
    "chip_names",
    "claim",
    "claims",
    "model_config",
    "data_info",
    "hours_per_month",
    "reference_rows",
    "claim_rows",
    "chip_table",
    "parse_fact",
]

DATA_FILE = "hardware.toml"
PRICE_TERMS: tuple[str, ...] = ("on_demand", "1yr", "3yr")
_EVIDENCE = {"V", "V2", "U"}
_FACT_KEYS = ("value", "unit", "source", "date", "evidence")


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
    checked: str = ""  # the day the value was last read from its source (YYYY-MM-DD)

    @property
    def verified(self) -> bool:
        """True only when read in the primary source (evidence ``V``)."""
        return self.evidence == "V"


def parse_fact(key: str, d: dict[str, Any]) -> Fact:
    missing = [k for k in _FACT_KEYS if k not in d or d[k] in ("", None)]
    if missing:
        raise ValueError(f"{DATA_FILE}: {key} lacks {', '.join(missing)}")
    if d["evidence"] not in _EVIDENCE:
        raise ValueError(f"{DATA_FILE}: {key} has evidence {d['evidence']!r}, expected one of V, V2, U")
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", str(d.get("checked", ""))):
        raise ValueError(f"{DATA_FILE}: {key} needs checked = the day it was last read (YYYY-MM-DD)")
    extra = {k: v for k, v in d.items() if k not in (*_FACT_KEYS, "note", "checked")}
    return Fact(
        key=key,
        value=float(d["value"]),
        unit=str(d["unit"]),
        source=str(d["source"]),
        date=str(d["date"]),
        evidence=str(d["evidence"]),
        note=str(d.get("note", "")),
        extra=extra,
        checked=str(d["checked"]),
    )


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

    @property
    def hbm_bytes_per_s(self) -> float:
        """HBM bandwidth per chip (bytes/s), as the vendor states it."""
        return self._bytes_per_s("hbm_bandwidth")

    @property
    def link_bytes_per_s(self) -> float:
        """Chip-to-chip (ICI, NeuronLink, NVLink) bandwidth per chip (bytes/s), as the vendor states it."""
        return self._bytes_per_s("chip_to_chip_bandwidth")

    def _bytes_per_s(self, key: str) -> float:
        if key not in self.facts:
            raise ValueError(f"no {key} for {self.id} in {DATA_FILE}")
        f = self.facts[key]
        return f.value * {"B/s": 1.0, "GB/s": 1e9, "TB/s": 1e12}[f.unit]

    def price_fact(self, term: str = "on_demand") -> Fact:
        if term not in PRICE_TERMS:
            raise ValueError(f"unknown price term {term!r}; use one of {', '.join(PRICE_TERMS)}")
        key = f"usd_per_chip_hour_{term}"
        if key not in self.facts:
            have = [t for t in PRICE_TERMS if f"usd_per_chip_hour_{t}" in self.facts]
            raise ValueError(
                f"no published {term} price for {self.id} (published: {', '.join(have) or 'none'}); pass your own price"
            )
        return self.facts[key]

    def usd_per_chip_hour(self, term: str = "on_demand") -> float:
        return self.price_fact(term).value

    def has_price(self, term: str = "on_demand") -> bool:
        return f"usd_per_chip_hour_{term}" in self.facts


@cache
def _raw() -> dict[str, Any]:
    text = data_text(DATA_FILE)
    return tomllib.loads(text)


@cache
def _chips() -> dict[str, Chip]:
    out = {}
    for cid, d in _raw()["chips"].items():
        facts = {k: parse_fact(f"chips.{cid}.{k}", v) for k, v in d.items() if isinstance(v, dict)}
        if "peak_bf16_dense" not in facts:
            raise ValueError(f"{DATA_FILE}: chip {cid} has no peak_bf16_dense")
        out[cid] = Chip(id=cid, name=d["name"], vendor=d["vendor"], family=d["family"], facts=facts)
    return out


@cache
def _claims() -> dict[str, Fact]:
    return {k: parse_fact(f"claims.{k}", v) for k, v in _raw()["claims"].items()}


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
    """Published figures (vendor claims, launch-coverage figures) with their sources."""
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
    return {
        "file": f"xlaport/reference/data/{DATA_FILE}",
        "compiled": str(meta["compiled"]),
        "read": str(meta["read"]),
        "research": str(meta["research"]),
    }


def hours_per_month() -> float:
    return float(_raw()["meta"]["hours_per_month"])


def reference_rows() -> list[dict[str, Any]]:
    """Every chip fact as a row for the book's reference table.

    Keys: ``chip``, ``quantity``, ``value``, ``unit``, ``source``, ``date``, ``verified`` (bool),
    ``evidence`` (V/V2/U), ``note``, ``checked`` (the day the value was last read).
    """
    rows = []
    for c in _chips().values():
        for q, f in c.facts.items():
            rows.append(
                {
                    "chip": c.name,
                    "quantity": q,
                    "value": f.value,
                    "unit": f.unit,
                    "source": f.source,
                    "date": f.date,
                    "verified": f.verified,
                    "evidence": f.evidence,
                    "note": f.note,
                    "checked": f.checked,
                }
            )
    return rows


def claim_rows() -> list[dict[str, Any]]:
    """Every published figure (vendor claims, launch-coverage figures) as a row for the book.

    Keys: ``claim``, ``value``, ``unit``, ``chip`` (id or ``""``), ``chips`` (count or ``None``),
    ``source``, ``date``, ``verified``, ``evidence``, ``note``, ``checked``.
    """
    return [
        {
            "claim": k,
            "value": f.value,
            "unit": f.unit,
            "chip": str(f.extra.get("chip", "")),
            "chips": f.extra.get("chips"),
            "source": f.source,
            "date": f.date,
            "verified": f.verified,
            "evidence": f.evidence,
            "note": f.note,
            "checked": f.checked,
        }
        for k, f in _claims().items()
    ]


def chip_table() -> Any:
    """Every chip in the data file as a markdown table: dense BF16 TFLOP/s, HBM and the price per chip-hour for
    each term in :data:`PRICE_TERMS`, each with its evidence marker in brackets (``-`` where none is published)."""
    from ..notebook import markdown_table

    rows = []
    for name in chip_names():
        c = chip(name)
        peak, hbm = c.facts["peak_bf16_dense"], c.facts["hbm"]
        prices = [
            f"{c.usd_per_chip_hour(t):.2f} [{c.price_fact(t).evidence}]" if c.has_price(t) else "-" for t in PRICE_TERMS
        ]
        rows.append((c.name, f"{peak.value / 1e12:,.0f} [{peak.evidence}]", f"{hbm.value:g} {hbm.unit}", *prices))
    return markdown_table(rows, ["chip", "dense BF16 TFLOP/s", "HBM", *(f"USD/chip-hour {t}" for t in PRICE_TERMS)])
