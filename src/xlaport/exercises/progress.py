"""Progress records for a team (torch-free): each check a learner runs in their workspace, and a table for the lead.

A learner's workspace (``xlaport learn start``) has a ``.xlaport-learn.toml`` naming the learner (``who``) and,
optionally, a shared ``progress`` folder (a synced folder or a clone of a shared git repository); without one the
records stay in the workspace's ``.progress/``. Each answer cell of a learner's copy begins with
``progress.at(chapter, n)``; every check that cell then runs appends one JSON line to ``<progress>/<who>.jsonl``:

    {"who": "ana", "chapter": "port_training", "exercise": 1, "check": "loader", "status": "fail",
     "message": "...", "when": "2026-12-01T15:02:11Z"}

:func:`team_table` reads every ``*.jsonl`` in a folder and prints one row per learner, one column per exercise: the
latest status and the number of tries. Nothing is recorded outside a workspace (the book's own build records
nothing), and recording never raises.
"""

from __future__ import annotations

import json
import os
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..text import table_lines
from .result import Check

__all__ = ["Record", "at", "find_config", "read_records", "record", "team_table"]

CONFIG = ".xlaport-learn.toml"
_current: tuple[str, int] | None = None


@dataclass(frozen=True)
class Record:
    who: str
    chapter: str
    exercise: int
    check: str
    status: str  # "pass" or "fail"
    message: str
    when: str  # ISO 8601, UTC


def at(chapter: str, n: int) -> None:
    """Say which exercise the checks that follow belong to (the first line of each answer cell in a workspace)."""
    global _current
    _current = (str(chapter).removeprefix("01_"), int(n))


def find_config(start: Path | None = None) -> tuple[Path, dict[str, Any]] | None:
    """The workspace's config: ``$XLAPORT_LEARN`` (a path to it), else ``.xlaport-learn.toml`` here or above."""
    env = os.environ.get("XLAPORT_LEARN")
    paths = (
        [Path(env)] if env else [d / CONFIG for d in [(start or Path.cwd()).resolve(), *Path.cwd().resolve().parents]]
    )
    for p in paths:
        if p.is_file():
            return p, tomllib.loads(p.read_text())
    return None


def _folder(config_path: Path, config: dict[str, Any]) -> Path:
    return Path(config["progress"]).expanduser() if config.get("progress") else config_path.parent / ".progress"


def record(check: Check, start: Path | None = None) -> Path | None:
    """Append ``check`` to the learner's record if this runs in a workspace after :func:`at`; the file, or None."""
    if _current is None or check.passed is None:
        return None
    try:
        found = find_config(start)
        if found is None:
            return None
        path, config = found
        who = str(config["who"])
        folder = _folder(path, config)
        folder.mkdir(parents=True, exist_ok=True)
        rec = Record(
            who,
            _current[0],
            _current[1],
            check.name,
            check.status,
            check.message,
            time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        )
        out = folder / f"{who}.jsonl"
        with out.open("a") as f:
            f.write(json.dumps(rec.__dict__) + "\n")
        return out
    except Exception:  # a record is a courtesy to the lead: never break the learner's cell
        return None


def read_records(folder: Path) -> list[Record]:
    """Every record in ``folder``'s ``*.jsonl`` files (lines that do not parse are skipped), oldest first."""
    out = []
    for p in sorted(Path(folder).glob("*.jsonl")):
        for line in p.read_text().splitlines():
            try:
                d = json.loads(line)
                out.append(Record(**{k: d[k] for k in Record.__dataclass_fields__}))
            except (ValueError, KeyError, TypeError):
                continue
    return sorted(out, key=lambda r: r.when)


def team_table(folder: Path, chapters: tuple[str, ...] | None = None) -> str:
    """A markdown table: one row per learner, one column per exercise seen (or of ``chapters``), each cell the
    latest status with the number of tries ("pass (3)", "fail (5)"), and the learner's last activity."""
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"no progress folder {folder}")
    recs = read_records(folder)
    if chapters is not None:
        want = {c.removeprefix("01_") for c in chapters}
        recs = [r for r in recs if r.chapter in want]
    if not recs:
        return f"No progress records in {folder}.\n"
    order = {c.removeprefix("01_"): i for i, c in enumerate(chapters or ())}
    columns = sorted({(r.chapter, r.exercise) for r in recs}, key=lambda k: (order.get(k[0], len(order)), k))
    people = sorted({r.who for r in recs})
    cell: dict[tuple[str, tuple[str, int]], tuple[str, int]] = {}
    last: dict[str, str] = {}
    for r in recs:
        key = (r.who, (r.chapter, r.exercise))
        status, tries = cell.get(key, ("", 0))
        cell[key] = (status if status == "pass" else r.status, tries + 1)
        last[r.who] = r.when
    head = ["learner", *(f"{c} {n}" for c, n in columns), "last check (UTC)"]
    rows: list[list[str]] = []
    for who in people:
        row = [who]
        for col in columns:
            status, tries = cell.get((who, col), ("", 0))
            row.append(f"{status} ({tries})" if tries else "")
        row.append(last[who].replace("T", " ").removesuffix("Z"))
        rows.append(row)
    return (
        table_lines(head, rows)
        + "\n\nEach cell: the latest result (a pass stays a pass) and, in brackets, the tries.\n"
    )
