"""Each glossary term's first use in a chapter is a ``{term}`` link to the glossary.

The terms are those of the book's ``{glossary}`` directive (Sphinx's std domain). In each notebook, the first prose
use of a term (not in a heading, a table, code, maths, a link, a glued value or the Colab setup cell, tagged
``colab-setup``) must be a ``{term}`` link; later uses stay plain. A plural counts as a use ("lazy tensors"), a term
inside a longer name does not ("XLA:CPU", "PyTorch/XLA"); a term written in lower case matches in any case.
A first use that is not linked warns ``xlaport.glossary``.
"""

from __future__ import annotations

import re
from functools import lru_cache

from docutils import nodes
from sphinx.application import Sphinx

from ._nodes import inside, is_notebook, markdown_cell_tags, prose_blocks, prose_text, warn

SKIP_TAG = "colab-setup"


@lru_cache(maxsize=512)
def pattern(term: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w/.:-]){re.escape(term)}(s?)(?![\w:/])", re.I if term.islower() else 0)


def _terms(app: Sphinx) -> dict[str, str]:
    """Glossary anchor id -> term, from the std domain."""
    std = app.env.get_domain("std")
    return {labelid: name for (kind, name), (_doc, labelid) in std.objects.items() if kind == "term"}  # type: ignore[attr-defined]


def _linked_terms(block: nodes.Element, anchors: dict[str, str]) -> set[str]:
    found = set()
    for ref in block.findall(nodes.reference):
        if any("std-term" in n.get("classes", []) for n in ref.findall(nodes.inline)):
            anchor = str(ref.get("refuri", "")).rpartition("#")[2] or str(ref.get("refid", ""))
            if anchor in anchors:
                found.add(anchors[anchor])
    return found


def check(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    if not is_notebook(doctree):
        return
    anchors = _terms(app)
    vocabulary = sorted(set(anchors.values()))
    decided: set[str] = set()
    for block in prose_blocks(doctree):
        linked = _linked_terms(block, anchors)
        decided |= linked
        if isinstance(block, nodes.title) or inside(block, lambda n: isinstance(n, nodes.table)):
            continue
        if SKIP_TAG in markdown_cell_tags(block):
            continue
        text = prose_text(block)
        for term in vocabulary:
            if term in decided:
                continue
            m = pattern(term).search(text)
            if m:
                decided.add(term)
                warn(
                    block,
                    "glossary",
                    f"first use of the glossary term {term!r} is not linked: write {{term}}`{m[0]}"
                    + ("`" if m[0] == term else f" <{term}>`"),
                )


def setup(app: Sphinx) -> None:
    app.connect("doctree-resolved", check)
