"""When each fact in the reference data was last read from its source: one date per fact, from every data file.

Each data file records, next to each fact, the day it was last read from its source (``YYYY-MM-DD``):

=====================================  ==========================================================
data file                              where the date is
=====================================  ==========================================================
``profiles.toml``                      ``checked`` on every rule of every target
``kernel_concepts.toml``               ``checked`` on every concept row and every figure
``api_mapping.toml``                   ``tpu_checked`` and ``neuron_checked`` on every row
``neuron-ops.toml``                    ``checked`` (the op list), ``fallback_checked`` (the CPU-fallback default)
``torch_tpu-0.2.0-*.json``             ``checked`` at the top: the day the wheel was read (the scripts write it)
``hardware.toml``                      ``checked`` on every chip value, claim and model table (its ``date`` is
                                       when the source published the value, a different date)
``published_runs.toml``                ``date_read`` in every run's ``source``
=====================================  ==========================================================

:func:`dated_facts` collects them and refuses a fact without a date (or with a malformed one, or one in the
future), naming the file and the fact. :func:`render` is the fragment ``book/what_changed_facts.md`` includes
(``book/generated/facts_checked.md``, written by the site's extension): the date the facts were checked, derived
from the data, never typed by hand. Torch-free.

>>> from xlaport.reference.freshness import dated_facts
>>> all(len(f.checked) == 10 for f in dated_facts())
True
"""

from __future__ import annotations

import datetime
import json
import re
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from . import data_text

__all__ = ["DatedFact", "FILES", "dated_facts", "last_checked", "render"]

FILES: tuple[str, ...] = (
    "profiles.toml",
    "kernel_concepts.toml",
    "api_mapping.toml",
    "neuron-ops.toml",
    "torch_tpu-0.2.0-facts.json",
    "torch_tpu-0.2.0-ops.json",
    "torch_tpu-0.2.0-api-surface.json",
    "hardware.toml",
    "published_runs.toml",
)
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


@dataclass(frozen=True)
class DatedFact:
    """One fact of a data file and the day it was last read from its source."""

    file: str
    fact: str
    checked: str  # YYYY-MM-DD
    source: str


def _date(file: str, fact: str, value: Any, key: str = "checked") -> str:
    if value is None or value == "":
        raise ValueError(f"{file}: {fact} has no '{key}' date (the day it was last read from its source)")
    text = str(value)
    if not _DATE.match(text):
        raise ValueError(f"{file}: {fact} has {key} = {text!r}; write the day it was read as YYYY-MM-DD")
    try:
        day = datetime.date.fromisoformat(text)
    except ValueError:
        raise ValueError(f"{file}: {fact} has {key} = {text!r}, which is not a calendar date") from None
    if day > datetime.date.today():
        raise ValueError(f"{file}: {fact} has {key} = {text}, a day that has not come yet")
    return text


def _profiles(text: str) -> Iterator[DatedFact]:
    file = "profiles.toml"
    for target, section in tomllib.loads(text).items():
        for rule in section.get("rules", []) if isinstance(section, dict) else []:
            fact = f"{target} rule {rule.get('id', '?')}"
            yield DatedFact(file, fact, _date(file, fact, rule.get("checked")), str(rule.get("source", "")))


def _kernel_concepts(text: str) -> Iterator[DatedFact]:
    file = "kernel_concepts.toml"
    raw = tomllib.loads(text)
    for table in ("concept", "figure"):
        for row in raw.get(table, []):
            fact = f"{table} {row.get('id', '?')}"
            yield DatedFact(file, fact, _date(file, fact, row.get("checked")), str(row.get("source", "")))


def _api_mapping(text: str) -> Iterator[DatedFact]:
    file = "api_mapping.toml"
    for row in tomllib.loads(text).get("row", []):
        for backend in ("tpu", "neuron"):
            fact = f"{row.get('cuda', '?')} ({backend} column)"
            key = f"{backend}_checked"
            yield DatedFact(file, fact, _date(file, fact, row.get(key), key), str(row.get(f"{backend}_source", "")))


def _neuron_ops(text: str) -> Iterator[DatedFact]:
    file = "neuron-ops.toml"
    raw = tomllib.loads(text)
    yield DatedFact(file, "op list", _date(file, "op list", raw.get("checked")), str(raw.get("source", "")))
    yield DatedFact(
        file,
        "CPU-fallback default",
        _date(file, "CPU-fallback default", raw.get("fallback_checked"), "fallback_checked"),
        str(raw.get("fallback_source", "")),
    )


def _hardware(text: str) -> Iterator[DatedFact]:
    file = "hardware.toml"
    raw = tomllib.loads(text)
    for chip, values in raw.get("chips", {}).items():
        for name, v in values.items():
            if isinstance(v, dict):
                fact = f"chips.{chip}.{name}"
                yield DatedFact(file, fact, _date(file, fact, v.get("checked")), str(v.get("source", "")))
    for section in ("claims", "models"):
        for name, t in raw.get(section, {}).items():
            fact = f"{section}.{name}"
            yield DatedFact(file, fact, _date(file, fact, t.get("checked")), str(t.get("source", "")))
            for sub, v in t.items():
                if isinstance(v, dict) and "value" in v:
                    yield DatedFact(
                        file, f"{fact}.{sub}", _date(file, f"{fact}.{sub}", v.get("checked")), str(v.get("source", ""))
                    )


def _published_runs(text: str) -> Iterator[DatedFact]:
    file = "published_runs.toml"
    for r in tomllib.loads(text).get("runs", []):
        src = r.get("source", {})
        fact = f"run {r.get('id', '?')}"
        where = src.get("url") or f"{src.get('repo', '?')} {src.get('path', '?')} @ {str(src.get('commit', '?'))[:12]}"
        yield DatedFact(file, fact, _date(file, fact, src.get("date_read"), "date_read"), str(where))


def _wheel_json(file: str, text: str) -> Iterator[DatedFact]:
    raw = json.loads(text)
    day = _date(file, "the wheel's facts", raw.get("checked"))
    source = f"{raw.get('wheel', '?')} (sha256 {str(raw.get('sha256', '?'))[:12]}…)"
    if "facts" in raw:  # torch_tpu-*-facts.json: one entry per fact
        for name in raw["facts"]:
            yield DatedFact(file, name, day, source)
    elif "ops" in raw:  # the op table: one fact per op with a kernel
        for op in raw["ops"]:
            yield DatedFact(file, f"kernel for {op}", day, source)
    else:  # the API surface: one fact per public module
        for module in raw.get("modules", {}):
            yield DatedFact(file, f"exports of {module}", day, source)


def dated_facts() -> tuple[DatedFact, ...]:
    """Every fact of every file in :data:`FILES` with the day it was last read; ``ValueError`` if one lacks it."""
    out: list[DatedFact] = []
    for file in FILES:
        text = data_text(file)
        if file == "profiles.toml":
            out += _profiles(text)
        elif file == "kernel_concepts.toml":
            out += _kernel_concepts(text)
        elif file == "api_mapping.toml":
            out += _api_mapping(text)
        elif file == "neuron-ops.toml":
            out += _neuron_ops(text)
        elif file == "hardware.toml":
            out += _hardware(text)
        elif file == "published_runs.toml":
            out += _published_runs(text)
        else:
            out += _wheel_json(file, text)
    return tuple(out)


def last_checked(facts: tuple[DatedFact, ...] | None = None) -> str:
    """The newest ``checked`` date among the facts (YYYY-MM-DD): the day the facts were last checked."""
    facts = dated_facts() if facts is None else facts
    if not facts:
        raise ValueError("no dated facts")
    return max(f.checked for f in facts)


def _long(day: str) -> str:
    d = datetime.date.fromisoformat(day)
    return f"{d.day} {d:%B %Y}"


def render(facts: tuple[DatedFact, ...] | None = None) -> str:
    """The "What changed" page's fragment (MyST, no title): when the facts were checked, per data file."""
    facts = dated_facts() if facts is None else facts
    newest = last_checked(facts)
    by_file: dict[str, list[str]] = {}
    for f in facts:
        by_file.setdefault(f.file, []).append(f.checked)
    lines = [
        f"**Facts last checked: {_long(newest)}** ({newest}), the newest of the dates below. Every fact in the "
        "toolkit's data files carries the day it was last read from its source; the date and the table are "
        "computed from those dates when the book is built (`xlaport.reference.freshness`), and the test suite "
        "refuses a fact without one.",
        "",
        "| data file | facts | oldest date | newest date |",
        "|---|---|---|---|",
    ]
    for file, days in by_file.items():
        lines.append(f"| `{file}` | {len(days)} | {min(days)} | {max(days)} |")
    return "\n".join(lines) + "\n"
