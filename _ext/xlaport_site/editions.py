"""Reader editions of the chapters for Colab and Jupyter, written from each chapter's resolved doctree.

Colab and Jupyter render markdown as CommonMark, so a chapter's MyST markup would show there as literal text. With
``xlaport_editions`` set (a folder name, ``editions`` in _config.yml), each chapter's page, once the HTML build has
resolved it (``doctree-resolved``, after every post-transform and the reader checks), is also written as a notebook
at ``<outdir>/<xlaport_editions>/notebooks/<stem>.ipynb``:

* markdown from the resolved nodes (:mod:`.markdown`): glued values as the page shows them, references as links to
  the published pages, exercises numbered as on the site, each solution folded with its code shown as code;
* the code cells are the notebook's own, unchanged, without outputs, the Colab setup cell (tag ``colab-setup``) first;
* markdown cells split where the notebook's cells are (a node's line tells its cell), with their ids and tags;
* one cell after the title says where the numbers in the text come from (the published run).

A node the edition cannot write as plain markdown warns ``xlaport.edition`` at its place (the strict build fails on
it) and the chapter gets no edition. Each chapter's Colab launch button opens its edition on the ``editions`` branch
that the Pages workflow pushes (:func:`xlaport.pages.colab_url`), not the source notebook with its book markup.
"""

from __future__ import annotations

import copy
import posixpath
import re
from pathlib import Path
from typing import Any

import nbformat
from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util import logging

from xlaport import pages

from ._nodes import cell_index, is_cell, warn
from .markdown import Markdown, Unsupported, join

logger = logging.getLogger("xlaport_site")
COLAB = "colab.research.google.com"
SETUP_TAG = "colab-setup"
NOTE_TAG = "reader-edition"
_SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*:", re.I)


def repository(app: Sphinx) -> str:
    """The repository the book names (``repository.url`` in _config.yml, the theme's ``repository_url``)."""
    options = app.config.html_theme_options or {}
    return str(options.get("repository_url") or pages.REPOSITORY).rstrip("/")


def is_chapter(app: Sphinx, docname: str) -> bool:
    return docname.startswith("notebooks/") and (Path(app.srcdir) / f"{docname}.ipynb").is_file()


def note_cell(title: str, url: str, site: str, running: tuple[str, str]) -> nbformat.NotebookNode:
    """The cell after the title and the lead: what this edition is, where its numbers come from, how to run it."""
    text = (
        f"> **Reader edition for Colab and Jupyter.** This is the chapter [{title}]({url}) of the "
        f"[xlaport field guide]({site}), with the book’s markup turned into plain markdown: the website’s tabs "
        "(CUDA, TPU, Trainium) are one titled part after another, and each exercise’s solution is folded as text "
        "under it (copy its code into a cell to run it). The numbers in the text are those of the published run (the "
        "one on the website); when you run the cells, your run prints its own, which can differ on another machine "
        "or with other parameters. In Colab the setup cell below installs what the chapter needs; in Jupyter, run "
        f"the chapter in the environment that [{running[0]}]({running[1]}) describes."
    )
    return nbformat.v4.new_markdown_cell(text, metadata={"tags": [NOTE_TAG]})


class _Edition:
    """One chapter's edition: the doctree's top-level blocks in order, each with the notebook cell it came from."""

    def __init__(self, app: Sphinx, docname: str, source: nbformat.NotebookNode) -> None:
        self.app, self.docname, self.source = app, docname, source
        self.site = pages.site_of(repository(app))
        self.items: list[tuple[str, int | None, str, dict[str, Any]]] = []  # kind, cell, markdown, attachments
        self.folded: set[int] = set()  # code cells shown inside a solution
        self.markdown = Markdown(link=self.link, code=self.code, number=self.number, image_file=self.image_file)

    # what the translator asks of the build

    def link(self, target: str) -> str:
        if _SCHEME.match(target):
            return target
        page, _, anchor = target.partition("#")
        here = posixpath.dirname(self.docname)
        path = posixpath.normpath(posixpath.join(here, page)) if page else f"{self.docname}.html"
        return f"{self.site}{path}" + (f"#{anchor}" if anchor else "")

    def code(self, index: int) -> str:
        self.folded.add(index)
        return str(self.source.cells[index].source)

    def number(self, node: nodes.Element) -> str:
        from sphinx_exercise.utils import get_node_number

        return str(get_node_number(self.app, node, "exercise"))

    def image_file(self, node: nodes.image) -> Path | None:
        uri = str(node.get("candidates", {}).get("*") or node.get("uri") or "")
        if not uri or _SCHEME.match(uri):
            return None
        path = Path(uri)
        return path if path.is_absolute() else Path(self.app.srcdir) / uri

    # the walk

    def walk(self, parent: nodes.Element, depth: int) -> None:
        for child in parent.children:
            if isinstance(child, nodes.section) and child.children and isinstance(child[0], nodes.title):
                self.add(child[0], f"{'#' * min(depth + 1, 6)} {self.markdown.inline(child[0])}")
                self.walk_rest(child, depth + 1)
            elif is_cell(child):
                self.items.append(("code", int(child["cell_index"]), "", {}))
            elif type(child).__name__ != "solution_node" and any(is_cell(n) for n in child.findall(nodes.container)):
                raise Unsupported(child, "holds a code cell; only a solution can")
            else:
                self.add(child, self.markdown.block(child, depth))

    def walk_rest(self, section: nodes.section, depth: int) -> None:
        rest = nodes.Element()
        rest.children = section.children[1:]  # a view: the children keep their parent
        self.walk(rest, depth)

    def add(self, node: nodes.Node, text: str) -> None:
        index = cell_index(node)
        if index is None:
            index = next((i for n in node.findall() if (i := cell_index(n)) is not None), None)
        if index is None and self.items:
            index = self.items[-1][1]
        attachments, self.markdown.attachments = self.markdown.attachments, {}
        if text.strip() or attachments:
            self.items.append(("markdown", index, text, attachments))

    # the notebook

    def cells(self) -> list[nbformat.NotebookNode]:
        shown = {i for kind, i, _, _ in self.items if kind == "code"}
        missing = [
            i
            for i, c in enumerate(self.source.cells)
            if c.cell_type == "code" and i not in shown and i not in self.folded
        ]
        items = list(self.items)
        for i in missing:  # a code cell the page does not show (remove-cell): the edition still runs it
            at = next((k for k, it in enumerate(items) if it[1] is not None and it[1] > i), len(items))
            items.insert(at, ("code", i, "", {}))
        out: list[nbformat.NotebookNode] = []
        for kind, index, text, attachments in items:
            source = self.source.cells[index] if index is not None and index < len(self.source.cells) else None
            if kind == "note":
                out.append(nbformat.v4.new_markdown_cell(text, metadata={"tags": [NOTE_TAG]}))
                continue
            if kind == "code":
                assert source is not None
                cell = copy.deepcopy(source)
                cell.outputs, cell.execution_count = [], None
                for key in ("papermill", "execution"):
                    cell.metadata.pop(key, None)
                out.append(cell)
                continue
            last = out[-1] if out else None
            if last is not None and last.cell_type == "markdown" and last.metadata.get("xlaport_cell") == index:
                last.source = join([last.source, text])
                last.setdefault("attachments", {}).update(attachments)
                continue
            cell = nbformat.v4.new_markdown_cell(text)
            if source is not None and source.cell_type == "markdown":
                if source.get("id"):
                    cell.id = source.id
                if source.metadata.get("tags"):
                    cell.metadata["tags"] = list(source.metadata["tags"])
            if attachments:
                cell.attachments = dict(attachments)
            cell.metadata["xlaport_cell"] = index
            out.append(cell)
        seen: set[str] = set()
        for cell in out:
            cell.metadata.pop("xlaport_cell", None)
            if cell.get("id") in seen:
                cell.id = nbformat.v4.new_markdown_cell().id
            seen.add(cell.id)
        return out

    def notebook(self, doctree: nodes.document) -> nbformat.NotebookNode:
        self.walk(doctree, 0)
        titles = self.app.env.titles
        title = titles[self.docname].astext() if self.docname in titles else self.docname
        running = titles["book/running"].astext() if "book/running" in titles else "Running the book"
        note = note_cell(
            title, f"{self.site}{self.docname}.html", self.site, (running, f"{self.site}book/running.html")
        )
        # After the title and the lead paragraph (in the title's cell): before the notes and boxes that follow them.
        items, at = self.items, 0
        if items and items[0][0] == "markdown":
            at = 2 if len(items) > 1 and items[1][0] == "markdown" and items[1][1] == items[0][1] else 1
        items.insert(at, ("note", None, note.source, {}))
        cells = self.cells()
        nb = nbformat.v4.new_notebook(cells=cells, metadata=copy.deepcopy(dict(self.source.metadata)))
        nb.metadata.pop("papermill", None)
        nb.metadata.setdefault("xlaport", {})["edition_of"] = f"{self.docname}.ipynb"
        nbformat.validate(nb)
        return nb


def edition(app: Sphinx, doctree: nodes.document, docname: str) -> nbformat.NotebookNode:
    """The reader edition of a chapter from its resolved doctree (raises :class:`.markdown.Unsupported`)."""
    source = nbformat.read(Path(app.srcdir) / f"{docname}.ipynb", as_version=4)
    return _Edition(app, docname, source).notebook(doctree)


def write(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    folder = app.config.xlaport_editions
    if not folder or app.builder.format != "html" or not is_chapter(app, docname):
        return
    try:
        nb = edition(app, doctree, docname)
    except Unsupported as exc:
        warn(exc.node, "edition", f"no reader edition: {exc}")
        return
    out = Path(app.outdir) / folder / pages.EDITIONS_FOLDER / f"{Path(docname).name}.ipynb"
    out.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, out)


def colab_link(app: Sphinx, pagename: str, templatename: str, context: dict[str, Any], doctree: Any) -> None:
    """Point the page's Colab launch button (sphinx-book-theme's header buttons) at the chapter's edition."""
    if not app.config.xlaport_editions or not pagename.startswith("notebooks/"):
        return
    url = pages.colab_url(Path(pagename).name, repository(app))

    def visit(buttons: Any) -> None:
        for button in buttons or []:
            if isinstance(button, dict):
                if COLAB in str(button.get("url", "")):
                    button["url"] = url
                visit(button.get("buttons"))  # a group ("launch-buttons") holds its buttons

    visit(context.get("header_buttons"))


def setup(app: Sphinx) -> None:
    app.add_config_value("xlaport_editions", "", "html", [str])
    # After the post-transforms and the reader checks (doctree-resolved, priority 500): the page as the site shows it.
    app.connect("doctree-resolved", write, priority=900)
    # After sphinx-book-theme's add_launch_buttons (priority 501) has made the buttons.
    app.connect("html-page-context", colab_link, priority=600)
