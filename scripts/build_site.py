#!/usr/bin/env python
"""Build the website from the notebooks executed by the test run, without executing anything.

Steps:
1. check that every notebook in notebooks/ has an executed copy in _build/executed/notebooks/
   (written once by tests/notebooks/test_chapters_execute.py) and that the copy is sound: every code cell ran
   (unless tagged ``skip-execution``/``remove-cell``) and none shows an error (unless tagged
   ``raises-exception``);
   every number in the chapters' prose is glued, a parameter or a sourced constant (``prose_numbers.py``);
2. stage the book sources with those executed copies into _build/site;
3. run ``jupyter-book build`` strictly (``-W -n --keep-going``, ``execute_notebooks: off``)
   into _build/html;
4. check what a reader meets (``site_checks.py``): no stray cell results or build-machine noise in the executed
   copies (checked before the build), no unrendered markdown tables, ``nan`` where a number belongs or machine
   paths in the rendered pages (checked after it).
MathJax is served from the site itself (a copy from the pinned ``jupyter-server-mathjax`` package), so formulas
render offline.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

import jupyter_server_mathjax
import nbformat

from xlaport import diagrams, reference

sys.path.insert(0, str(Path(__file__).resolve().parent))
import curriculum_pages
import prose_numbers
import site_checks
import verify

ROOT = Path(__file__).resolve().parents[1]
EXECUTED = ROOT / "_build" / "executed" / "notebooks"
STAGE = ROOT / "_build" / "site"
SOURCES = ["_config.yml", "_toc.yml", "book", "_static", "_ext"]
# MathJax 2.7 from a pinned PyPI package, copied to _build/html/mathjax/ (``mathjax_path`` in _config.yml points
# there). Not under _static: Jupyter Book adds every .js file in _static to every page.
MATHJAX = Path(jupyter_server_mathjax.__file__).parent / "static"
SKIP_TAGS = {"skip-execution", "remove-cell"}
# Reference pages rendered from the toolkit's data files at build time (never typed by hand):
# book/generated/<page>.md <- xlaport.reference.render(page), one module per page in xlaport/reference/.


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
        if src.is_dir():
            shutil.copytree(src, STAGE / name)
        elif src.exists():
            shutil.copy2(src, STAGE / name)
    generated = STAGE / "book" / "generated"
    generated.mkdir(parents=True, exist_ok=True)
    for page in reference.PAGES:
        (generated / f"{page}.md").write_text(reference.render(page))
    diagrams.save(diagrams.migration_flowchart(), generated / "figures" / "migration.svg")  # the home page's figure
    curriculum_pages.write(generated)  # the curriculum's session durations and the decision brief's band
    shutil.copytree(MATHJAX, STAGE / "_extra" / "mathjax", ignore=shutil.ignore_patterns("*.md", "LICENSE"))
    shutil.copy2(MATHJAX / "LICENSE", STAGE / "_extra" / "mathjax" / "LICENSE")
    shutil.copytree(EXECUTED, STAGE / "notebooks")
    if "book/verified" in (ROOT / "_toc.yml").read_text():  # the verified-on page, once the toc lists it
        (STAGE / "book" / "verified.md").write_text(verify.render_page(verified_records()), encoding="utf-8")
    for extra in (ROOT / "notebooks").iterdir():  # images or data next to the notebooks
        if extra.suffix != ".ipynb" and not extra.name.startswith("."):
            (shutil.copytree if extra.is_dir() else shutil.copy2)(extra, STAGE / "notebooks" / extra.name)


def verified_records() -> list[dict[str, object]]:
    """Committed run records (verified/*.json) and this build's own emulated run, from the executed copies."""
    chapters = {
        done.stem: verify.chapter_record(json.loads(done.read_text(encoding="utf-8")), passed=True)
        for done in sorted(EXECUTED.glob("*.ipynb"))
    }
    import torch

    this_build = {"date": "this build", "requested_target": "parameters cells", "torch": torch.__version__}
    return [*verify.load_records(ROOT / "verified"), {**this_build, "chapters": chapters}]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--no-strict", action="store_true", help="do not turn warnings into errors")
    args = ap.parse_args()

    notebooks = sorted((ROOT / "notebooks").glob("*.ipynb"))
    problems = [p for nb in notebooks for p in check_executed(nb, EXECUTED / nb.name)]
    problems += prose_numbers.check(notebooks)  # every number in the prose is glued, a parameter or sourced
    # What the reader sees: no stray results or build-machine noise. Checked now, reported after the build (which
    # still runs, so the pages can be looked at) together with the rendered pages' problems; either fails the build.
    reader = []
    for nb in notebooks:
        done = EXECUTED / nb.name
        if done.exists():
            reader += site_checks.check_notebook(json.loads(done.read_text(encoding="utf-8")), nb.name)
    if problems:
        print("site not built:\n  " + "\n  ".join(problems), file=sys.stderr)
        return 1
    stage()
    jb = Path(sys.executable).with_name("jupyter-book")
    cmd = [str(jb), "build", str(STAGE), "--path-output", str(ROOT), "--keep-going"]
    if not args.no_strict:
        cmd += ["-W", "-n"]
    print("+", " ".join(cmd), flush=True)
    rc = subprocess.call(cmd, cwd=ROOT)
    index = ROOT / "_build" / "html" / "index.html"
    if rc == 0:
        reader += site_checks.check_site(index.parent)
        if reader:
            print("site built, but pages fail the reader checks:\n  " + "\n  ".join(reader), file=sys.stderr)
            rc = 1
    if rc == 0 and index.exists():
        print(f"site built: {index}  (open it, or 'make serve')")
    return rc


if __name__ == "__main__":
    sys.exit(main())
