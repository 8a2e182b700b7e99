"""Link each glossary term at its first use in each chapter (or check that it is linked).

The terms are those of the ``{glossary}`` block in ``book/glossary.md``. In each chapter's markdown cells, the first
prose use of a term (not in code, a heading, a link, maths or a directive's option line) should be a ``{term}``
link; later uses stay plain. ``tests/site/test_glossary_links.py`` runs the check.

    python scripts/glossary_links.py            # add the missing links to notebooks/*.ipynb
    python scripts/glossary_links.py --check    # exit 1 and list the first uses that are not linked
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

from nbfiles import INLINE_MARKUP, chapters, dump, source_lines

ROOT = Path(__file__).resolve().parents[1]
# Spans a link must never go into: the inline markup that is not prose, and HTML tags.
_PROTECTED = re.compile("|".join([*(p.pattern for p in INLINE_MARKUP), r"<[^>\n]+>"]))
_SKIP_LINE = re.compile(r"^\s*(#|```|:::|:[\w-]+:|\|)")  # headings, fences, directive options, table rows


def terms(glossary: Path = ROOT / "book" / "glossary.md") -> list[str]:
    """The terms defined in the glossary's ``{glossary}`` block, in order."""
    text = glossary.read_text()
    m = re.search(r"```\{glossary\}\n(.*?)\n```", text, re.S)
    if not m:
        raise SystemExit(f"{glossary}: no {{glossary}} block")
    return [line.strip() for line in m[1].splitlines() if line and not line[0].isspace()]


def _pattern(term: str) -> re.Pattern[str]:
    # Plurals count as uses ("lazy tensors", "graph breaks"); a term inside a longer name does not
    # ("XLA:CPU", "PyTorch/XLA", "torch_xla", "FSDPv2-style" is fine).
    return re.compile(rf"(?<![\w/.:-]){re.escape(term)}(s?)(?![\w:/])", re.I if term.islower() else 0)


def _segments(line: str) -> list[tuple[int, int]]:
    """Unprotected (start, end) ranges of one line."""
    out, pos = [], 0
    for m in _PROTECTED.finditer(line):
        out.append((pos, m.start()))
        pos = m.end()
    out.append((pos, len(line)))
    return out


def _linked(term: str, line: str) -> bool:
    return bool(re.search(rf"\{{term\}}`[^`]*<{re.escape(term)}>`|\{{term\}}`{re.escape(term)}`", line, re.I))


def first_uses(nb: dict[str, Any], vocabulary: list[str]) -> dict[str, tuple[int, int, bool]]:
    """term -> (cell index, line index, linked) of its first use in the notebook's markdown."""
    found: dict[str, tuple[int, int, bool]] = {}
    for ci, cell in enumerate(nb["cells"]):
        if cell["cell_type"] != "markdown" or "colab-setup" in cell["metadata"].get("tags", []):
            continue
        stack: list[tuple[str, bool]] = []  # open fences: (fence, holds code); MyST directives hold prose
        for li, line in enumerate("".join(cell["source"]).split("\n")):
            m = re.match(r"\s*(`{3,}|~{3,}|:{3,})(.*)", line)
            if m:
                info = m[2].strip()
                if stack and (stack[-1][1] or not info) and m[1] == stack[-1][0] and not info:
                    stack.pop()
                elif not (stack and stack[-1][1]):
                    stack.append((m[1], not info.startswith("{") or info.startswith(("{code", "{literal"))))
                continue
            if stack and stack[-1][1]:
                continue
            for term in vocabulary:
                if term in found:
                    continue
                if _linked(term, line):
                    found[term] = (ci, li, True)
                    continue
                if _SKIP_LINE.match(line):
                    continue
                pat = _pattern(term)
                if any(pat.search(line, a, b) for a, b in _segments(line)):
                    found[term] = (ci, li, False)
    return found


def link(nb: dict[str, Any], vocabulary: list[str]) -> list[str]:
    """Link each term's first unlinked use in place; return the terms linked."""
    done = []
    for term, (ci, li, linked) in first_uses(nb, vocabulary).items():
        if linked:
            continue
        cell = nb["cells"][ci]
        lines = "".join(cell["source"]).split("\n")
        line, pat = lines[li], _pattern(term)
        for a, b in _segments(line):
            m = pat.search(line, a, b)
            if m:
                word = m[0]
                role = f"{{term}}`{word}`" if word == term else f"{{term}}`{word} <{term}>`"
                lines[li] = line[: m.start()] + role + line[m.end() :]
                break
        cell["source"] = source_lines("\n".join(lines))
        done.append(term)
    return done


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="change nothing; exit 1 if a first use is not linked")
    ap.add_argument("notebooks", nargs="*", type=Path, help="default: notebooks/*.ipynb")
    args = ap.parse_args(argv)
    vocabulary = terms()
    missing = []
    for path in args.notebooks or chapters():
        nb = json.loads(path.read_text())
        if args.check:
            missing += [f"{path.stem}: {t}" for t, (_, _, ok) in first_uses(nb, vocabulary).items() if not ok]
            continue
        linked = link(nb, vocabulary)
        if linked:
            path.write_text(dump(nb))
            print(f"{path.stem}: linked {', '.join(linked)}")
    if missing:
        print("first uses not linked to the glossary:\n  " + "\n  ".join(missing))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
