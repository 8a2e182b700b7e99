"""Reader editions of the chapters for Colab and Jupyter (``scripts/reader_editions.py`` converts; this hooks it in).

With ``xlaport_editions`` set (a folder name, ``editions`` in _config.yml):

* when the HTML build has finished, each chapter's executed notebook becomes a plain-markdown notebook at
  ``<outdir>/<xlaport_editions>/notebooks/<stem>.ipynb``, its cross-references resolved from this build's own
  environment (page titles, labels, glossary terms). Markup the converter cannot turn into plain markdown warns
  ``xlaport.edition`` (the strict build fails on it);
* each chapter's Colab launch button opens that edition on the ``editions`` branch, which the Pages workflow
  pushes (``reader_editions.colab_url``), not the source notebook with its book markup.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sphinx.application import Sphinx
from sphinx.util import logging

from ._nodes import warn_file
from .generated import _script

logger = logging.getLogger("xlaport_site")
COLAB = "colab.research.google.com"


def _chapters(app: Sphinx) -> list[str]:
    src = Path(app.srcdir)
    return sorted(d for d in app.env.found_docs if d.startswith("notebooks/") and (src / f"{d}.ipynb").exists())


def inventory(app: Sphinx) -> Any:
    """The pages, labels and glossary terms this build resolved, as the converter's inventory."""
    editions = _script("reader_editions")
    std: Any = app.env.get_domain("std")
    inv = editions.Inventory(base=editions.site_url(), repo=editions.repository())
    inv.titles = {doc: title.astext() for doc, title in app.env.titles.items()}
    inv.labels = {name: (doc, anchor, title) for name, (doc, anchor, title) in std.labels.items()}
    inv.terms = {name.lower(): (doc, anchor) for (kind, name), (doc, anchor) in std.objects.items() if kind == "term"}
    return inv


def write(app: Sphinx, exception: Exception | None) -> None:
    folder = app.config.xlaport_editions
    if exception is not None or not folder or app.builder.format != "html":
        return
    editions = _script("reader_editions")
    inv = inventory(app)
    out = Path(app.outdir) / folder
    made = 0
    for doc in _chapters(app):
        try:
            editions.write_edition(Path(app.srcdir) / f"{doc}.ipynb", out, inv)
            made += 1
        except editions.EditionError as exc:
            warn_file(doc, "edition", str(exc))
    logger.info(f"[xlaport] reader editions: {made} chapters in {out}")


def colab_link(app: Sphinx, pagename: str, templatename: str, context: dict[str, Any], doctree: Any) -> None:
    """Point the page's Colab launch button (sphinx-book-theme's header buttons) at the chapter's edition."""
    if not app.config.xlaport_editions or not pagename.startswith("notebooks/"):
        return
    url = _script("reader_editions").colab_url(Path(pagename).name)

    def visit(buttons: Any) -> None:
        for button in buttons or []:
            if isinstance(button, dict):
                if COLAB in str(button.get("url", "")):
                    button["url"] = url
                visit(button.get("buttons"))  # a group ("launch-buttons") holds its buttons

    visit(context.get("header_buttons"))


def setup(app: Sphinx) -> None:
    app.add_config_value("xlaport_editions", "", "html", [str])
    # After sphinx-book-theme's add_launch_buttons (priority 501) has made the buttons.
    app.connect("html-page-context", colab_link, priority=600)
    app.connect("build-finished", write)
