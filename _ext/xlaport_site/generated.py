"""Pages made from the toolkit's data when a build starts (``builder-inited``), never typed by hand.

Config ``xlaport_generate`` lists what to make, into the source directory:

* ``reference``: ``book/generated/<page>.md`` for each page of :data:`xlaport.reference.PAGES`, and
  ``book/generated/facts_checked.md``, the date the data's facts were checked (:mod:`xlaport.reference.freshness`),
  which the "What changed" facts page (book/what_changed_facts.md) includes;
* ``flowchart``: ``book/generated/figures/migration.svg``, the home page's migration flowchart;
* ``curriculum``: the curriculum's session table and the decision brief's band (:mod:`.curriculum`);
* ``verified``: ``book/verified.md``, the verified-on page: the committed run records (``verified/*.json``) and this
  build's own emulated run, read from the executed notebooks under ``notebooks/`` (:mod:`xlaport.runs`).

Generated text is markdown read with MyST's dollar maths on: every ``$`` in it outside a code span is escaped
(:func:`xlaport.text.escape_dollars`), so a price in the data (a source's "$98.32/h") stays prose. A file is
rewritten only when its text changes.
"""

from __future__ import annotations

import datetime
import json
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.util import logging

from .checkout import project_root

logger = logging.getLogger("xlaport_site")
KINDS = ("reference", "flowchart", "curriculum", "verified", "estimates")
# Generated files that another page includes (``{include}``): built only as part of that page.
FRAGMENTS = (
    "book/generated/facts_checked.md",
    "book/generated/curriculum_sessions.md",
    "book/generated/decision_band.md",
)


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")
    return path


def reference_pages(srcdir: Path) -> list[Path]:
    from xlaport import reference
    from xlaport.reference import freshness
    from xlaport.text import escape_dollars

    out = srcdir / "book" / "generated"
    pages = [_write(out / f"{page}.md", escape_dollars(reference.render(page))) for page in reference.PAGES]
    return [*pages, _write(out / "facts_checked.md", freshness.render())]


def flowchart(srcdir: Path) -> list[Path]:
    from xlaport import diagrams

    return [diagrams.save(diagrams.migration_flowchart(), srcdir / "book" / "generated" / "figures" / "migration.svg")]


def curriculum(srcdir: Path) -> list[Path]:
    from . import curriculum as pages

    return pages.write(srcdir / "book" / "generated")


def verified(srcdir: Path) -> list[Path]:
    """The verified-on page: committed run records and this build's run, from the executed chapters."""
    import torch

    from xlaport import runs

    chapters = {
        done.stem: runs.chapter_record(json.loads(done.read_text(encoding="utf-8")), passed=True)
        for done in sorted((srcdir / "notebooks").glob("*.ipynb"))
    }
    today = datetime.date.today().isoformat()
    this_build = {"date": f"{today} (this build)", "requested_target": "parameters cells", "torch": torch.__version__}
    records = [*runs.load_records(project_root() / "verified"), {**this_build, "chapters": chapters}]
    from xlaport.text import escape_dollars

    return [_write(srcdir / "book" / "verified.md", escape_dollars(runs.render_page(records)))]


def estimates(srcdir: Path) -> list[Path]:
    """Estimates for common models, from the estimator at build time (:mod:`xlaport.perf.common`)."""
    from xlaport.perf import common
    from xlaport.text import escape_dollars

    return [_write(srcdir / "book" / "generated" / "estimates.md", escape_dollars(common.render()))]


MAKERS = {
    "reference": reference_pages,
    "flowchart": flowchart,
    "curriculum": curriculum,
    "verified": verified,
    "estimates": estimates,
}


def generate(app: Sphinx) -> None:
    unknown = sorted(set(app.config.xlaport_generate) - set(MAKERS))
    if unknown:
        raise ValueError(f"xlaport_generate: unknown {unknown}; choose from {', '.join(KINDS)}")
    srcdir = Path(app.srcdir)
    for kind in KINDS:
        if kind in app.config.xlaport_generate:
            made = MAKERS[kind](srcdir)
            logger.info(f"[xlaport] generated {kind}: {', '.join(str(p.relative_to(srcdir)) for p in made)}")
    # Fragments that a page includes are not pages of their own (no title, found only by search).
    app.config.exclude_patterns = [*app.config.exclude_patterns, *FRAGMENTS]


def setup(app: Sphinx) -> None:
    app.add_config_value("xlaport_generate", [], "env", [list])
    app.connect("builder-inited", generate)
