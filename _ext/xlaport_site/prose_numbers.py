"""Every number in a chapter's prose is glued from the run, a parameter, or a sourced constant.

In a notebook's prose (paragraphs, titles, list items, table cells: not code, maths, links, cross-references, glued
values, cell outputs or an exercise's statement, whose givens its own cell sets) a number may stand only where a
reader can trace it:

- a glued value (``{glue:text}`key:.1f` ``), computed by the chapter's own code;
- a version (``torch 2.9``, ``torch_tpu 0.2.0``, ``AWS Neuron 2.33``), a date (``read 2026-12-01``), a numbered label
  (``Fix 2``, ``Exercise 1``) or a heading's own number (``2. Hand-written attention``);
- a value of the chapter's parameters cell (the code cell tagged ``parameters``), as written there
  (``steps = 20`` allows "20");
- an entry of the allow-list (config ``xlaport_prose_numbers_allow``, a TOML file with one table per chapter:
  ``"number" = "where it comes from"``).

Anything else warns ``xlaport.prose-number`` (checked as each page is read). Allow-list entries that match no
number, tables for no chapter and entries without a source warn ``xlaport.allow-list`` when the build finishes.
"""

from __future__ import annotations

import ast
import re

from docutils import nodes
from sphinx.application import Sphinx

from ._nodes import (
    cell_tags,
    inside,
    is_cell,
    is_notebook,
    listed,
    listed_check,
    per_doc,
    prose_blocks,
    prose_text,
    warn,
    warn_file,
)

OPTION, KEY = "xlaport_prose_numbers_allow", "xlaport_prose_used"  # the allow-list's config; what each page used
EXERCISES = {"exercise_node", "exercise_enumerable_node"}  # sphinx-exercise's {exercise} directive

# A label followed by its number: "Fix 2", "Exercise 1", "sections 2-4", "exit status 2", "step 0".
_LABEL = re.compile(
    r"(?i)\b(?:fix(?:es)?|exercises?|solutions?|sessions?|steps?|parts?|cases?|figures?|tables?|options?|stages?|levels?"
    r"|rules?|sections?|mechanisms?|status|practices?|tokens?|chapters?|rows?|columns?|passes|pass|examples?|cells?|seeds?)"
    r"\s+\d+(?:\s*(?:,|and|or|-|–|to)\s*\d+)*\b"
)
_HEADING_NUMBER = re.compile(r"^\s*\d+\.")  # "2. Hand-written attention"
_PRODUCTS = (
    r"torch|PyTorch|torch_xla|PyTorch/XLA|torch_tpu|TorchTPU|torch-neuronx|TorchNeuron|Neuron|Python|JAX|jax|"
    r"jaxlib|Triton|CUDA|transformers|diffusers|numpy|NumPy|myst-nb|Jupyter Book|scikit-learn|libtpu|XLA|SDK|"
    r"release|version|Ubuntu|Debian|papermill|Sphinx|sphinx-exercise|Chromium|Playwright|vLLM|Helion|NKI|"
    r"Pallas|PJRT|StableHLO|HF|Hugging Face|DLAMI"
)
_VERSION = re.compile(
    rf"(?:\b(?:{_PRODUCTS})\s*(?:≥|>=|<=|==)?\s*v?)(\d+(?:\.\d+)+(?:\.\w+)?|\d+\.x)(?:\s*(?:/|and|or|–|-|to)\s*\d+(?:\.\d+)+)*"
)
_DATE = re.compile(r"(?<![\w.])\d{4}-\d{2}-\d{2}(?![\w.])")  # 2026-12-01: when a cited page was read
_BARE_VERSION = re.compile(r"(?<![\w.])\d+\.\d+\.\d+(?:\.\d+)?(?![\w.])")  # 0.2.0, 2.14.3.0: versions by shape
_NUMBER = re.compile(r"(?<![\w.#/@-])\d+(?:[.,]\d+)*(?![\w])")


def numbers_in(text: str, heading: bool = False) -> list[tuple[str, str]]:
    """(number, the words around it) for each number of ``text`` that is not a label, a version or a heading's own."""
    if heading:
        text = _HEADING_NUMBER.sub(" ", text)
    for pattern in (_LABEL, _VERSION, _DATE, _BARE_VERSION):
        text = pattern.sub(" ", text)
    found = []
    for m in _NUMBER.finditer(text):
        found.append((m.group(), " ".join(text[max(0, m.start() - 40) : m.end() + 30].split())))
    return found


def parameter_values(source: str) -> set[str]:
    """The literal numbers of a parameters cell, as prose would write them (20, 0.4, 3.0 and 3, 1,000 and 1000)."""
    values: set[str] = set()
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return values
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
            v = node.value
            values |= {str(v), f"{v:,}"}
            if isinstance(v, float) and v.is_integer():
                values |= {str(int(v)), f"{int(v):,}"}
    return values


def load_allowed(app: Sphinx) -> dict[str, dict[str, str]]:
    """chapter stem -> {number: source}, from the TOML file config ``xlaport_prose_numbers_allow`` names."""
    return listed(app, OPTION)


def check(app: Sphinx, doctree: nodes.document) -> None:
    if not is_notebook(doctree):
        return
    docname = app.env.docname
    stem = docname.rsplit("/", 1)[-1]
    allowed = load_allowed(app).get(stem, {})
    params: set[str] = set()
    for cell in doctree.findall(is_cell):
        if "parameters" in cell_tags(cell):
            params |= parameter_values(cell.astext())
    used: set[str] = set()
    for block in prose_blocks(doctree):
        if inside(block, lambda n: type(n).__name__ in EXERCISES):
            continue
        for number, context in numbers_in(prose_text(block), heading=isinstance(block, nodes.title)):
            if number in params:
                continue
            if number in allowed:
                used.add(number)
                continue
            warn(
                block,
                "prose-number",
                f"{number!r} in “…{context}…” is not glued, a parameter or a sourced constant: glue it from the "
                f"chapter's code, or add it with its source to [{stem}] in {app.config.xlaport_prose_numbers_allow}",
            )
    per_doc(app.env, KEY)[docname] = used


def stale_entries(app: Sphinx, path: str, records: dict[str, set[str]]) -> None:
    """Allow-list entries that match no number any more, tables for no chapter, entries without a source."""
    name = app.config.xlaport_prose_numbers_allow
    chapters: dict[str, set[str]] = {}
    for docname, used in records.items():
        chapters.setdefault(docname.rsplit("/", 1)[-1], set()).update(used)
    for stem, entries in load_allowed(app).items():
        if stem not in chapters:
            warn_file(path, "allow-list", f"{name}: [{stem}] is not a chapter")
            continue
        for number, source in entries.items():
            if not isinstance(source, str) or len(source.strip()) < 8:
                warn_file(path, "allow-list", f"{name}: [{stem}] {number!r} needs its source (a sentence or URL)")
            elif number not in chapters[stem]:
                warn_file(path, "allow-list", f"{name}: [{stem}] {number!r} matches no number any more")


def setup(app: Sphinx) -> None:
    listed_check(app, OPTION, KEY, check, stale_entries)
