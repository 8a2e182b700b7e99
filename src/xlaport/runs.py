"""Run records: what each chapter said about its run on a machine (``make verify``), and the verified-on page.

``scripts/verify.py`` runs every chapter with nbmake on a TPU VM, a Trainium instance or a CUDA machine and writes a
record under ``verified/`` (:func:`platform_record` of each :func:`chapter_record`); the site build shows every
committed record and its own emulated run on the verified-on page (:func:`render_page`). Torch-free until
:func:`platform_record` reads torch's version.
"""

from __future__ import annotations

import datetime as dt
import json
import platform
import re
from pathlib import Path
from typing import Any

__all__ = ["BANNER", "KEY_FIGURES", "chapter_record", "load_records", "platform_record", "render_page"]

BANNER = re.compile(r"^\[xlaport\] target=(\S+) \((real|emulated)\) device=(\S+)(.*)$", re.M)
KEY_FIGURES = 6  # glued numbers kept per chapter


def chapter_record(executed: dict[str, Any], passed: bool) -> dict[str, Any]:
    """What one executed chapter says about its run: banner fields and its first glued numbers."""
    rec: dict[str, Any] = {"passed": passed, "target": None, "mode": None, "device": None, "banner": None}
    figures: dict[str, float] = {}
    for cell in executed.get("cells", []):
        for out in cell.get("outputs", []):
            if out.get("output_type") == "stream" and rec["banner"] is None:
                text = out.get("text", "")
                m = BANNER.search("".join(text) if isinstance(text, list) else text)
                if m:
                    rec.update(target=m.group(1), mode=m.group(2), device=m.group(3), banner=m.group(0).strip())
            name = out.get("metadata", {}).get("scrapbook", {}).get("name")
            plain = out.get("data", {}).get("application/papermill.record/text/plain")
            if name and plain is not None and len(figures) < KEY_FIGURES:
                try:
                    figures[name] = float(str(plain if isinstance(plain, str) else "".join(plain)))
                except ValueError:
                    continue
    rec["figures"] = figures
    return rec


def platform_record(chapters: dict[str, dict[str, Any]], target: str, when: dt.datetime) -> dict[str, Any]:
    import torch

    return {
        "date": when.strftime("%Y-%m-%d"),
        "requested_target": target,
        "host": platform.machine(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "chapters": chapters,
    }


def _figure(v: float) -> str:
    """A glued figure as a reader reads it: a count whole (8,192, not 8.19e+03), anything else to 3 significant
    figures without an exponent between 0.001 and a million."""
    if float(v).is_integer():
        return f"{int(v):,}"
    return f"{v:,.0f}" if abs(v) >= 1000 and abs(v) < 1e6 else f"{v:.3g}"


def render_page(records: list[dict[str, Any]]) -> str:
    """The verified-on page: one table per chapter, one row per recorded run (newest first)."""
    lines = [
        "# Verified on",
        "",
        "**Every chapter, each recorded run: where it ran, real or emulated, and the figures it measured.** "
        "Records are files under `verified/` in the repository; `make verify` on a TPU VM, a Trainium instance or a "
        "CUDA machine adds one for that platform, and this build's own emulated run is always included.",
        "",
    ]
    chapters = sorted({c for r in records for c in r.get("chapters", {})})
    if not chapters:
        return "\n".join([*lines, "No run has been recorded yet.", ""])
    for chapter in chapters:
        lines += [f"## {chapter}", "", "| date | target | real or emulated | device | torch | passed | key figures |"]
        lines += ["|---|---|---|---|---|---|---|"]
        for r in sorted(records, key=lambda r: r.get("date", ""), reverse=True):
            c = r.get("chapters", {}).get(chapter)
            if c is None:
                continue
            figs = ", ".join(f"`{k}` {_figure(v)}" for k, v in c.get("figures", {}).items()) or "–"
            lines.append(
                f"| {r.get('date', '–')} | {c.get('target') or '–'} | {c.get('mode') or '–'} | "
                f"{c.get('device') or '–'} | {r.get('torch', '–')} | {'yes' if c.get('passed') else 'no'} | {figs} |"
            )
        lines.append("")
    return "\n".join(lines)


def load_records(folder: Path) -> list[dict[str, Any]]:
    return [json.loads(p.read_text(encoding="utf-8")) for p in sorted(folder.glob("*.json"))]
