"""What the reader checks share: warnings with a stable type, and the parts of a doctree that are prose.

Every check warns through :func:`warn` as ``<message> [xlaport.<subtype>]`` with the node's location, so a strict
build (``-W``) fails on it and ``grep 'xlaport\\.'`` finds every finding of a build.

MyST-NB puts a notebook's markdown cells straight into the document (no wrapper) and each code cell in a
``container`` with ``nb_element="cell_code"`` (attributes ``cell_index``, ``cell_metadata``), holding the source
(``cell_code_source``) and the outputs (``cell_code_output``). A node's line is ``10000 * (cell index + 1) + line``.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Callable, Iterator
from functools import lru_cache
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx import addnodes
from sphinx.util import logging

logger = logging.getLogger("xlaport_site")

TYPE = "xlaport"
# Inline nodes whose text is not prose: code, maths, links and cross-references (resolved or not), raw HTML. Glued
# values are not prose either (:func:`is_glue`).
NOT_PROSE = (
    nodes.literal,
    nodes.math,
    nodes.reference,
    addnodes.pending_xref,
    nodes.raw,
    nodes.image,
    nodes.target,
    nodes.footnote_reference,
)
BLOCKS = (nodes.paragraph, nodes.title, nodes.caption, nodes.term, nodes.rubric, nodes.line)


def warn(node: nodes.Node, subtype: str, message: str) -> None:
    """A Sphinx warning of type ``xlaport.<subtype>`` at ``node``, with the cell it is in when there is one."""
    cell = cell_index(node)
    where = f" (cell {cell})" if cell is not None else ""
    logger.warning(f"{message}{where} [{TYPE}.{subtype}]", type=TYPE, subtype=subtype, location=node)


def warn_file(path: str, subtype: str, message: str) -> None:
    """A warning of type ``xlaport.<subtype>`` about a file rather than a node."""
    logger.warning(f"{message} [{TYPE}.{subtype}]", type=TYPE, subtype=subtype, location=path)


def is_cell(node: nodes.Node) -> bool:
    return isinstance(node, nodes.container) and node.get("nb_element") == "cell_code"


def is_glue(node: nodes.Node) -> bool:
    """A value pasted by a glue role: ``{glue:text}`` is ``inline.pasted-text``, ``{glue:md}`` ``inline.pasted-markdown``
    (:mod:`.glue`), ``{glue}`` a mime bundle until it is resolved."""
    if isinstance(node, nodes.container) and node.get("nb_element") == "mime_bundle":
        return True
    classes = node.get("classes", []) if isinstance(node, nodes.Element) else []
    return isinstance(node, nodes.inline) and bool({"pasted-text", "pasted-inline", "pasted-markdown"} & set(classes))


def inside(node: nodes.Node, test: Any) -> bool:
    """Whether ``node`` or one of its ancestors passes ``test``."""
    n: nodes.Node | None = node
    while n is not None:
        if test(n):
            return True
        n = n.parent
    return False


def cell_of(node: nodes.Node) -> nodes.container | None:
    n: nodes.Node | None = node
    while n is not None:
        if is_cell(n):
            return n
        n = n.parent
    return None


def cell_index(node: nodes.Node) -> int | None:
    """The notebook cell a node comes from (code cells say so; markdown cells only through the line number)."""
    cell = cell_of(node)
    if cell is not None:
        return int(cell["cell_index"])
    line = node.line if node.line is not None else getattr(node.parent, "line", None)
    source = node.source or getattr(node.parent, "source", None) or ""
    if line is not None and str(source).endswith(".ipynb") and line >= 10000:
        return line // 10000 - 1
    return None


def cell_tags(cell: nodes.Element) -> set[str]:
    return set(cell.get("cell_metadata", {}).get("tags", []))


@lru_cache(maxsize=64)
def _markdown_tags(path: str, mtime: float) -> dict[int, frozenset[str]]:
    nb = json.loads(Path(path).read_text(encoding="utf-8"))
    return {
        i: frozenset(c.get("metadata", {}).get("tags", []))
        for i, c in enumerate(nb.get("cells", []))
        if c.get("cell_type") == "markdown"
    }


def markdown_cell_tags(node: nodes.Node) -> frozenset[str]:
    """Tags of the markdown cell a node comes from (MyST-NB keeps no markdown cell metadata in the doctree)."""
    source = str(node.source or getattr(node.parent, "source", None) or "")
    index = cell_index(node)
    if not source.endswith(".ipynb") or index is None or not Path(source).exists():
        return frozenset()
    return _markdown_tags(source, Path(source).stat().st_mtime).get(index, frozenset())


def is_notebook(doctree: nodes.document) -> bool:
    return str(doctree.get("source", "")).endswith(".ipynb")


def prose_blocks(doctree: nodes.Node) -> Iterator[nodes.Element]:
    """Paragraphs, titles, captions, terms of prose: not in a code cell, a literal block or a glued value."""
    for block in doctree.findall(lambda n: isinstance(n, BLOCKS)):
        if inside(block, lambda n: is_cell(n) or is_glue(n) or isinstance(n, (nodes.literal_block, nodes.raw))):
            continue
        yield block


def prose_text(block: nodes.Element, skip: tuple[type, ...] = NOT_PROSE) -> str:
    """The block's text with every piece that is not prose (``skip``, glued values) replaced by a space."""
    parts: list[str] = []

    def walk(node: nodes.Node) -> None:
        if isinstance(node, nodes.Text):
            parts.append(str(node))
        elif isinstance(node, skip) or is_glue(node):
            parts.append(" ")
        else:
            for child in node.children:
                walk(child)

    walk(block)
    return "".join(parts)


def per_doc(env: Any, key: str) -> dict[str, Any]:
    """A record a check keeps per document in the build environment (``env.<key>``: docname -> what it found), so
    that a check run when each page is read can be summed up when the build finishes, incremental builds included."""
    if not hasattr(env, key):
        setattr(env, key, {})
    return getattr(env, key)


def keep_per_doc(app: Any, key: str) -> None:
    """Drop a re-read document's record, and merge the records of parallel readers (Sphinx's env events)."""
    app.connect("env-purge-doc", lambda _app, env, docname: per_doc(env, key).pop(docname, None))
    app.connect(
        "env-merge-info",
        lambda _app, env, docnames, other: per_doc(env, key).update(
            {d: u for d, u in per_doc(other, key).items() if d in docnames}
        ),
    )


def listed(app: Any, option: str) -> dict[str, Any]:
    """The TOML file that config ``option`` names (relative to the book), read once per build; {} when unset or absent."""
    lists = app.__dict__.setdefault("_xlaport_lists", {})
    if option not in lists:
        name = getattr(app.config, option)
        path = Path(app.confdir) / name if name else None
        lists[option] = tomllib.loads(path.read_text(encoding="utf-8")) if path and path.exists() else {}
    return lists[option]


def listed_check(
    app: Any,
    option: str,
    key: str,
    read: Callable[[Any, nodes.document], None],
    finish: Callable[[Any, str, dict[str, Any]], None],
) -> None:
    """Wire a check whose entries live in a TOML file (config ``option``): ``read(app, doctree)`` as each page is read,
    keeping what the page used in ``per_doc(env, key)``; then, once a build finishes without error and the option is
    set, ``finish(app, path, records)`` with the file's path (warnings point at it) and every page's record, to warn
    about entries that match nothing any more."""
    app.add_config_value(option, "", "env", [str])
    app.connect("doctree-read", read)
    keep_per_doc(app, key)

    def finished(app: Any, exception: Exception | None) -> None:
        name = getattr(app.config, option)
        if exception is None and name:
            finish(app, str(Path(app.confdir) / name), per_doc(app.env, key))

    app.connect("build-finished", finished)
