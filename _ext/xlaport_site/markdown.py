"""A resolved doctree as plain markdown (CommonMark with pipe tables), as Colab and Jupyter render it.

The reader editions (:mod:`.editions`) are written from the doctree the HTML build has resolved: glued values are
pasted, cross-references are links, glossary terms are linked, exercises are numbered. What is left is to write each
node as the markdown that shows the same thing:

* sections as ``#`` headings, admonitions as quoted blocks with a bold title, a tab set as one bold-titled part per
  tab, an exercise as a heading ``Exercise N: title``, a solution as a folded ``<details>`` block whose code cells
  are shown as code (never cells that run);
* links to the book's pages as absolute addresses on the published site, images attached to the cell;
* text escaped so that it shows as it reads (``$`` too: Jupyter typesets ``$...$``).

A node with no plain-markdown form raises :class:`Unsupported`, which names it; the extension turns that into a
warning ``xlaport.edition`` (the strict build fails on it), so a new directive in a chapter is either rendered here
or caught.
"""

from __future__ import annotations

import base64
import html
import mimetypes
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from docutils import nodes
from sphinx import addnodes

__all__ = ["Markdown", "Unsupported", "escape"]

_ESCAPE = re.compile(r"([\\`*_\[\]<>$|~&])")
_SKIP = (nodes.target, nodes.comment, nodes.substitution_definition, nodes.system_message, addnodes.index)
_ADMONITION_TITLES = {"seealso": "See also"}


class Unsupported(ValueError):
    """A node with no plain-markdown form."""

    def __init__(self, node: nodes.Node, why: str = "has no plain-markdown form") -> None:
        self.node = node
        name = type(node).__name__
        classes = " ".join(node.get("classes", [])) if isinstance(node, nodes.Element) else ""
        super().__init__(f"the node <{name}{' class=' + classes if classes else ''}> {why}")


def escape(text: str) -> str:
    """Plain text as CommonMark that shows exactly that text, on one line."""
    return _ESCAPE.sub(r"\\\1", text.replace("\n", " "))


def _code_span(text: str, in_table: bool = False) -> str:
    text = text.replace("\n", " ")
    ticks = max((len(run) for run in re.findall(r"`+", text)), default=0) + 1
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    if in_table:
        text = text.replace("|", "\\|")  # GitHub's tables split a row at every unescaped bar, code spans included
    return f"{'`' * ticks}{pad}{text}{pad}{'`' * ticks}"


def fence(code: str, language: str = "") -> str:
    ticks = max((len(run) for run in re.findall(r"^`{3,}", code, re.M)), default=2) + 1
    return f"{'`' * ticks}{language}\n{code.rstrip()}\n{'`' * ticks}"


def quote(text: str) -> str:
    return "\n".join(f"> {line}" if line.strip() else ">" for line in text.splitlines())


def details(summary: str, body: str) -> str:
    # The blank lines let Jupyter and Colab parse the markdown inside the HTML block.
    return f"<details>\n<summary>{html.escape(summary)}</summary>\n\n{body.strip()}\n\n</details>"


def join(parts: list[str]) -> str:
    return "\n\n".join(p.strip("\n") for p in parts if p and p.strip())


def _classes(node: nodes.Node) -> list[str]:
    return list(node.get("classes", [])) if isinstance(node, nodes.Element) else []


@dataclass
class Markdown:
    """Writes a document's nodes as markdown.

    ``link(refuri)`` turns a link of the built page (relative to it, as the HTML builder resolved it) into the
    address a reader of the edition can open; ``code(cell_index)`` is the source of a notebook cell (a code cell
    inside a solution); ``number(node)`` the number the site shows for an exercise; ``image_file(node)`` the file
    of an image. Attachments (images) collect in :attr:`attachments` until the caller takes them for a cell.
    """

    link: Callable[[str], str]
    code: Callable[[int], str]
    number: Callable[[nodes.Element], str]
    image_file: Callable[[nodes.image], Path | None]
    attachments: dict[str, dict[str, str]] = field(default_factory=dict)

    # --- blocks ---------------------------------------------------------------------------------------------------

    def blocks(self, node: nodes.Element, depth: int) -> str:
        return join([self.block(child, depth) for child in node.children])

    def block(self, node: nodes.Node, depth: int) -> str:
        """One body element as markdown; ``depth`` is the level of the section it is in (1 for the title's)."""
        name = type(node).__name__
        if isinstance(node, _SKIP) or name in ("sd_tab_input", "solution_title"):
            return ""
        if isinstance(node, nodes.raw):
            # the page's own HTML; not what an extension adds to every page (sphinx-thebe's configuration script)
            return node.astext() if node.get("format") == "html" and node.source is not None else ""
        if isinstance(node, nodes.Text):
            return escape(str(node))
        if isinstance(node, nodes.paragraph | nodes.caption):
            return self.inline(node)
        if isinstance(node, nodes.section):
            title = node[0] if node.children and isinstance(node[0], nodes.title) else None
            if title is None:  # the untitled body of an exercise or a solution
                return self.blocks(node, depth)
            heading = f"{'#' * min(depth + 1, 6)} {self.inline(title)}"
            return join([heading, *(self.block(c, depth + 1) for c in node.children[1:])])
        if isinstance(node, nodes.title):
            return f"**{self.inline(node)}**"
        if name == "sd_tab_label":  # a tab set becomes one part per tab, each under its label as a heading
            return f"{'#' * min(depth + 1, 6)} {self.inline(node)}"
        if isinstance(node, nodes.rubric):
            return f"**{self.inline(node)}**"
        if name == "exercise_enumerable_node" or name == "exercise_node":
            return self.exercise(node, depth)
        if name == "solution_node":
            assert isinstance(node, nodes.Element)
            title = node[0].astext().strip() if node.children else "Solution"
            body = join([self.block(c, depth) for c in node.children[1:]])  # the first child is the title
            return details(re.sub(r"\s+", " ", title), body)
        if isinstance(node, nodes.Admonition):
            return self.admonition(node, depth)
        if isinstance(node, nodes.bullet_list | nodes.enumerated_list):
            return self.list(node, depth)
        if isinstance(node, nodes.literal_block):
            language = str(node.get("language", ""))
            return fence(node.astext(), "python" if language in ("ipython3", "ipython", "python3") else language)
        if isinstance(node, nodes.block_quote):
            return quote(self.blocks(node, depth))
        if isinstance(node, nodes.table):
            return self.table(node)
        if isinstance(node, nodes.math_block):
            return f"$$\n{node.astext().strip()}\n$$"
        if isinstance(node, nodes.figure):
            return self.figure(node)
        if isinstance(node, nodes.image):
            return self.image(node)
        if isinstance(node, nodes.transition):
            return "---"
        if isinstance(node, nodes.definition_list):
            return join([self.definition(item, depth) for item in node.children])
        if isinstance(node, nodes.container) and node.get("nb_element") == "cell_code":
            return fence(self.code(int(node["cell_index"])), "python")  # a code cell inside a solution
        if isinstance(node, nodes.container) and node.get("nb_element") == "mime_bundle":
            return self.blocks(node, depth)  # a glued value pasted as a block
        if isinstance(node, nodes.container | nodes.compound | nodes.inline):
            return self.blocks(node, depth)
        raise Unsupported(node)

    def list(self, node: nodes.Element, depth: int) -> str:
        ordered = isinstance(node, nodes.enumerated_list)
        start = int(node.get("start", 1))
        items = []
        for i, item in enumerate(node.children):
            marker = f"{start + i}. " if ordered else "- "
            body = self.blocks(item, depth) if isinstance(item, nodes.Element) else ""
            pad = " " * len(marker)
            lines = body.splitlines() or [""]
            items.append(marker + lines[0] + "".join(f"\n{pad}{line}" if line else "\n" for line in lines[1:]))
        return "\n".join(items)

    def admonition(self, node: nodes.Element, depth: int) -> str:
        titles = [c for c in node.children if isinstance(c, nodes.title)]
        if titles:
            title = self.inline(titles[0])
        else:
            kind = type(node).__name__
            title = _ADMONITION_TITLES.get(kind, kind.capitalize())
        body = join([self.block(c, depth) for c in node.children if not isinstance(c, nodes.title)])
        return quote(join([f"**{title}**", body]))

    def definition(self, item: nodes.Node, depth: int) -> str:
        if not isinstance(item, nodes.definition_list_item):
            raise Unsupported(item)
        term = " ".join(self.inline(t) for t in item.children if isinstance(t, nodes.term))
        body = join([self.blocks(d, depth) for d in item.children if isinstance(d, nodes.definition)])
        return join([f"**{term}**", quote(body)])

    def exercise(self, node: nodes.Element, depth: int) -> str:
        title = node.children[0] if node.children else None
        subtitle = ""
        if isinstance(title, nodes.title):
            # sphinx-exercise writes the title as "Exercise %s" (numfig) followed by " (subtitle)"
            text = self.inline(title).strip()
            subtitle = text[1:-1] if text.startswith("(") and text.endswith(")") else text
        number = self.number(node)
        heading = f"Exercise {number}" if number else "Exercise"
        heading += f": {subtitle}" if subtitle else ""
        body = join([self.block(c, depth) for c in node.children[1:]])
        return join([f"{'#' * min(depth + 1, 6)} {heading}", body])

    def table(self, node: nodes.table) -> str:
        group = node.next_node(nodes.tgroup)
        if group is None:
            raise Unsupported(node, "has no rows")
        head = [r for part in group.findall(nodes.thead) for r in part.children]
        body = [r for part in group.findall(nodes.tbody) for r in part.children]
        rows = [[self.cell(e) for e in row.children] for row in [*head, *body] if isinstance(row, nodes.row)]
        if not rows:
            raise Unsupported(node, "has no rows")
        width = max(len(r) for r in rows)
        aligns = ["---"] * width
        first = (head or body)[0]
        for i, entry in enumerate(first.children if isinstance(first, nodes.Element) else []):
            classes = _classes(entry)
            if "text-right" in classes:
                aligns[i] = "--:"
            elif "text-center" in classes:
                aligns[i] = ":-:"
        if not head:  # a pipe table needs a header row: an empty one
            rows.insert(0, [""] * width)
        lines = ["| " + " | ".join(r + [""] * (width - len(r))) + " |" for r in rows]
        lines.insert(1, "| " + " | ".join(aligns) + " |")
        caption = node.next_node(nodes.title)
        return join([f"*{self.inline(caption)}*" if caption is not None else "", "\n".join(lines)])

    def cell(self, entry: nodes.Node) -> str:
        if not isinstance(entry, nodes.entry):
            raise Unsupported(entry)
        parts = []
        for child in entry.children:
            if isinstance(child, nodes.paragraph):
                parts.append(self.inline(child, in_table=True))
            elif isinstance(child, nodes.Text | nodes.Inline):
                parts.append(self.inline_node(child, in_table=True))
            else:
                raise Unsupported(child, "inside a table cell has no plain-markdown form")
        return "<br>".join(parts)

    def figure(self, node: nodes.figure) -> str:
        caption = node.next_node(nodes.caption)
        alt = caption.astext() if caption is not None else ""
        images = [self.image(img, alt) for img in node.findall(nodes.image)]
        return join([*images, f"*{self.inline(caption)}*" if caption is not None else ""])

    def image(self, node: nodes.image, alt: str = "") -> str:
        alt = escape(str(node.get("alt") or alt or "plot"))
        path = self.image_file(node)
        if path is None or not path.is_file():
            raise Unsupported(node, f"points at {node.get('uri')!r}, which is not a file of the build")
        mime = mimetypes.guess_type(path.name)[0] or "image/png"
        name = path.name
        self.attachments[name] = {mime: base64.b64encode(path.read_bytes()).decode("ascii")}
        return f"![{alt}](attachment:{name})"

    # --- inline ---------------------------------------------------------------------------------------------------

    def inline(self, node: nodes.Element, in_table: bool = False) -> str:
        return "".join(self.inline_node(child, in_table) for child in node.children).strip()

    def inline_node(self, node: nodes.Node, in_table: bool = False) -> str:
        if isinstance(node, nodes.Text):
            return escape(str(node))
        if isinstance(node, _SKIP):
            return ""
        assert isinstance(node, nodes.Element)
        if isinstance(node, nodes.literal):
            return _code_span(node.astext(), in_table)
        if isinstance(node, nodes.emphasis):
            return f"*{self.inline(node, in_table)}*"
        if isinstance(node, nodes.strong):
            return f"**{self.inline(node, in_table)}**"
        if isinstance(node, nodes.math):
            return f"${node.astext().strip()}$"
        if isinstance(node, nodes.reference):
            target = str(node.get("refuri") or ("#" + str(node["refid"]) if node.get("refid") else ""))
            text = self.inline(node, in_table)
            return f"[{text}]({self.link(target)})" if target else text
        if isinstance(node, nodes.image):
            return self.image(node)
        if isinstance(node, nodes.raw):
            return node.astext() if node.get("format") == "html" else ""
        if isinstance(node, nodes.subscript | nodes.superscript):
            tag = "sub" if isinstance(node, nodes.subscript) else "sup"
            return f"<{tag}>{self.inline(node, in_table)}</{tag}>"
        if isinstance(node, nodes.inline | nodes.title | addnodes.pending_xref | nodes.abbreviation | nodes.generated):
            return "".join(self.inline_node(child, in_table) for child in node.children)
        raise Unsupported(node)
