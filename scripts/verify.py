#!/usr/bin/env python
"""Run every chapter on this machine with nbmake and write a run record under verified/ (``make verify``).

On a TPU VM, a Trainium instance or a CUDA machine, ``XLAPORT_TARGET=auto`` (the default here) makes every chapter's
``xlaport.target(...)`` pick the machine's own accelerator without editing the parameters cells. The notebooks are
copied to _build/verify/ and executed there by ``pytest --nbmake --overwrite`` (the committed notebooks stay without
outputs); the record then lists, per chapter, whether it passed, the banner the chapter printed (target, real or
emulated, device, versions) and its glued key figures. ``render_page`` turns the records into the verified-on page.

    python scripts/verify.py [--target auto] [--out verified/] [-k STEM]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / "_build" / "verify"
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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", default=os.environ.get("XLAPORT_TARGET", "auto"))
    ap.add_argument("--out", type=Path, default=ROOT / "verified")
    ap.add_argument("-k", dest="only", default="", help="only chapters whose name contains this")
    args = ap.parse_args()

    if WORK.exists():
        shutil.rmtree(WORK)
    WORK.mkdir(parents=True)
    notebooks = [p for p in sorted((ROOT / "notebooks").glob("*.ipynb")) if args.only in p.stem]
    if not notebooks:
        print(f"error: no chapter matches {args.only!r}", file=sys.stderr)
        return 2
    for nb in notebooks:
        shutil.copy2(nb, WORK / nb.name)
    env = {**os.environ, "XLAPORT_TARGET": args.target}
    chapters: dict[str, dict[str, Any]] = {}
    for nb in notebooks:
        copy = WORK / nb.name
        cmd = [sys.executable, "-m", "pytest", "--nbmake", "--overwrite", "-q", "-p", "no:cacheprovider", str(copy)]
        print("+", " ".join(cmd), flush=True)
        passed = subprocess.call(cmd, cwd=WORK, env=env) == 0
        chapters[nb.stem] = chapter_record(json.loads(copy.read_text(encoding="utf-8")), passed)
    when = dt.datetime.now(dt.UTC)
    record = platform_record(chapters, args.target, when)
    kinds = sorted({f"{c['target']}-{c['mode']}" for c in chapters.values() if c["target"]}) or ["unknown"]
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"{when:%Y%m%d-%H%M}-{'+'.join(kinds)}.json"
    path.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    failed = [n for n, c in chapters.items() if not c["passed"]]
    print(f"record written: {path.relative_to(ROOT)}; {len(chapters) - len(failed)} of {len(chapters)} passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
