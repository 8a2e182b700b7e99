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
"""

from __future__ import annotations

import re
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx

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


def alt_text(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    for image in doctree.findall(nodes.image):
        alt = str(image.get("alt", "")).strip()
        if alt and not _PATHLIKE.search(alt) and alt != image.get("uri"):
            continue
        shows = _recorded(app, image)
        if shows:
            image["alt"] = f"Plot: {shows}"
            continue
        section = image.parent
        while section is not None and not isinstance(section, nodes.section):
            section = section.parent
        title = section.next_node(nodes.title).astext() if section is not None else ""
        image["alt"] = f"Plot: {title}" if title else "Plot produced by the code cell above"


def exact_zero(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    for node in list(doctree.findall(nodes.inline)):
        if "pasted-text" in node.get("classes", []) and is_exact_zero_in_e(node.astext()):
            node.children = [nodes.Text("0")]


def setup(app: Sphinx) -> None:
    app.connect("html-page-context", dedupe_scripts)
    app.connect("doctree-resolved", alt_text)
    app.connect("doctree-resolved", exact_zero, priority=400)  # before the checks (priority 500)
