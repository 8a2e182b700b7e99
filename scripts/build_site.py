#!/usr/bin/env python
"""Build the website from the notebooks executed by the test run, without executing anything.

1. Check that every notebook in notebooks/ has a sound executed copy in _build/executed/notebooks/ (written once by
   tests/notebooks/test_chapters_execute.py): not older than the notebook, every code cell ran (unless tagged
   ``skip-execution``/``remove-cell``), none shows an error (unless tagged ``raises-exception``).
2. Stage the book sources with those executed copies into _build/site (the committed notebooks have no outputs),
   and MathJax from the pinned ``jupyter-server-mathjax`` package, so formulas render offline.
3. Run ``jupyter-book build`` on every page (``--all``), strictly (``-W -n --keep-going``) into _build/html.

The site's Sphinx extension (``_ext/xlaport_site/``) does the rest as the book builds: it generates the reference,
curriculum and verified-on pages and the home page's flowchart, and checks every page as a reader meets it (each
finding a warning ``xlaport.<check>``, which the strict build turns into a failure).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

import jupyter_server_mathjax
import nbformat

ROOT = Path(__file__).resolve().parents[1]
EXECUTED = ROOT / "_build" / "executed" / "notebooks"
STAGE = ROOT / "_build" / "site"
SOURCES = ["_config.yml", "_toc.yml", "book", "_static", "_ext"]
# MathJax 2.7, copied to _build/html/mathjax/ (``mathjax_path`` in _config.yml points there). Not under _static:
# Jupyter Book adds every .js file in _static to every page.
MATHJAX = Path(jupyter_server_mathjax.__file__).parent / "static"
SKIP_TAGS = {"skip-execution", "remove-cell"}


def check_executed(src: Path, done: Path) -> list[str]:
    if not done.exists():
        where = done.relative_to(ROOT) if done.is_relative_to(ROOT) else done
        return [f"{src.name}: no executed copy at {where} (run 'make notebooks' or 'make test' first)"]
    problems = []
    if done.stat().st_mtime < src.stat().st_mtime:
        problems.append(f"{src.name}: executed copy is older than the notebook (run it again)")
    nb = nbformat.read(done, as_version=4)
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        tags = set(cell.metadata.get("tags", []))
        if tags & SKIP_TAGS:
            continue
        if cell.execution_count is None:
            problems.append(f"{src.name}: code cell {i} was not executed")
        if "raises-exception" not in tags and any(o.get("output_type") == "error" for o in cell.outputs):
            problems.append(f"{src.name}: code cell {i} shows an error")
    return problems


def stage() -> None:
    if STAGE.exists():
        shutil.rmtree(STAGE)
    STAGE.mkdir(parents=True)
    for name in SOURCES:
        src = ROOT / name
        (shutil.copytree if src.is_dir() else shutil.copy2)(src, STAGE / name)
    shutil.copytree(MATHJAX, STAGE / "_extra" / "mathjax", ignore=shutil.ignore_patterns("*.md", "LICENSE"))
    shutil.copy2(MATHJAX / "LICENSE", STAGE / "_extra" / "mathjax" / "LICENSE")
    shutil.copytree(EXECUTED, STAGE / "notebooks")
    for extra in (ROOT / "notebooks").iterdir():  # images or data next to the notebooks
        if extra.suffix != ".ipynb" and not extra.name.startswith("."):
            (shutil.copytree if extra.is_dir() else shutil.copy2)(extra, STAGE / "notebooks" / extra.name)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--no-strict", action="store_true", help="do not turn warnings into errors")
    args = ap.parse_args()

    problems = [
        p for nb in sorted((ROOT / "notebooks").glob("*.ipynb")) for p in check_executed(nb, EXECUTED / nb.name)
    ]
    if problems:
        print("site not built:\n  " + "\n  ".join(problems), file=sys.stderr)
        return 1
    stage()
    jb = Path(sys.executable).with_name("jupyter-book")
    # --all: every page is read and checked again (the reader checks warn only on the pages a build reads).
    cmd = [str(jb), "build", str(STAGE), "--path-output", str(ROOT), "--keep-going", "--all"]
    if not args.no_strict:
        cmd += ["-W", "-n"]
    print("+", " ".join(cmd), flush=True)
    rc = subprocess.call(cmd, cwd=ROOT)
    index = ROOT / "_build" / "html" / "index.html"
    if rc != 0:
        print(
            "site build failed: 'grep xlaport\\.' in the log above lists the reader checks' findings", file=sys.stderr
        )
    elif index.exists():
        print(f"site built: {index}  (open it, or 'make serve')")
    return rc


if __name__ == "__main__":
    sys.exit(main())
