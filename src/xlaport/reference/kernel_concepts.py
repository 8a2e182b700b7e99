"""The "Kernel concepts" reference page: what each Triton concept becomes in Pallas (TPU) and NKI (Trainium).

Data: ``reference/data/kernel_concepts.toml``, one row per concept with its sources, plus the published
TPU kernel figures the custom-kernels chapter quotes. :func:`concepts` and :func:`lookup` are the
query API (the scanner points at a row when it finds a Triton construct).

>>> from xlaport.reference.kernel_concepts import lookup
>>> [c.id for c in lookup("tl.dot")]
['dot']
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from functools import cache
from typing import Any

from . import data_text

__all__ = ["Concept", "Figure", "concepts", "figures", "figure", "lookup", "meta", "render"]

_CONCEPT_KEYS = ("id", "concept", "triton", "pallas", "nki", "note", "source", "checked")
_FIGURE_KEYS = ("id", "what", "value", "unit", "source", "checked")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


@dataclass(frozen=True)
class Concept:
    id: str
    concept: str
    triton: str
    pallas: str
    nki: str
    note: str
    source: str
    checked: str  # the date the row was last read from its sources (YYYY-MM-DD)

    @property
    def sources(self) -> tuple[str, ...]:
        return tuple(s.strip() for s in self.source.split(" ; ") if s.strip())


@dataclass(frozen=True)
class Figure:
    id: str
    what: str
    value: float
    unit: str
    source: str
    checked: str


def _rows(raw: dict[str, Any], table: str, keys: tuple[str, ...]) -> list[dict[str, Any]]:
    out = []
    for i, r in enumerate(raw.get(table, [])):
        where = f"kernel_concepts.toml {table} {i + 1} ({r.get('id', '?')})"
        for key in keys:
            if key not in r or (isinstance(r[key], str) and not r[key].strip()):
                raise ValueError(f"{where}: missing or empty '{key}'")
        if not _DATE.match(str(r["checked"])):
            raise ValueError(f"{where}: 'checked' must be a date YYYY-MM-DD, got {r['checked']!r}")
        out.append({k: r[k] for k in keys})
    return out


@cache
def _load() -> tuple[dict[str, Any], tuple[Concept, ...], tuple[Figure, ...]]:
    raw = tomllib.loads(data_text("kernel_concepts.toml"))
    cs = tuple(Concept(**r) for r in _rows(raw, "concept", _CONCEPT_KEYS))
    fs = tuple(Figure(**{**r, "value": float(r["value"])}) for r in _rows(raw, "figure", _FIGURE_KEYS))
    ids = [c.id for c in cs] + [f.id for f in fs]
    if len(ids) != len(set(ids)):
        raise ValueError("kernel_concepts.toml: ids must be unique")
    return raw.get("meta", {}), cs, fs


def meta() -> dict[str, Any]:
    return dict(_load()[0])


def concepts() -> tuple[Concept, ...]:
    """Every concept row, in page order."""
    return _load()[1]


def figures() -> tuple[Figure, ...]:
    """The published TPU kernel figures, each with its source."""
    return _load()[2]


def figure(id: str) -> Figure:
    """One published figure by id (``ValueError`` naming the valid ids otherwise)."""
    for f in figures():
        if f.id == id:
            return f
    raise ValueError(f"unknown figure {id!r}; choose one of: {', '.join(f.id for f in figures())}")


def lookup(query: str) -> list[Concept]:
    """Concepts whose id or Triton spelling contains ``query`` (case-insensitive), e.g. ``"tl.dot"``."""
    if not isinstance(query, str) or not query.strip():
        raise ValueError("give a Triton construct or concept id to look up, e.g. 'tl.dot'")
    q = query.strip().lower()
    return [c for c in concepts() if q in c.id.lower() or q in c.triton.lower()]


def _cell(x: Any) -> str:
    return str(x).replace("|", "\\|").replace("\n", " ")


def _links(c: Concept) -> str:
    return "; ".join(f"<{s}>" if s.startswith("https://") else _cell(s) for s in c.sources)


def render() -> str:
    """The MyST markdown of the page (written to ``book/generated/kernel_concepts.md`` at build time)."""
    m = meta()
    lines = [
        "# Kernel concepts: Triton to Pallas and NKI",
        "",
        "**What each Triton construct becomes when a kernel is ported to Pallas for TPUs and to NKI for Trainium, "
        "one row per concept with its sources.** This page is generated from "
        "`src/xlaport/reference/data/kernel_concepts.toml` when the site is built "
        f"(read {m.get('read', '?')}; JAX {m.get('jax', '?')}, Triton {m.get('triton', '?')}). The custom-kernels "
        "chapter ports an RMSNorm and a matmul with a fused epilogue along these rows.",
        "",
        "| concept | Triton | Pallas (TPU) | NKI (Trainium) | what changes | sources |",
        "|---|---|---|---|---|---|",
    ]
    for c in concepts():
        lines.append(
            f"| **{_cell(c.concept)}** (`{c.id}`) | `{_cell(c.triton)}` | {_cell(c.pallas)} | {_cell(c.nki)} | "
            f"{_cell(c.note)} | {_links(c)} (read {c.checked}) |"
        )
    lines += [
        "",
        "## Published TPU kernel figures",
        "",
        "Interpret mode checks numerics, not speed; these are measured on TPUs by their authors.",
        "",
        "| measurement | value | source |",
        "|---|---|---|",
    ]
    for f in figures():
        lines.append(f"| {_cell(f.what)} | {f.value:g} {_cell(f.unit)} | {_cell(f.source)} (read {f.checked}) |")
    return "\n".join(lines) + "\n"
