"""Words for numbers in messages and glued prose (torch-free)."""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["plural", "figures", "sci", "usd", "is_exact_zero_in_e", "by_ratio", "escape_dollars", "table_lines"]

_EXP_ZERO = re.compile(r"^-?0(\.0*)?e[+-]0+$")
_CODE_SPAN = re.compile(r"(`+).+?(?<!`)\1(?!`)", re.S)
_DOLLAR = re.compile(r"(?<!\\)\$")


def plural(n: int, word: str, many: str | None = None) -> str:
    """``"1 op"``, ``"3 ops"``, ``"0 ops"``: a count with its noun in the right number.

    ``many`` is the plural when adding ``s`` is wrong (``plural(2, "pass", "passes")``).
    """
    if isinstance(n, bool) or not isinstance(n, int):
        raise ValueError(f"plural() counts whole numbers, got {n!r}")
    if not word:
        raise ValueError("plural() needs a word")
    return f"{n:,} {word if n == 1 else (many or word + 's')}"


def times(n: int) -> str:
    """How often, in words: ``"once"``, ``"twice"``, ``"3 times"``, ``"0 times"``."""
    if isinstance(n, bool) or not isinstance(n, int):
        raise ValueError(f"times() counts whole numbers, got {n!r}")
    return {1: "once", 2: "twice"}.get(n, f"{n} times")


def figures(x: float) -> str:
    """A measured or estimated quantity as prose prints it: whole from 100 up (with thousands separators), three
    significant figures below (``"141"``, ``"18.5"``, ``"0.34"``), never ``"141.0"`` nor an exponent."""
    x = float(x)
    if x != x or x in (float("inf"), float("-inf")):
        return str(x)
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.3g}"


def sci(x: float, digits: int = 1) -> str:
    """A small error or difference in scientific notation (``"2.3e-07"``), and an exact zero as ``"0"``.

    Written for prose: ``f"{0.0:.1e}"`` reads ``0.0e+00``.
    """
    if isinstance(digits, bool) or not isinstance(digits, int) or digits < 0:
        raise ValueError(f"digits must be a whole number >= 0, got {digits!r}")
    x = float(x)
    return "0" if x == 0 else f"{x:.{digits}e}"


def usd(x: float) -> str:
    """Dollars as an editor prints an estimate: three significant figures, in millions from a million
    (``$3.93 million``), whole dollars below (``$166,119``), the sign before the dollar sign."""
    import math

    if not isinstance(x, (int, float)) or isinstance(x, bool) or math.isnan(x):
        raise ValueError(f"usd() takes a number, got {x!r}")
    if math.isinf(x):
        return "never" if x > 0 else "-∞"
    sign = "-" if x < 0 else ""
    a = abs(x)
    if a >= 1e6:
        return f"{sign}${a / 1e6:.3g} million"
    return f"{sign}${a:,.0f}"


def is_exact_zero_in_e(text: str) -> bool:
    """Whether ``text`` is an exact zero in exponent form (``0e+00``, ``-0.0e+00``): what ``f"{0.0:.1e}"`` writes and
    prose should write as ``0`` (the site's extension does; its reader check fails on what slips through)."""
    return bool(_EXP_ZERO.match(text.strip()))


def by_ratio(ratio: float, above: str, about: str, below: str, tolerance: float = 0.05) -> str:
    """The clause for whichever way a measured ratio came out: ``above`` past ``1 + tolerance``, ``about`` within
    ``tolerance`` of 1 (inclusive), ``below`` under ``1 - tolerance``.

    A sentence that compares two measurements then says what was measured, not what was expected.
    """
    if isinstance(ratio, bool) or not isinstance(ratio, (int, float)) or ratio != ratio or ratio < 0:
        raise ValueError(f"by_ratio() needs a ratio >= 0, got {ratio!r}")
    if isinstance(tolerance, bool) or not isinstance(tolerance, (int, float)) or not 0 <= tolerance < 1:
        raise ValueError(f"by_ratio(): tolerance must be in [0, 1), got {tolerance!r}")
    if ratio > 1 + tolerance:
        return above
    return about if ratio >= 1 - tolerance else below


def escape_dollars(markdown: str) -> str:
    """Markdown whose ``$`` signs are dollar signs: each one outside a code span gets a backslash (one already escaped
    is left alone), so MyST's dollar maths never reads a pair of prices (``$12.29 ... $1.89``) as a formula."""
    if not isinstance(markdown, str):
        raise ValueError(f"escape_dollars() takes markdown text, got {type(markdown).__name__}")
    out, pos = [], 0
    for m in _CODE_SPAN.finditer(markdown):
        out += [_DOLLAR.sub(r"\\$", markdown[pos : m.start()]), m.group(0)]
        pos = m.end()
    return "".join([*out, _DOLLAR.sub(r"\\$", markdown[pos:])])


def table_lines(columns: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A markdown table's text: a header, a rule, one line per row; a ``|`` or newline in a cell is escaped, so a
    cell never splits, and a ``$`` outside a code span is a dollar sign, never maths (torch-free: the team table and
    ``xlaport.notebook.markdown_table`` both use it)."""

    def cell(value: object) -> str:
        return escape_dollars(str(value).replace("|", "\\|").replace("\n", " "))

    lines = ["| " + " | ".join(cell(c) for c in columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)
