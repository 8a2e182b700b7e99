#!/usr/bin/env python
"""Every number in a chapter's prose is glued from the run, a parameter, or a sourced constant.

A chapter's markdown cells may contain numbers only where a reader can trace them:

- a glue reference (``{glue:text}`key:.1f` ``): computed by the chapter's own code;
- inside inline code, maths, a link, a URL or a role (``{doc}``, ``{ref}``): code, formulas and citations;
- a version (``torch 2.9``, ``torch_tpu 0.2.0``, ``AWS Neuron 2.33``), a numbered label (``Fix 2``,
  ``Exercise 1``, ``Profile A``) or an ordered-list marker;
- a value of the chapter's parameters cell, written as in that cell (``steps = 20`` allows "20");
- an entry in ``scripts/prose_numbers.toml`` for that chapter: the number and where it comes from.

Anything else fails the site build (``scripts/build_site.py``) and ``tests/site/test_prose_numbers.py``,
with the chapter, cell and the sentence around the number. Allow-list entries that no longer match
anything fail too, so the list cannot go stale.

    python scripts/prose_numbers.py            # check every chapter; exit 1 with the findings
"""

from __future__ import annotations

import ast
import json
import re
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

from nbfiles import INLINE_MARKUP

ROOT = Path(__file__).resolve().parents[1]
ALLOW_FILE = ROOT / "scripts" / "prose_numbers.toml"

_FENCE = re.compile(r"^(`{3,}|~{3,}).*?^\1[ \t]*$", re.S | re.M)
_REF_TARGET = re.compile(r"^\([\w:.-]+\)=\s*$", re.M)
_DIRECTIVE_LINE = re.compile(r"^\s*(?::{3,}|`{3,})\{?[\w:-]*\}?.*$|^\s*:[\w-]+:.*$", re.M)
_LIST_MARKER = re.compile(r"^\s*\d+\.\s", re.M)
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{3,}.*$", re.M)
# A label followed by its number: "Fix 2", "Exercise 1", "sections 2-4", "exit status 2", "step 0".
_LABEL = re.compile(
    r"(?i)\b(?:fix(?:es)?|exercises?|solutions?|sessions?|steps?|parts?|cases?|figures?|tables?|options?|stages?|levels?"
    r"|rules?|sections?|mechanisms?|status|practices?|tokens?|chapters?|rows?|columns?|passes|pass|examples?|cells?|seeds?)"
    r"\s+\d+(?:\s*(?:,|and|or|-|–|to)\s*\d+)*\b"
)
_HEADING_NUMBER = re.compile(r"^(#+\s*)\d+\.", re.M)  # "## 2. Hand-written attention"
# Versions: a product name followed by a dotted version (or "Python 3.11", "v7x" is not a number anyway).
_PRODUCTS = (
    r"torch|PyTorch|torch_xla|PyTorch/XLA|torch_tpu|TorchTPU|torch-neuronx|TorchNeuron|Neuron|Python|JAX|jax|"
    r"jaxlib|Triton|CUDA|transformers|diffusers|numpy|NumPy|myst-nb|Jupyter Book|scikit-learn|libtpu|XLA|SDK|"
    r"release|version|Ubuntu|Debian|papermill|Sphinx|sphinx-exercise|Chromium|Playwright|vLLM|Helion|NKI|"
    r"Pallas|PJRT|StableHLO|HF|Hugging Face|DLAMI"
)
_VERSION = re.compile(
    rf"(?:\b(?:{_PRODUCTS})\s*(?:≥|>=|<=|==)?\s*v?)(\d+(?:\.\d+)+(?:\.\w+)?|\d+\.x)(?:\s*(?:/|and|or|–|-|to)\s*\d+(?:\.\d+)+)*"
)
_BARE_VERSION = re.compile(r"(?<![\w.])\d+\.\d+\.\d+(?:\.\d+)?(?![\w.])")  # 0.2.0, 2.14.3.0: versions by shape
_NUMBER = re.compile(r"(?<![\w.#/@-])\d+(?:[.,]\d+)*(?![\w])")


@dataclass(frozen=True)
class Finding:
    chapter: str
    cell: int
    number: str
    context: str

    def __str__(self) -> str:
        return f"{self.chapter} (markdown cell {self.cell}): {self.number!r} in “…{self.context}…”"


def strip_allowed(md: str) -> str:
    """The markdown with every place a number may appear freely blanked out."""
    for pattern in (
        _FENCE,
        *INLINE_MARKUP,
        _REF_TARGET,
        _DIRECTIVE_LINE,
        _TABLE_RULE,
        _LIST_MARKER,
        _HEADING_NUMBER,
        _LABEL,
        _VERSION,
        _BARE_VERSION,
    ):
        md = pattern.sub(" ", md)
    return md


def numbers_in(md: str) -> list[tuple[str, str]]:
    """(number, surrounding text) for each number left after :func:`strip_allowed`."""
    text = strip_allowed(md)
    out = []
    for m in _NUMBER.finditer(text):
        ctx = " ".join(text[max(0, m.start() - 40) : m.end() + 30].split())
        out.append((m.group(), ctx))
    return out


def parameter_values(cells: list[dict]) -> set[str]:
    """The literal values of the parameters cell, as prose would write them (20, 0.4, 3.0 and 3, 1,000 and 1000)."""
    values: set[str] = set()
    for cell in cells:
        if cell.get("cell_type") != "code" or "parameters" not in cell.get("metadata", {}).get("tags", []):
            continue
        try:
            tree = ast.parse("".join(cell["source"]))
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, (int, float))
                and not isinstance(node.value, bool)
            ):
                v = node.value
                values |= {str(v), f"{v:,}"}
                if isinstance(v, float) and v.is_integer():
                    values |= {str(int(v)), f"{int(v):,}"}
    return values


def load_allowed(path: Path = ALLOW_FILE) -> dict[str, dict[str, str]]:
    """chapter stem -> {number: source}; every entry must give a non-empty source."""
    if not path.exists():
        return {}
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    for chapter, entries in data.items():
        for number, source in entries.items():
            if not isinstance(source, str) or len(source.strip()) < 8:
                raise ValueError(f"{path.name}: [{chapter}] {number!r} needs its source (a sentence or URL)")
    return data


def check_chapter(path: Path, allowed: dict[str, str]) -> tuple[list[Finding], set[str]]:
    """Findings for one notebook, and the allow-list entries it used."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    cells = nb.get("cells", [])
    params = parameter_values(cells)
    findings, used = [], set()
    for i, cell in enumerate(cells):
        if cell.get("cell_type") != "markdown":
            continue
        for number, ctx in numbers_in("".join(cell.get("source", ""))):
            if number in params:
                continue
            if number in allowed:
                used.add(number)
                continue
            findings.append(Finding(path.stem, i, number, ctx))
    return findings, used


def check(notebooks: list[Path] | None = None, allow_file: Path = ALLOW_FILE) -> list[str]:
    """Every problem, one line each: untraceable numbers and allow-list entries that match nothing."""
    notebooks = notebooks if notebooks is not None else sorted((ROOT / "notebooks").glob("*.ipynb"))
    allowed = load_allowed(allow_file)
    problems: list[str] = []
    for path in notebooks:
        entries = allowed.get(path.stem, {})
        findings, used = check_chapter(path, entries)
        problems += [str(f) for f in findings]
        problems += [
            f"{path.stem}: allow-list entry {n!r} in {allow_file.name} matches no number any more"
            for n in sorted(set(entries) - used)
        ]
    stems = {p.stem for p in notebooks}
    problems += [f"{allow_file.name}: [{c}] is not a chapter" for c in sorted(set(allowed) - stems)]
    return problems


def main() -> int:
    problems = check()
    if problems:
        print("numbers in chapter prose that are not glued, parameters, or sourced constants:", file=sys.stderr)
        for p in problems:
            print("  " + p, file=sys.stderr)
        print(
            f"glue them from the chapter's code, or add them with their source to {ALLOW_FILE.relative_to(ROOT)}",
            file=sys.stderr,
        )
        return 1
    print("prose numbers: every number is glued, a parameter, or a sourced constant")
    return 0


if __name__ == "__main__":
    sys.exit(main())
