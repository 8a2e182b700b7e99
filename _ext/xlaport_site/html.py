"""Fixes to the rendered pages (not checks).

* Each script is included once per page: sphinx-thebe registers its inline configuration script on every
  ``env-before-read-docs`` event, and a second copy makes the browser throw
  "Identifier 'THEBE_JS_URL' has already been declared" on every page.
* A plot whose alt text would be its file path (what MyST-NB writes for a cell's image output without
  ``mystnb.image.alt`` in the cell metadata) gets what the plot shows instead: its titles, axes and series, which
  :func:`xlaport.plots.png` records in the PNG (:func:`xlaport.plots.recorded_alt`); a PNG without that record gets
  "Plot: <its section's title>". A cell can still say more with ``{"mystnb": {"image": {"alt": "..."}}}``.
* A glued number that is exactly zero reads ``0``, not ``0.0e+00``: a format such as ``:.1e`` suits the small errors
  a chapter measures, but Python writes an exact zero in it as ``0.0e+00``.

The two edits of the doctree are post-transforms (priority 300: after MyST-NB's and the references'), so the reader
checks and the reader editions, which read the page at ``doctree-resolved``, see what the site shows.
"""

from __future__ import annotations

import re
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.transforms.post_transforms import SphinxPostTransform

from xlaport.text import is_exact_zero_in_e

_PATHLIKE = re.compile(r"(\.(png|jpe?g|svg|gif)$)|(^\.{0,2}/)|(^_images/)", re.I)


def dedupe_scripts(app: Sphinx, pagename: str, templatename: str, context: dict[str, Any], doctree: Any) -> None:
    seen: set[tuple[str, str]] = set()
    kept = []
    for script in context.get("script_files", []):
        key = (str(getattr(script, "filename", script) or ""), str(getattr(script, "attributes", {}).get("body", "")))
        if key in seen:
            continue
        seen.add(key)
        kept.append(script)
    context["script_files"] = kept


def _recorded(app: Sphinx, image: nodes.image) -> str | None:
    """What the plot's PNG says it shows, where xlaport.plots drew it."""
    from pathlib import Path

    from xlaport.plots import recorded_alt

    uri = str(image.get("candidates", {}).get("*") or image.get("uri") or "")
    path = Path(app.srcdir) / uri
    if not uri.lower().endswith(".png") or not path.is_file():
        return None
    try:
        return recorded_alt(path.read_bytes())
    except ValueError:
        return None


class AltText(SphinxPostTransform):
    """A plot's alt text says what it shows, not its file path."""

    # After MyST-NB has chosen each output's mime type (SelectMimeType, 4) and pasted glued figures (5), and after
    # the references are resolved (10): the images are in the doctree as the page shows them.
    default_priority = 300

    def run(self, **kwargs: Any) -> None:
        for image in self.document.findall(nodes.image):
            alt = str(image.get("alt", "")).strip()
            if alt and not _PATHLIKE.search(alt) and alt != image.get("uri"):
                continue
            shows = _recorded(self.app, image)
            if shows:
                image["alt"] = f"Plot: {shows}"
                continue
            section = image.parent
            while section is not None and not isinstance(section, nodes.section):
                section = section.parent
            title = section.next_node(nodes.title).astext() if section is not None else ""
            image["alt"] = f"Plot: {title}" if title else "Plot produced by the code cell above"


class ExactZero(SphinxPostTransform):
    """A glued number that is exactly zero reads ``0`` (``{glue:text}`` values are pasted when the page is read)."""

    default_priority = 300  # any time after the read; before the reader checks and the editions (doctree-resolved)

    def run(self, **kwargs: Any) -> None:
        for node in list(self.document.findall(nodes.inline)):
            if "pasted-text" in node.get("classes", []) and is_exact_zero_in_e(node.astext()):
                node.children = [nodes.Text("0")]


def setup(app: Sphinx) -> None:
    app.connect("html-page-context", dedupe_scripts)
    app.add_post_transform(AltText)
    app.add_post_transform(ExactZero)
