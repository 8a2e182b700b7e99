"""A baseline of accepted findings, so a team adopts the scanner on a large codebase without fixing everything first.

``xlaport scan --write-baseline FILE`` records every finding; ``xlaport scan --baseline FILE`` then reports only
findings not in it. A finding is matched by its rule, its file and the text of its line (whitespace collapsed),
never by its line number, so code that moves keeps matching; a line that appears ``n`` times matches ``n``
recorded findings and no more, so a copy of a recorded line is reported.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import replace
from typing import Any

from .result import Finding, ScanResult

__all__ = ["fingerprint", "write_baseline", "load_baseline", "apply_baseline", "BASELINE_VERSION"]

BASELINE_VERSION = 1


def fingerprint(f: Finding) -> tuple[str, str, str]:
    """(rule, path, code text) of a finding: what a baseline matches on."""
    return f.rule, f.path.replace(os.sep, "/"), " ".join(f.snippet.split())


def write_baseline(res: ScanResult, path: str | os.PathLike[str]) -> int:
    """Write every finding of ``res`` to ``path`` (JSON); returns how many were written."""
    counts = Counter(fingerprint(f) for f in res.findings)
    rows = [{"rule": r, "path": p, "code": c, "count": n} for (r, p, c), n in sorted(counts.items())]
    doc = {"xlaport_baseline": BASELINE_VERSION, "findings": rows}
    try:
        with open(path, "w", encoding="utf-8") as fh:
            json.dump(doc, fh, indent=1)
            fh.write("\n")
    except OSError as e:
        raise ValueError(f"cannot write baseline {os.fspath(path)}: {e.strerror or e}") from None
    return sum(counts.values())


def load_baseline(path: str | os.PathLike[str]) -> Counter[tuple[str, str, str]]:
    """The recorded findings of a baseline file; ValueError naming the problem otherwise."""
    p = os.fspath(path)
    try:
        with open(p, encoding="utf-8") as fh:
            doc: Any = json.load(fh)
    except FileNotFoundError:
        raise ValueError(f"no such baseline file: {p} (write one with --write-baseline {p})") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"cannot read baseline {p}: {e}") from None
    if not isinstance(doc, dict) or doc.get("xlaport_baseline") != BASELINE_VERSION:
        raise ValueError(f"{p} is not an xlaport baseline (version {BASELINE_VERSION})")
    out: Counter[tuple[str, str, str]] = Counter()
    for row in doc.get("findings", []):
        try:
            out[(str(row["rule"]), str(row["path"]), str(row["code"]))] += int(row.get("count", 1))
        except (KeyError, TypeError, ValueError):
            raise ValueError(f"{p}: bad baseline entry {row!r}") from None
    return out


def apply_baseline(res: ScanResult, baseline: Counter[tuple[str, str, str]]) -> tuple[ScanResult, int]:
    """(a result with only the findings not in ``baseline``, how many were matched and left out)."""
    left = Counter(baseline)
    kept: list[Finding] = []
    for f in res.findings:
        k = fingerprint(f)
        if left[k] > 0:
            left[k] -= 1
        else:
            kept.append(f)
    return replace(res, findings=kept), len(res.findings) - len(kept)
