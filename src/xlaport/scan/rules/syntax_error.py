"""``syntax-error``: File does not parse.

Python files that do not parse as Python 3 (often Python 2 code) and `pyproject.toml` files that are not
valid TOML: the scanner could not look into them.
"""

from __future__ import annotations

import re
import tomllib

from ..registry import Hit, file_check
from ..rule import Rule

RULE = Rule(
    id="syntax-error",
    title="File does not parse",
    severity="note",
    category="unparsed",
    why="The file is not Python 3 (often Python 2), or a `pyproject.toml` is not TOML, so no other rule could look at it.",
    fix="Port it to Python 3 first (TorchTPU 0.2.0 needs Python 3.11+), or list it under `exclude` in `[tool.xlaport]`.",
    chapter="",
    see_also=(),
    position=16,
    invalid=("print 'hello'\n",),
    valid=("print('hello')\n",),
)


_PY2 = re.compile(r"^\s*(print\s+[\"'\w]|exec\s+[\"'\w]|except\s+[\w.]+\s*,\s*\w+\s*:)", re.M)


def from_syntax_error(e: SyntaxError, text: str) -> Hit:
    """The finding for a Python file that ``ast.parse`` refused."""
    line = e.lineno or 1
    py2 = " (Python 2 syntax?)" if _PY2.search(text) else ""
    return Hit(RULE.id, line, max((e.offset or 1) - 1, 0), f"does not parse as Python 3: {e.msg} at line {line}{py2}")


@file_check(RULE.id, "pyproject")
def invalid_toml(text: str, kind: str) -> list[Hit]:
    try:
        tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return [Hit(RULE.id, 1, 0, "pyproject.toml is not valid TOML")]
    return []
