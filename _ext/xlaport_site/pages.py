"""What any rendered page shows a reader: tables that rendered, numbers where numbers belong, nothing of the machine.

* ``xlaport.raw-table``: a paragraph whose lines start and end with ``|`` is a markdown table that did not render.
* ``xlaport.nan``: ``nan``/``inf`` (Python's float repr) in a glued value in prose.
* ``xlaport.exact-zero``: a glued value that shows an exact zero as ``0.0e+00`` (``{glue:text}`` values are written
  ``0`` by :class:`xlaport_site.html.ExactZero`; this catches the other glue forms).
* ``xlaport.double-number``: the book numbers sections ("12.1."), so a heading that starts with its own number reads
  "12.1. 1. Autocast".
* ``xlaport.emoji``: colour emoji (✅, ❌, ⚠️, ...) show as empty boxes where no emoji font is installed.
* ``xlaport.machine-path``: a path of the build machine (``/work/``, ``/root/``, ``/home/<user>/``,
  ``/tmp/ipykernel_``, ``site-packages``, ``.../.venv/...``) anywhere visible, code and outputs included. The
  project's own relative ``.venv/bin/python`` and documented defaults such as ``/tmp/neuron_backend`` are fine.
"""

from __future__ import annotations

import re

from docutils import nodes
from sphinx.application import Sphinx

from xlaport.text import is_exact_zero_in_e

from ._nodes import inside, is_cell, warn

MACHINE_PATH = re.compile(r"(/work/|/root/|/home/[\w.-]+/|/tmp/ipykernel_|site-packages|/\.venv/)")
NAN_INF = re.compile(r"(?<![\w.])-?(nan|inf)(?![\w(])")
EMOJI = re.compile("[\U0001f300-\U0001faff\u2705\u274c\u274e\u2753-\u2755\u2b50\u2b55]|[\u2600-\u27bf]\ufe0f")
DOUBLE_NUMBER = re.compile(r"^\d+[.)]\s")
RAW_TABLE_LINE = re.compile(r"^\s*\|.*\|\s*$")
_TAG = re.compile(r"<[^>]+>")
_UNSEEN = (nodes.raw, nodes.comment, nodes.substitution_definition)  # raw HTML is read without its tags


def _glued(node: nodes.Node) -> bool:
    """A glued value in prose: ``{glue:text}``, ``{glue:md}`` or ``{glue}`` with a plain-text value."""
    if not isinstance(node, nodes.inline) or inside(node, is_cell):
        return False
    classes = set(node.get("classes", []))
    return bool(classes & {"pasted-text", "pasted-inline", "pasted-markdown"}) or {"output", "text_plain"} <= classes


def check(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    for para in doctree.findall(nodes.paragraph):
        if inside(para, lambda n: isinstance(n, nodes.literal_block)):
            continue
        lines = [ln for ln in para.astext().splitlines() if ln.strip()]
        if len(lines) >= 2 and sum(bool(RAW_TABLE_LINE.match(ln)) for ln in lines) >= 2:
            warn(para, "raw-table", f"a markdown table did not render: {lines[0].strip()[:70]!r}")
    for glued in doctree.findall(_glued):
        value = glued.astext().strip()
        m = NAN_INF.search(value)
        if m:
            warn(glued, "nan", f"glued prose shows {m.group(0)!r}")
        if is_exact_zero_in_e(value):
            warn(glued, "exact-zero", f"glued prose shows an exact zero as {value!r} (write it 0)")
    numbers = app.env.toc_secnumbers.get(docname, {})
    for section in doctree.findall(nodes.section):
        title = section.next_node(nodes.title)
        ids = section.get("ids", [])
        anchor = "#" + ids[0] if ids else ""
        numbered = numbers.get(anchor) or (section.parent is doctree and numbers.get(""))
        if title is not None and numbered and DOUBLE_NUMBER.match(title.astext()):
            number = ".".join(map(str, numbered))
            warn(
                title,
                "double-number",
                f"a heading is numbered twice (the book numbers it {number}.): {title.astext()[:60]!r}",
            )
    emoji_seen = path_seen = False
    for node in doctree.findall(lambda n: isinstance(n, (nodes.Text, nodes.raw))):
        text = _TAG.sub("", node.astext()) if isinstance(node, nodes.raw) else str(node)
        where = node if isinstance(node, nodes.raw) else node.parent
        if isinstance(node, nodes.Text) and inside(node, lambda n: isinstance(n, _UNSEEN)):
            continue
        if isinstance(node, nodes.raw) and "html" not in str(node.get("format", "")).split():
            continue
        m = EMOJI.search(text)
        if m and not emoji_seen:
            emoji_seen = True
            warn(where, "emoji", f"an emoji needs an emoji font (use a text mark such as ✓ or ✗): {m.group(0)!r}")
        m = MACHINE_PATH.search(text)
        if m and not path_seen:
            path_seen = True
            shown = text[max(0, m.start() - 30) : m.end() + 30].strip()
            warn(where, "machine-path", f"a machine path is shown: {shown!r}")


def setup(app: Sphinx) -> None:
    app.connect("doctree-resolved", check)
