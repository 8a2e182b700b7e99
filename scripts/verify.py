#!/usr/bin/env python
"""Run every chapter on this machine with nbmake and write a run record under verified/ (``make verify``).

On a TPU VM, a Trainium instance or a CUDA machine, ``XLAPORT_TARGET=auto`` (the default here) makes every chapter's
``xlaport.target(...)`` pick the machine's own accelerator without editing the parameters cells. The notebooks are
copied to _build/verify/ and executed there by ``pytest --nbmake --overwrite`` (the committed notebooks stay without
outputs); the record then lists, per chapter, whether it passed, the banner the chapter printed (target, real or
emulated, device, versions) and its glued key figures. ``xlaport.runs.render_page`` turns the records into the verified-on page.

    python scripts/verify.py [--target auto] [--out verified/] [-k STEM]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from xlaport.runs import chapter_record, platform_record

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / "_build" / "verify"


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
