"""Suppression comments, read from comments only.

``# xlaport: ignore[rule-a, rule-b]`` (or ``# xlaport: ignore`` for every rule) silences findings on its line;
``# xlaport: ignore-file`` (optionally ``[rules]``) silences a whole file. Only a real comment counts: in Python the
``COMMENT`` tokens of :mod:`tokenize` (so the same words inside a string or a docstring suppress nothing), in
requirements and ``pyproject.toml`` files a ``#`` outside a quoted string, in CUDA sources a ``//`` comment. A rule
id the scanner does not know is not silently accepted: :func:`read` returns it with its line, and the scan reports
it as a warning on the file.
"""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Iterator
from dataclasses import dataclass, field

__all__ = ["Suppressions", "comments", "read"]

_DIRECTIVE = re.compile(r"xlaport:\s*ignore(-file)?(?:\[([^\]\n]*)\])?")


@dataclass(frozen=True)
class Suppressions:
    """What a file's comments silence: per line (``None``: every rule) and for the whole file."""

    per_line: dict[int, frozenset[str] | None] = field(default_factory=dict)
    file_rules: frozenset[str] | None = frozenset()  # None: the whole file, every rule
    unknown: tuple[tuple[int, str], ...] = ()  # (line, rule id) named in a comment but not a rule

    def silences(self, rule: str, line: int) -> bool:
        if self.file_rules is None or rule in self.file_rules:
            return True
        if line in self.per_line:
            rules = self.per_line[line]
            return rules is None or rule in rules
        return False

    def warnings(self) -> list[str]:
        return [f"line {line}: unknown rule id {rid!r} in an xlaport suppression comment" for line, rid in self.unknown]


NONE = Suppressions()


def comments(text: str, kind: str) -> Iterator[tuple[int, str]]:
    """(line, text) of each comment in ``text``; ``kind`` is the scanner's file kind (py, cu, req, pyproject)."""
    if kind == "py":
        yield from _python_comments(text)
    elif kind == "cu":
        for n, line in enumerate(text.splitlines(), 1):
            at = _outside_quotes(line, "//")
            if at >= 0:
                yield n, line[at:]
    else:
        for n, line in enumerate(text.splitlines(), 1):
            at = _outside_quotes(line, "#") if kind == "pyproject" else _requirement_comment(line)
            if at >= 0:
                yield n, line[at:]


def _python_comments(text: str) -> Iterator[tuple[int, str]]:
    """COMMENT tokens; on a file tokenize cannot finish (a syntax error), the comments before the error."""
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.COMMENT:
                yield tok.start[0], tok.string
    except (tokenize.TokenError, SyntaxError):
        return


def _requirement_comment(line: str) -> int:
    """pip's rule: ``#`` starts a comment at the start of a line or after whitespace."""
    for i, ch in enumerate(line):
        if ch == "#" and (i == 0 or line[i - 1].isspace()):
            return i
    return -1


def _outside_quotes(line: str, marker: str) -> int:
    """Where ``marker`` first appears outside a single- or double-quoted string on the line, or -1."""
    quote = ""
    i = 0
    while i < len(line):
        ch = line[i]
        if quote:
            if ch == "\\" and quote == '"':
                i += 2
                continue
            if ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
        elif line.startswith(marker, i):
            return i
        i += 1
    return -1


def read(text: str, kind: str, known: frozenset[str]) -> Suppressions:
    """The suppressions in ``text``'s comments; rule ids outside ``known`` are listed in ``unknown``."""
    if "xlaport:" not in text:
        return NONE
    per_line: dict[int, frozenset[str] | None] = {}
    file_rules: set[str] = set()
    file_all = False
    unknown: list[tuple[int, str]] = []
    for line, comment in comments(text, kind):
        for m in _DIRECTIVE.finditer(comment):
            rules = None
            if m.group(2) is not None:
                rules = frozenset(r.strip() for r in m.group(2).split(",") if r.strip())
                unknown += [(line, r) for r in sorted(rules - known)]
            if m.group(1):
                if rules is None:
                    file_all = True
                else:
                    file_rules |= rules
            else:
                prev = per_line.get(line, frozenset())
                per_line[line] = None if rules is None or prev is None else prev | rules
    return Suppressions(per_line, None if file_all else frozenset(file_rules), tuple(unknown))
