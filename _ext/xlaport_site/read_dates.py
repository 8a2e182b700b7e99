"""Every web page the book cites is shown with the date it was read.

The TOML file config ``xlaport_read_dates`` names maps each cited URL to the day it was read
(``"https://docs.jax.dev/…/matmul.html" = "2026-11-29"``). As each page is read, a paragraph (or table cell) that links
a web page gets the date after its last link: "([Pallas TPU matmul guide](…), read 2026-11-29)" or "… (read
2026-11-29)"; several dates are listed once each. A link that the text already dates (``read 2026-12-04`` within the
words after it, or a "read" column in its table row) is left as written, and needs no entry. A linked URL with no date warns ``xlaport.read-date``; an entry
that no page links any more warns ``xlaport.read-date`` when the build finishes, so the file lists what the book
cites, no more. Links into the book's own repository (``repository.url``) are not citations and get no date.
"""

from __future__ import annotations

import re
from datetime import date

from docutils import nodes
from sphinx.application import Sphinx

from ._nodes import inside, is_cell, listed, listed_check, per_doc, warn, warn_file

OPTION, KEY = "xlaport_read_dates", "xlaport_read_dates_used"  # the list file's config; what each page cited
_DATE = re.compile(r"\b20\d\d-\d\d-\d\d\b")


def load(app: Sphinx) -> dict[str, str]:
    return listed(app, OPTION)


def _own(app: Sphinx) -> str:
    """The book's own repository (Jupyter Book's ``repository.url``): links to its files are not cited sources."""
    url = str((getattr(app.config, "html_theme_options", None) or {}).get("repository_url", ""))
    return url.rstrip("/") + "/" if url else "\0"


def _external(ref: nodes.reference, own: str = "\0") -> str | None:
    uri = str(ref.get("refuri", ""))
    return uri if uri.startswith(("http://", "https://")) and not uri.startswith(own) else None


def _in_dated_row(block: nodes.Element) -> bool:
    """Whether the paragraph sits in a table row that states a date (a "read" column)."""
    row = block.parent
    while row is not None and not isinstance(row, nodes.row):
        row = row.parent
    return row is not None and bool(_DATE.search(row.astext()))


def _links_and_what_follows(block: nodes.Element, own: str) -> list[tuple[nodes.reference, str]]:
    """Each external link of the paragraph with the text that follows it, up to the next external link."""
    out: list[tuple[nodes.reference, str]] = []

    def walk(node: nodes.Node) -> None:
        for child in node.children:
            if isinstance(child, nodes.reference) and _external(child, own):
                out.append((child, ""))
            elif isinstance(child, nodes.Text):
                if out:
                    out[-1] = (out[-1][0], out[-1][1] + str(child))
            else:
                walk(child)

    walk(block)
    return out


def _after(ref: nodes.reference, text: str) -> None:
    """Put ``text`` just after ``ref``: ", read D" inside a bracket the link closes, " (read D)" otherwise."""
    parent = ref.parent
    index = parent.index(ref)
    following = parent[index + 1] if index + 1 < len(parent) else None
    closes = isinstance(following, nodes.Text) and str(following).startswith(")")
    label = f", read {text}" if closes else f" (read {text})"
    parent.insert(index + 1, nodes.inline(label, label, classes=["read-date"]))


def annotate(app: Sphinx, doctree: nodes.document) -> None:
    dates = load(app)
    if not app.config.xlaport_read_dates:
        return
    used: set[str] = set()
    own = _own(app)
    for block in list(doctree.findall(nodes.paragraph)):
        if inside(block, lambda n: is_cell(n) or isinstance(n, (nodes.literal_block, nodes.raw))):
            continue
        links = _links_and_what_follows(block, own)
        if not links:
            continue
        dated_row = _in_dated_row(block)
        found: list[str] = []
        last = None
        for ref, follows in links:
            uri = _external(ref, own) or ""
            when = dates.get(uri)
            if when is not None:
                used.add(uri)
            if dated_row or _DATE.search(follows[:100]):  # the text gives this link's date already
                continue
            if when is None:
                warn(
                    block,
                    "read-date",
                    f"{uri} has no date read: add it to {app.config.xlaport_read_dates} with the day you read it "
                    f'("{uri}" = "{date.today().isoformat()}")',
                )
                continue
            last = ref
            if when not in found:
                found.append(when)
        if last is not None:
            _after(last, ", ".join(sorted(found)))
    per_doc(app.env, KEY)[app.env.docname] = used


def stale_entries(app: Sphinx, path: str, records: dict[str, set[str]]) -> None:
    """Entries no page cites any more, and dates that are not dates."""
    name, used = app.config.xlaport_read_dates, set().union(*records.values())
    for uri, when in load(app).items():
        if not (isinstance(when, str) and re.fullmatch(r"20\d\d-\d\d-\d\d", when)):
            warn_file(path, "read-date", f"{name}: {uri} = {when!r} is not a date (YYYY-MM-DD)")
        elif uri not in used:
            warn_file(path, "read-date", f"{name}: no page cites {uri} any more")


def setup(app: Sphinx) -> None:
    listed_check(app, OPTION, KEY, annotate, stale_entries)
