#!/usr/bin/env python
"""Run each chapter's reader edition top to bottom in a fresh kernel, as a Colab runtime would (``make editions-run``).

The site build writes the editions (``_ext/xlaport_site/editions.py``) into ``_build/html/editions/notebooks/``, a
folder that holds only them; each runs there, its Colab setup cell (tag ``colab-setup``) skipped, as on a runtime
that already has the packages. A failing chapter is named with the last line of its error, and the others still run.

    python scripts/run_editions.py [STEM ...] [--editions DIR] [--timeout SECONDS]
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
EDITIONS = ROOT / "_build" / "html" / "editions" / "notebooks"
SETUP_TAG = "colab-setup"


def run_edition(path: Path, timeout: int) -> float:
    """Execute one edition in a fresh kernel in its own folder; the seconds it took."""
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code" and SETUP_TAG in cell.metadata.get("tags", []):
            cell.source = "# (Colab setup skipped: the packages are installed)"
    start = time.perf_counter()
    NotebookClient(
        nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
    ).execute()
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("stems", nargs="*", help="chapters to run (default: every edition)")
    ap.add_argument("--editions", type=Path, default=EDITIONS, help="the editions (default: %(default)s)")
    ap.add_argument("--timeout", type=int, default=1800, help="seconds a cell may run (default: %(default)s)")
    args = ap.parse_args(argv)
    have = {p.stem: p for p in sorted(args.editions.glob("*.ipynb"))} if args.editions.is_dir() else {}
    if not have:
        print(f"error: no reader editions in {args.editions} (run 'make book' first)", file=sys.stderr)
        return 2
    unknown = [s for s in args.stems if s not in have]
    if unknown:
        print(f"error: no edition of {', '.join(unknown)}; there are: {', '.join(have)}", file=sys.stderr)
        return 2
    paths = [have[s] for s in args.stems] if args.stems else list(have.values())
    failed = []
    for i, path in enumerate(paths, 1):
        print(f"[{i}/{len(paths)}] {path.stem} ...", flush=True)
        try:
            print(f"{path.stem}: ran top to bottom in {run_edition(path, args.timeout):.0f} s", flush=True)
        except Exception as exc:  # a failing cell: name the chapter and go on with the others
            failed.append(path.stem)
            text = re.sub(r"\x1b\[[0-9;]*m", "", str(exc)).strip()  # the kernel's traceback is coloured
            print(f"{path.stem}: FAILED: {text.splitlines()[-1] if text else repr(exc)}", flush=True)
    print(
        f"{len(paths) - len(failed)} of {len(paths)} editions ran top to bottom"
        + (f"; failed: {failed}" if failed else "")
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
