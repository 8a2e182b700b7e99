"""Published, measured runs: what real training and serving jobs achieved on each chip, with their sources.

The data file ``reference/data/published_runs.toml`` holds each run as its source published it (model, chips,
parallelism, batch and sequence, precision, activation checkpointing, software stack, and the measured step time
or throughput), with the repository path at a commit, or the URL, the day it was read and a quote holding the
number. A third of the runs are held out (``held_out``): drawn before anything was fitted to the file, so that an
estimate's error can be measured on runs it never saw.

>>> from xlaport.perf.published import runs
>>> [r.id for r in runs() if r.chip == "trn2" and r.kind == "decode"]
"""

from __future__ import annotations

import functools
import math
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .._data import data_text

__all__ = ["KINDS", "INFERENCE", "PublishedRun", "runs", "published_runs", "run", "held_out_draw", "DATA_FILE"]

DATA_FILE = "published_runs.toml"
KINDS: tuple[str, ...] = ("training", "prefill", "decode", "serving")
INFERENCE: tuple[str, ...] = ("prefill", "decode", "serving")
HELD_OUT_SEED = 20261202  # the draw of 2026-12-02, before any fit (see the data file's header)


@dataclass(frozen=True)
class PublishedRun:
    """One measured run. ``measured`` maps a quantity with its unit in the name (``step_time_s``,
    ``tokens_per_s_per_chip``, ``tpot_p50_ms`` ...) to the published value; ``source`` has where it was read."""

    id: str
    kind: str
    model: str
    chip: str
    chips: int | None
    precision: str
    held_out: bool
    measured: Mapping[str, float]
    source: Mapping[str, Any]
    parallelism: Mapping[str, Any] = field(default_factory=dict)
    software: str = ""
    seq_len: int | None = None
    activation_checkpointing: str = "unknown"
    note: str = ""
    extra: Mapping[str, Any] = field(default_factory=dict)  # the run's other fields (batch, layers, hidden ...)

    @property
    def inference(self) -> bool:
        return self.kind in INFERENCE

    @property
    def stack(self) -> str:
        """The software stack's family, from the first words of ``software`` (e.g. ``MaxText``, ``torchtitan``)."""
        return self.software.split(" ", 1)[0].strip(",;") if self.software else "unknown"


def _problem(rid: str, what: str) -> ValueError:
    return ValueError(f"{DATA_FILE}: run {rid!r}: {what}")


def _parse(d: Mapping[str, Any], known_chips: set[str]) -> PublishedRun:
    rid = str(d.get("id", "?"))
    for key in ("id", "kind", "model", "chip", "precision", "held_out", "measured", "source"):
        if key not in d:
            raise _problem(rid, f"no {key}")
    if d["kind"] not in KINDS:
        raise _problem(rid, f"kind {d['kind']!r} is not one of {', '.join(KINDS)}")
    if d["chip"] not in known_chips:
        raise _problem(rid, f"chip {d['chip']!r} is not in hardware.toml")
    chips = d.get("chips")
    if chips is not None and (not isinstance(chips, int) or chips < 1):
        raise _problem(rid, f"chips must be a whole number >= 1, got {chips!r}")
    measured = {k: v for k, v in d["measured"].items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    if not measured or any(not (math.isfinite(v) and v > 0) for v in measured.values()):
        raise _problem(rid, "measured needs positive finite numbers")
    src = d["source"]
    if not isinstance(src, Mapping) or not (src.get("url") or (src.get("repo") and src.get("path"))):
        raise _problem(rid, "source needs a url, or a repo and a path")
    if not src.get("date_read") or not src.get("quote"):
        raise _problem(rid, "source needs date_read and the quote that holds the number")
    known = {"id", "kind", "model", "chip", "chips", "precision", "held_out", "measured", "source", "parallelism"}
    known |= {"software", "seq_len", "activation_checkpointing", "note"}
    return PublishedRun(
        id=rid,
        kind=d["kind"],
        model=d["model"],
        chip=d["chip"],
        chips=chips,
        precision=str(d["precision"]),
        held_out=bool(d["held_out"]),
        measured=measured,
        source=dict(src),
        parallelism={k: v for k, v in d.get("parallelism", {}).items()},
        software=str(d.get("software", "")),
        seq_len=d.get("seq_len"),
        activation_checkpointing=str(d.get("activation_checkpointing", "unknown")),
        note=str(d.get("note", "")),
        extra={k: v for k, v in d.items() if k not in known},
    )


@functools.lru_cache(maxsize=1)
def runs() -> tuple[PublishedRun, ...]:
    """Every published run in the data file, checked as it is read (a bad row is one line naming it)."""
    from .. import cost

    raw = tomllib.loads(data_text(DATA_FILE)).get("runs", [])
    out = tuple(_parse(d, set(cost.chip_names())) for d in raw)
    ids = [r.id for r in out]
    if len(set(ids)) != len(ids):
        raise ValueError(f"{DATA_FILE}: run ids repeat: {sorted({i for i in ids if ids.count(i) > 1})}")
    return out


published_runs = runs  # the name xlaport.perf exports it under


def run(run_id: str) -> PublishedRun:
    """The published run ``run_id`` (one line naming the known ids when there is none)."""
    found = {r.id: r for r in runs()}
    if run_id not in found:
        raise ValueError(f"no published run {run_id!r}; known: {', '.join(sorted(found))}")
    return found[run_id]


def held_out_draw(ids_by_group: Mapping[str, list[str]], seed: int = HELD_OUT_SEED) -> set[str]:
    """The held-out draw as the data file's header describes it: a third (rounded) of each group's sorted ids,
    by ``random.Random(seed).sample``, the groups taken in the order given (training, then inference)."""
    import random

    rng = random.Random(seed)
    held: set[str] = set()
    for ids in ids_by_group.values():
        ids = sorted(ids)
        held |= set(rng.sample(ids, round(len(ids) / 3)))
    return held
