#!/usr/bin/env python
"""Reader editions: every chapter as a plain notebook for Colab and Jupyter, made from its executed copy.

Colab and Jupyter render markdown as CommonMark, so the book's MyST markup would show as literal text. The edition
of a chapter is the same notebook with its markdown turned into plain markdown:

* glue roles (``{glue:text}`key:.2f```, ``{glue:md}``, ``{glue}``, glue directives and figures) become the values
  of the published run, formatted as the role says (a cell near the top says where the numbers come from);
* ``{doc}``, ``{ref}``, ``{term}``, ``{numref}`` and links to other book pages become links to the published pages;
* admonitions become quoted blocks with a bold title, tab sets one bold-titled part per backend;
* exercises become numbered headings, and each solution one folded ``<details>`` block, its code shown as code, never
  as a cell that runs.

Code cells are the chapter's, unchanged, without outputs; the Colab setup cells (tag ``colab-setup``) are copied as
they are. The site's extension (``_ext/xlaport_site/editions.py``) writes the editions into the built site at
``editions/notebooks/<stem>.ipynb``; the Pages workflow pushes that folder to the ``editions`` branch, and each
chapter's Colab button opens the edition from there (:func:`colab_url`).

Run alone (``python scripts/reader_editions.py --out DIR``) it converts the executed copies in
``_build/executed/notebooks`` with the cross-references read from the book's sources. ``--run`` then executes
each edition top to bottom in a fresh kernel as a Colab runtime would (the setup cells skipped by their tag).
"""

from __future__ import annotations

import argparse
import copy
import itertools
import os
import posixpath
import re
import sys
import time
import tomllib
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nbformat

from xlaport.text import escape_dollars

ROOT = Path(__file__).resolve().parents[1]
EXECUTED = ROOT / "_build" / "executed" / "notebooks"
# The branch the Pages workflow pushes the editions to (.github/workflows/pages.yml), and the folder in it.
BRANCH = "editions"
FOLDER = "notebooks"
SETUP_TAG = "colab-setup"
GLUE_PREFIX = "application/papermill.record/"

__all__ = [
    "BRANCH",
    "EditionError",
    "Inventory",
    "colab_url",
    "convert",
    "leftovers",
    "repository",
    "site_url",
    "write_editions",
]


class EditionError(ValueError):
    """Markup the converter cannot turn into plain markdown (the message names the chapter and the cell)."""


# --- where things are published ---------------------------------------------------------------------------------


def repository(root: Path = ROOT) -> str:
    """The repository's address: ``[project.urls] Repository`` in pyproject.toml (the one place it is written)."""
    data = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    url = str(data["project"]["urls"]["Repository"]).rstrip("/")
    if not re.fullmatch(r"https://github\.com/[\w.-]+/[\w.-]+", url):
        raise EditionError(f"pyproject.toml [project.urls] Repository is not a GitHub repository: {url!r}")
    return url


def _owner_repo(repo_url: str) -> tuple[str, str]:
    owner, name = repo_url.rstrip("/").split("/")[-2:]
    return owner, name


def site_url(repo_url: str | None = None) -> str:
    """The published site: GitHub Pages of the repository, ``https://<owner>.github.io/<repo>/``."""
    owner, name = _owner_repo(repo_url or repository())
    return f"https://{owner.lower()}.github.io/{name}/"


def colab_url(stem: str, repo_url: str | None = None) -> str:
    """Where Colab opens a chapter's reader edition: the ``editions`` branch the Pages workflow pushes."""
    owner, name = _owner_repo(repo_url or repository())
    return f"https://colab.research.google.com/github/{owner}/{name}/blob/{BRANCH}/{FOLDER}/{stem}.ipynb"


# --- what the cross-references point at --------------------------------------------------------------------------


@dataclass
class Inventory:
    """The published pages a chapter can point at: titles by docname, labels and glossary terms with anchors.

    Built from the Sphinx environment at build time (``_ext/xlaport_site/editions.py``) or from the book's sources
    (:meth:`from_sources`, for the command line and the tests).
    """

    base: str
    titles: dict[str, str] = field(default_factory=dict)  # docname -> title
    labels: dict[str, tuple[str, str, str]] = field(default_factory=dict)  # label -> docname, anchor, title
    terms: dict[str, tuple[str, str]] = field(default_factory=dict)  # term (lower case) -> docname, anchor
    repo: str = ""

    def url(self, docname: str, anchor: str = "") -> str:
        return f"{self.base}{docname}.html" + (f"#{anchor}" if anchor else "")

    @classmethod
    def from_sources(cls, root: Path = ROOT, repo_url: str | None = None) -> Inventory:
        repo = repo_url or repository(root)
        inv = cls(base=site_url(repo), repo=repo)
        docs = list(_toc_docnames(root / "_toc.yml"))
        texts = {doc: _page_text(root, doc) for doc in docs}
        texts.update(_generated_pages([d for d, t in texts.items() if t is None and d.startswith("book/generated/")]))
        for doc in docs:
            text = texts.get(doc)
            if text is None:
                continue
            inv.titles[doc] = _first_heading(text) or posixpath.basename(doc)
            inv.labels.update(_labels(doc, text))
            inv.terms.update(_glossary_terms(doc, text))
        return inv


def _toc_docnames(toc: Path) -> Iterator[str]:
    import yaml

    def walk(node: Any) -> Iterator[str]:
        if isinstance(node, dict):
            for key in ("root", "file"):
                if key in node:
                    yield str(node[key])
            for value in node.values():
                if isinstance(value, list | dict):
                    yield from walk(value)
        elif isinstance(node, list):
            for item in node:
                yield from walk(item)

    yield from walk(yaml.safe_load(toc.read_text(encoding="utf-8")))


def _page_text(root: Path, doc: str) -> str | None:
    """A page's markdown: the .md file, a notebook's markdown cells, or a generated reference page rendered."""
    if (md := root / f"{doc}.md").exists():
        return md.read_text(encoding="utf-8")
    if (ipynb := root / f"{doc}.ipynb").exists():
        nb = nbformat.read(ipynb, as_version=4)
        return "\n\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    return None


def _generated_pages(docs: list[str]) -> dict[str, str]:
    """The reference pages the site build generates (``book/generated/<page>``), rendered by the toolkit as the
    build does, in a process of its own: rendering op_coverage imports torch_xla, which changes Dynamo's global
    configuration for the process that imports it."""
    if not docs:
        return {}
    import json
    import subprocess

    code = (
        "import json, sys\nfrom xlaport import reference\n"
        "pages = [p for p in sys.argv[1:] if p in reference.PAGES]\n"
        "print(json.dumps({p: reference.render(p) for p in pages}))"
    )
    pages = [posixpath.basename(d) for d in docs]
    done = subprocess.run([sys.executable, "-c", code, *pages], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise EditionError(f"could not render the reference pages {pages}: {done.stderr.strip()[-300:]}")
    rendered = json.loads(done.stdout.strip().splitlines()[-1])
    return {f"book/generated/{p}": text for p, text in rendered.items()}


_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def _first_heading(text: str) -> str | None:
    for line in _outside_fences(text.splitlines()):
        if m := _HEADING.match(line):
            return m.group(2)
    return None


def _outside_fences(lines: Iterable[str]) -> Iterator[str]:
    fence: str | None = None
    for line in lines:
        m = re.match(r"^\s{0,3}(`{3,}|~{3,})", line)
        if fence is None and m:
            fence = m.group(1)
            continue
        if fence is not None:
            if re.fullmatch(rf"\s{{0,3}}{re.escape(fence[0])}{{{len(fence)},}}\s*", line):
                fence = None
            continue
        yield line


def _labels(doc: str, text: str) -> dict[str, tuple[str, str, str]]:
    found: dict[str, tuple[str, str, str]] = {}
    lines = text.splitlines()
    for i, line in enumerate(lines):
        m = re.fullmatch(r"\s*\(([^()\s]+)\)=\s*", line)
        if not m:
            continue
        title = next((h.group(2) for h in map(_HEADING.match, lines[i + 1 : i + 4]) if h), m.group(1))
        found[m.group(1)] = (doc, m.group(1), title)
    return found


def _glossary_terms(doc: str, text: str) -> dict[str, tuple[str, str]]:
    from sphinx.util.nodes import _make_id

    terms: dict[str, tuple[str, str]] = {}
    inside = False
    for line in text.splitlines():
        if re.match(r"^(`{3,}|:{3,})\{glossary\}", line):
            inside = True
            continue
        if inside and re.fullmatch(r"(`{3,}|:{3,})\s*", line):
            inside = False
            continue
        if inside and line.strip() and not line[0].isspace() and not line.startswith(":"):
            term = line.strip()
            terms[term.lower()] = (doc, _make_id(f"term-{term}"))
    return terms


# --- the glued values of the published run ------------------------------------------------------------------------


def glue_values(nb: nbformat.NotebookNode) -> dict[str, dict[str, Any]]:
    """Every value the run glued: key -> its mime bundle (``text/plain``, ``text/markdown``, ``image/png``...)."""
    values: dict[str, dict[str, Any]] = {}
    for cell in nb.cells:
        for out in cell.get("outputs", []) if cell.cell_type == "code" else []:
            book = out.get("metadata", {}).get("scrapbook")
            if not book:
                continue
            prefix = len(book.get("mime_prefix", ""))
            values[book["name"]] = {k[prefix:]: v for k, v in out.get("data", {}).items()}
    return values


def _format_plain(text: str, spec: str) -> str:
    """What ``{glue:text}`key:spec``` shows on the site: MyST-NB's formatting, and an exact zero as ``0`` (as the
    site's extension writes it)."""
    from myst_nb.core.variables import format_plain_text

    from xlaport.text import is_exact_zero_in_e

    out = str(format_plain_text(text, spec))
    return "0" if is_exact_zero_in_e(out) else out


_ESCAPE = re.compile(r"([\\`*_\[\]<>$|~&])")


def escape(text: str) -> str:
    """Plain text as CommonMark that shows exactly that text (``$`` too: Colab and Jupyter typeset ``$...$``)."""
    return _ESCAPE.sub(r"\\\1", text)


# --- the converter -------------------------------------------------------------------------------------------------

_OPEN = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,}|:{3,})\s*(?P<info>.*?)\s*$")
_DIRECTIVE = re.compile(r"^\{(?P<name>[A-Za-z][\w:+.-]*)\}\s*(?P<arg>.*)$")
_ROLE = re.compile(r"\{(?P<name>[A-Za-z][\w:+.-]*)\}(?P<ticks>`+)(?P<body>.+?)(?<!`)(?P=ticks)(?!`)", re.S)
_TARGET = re.compile(r"^(?P<text>.*?)\s*<(?P<target>[^<>]+)>$", re.S)
_LINK = re.compile(r"\]\((?P<target>[^()\s]+)(?P<title>\s+\"[^\"]*\")?\)")
_ADMONITIONS = {
    "note": "Note",
    "tip": "Tip",
    "hint": "Hint",
    "important": "Important",
    "warning": "Warning",
    "caution": "Caution",
    "attention": "Attention",
    "danger": "Danger",
    "error": "Error",
    "seealso": "See also",
    "margin": "",
    "sidebar": "",
    "topic": "",
    "epigraph": "",
}
_GATES = {"solution-start", "solution-end", "exercise-start", "exercise-end"}


@dataclass
class Directive:
    name: str
    arg: str
    options: dict[str, str]
    body: list[str]


@dataclass
class Gate:
    """The start or end of a gated exercise or solution: it spans cells."""

    name: str
    arg: str
    options: dict[str, str]


def _is_close(line: str, char: str, n: int) -> bool:
    return re.fullmatch(rf" {{0,3}}{re.escape(char)}{{{n},}}\s*", line) is not None


def _find_close(lines: list[str], start: int, char: str, n: int) -> int:
    stack: list[tuple[str, int]] = []
    for j in range(start, len(lines)):
        line = lines[j]
        if stack and stack[-1][0] in "`~":  # inside a code fence nested in a colon directive
            if _is_close(line, *stack[-1]):
                stack.pop()
            continue
        if char in "`~":  # a backtick directive's body is raw text until its fence closes
            if _is_close(line, char, n):
                return j
            continue
        if stack and _is_close(line, *stack[-1]):
            stack.pop()
            continue
        if not stack and _is_close(line, char, n):
            return j
        m = _OPEN.match(line)
        if m and (m.group("info") or m.group("fence")[0] in "`~"):
            stack.append((m.group("fence")[0], len(m.group("fence"))))
    raise EditionError(f"a {char * n} fence is never closed")


def _split_options(body: list[str]) -> tuple[dict[str, str], list[str]]:
    options: dict[str, str] = {}
    i = 0
    if body and body[0].strip() == "---":  # options as a YAML block
        import yaml

        end = next((j for j in range(1, len(body)) if body[j].strip() == "---"), None)
        if end is not None:
            options = {str(k): str(v) for k, v in (yaml.safe_load("\n".join(body[1:end])) or {}).items()}
            i = end + 1
    else:
        while i < len(body) and (m := re.match(r"^:([\w-]+):\s*(.*)$", body[i])):
            options[m.group(1)] = m.group(2).strip()
            i += 1
    rest = body[i:]
    while rest and not rest[0].strip():
        rest = rest[1:]
    while rest and not rest[-1].strip():
        rest = rest[:-1]
    return options, rest


def _blocks(lines: list[str]) -> Iterator[tuple[str, Any]]:
    """Top-level blocks: ("text", lines), ("fence", lines) for plain code, ("directive", Directive)."""
    i, text = 0, []
    while i < len(lines):
        m = _OPEN.match(lines[i])
        if not m:
            text.append(lines[i])
            i += 1
            continue
        char, n, info = m.group("fence")[0], len(m.group("fence")), m.group("info")
        d = _DIRECTIVE.match(info)
        if char == ":" and not d:  # a colon line that opens nothing is text
            text.append(lines[i])
            i += 1
            continue
        if char == "~" or (char == "`" and not d):
            if "`" in info and char == "`":  # not a fence: an inline code span at the start of a line
                text.append(lines[i])
                i += 1
                continue
            end = next((j for j in range(i + 1, len(lines)) if _is_close(lines[j], char, n)), len(lines) - 1)
            if text:
                yield "text", text
                text = []
            yield "fence", lines[i : end + 1]
            i = end + 1
            continue
        assert d is not None
        end = _find_close(lines, i + 1, char, n)
        options, body = _split_options(lines[i + 1 : end])
        if text:
            yield "text", text
            text = []
        yield "directive", Directive(d.group("name"), d.group("arg").strip(), options, body)
        i = end + 1
    if text:
        yield "text", text


@dataclass
class _Chapter:
    """What converting one chapter needs and keeps: its values, links, exercise numbers, heading level."""

    docname: str
    inventory: Inventory
    glue: dict[str, dict[str, Any]]
    exercises: dict[str, int] = field(default_factory=dict)
    level: int = 1
    attachments: dict[str, dict[str, str]] = field(default_factory=dict)
    where: str = ""

    def fail(self, message: str) -> EditionError:
        return EditionError(f"{self.docname}{self.where}: {message}")

    # inline ---------------------------------------------------------------------------------------------------
    def inline(self, text: str) -> str:
        out, i = [], 0
        while i < len(text):
            ch = text[i]
            if ch == "{" and (m := _ROLE.match(text, i)):
                out.append(self.role(m.group("name"), m.group("body")))
                i = m.end()
            elif ch == "`":
                run = re.match(r"`+", text[i:])
                assert run is not None
                ticks = run.group(0)
                close = re.compile(rf"(?<!`){ticks}(?!`)").search(text, i + len(ticks))
                end = close.end() if close else i + len(ticks)
                out.append(text[i:end])
                i = end
            elif ch == "]" and (m := _LINK.match(text, i)):
                out.append(f"]({self.link(m.group('target'))}{m.group('title') or ''})")
                i = m.end()
            elif ch == "\\" and i + 1 < len(text):
                out.append(text[i : i + 2])
                i += 2
            else:
                out.append(ch)
                i += 1
        return "".join(out)

    def value(self, key: str) -> dict[str, Any]:
        if "::" in key:
            raise self.fail(f"glue from another page ({key!r}) has no value in this chapter's run")
        if key not in self.glue:
            raise self.fail(f"no glued value {key!r} in the executed notebook (run the chapter again)")
        return self.glue[key]

    def role(self, name: str, body: str) -> str:
        if name == "glue:text":
            key, _, spec = body.rpartition(":") if ":" in body else (body, "", "")
            plain = self.value(key).get("text/plain")
            if plain is None:
                raise self.fail(f"glued value {key!r} has no text/plain")
            try:
                return escape(_format_plain(plain, spec))
            except (ValueError, TypeError) as exc:
                raise self.fail(f"glued value {key!r} ({plain!r}) does not take the format {spec!r}: {exc}") from exc
        if name in ("glue:md", "glue", "glue:any"):
            key = body.rsplit(":", 1)[0] if name == "glue:md" and ":" in body else body
            data = self.value(key)
            if "text/markdown" in data:
                return escape_dollars(str(data["text/markdown"]).strip())
            if "text/plain" in data:
                return escape(_format_plain(data["text/plain"], ""))
            raise self.fail(f"glued value {key!r} has nothing to show inline")
        if name == "glue:math":
            data = self.value(body)
            latex = str(data.get("text/latex", data.get("text/plain", ""))).strip().strip("$")
            return f"${latex}$"
        if name in ("doc", "ref", "term", "numref", "any"):
            return self.xref(name, body)
        if name == "math":
            return f"${body}$"
        if name in ("sub", "sup", "kbd"):
            return f"<{name}>{escape(body)}</{name}>"
        if name in ("abbr", "guilabel", "menuselection", "file", "samp", "command", "program"):
            shown = self.split_target(body)[0] or body
            return f"`{shown}`" if name in ("file", "samp", "command", "program") else escape(shown.split(" (")[0])
        if name == "download":
            label, target = self.split_target(body)
            path = posixpath.normpath(posixpath.join(posixpath.dirname(self.docname), target))
            return f"[{escape(label or posixpath.basename(target))}]({self.inventory.repo}/blob/main/{path})"
        raise self.fail(f"the role {{{name}}} has no plain-markdown form in the reader edition")

    @staticmethod
    def split_target(body: str) -> tuple[str, str]:
        m = _TARGET.match(body)
        return (m.group("text").strip(), m.group("target").strip()) if m else ("", body.strip())

    def xref(self, kind: str, body: str) -> str:
        inv = self.inventory
        text, target = self.split_target(body)
        if kind == "doc" or (kind == "any" and self.doc_name(target) in inv.titles):
            doc = self.doc_name(target)
            if doc not in inv.titles:
                raise self.fail(f"{{doc}} points at {target!r}, which is no page of the book")
            return f"[{text or inv.titles[doc]}]({inv.url(doc)})"
        if kind == "term":
            hit = inv.terms.get(target.lower())
            if hit is None:
                raise self.fail(f"{{term}} {target!r} is not in the glossary")
            return f"[{text or target}]({inv.url(*hit)})"
        label = inv.labels.get(target) or inv.labels.get(target.lower())
        if label is None:
            raise self.fail(f"{{{kind}}} points at the label {target!r}, which no page defines")
        doc, anchor, title = label
        shown = text.replace("{number}", title).replace("%s", title) if text else title
        return f"[{shown}]({inv.url(doc, anchor)})"

    def doc_name(self, target: str) -> str:
        target = re.sub(r"\.(md|ipynb)$", "", target)
        if target.startswith("/"):
            return posixpath.normpath(target.lstrip("/"))
        return posixpath.normpath(posixpath.join(posixpath.dirname(self.docname), target))

    def link(self, target: str) -> str:
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I) or target.startswith(("#", "/")):
            return target
        path, _, anchor = target.partition("#")
        if re.search(r"\.(md|ipynb)$", path):
            doc = self.doc_name(path)
            if doc not in self.inventory.titles:
                raise self.fail(f"a link points at {target!r}, which is no page of the book")
            return self.inventory.url(doc, anchor)
        full = posixpath.normpath(posixpath.join(posixpath.dirname(self.docname), path))
        if re.search(r"\.(png|jpe?g|gif|svg|webp)$", path, re.I):  # an image: its bytes, not GitHub's page
            owner, name = _owner_repo(self.inventory.repo)
            return f"https://raw.githubusercontent.com/{owner}/{name}/main/{full}"
        return f"{self.inventory.repo}/blob/main/{full}" + (f"#{anchor}" if anchor else "")

    # blocks ---------------------------------------------------------------------------------------------------
    def text_block(self, lines: list[str]) -> str:
        kept = [ln for ln in lines if not re.fullmatch(r"\s*\([^()\s]+\)=\s*", ln) and not ln.startswith("%")]
        text = "\n".join(kept)
        if re.search(r"\{\{.*?\}\}", text):
            raise self.fail("a {{ substitution }} has no plain-markdown form in the reader edition")
        for line in kept:
            if m := _HEADING.match(line):
                self.level = len(m.group(1))
        return self.inline(text)

    def convert(self, lines: list[str], top: bool = False) -> list[str | Gate]:
        parts: list[str | Gate] = []
        for kind, block in _blocks(lines):
            if kind == "text":
                parts.append(self.text_block(block))
            elif kind == "fence":
                parts.append("\n".join(block))
            elif block.name in _GATES:
                if not top:
                    raise self.fail(f"{{{block.name}}} inside another directive")
                parts.append(Gate(block.name, block.arg, block.options))
                if block.body:
                    parts.extend(self.convert(block.body))
            else:
                parts.append(self.directive(block))
        return parts

    def markdown(self, lines: list[str]) -> str:
        parts = self.convert(lines)
        if any(isinstance(p, Gate) for p in parts):
            raise self.fail("a gated exercise or solution inside another directive")
        return _join([p for p in parts if isinstance(p, str)])

    def directive(self, d: Directive) -> str:
        name = d.name
        if name in _ADMONITIONS or name == "admonition":
            title = d.arg if name == "admonition" else _ADMONITIONS[name]
            body = d.body if name == "admonition" or not d.arg else [d.arg, *d.body]
            head = f"**{self.inline(title)}**" if title else ""
            return _quote(_join([head, self.markdown(body)]))
        if name == "dropdown":
            return _details(self.inline(d.arg) or "Details", self.markdown(d.body))
        if name == "tab-set":
            items = [b for kind, b in _blocks(d.body) if kind == "directive"]
            if any(b.name != "tab-item" for b in items):
                raise self.fail("a tab set holds something other than tab items")
            return _join([_join([f"**{self.inline(b.arg)}**", self.markdown(b.body)]) for b in items])
        if name == "tab-item":
            return _join([f"**{self.inline(d.arg)}**", self.markdown(d.body)])
        if name == "exercise":
            return self.exercise(d.arg, d.options, self.markdown(d.body))
        if name == "solution":
            return _details(self.solution_title(d.arg), self.markdown(d.body))
        if name in ("code-block", "code", "sourcecode"):
            return "\n".join([f"```{d.arg}", *d.body, "```"])
        if name == "math":
            return "\n".join(["$$", *d.body, "$$"])
        if name in ("figure", "image"):
            caption = self.markdown(d.body) if name == "figure" else ""
            alt = d.options.get("alt", "") or re.sub(r"\s+", " ", caption)[:120]
            img = f"![{escape(alt)}]({self.link(d.arg)})"
            return _join([img, f"*{caption}*" if caption else ""])
        if name in ("glue", "glue:", "glue:any", "glue:figure", "glue:md", "glue:math"):
            return self.glue_block(d)
        if name == "raw" and d.arg.strip() == "html":
            return "\n".join(d.body)
        raise self.fail(f"the directive {{{name}}} has no plain-markdown form in the reader edition")

    def glue_block(self, d: Directive) -> str:
        key = d.arg.split(":")[0] if d.name == "glue:md" else d.arg
        data = self.value(key)
        caption = self.markdown(d.body) if d.body else ""
        if d.name == "glue:math" or ("text/latex" in data and "text/markdown" not in data):
            shown = "$$\n" + str(data.get("text/latex", data.get("text/plain", ""))).strip().strip("$") + "\n$$"
        elif image := next((m for m in ("image/png", "image/jpeg", "image/svg+xml") if m in data), None):
            ext = {"image/png": "png", "image/jpeg": "jpg", "image/svg+xml": "svg"}[image]
            name = f"{re.sub(r'[^A-Za-z0-9_.-]', '_', key)}.{ext}"
            payload = data[image]
            self.attachments[name] = {image: "".join(payload) if isinstance(payload, list) else payload}
            alt = d.options.get("alt", "") or re.sub(r"\s+", " ", caption)[:120] or f"Plot: {key}"
            shown = f"![{escape(alt)}](attachment:{name})"
        elif "text/markdown" in data:
            shown = escape_dollars(str(data["text/markdown"]).strip())
        elif "text/html" in data:
            shown = str(data["text/html"]).strip()
        elif "text/plain" in data:
            shown = "```\n" + str(data["text/plain"]).rstrip() + "\n```"
        else:
            raise self.fail(f"glued value {key!r} has nothing to show")
        return _join([shown, f"*{caption}*" if caption else ""])

    def exercise(self, arg: str, options: dict[str, str], body: str) -> str:
        number = len(self.exercises) + 1
        label = options.get("label") or options.get("name") or f"exercise-{number}"
        self.exercises[label] = number
        level = min(self.level + 1, 6)
        title = f"Exercise {number}" + (f": {self.inline(arg)}" if arg else "")
        return _join([f"{'#' * level} {title}", body])

    def solution_title(self, label: str) -> str:
        number = self.exercises.get(label.strip())
        return f"Solution to exercise {number}" if number else "Solution"


def _join(parts: Iterable[str]) -> str:
    return "\n\n".join(p.strip("\n") for p in parts if p and p.strip())


def _quote(text: str) -> str:
    return "\n".join(f"> {line}" if line.strip() else ">" for line in text.splitlines())


def _details(summary: str, body: str) -> str:
    # The blank lines let Jupyter and Colab parse the markdown inside the HTML block.
    return f"<details>\n<summary>{summary}</summary>\n\n{body.strip()}\n\n</details>"


def _new_id() -> str:
    return uuid.uuid4().hex[:8]


def note_cell(title: str, url: str, site: str) -> nbformat.NotebookNode:
    text = (
        f"> **Reader edition for Colab and Jupyter.** This is the chapter [{title}]({url}) of the "
        f"[xlaport field guide]({site}), with the book's markup turned into plain markdown. The numbers in the text "
        "are those of the published run (the one on the website); when you run the cells, your run prints its own, "
        "which can differ on another machine or with other parameters."
    )
    cell = nbformat.v4.new_markdown_cell(text)
    cell.id = _new_id()
    cell.metadata["tags"] = ["reader-edition"]
    return cell


def convert(executed: nbformat.NotebookNode, docname: str, inventory: Inventory) -> nbformat.NotebookNode:
    """The reader edition of one executed chapter (``docname`` such as ``notebooks/distributed``)."""
    chapter = _Chapter(docname=docname, inventory=inventory, glue=glue_values(executed))
    nb = copy.deepcopy(executed)
    cells: list[nbformat.NotebookNode] = []
    solution: list[str] | None = None  # the solution being folded, while inside solution-start/-end
    solution_label = ""

    def emit(text: str, like: nbformat.NotebookNode | None = None) -> None:
        if not text.strip():
            return
        cell = nbformat.v4.new_markdown_cell(text)
        cell.id = like.get("id", _new_id()) if like is not None else _new_id()
        if any(c.get("id") == cell.id for c in cells):
            cell.id = _new_id()
        if chapter.attachments:
            cell.attachments = chapter.attachments
            chapter.attachments = {}
        tags = [t for t in (like.metadata.get("tags", []) if like is not None else []) if t != SETUP_TAG]
        if tags:
            cell.metadata["tags"] = tags
        cells.append(cell)

    for index, cell in enumerate(nb.cells):
        chapter.where = f", cell {index}"
        tags = set(cell.metadata.get("tags", []))
        if cell.cell_type == "code":
            if solution is not None:
                solution.append("```python\n" + cell.source.rstrip() + "\n```")
                continue
            cell.outputs = []
            cell.execution_count = None
            cell.metadata.pop("papermill", None)
            cell.metadata.pop("execution", None)
            cells.append(cell)
            continue
        if SETUP_TAG in tags or cell.cell_type != "markdown":
            cell.metadata.pop("papermill", None)
            cells.append(cell)
            continue
        if "remove-cell" in tags:
            continue
        pending: list[str] = []
        for part in chapter.convert(cell.source.splitlines(), top=True):
            if isinstance(part, str):
                (solution if solution is not None else pending).append(part)
                continue
            if part.name == "solution-start":
                emit(_join(pending), cell)
                pending, solution, solution_label = [], [], part.arg
            elif part.name == "solution-end":
                if solution is None:
                    raise chapter.fail("{solution-end} without a {solution-start}")
                emit(_details(chapter.solution_title(solution_label), _join(solution)))
                solution = None
            elif part.name == "exercise-start":
                pending.append(chapter.exercise(part.arg, part.options, ""))
            # exercise-end closes nothing in plain markdown
        if cell.get("attachments"):
            chapter.attachments.update(cell.attachments)
        emit(_join(pending), cell)
    if solution is not None:
        raise chapter.fail("{solution-start} without a {solution-end}")

    title = chapter.inventory.titles.get(docname) or _first_heading(cells[0].source if cells else "") or docname
    at = 1 if cells and cells[0].cell_type == "markdown" else 0
    cells.insert(at, note_cell(title, inventory.url(docname), inventory.base))
    nb.cells = cells
    nb.metadata.pop("papermill", None)
    nb.metadata.setdefault("xlaport", {})["edition_of"] = f"{docname}.ipynb"
    nbformat.validate(nb)
    return nb


# --- checks ---------------------------------------------------------------------------------------------------------

_LEFT_ROLE = re.compile(r"\{[A-Za-z][\w:+.-]*\}$")


def leftovers(nb: nbformat.NotebookNode) -> list[str]:
    """Book markup a CommonMark renderer would show as text: roles, directive fences, directive options."""
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark")
    found = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "markdown":
            continue
        for tok in md.parse(cell.source):
            if tok.type == "fence" and tok.info.strip().startswith("{"):
                found.append(f"cell {i}: directive fence {tok.markup}{tok.info.strip()}")
            for line in (tok.content or "").splitlines() if tok.type in ("inline", "html_block") else []:
                if re.match(r"\s*:{3,}", line) or re.match(r"\s*:[\w-]+:(\s|$)", line):
                    found.append(f"cell {i}: directive line {line.strip()!r}")
            kids = tok.children or []
            for a, b in itertools.pairwise(kids):
                if a.type == "text" and b.type == "code_inline" and _LEFT_ROLE.search(a.content):
                    found.append(f"cell {i}: role {_LEFT_ROLE.search(a.content).group(0)}`{b.content}`")  # type: ignore[union-attr]
    return found


def code_cells(nb: nbformat.NotebookNode) -> list[str]:
    return [c.source for c in nb.cells if c.cell_type == "code"]


# --- writing and running --------------------------------------------------------------------------------------------


def write_edition(executed: Path, out_dir: Path, inventory: Inventory) -> Path:
    """Convert one executed chapter into ``out_dir/notebooks/<stem>.ipynb``, checked for leftover markup."""
    try:
        nb = nbformat.read(executed, as_version=4)
    except (OSError, ValueError) as exc:  # not there, or half-written by a run in progress
        raise EditionError(f"notebooks/{executed.stem}: cannot read {executed}: {exc}") from exc
    edition = convert(nb, f"notebooks/{executed.stem}", inventory)
    if problems := leftovers(edition):
        raise EditionError(f"notebooks/{executed.stem}: book markup left in the edition: {'; '.join(problems[:5])}")
    out = out_dir / FOLDER / executed.name
    out.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(edition, out)
    return out


def write_editions(
    executed_dir: Path, out_dir: Path, inventory: Inventory, stems: Iterable[str] | None = None
) -> tuple[list[Path], list[str]]:
    """Every chapter of ``executed_dir`` (or ``stems``) into ``out_dir``: the editions written and one line for
    each chapter that could not be converted."""
    paths = sorted(executed_dir.glob("*.ipynb"))
    if stems is not None:
        wanted = list(stems)
        have = {p.stem: p for p in paths}
        errors = [f"{s}: no executed copy in {executed_dir}" for s in wanted if s not in have]
        paths = [have[s] for s in wanted if s in have]
    else:
        errors = []
    written = []
    for path in paths:
        try:
            written.append(write_edition(path, out_dir, inventory))
        except EditionError as exc:
            errors.append(str(exc))
    return written, errors


def run_edition(path: Path, timeout: int, progress: Callable[[str], None] = print) -> float:
    """Execute an edition top to bottom in a fresh kernel, as a Colab runtime would; the setup cells (tag
    ``colab-setup``) are skipped, as a runtime that already has the packages would. Returns the seconds it took."""
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code" and SETUP_TAG in cell.metadata.get("tags", []):
            cell.metadata.setdefault("tags", []).append("skip-execution")
            cell.source = "# (Colab setup skipped: the packages are installed)"
    start = time.perf_counter()
    client = NotebookClient(
        nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
    )
    client.execute()
    seconds = time.perf_counter() - start
    progress(f"{path.stem}: ran top to bottom in {seconds:.0f} s")
    return seconds


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("stems", nargs="*", help="chapters to convert (default: every executed chapter)")
    ap.add_argument("--executed", type=Path, default=EXECUTED, help="executed notebooks (default: %(default)s)")
    ap.add_argument(
        "--out", type=Path, default=ROOT / "_build" / "editions", help="output folder (default: %(default)s)"
    )
    ap.add_argument("--run", action="store_true", help="then execute each edition in a fresh kernel, as Colab would")
    ap.add_argument(
        "--timeout", type=int, default=1800, help="seconds a cell may run with --run (default: %(default)s)"
    )
    args = ap.parse_args(argv)
    if not args.executed.is_dir():
        print(f"error: no executed notebooks in {args.executed} (run 'make notebooks' first)", file=sys.stderr)
        return 2
    written, errors = write_editions(args.executed, args.out, Inventory.from_sources(), args.stems or None)
    for line in errors:
        print(f"error: {line}", file=sys.stderr)
    for path in written:
        print(f"wrote {os.path.relpath(path, ROOT)}")
    if not args.run:
        return 1 if errors else 0
    failed = []
    for path in written:
        try:
            run_edition(path, args.timeout)
        except Exception as exc:  # a failing cell: name the chapter and go on with the others
            failed.append(path.stem)
            text = re.sub(r"\x1b\[[0-9;]*m", "", str(exc)).strip()  # the kernel's traceback is coloured
            print(f"{path.stem}: FAILED: {text.splitlines()[-1] if text else repr(exc)}")
    print(
        f"{len(written) - len(failed)} of {len(written)} editions ran top to bottom"
        + (f"; failed: {failed}" if failed else "")
    )
    return 1 if failed or errors else 0


if __name__ == "__main__":
    sys.exit(main())
