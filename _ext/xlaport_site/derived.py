"""A table's derived columns recompute from the cells the reader sees.

A column such as "error" next to "predicted" and "measured", "person-weeks" next to "units" and "person-weeks per
unit", or a "total" beside the minutes it adds up is a promise: a reader with a calculator gets the same number.
The TOML file config ``xlaport_derived_columns`` names lists each such column once::

    [[column]]
    pages = ["notebooks/predict_before_renting"]   # docnames whose tables are checked
    column = "error"                               # the derived column's heading
    formula = "100 * (predicted - measured) / measured"
    why = "the error of a prediction, in percent of the measurement"

Names in ``formula`` are column headings made identifiers (lower case, every run of other characters ``_``:
"person-weeks per unit" is ``person_weeks_per_unit``); ``first(name)`` is that column in the table's first row and
``total(name)`` its sum over the rows that are not a "total" row. ``has = [...]`` names further headings a table
must have for the entry to apply (tables with the same columns in different units). ``rows = ["total"]`` limits an entry to rows whose
first cell is one of those; ``except = [...]`` skips such rows. A table is checked by every entry of its page whose
column and names it has.

Each cell is read as the first number it shows (``2,739 (1,983–3,634)`` is 2,739; ``−13%`` is −13; ``12 findings``
is 12) and stands for every value that rounds to it, so the formula is evaluated on intervals: a derived cell that
no rounding of its inputs can give warns ``xlaport.derived-column``. A row with an empty input is not checked. An
entry that matches no table, or one without ``why``, warns ``xlaport.derived-list`` when the build finishes.
"""

from __future__ import annotations

import ast
import math
import re
from dataclasses import dataclass
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx

from ._nodes import listed, listed_check, per_doc, warn, warn_file

OPTION, KEY = "xlaport_derived_columns", "xlaport_derived_used"  # the list file's config; what each page used
_NUMBER = re.compile(r"(?<![\w.])([-−+]?)(\d[\d,]*(?:\.\d+)?)(?:[eE]([-+]?\d+))?")


@dataclass(frozen=True)
class Interval:
    lo: float
    hi: float

    def __add__(self, o: Interval) -> Interval:
        return Interval(self.lo + o.lo, self.hi + o.hi)

    def __sub__(self, o: Interval) -> Interval:
        return Interval(self.lo - o.hi, self.hi - o.lo)

    def __mul__(self, o: Interval) -> Interval:
        ends = [self.lo * o.lo, self.lo * o.hi, self.hi * o.lo, self.hi * o.hi]
        return Interval(min(ends), max(ends))

    def __truediv__(self, o: Interval) -> Interval:
        if o.lo <= 0 <= o.hi:
            return Interval(-math.inf, math.inf)  # a denominator that may be 0 bounds nothing
        return self * Interval(1 / o.hi, 1 / o.lo)

    def __neg__(self) -> Interval:
        return Interval(-self.hi, -self.lo)

    def overlaps(self, o: Interval) -> bool:
        return self.lo <= o.hi and o.lo <= self.hi


def exact(value: float) -> Interval:
    return Interval(value, value)


def cell_value(text: str) -> Interval | None:
    """The first number a cell shows, as the interval of values that round to it; None when it shows none."""
    m = _NUMBER.search(text)
    if m is None:
        return None
    sign, digits, exponent = m.groups()
    value = float(digits.replace(",", "")) * (-1 if sign == "−" or sign == "-" else 1)
    decimals = len(digits.split(".")[1]) if "." in digits else 0
    scale = 10 ** int(exponent) if exponent else 1
    half = 0.5 * 10**-decimals * scale
    value *= scale
    return Interval(value - half, value + half)


def identifier(heading: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", heading.lower()).strip("_")


class _Evaluator:
    """Evaluates a formula's AST on intervals: numbers, names, + - * /, unary minus, first() and total()."""

    def __init__(self, row: dict[str, Interval | None], table: list[dict[str, Interval | None]]) -> None:
        self.row, self.table = row, table

    def __call__(self, node: ast.AST) -> Interval | None:
        if isinstance(node, ast.Expression):
            return self(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            return exact(float(node.value))
        if isinstance(node, ast.Name):
            return self.row[node.id]
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            inner = self(node.operand)
            return None if inner is None else -inner
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult, ast.Div)):
            a, b = self(node.left), self(node.right)
            if a is None or b is None:
                return None
            return {ast.Add: a.__add__, ast.Sub: a.__sub__, ast.Mult: a.__mul__, ast.Div: a.__truediv__}[type(node.op)](
                b
            )
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and len(node.args) == 1:
            arg = node.args[0]
            if isinstance(arg, ast.Name) and node.func.id == "first":
                return self.table[0][arg.id]
            if isinstance(arg, ast.Name) and node.func.id == "total":
                values = [r[arg.id] for r in self.table]
                if any(v is None for v in values):
                    return None
                return sum((v for v in values if v is not None), exact(0.0))
        raise ValueError(f"unsupported in a formula: {ast.unparse(node)}")


def names_in(formula: str) -> set[str]:
    """The column names a formula reads (function names are not columns)."""
    tree = ast.parse(formula, mode="eval")
    called = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and id(n) not in called}


def _rows(table: nodes.table) -> tuple[list[str], list[list[str]]]:
    head = [identifier(e.astext()) for e in next(table.findall(nodes.thead)).findall(nodes.entry)]
    body = []
    for row in table.findall(nodes.row):
        if isinstance(row.parent, nodes.tbody):
            body.append([e.astext().strip() for e in row.findall(nodes.entry)])
    return head, body


def check_table(table: nodes.table, entry: dict[str, Any]) -> list[str]:
    """Problems with one entry's column in one table; empty when it recomputes. The table must have the names."""
    head, body = _rows(table)
    column, formula = identifier(entry["column"]), entry["formula"]
    only = {r.lower() for r in entry.get("rows", [])}
    skip = {r.lower() for r in entry.get("except", [])}
    parsed = [dict(zip(head, (cell_value(c) for c in cells), strict=False)) for cells in body]
    firsts = [cells[0].lower() if cells else "" for cells in body]
    others = [p for p, f in zip(parsed, firsts, strict=True) if f != "total"]
    tree = ast.parse(formula, mode="eval")
    problems = []
    for cells, values, first in zip(body, parsed, firsts, strict=True):
        if (only and first not in only) or first in skip or (not only and first == "total"):
            continue
        shown = values.get(column)
        if shown is None:
            continue
        got = _Evaluator(values, others)(tree)
        if got is None or got.overlaps(shown):
            continue
        mid = (got.lo + got.hi) / 2
        problems.append(
            f"row “{' | '.join(cells)[:90]}”: {entry['column']} shows {cells[head.index(column)]!r}, but "
            f"{formula} gives {mid:.4g} from the cells shown"
        )
    return problems


def load(app: Sphinx) -> list[dict[str, Any]]:
    return list(listed(app, OPTION).get("column", []))


def check(app: Sphinx, doctree: nodes.document) -> None:
    docname = app.env.docname
    used: set[int] = set()
    for i, entry in enumerate(load(app)):
        if docname not in entry.get("pages", []):
            continue
        wanted = names_in(entry["formula"]) | {identifier(h) for h in [entry["column"], *entry.get("has", [])]}
        for table in doctree.findall(nodes.table):
            if not any(True for _ in table.findall(nodes.thead)):
                continue
            head, _ = _rows(table)
            if not wanted <= set(head):
                continue
            used.add(i)
            for problem in check_table(table, entry):
                warn(table, "derived-column", f"a derived column does not recompute: {problem}")
    per_doc(app.env, KEY)[docname] = used


def stale_entries(app: Sphinx, path: str, records: dict[str, set[int]]) -> None:
    """Entries that match no table of their pages, or that say not why the column is derived."""
    used = set().union(*records.values())
    for i, entry in enumerate(load(app)):
        label = f"{app.config.xlaport_derived_columns}: column {entry.get('column')!r} on {entry.get('pages')}"
        if len(str(entry.get("why", "")).strip()) < 8:
            warn_file(path, "derived-list", f"{label} needs a why (what the column derives)")
        elif i not in used:
            warn_file(path, "derived-list", f"{label} matches no table with its columns any more")


def setup(app: Sphinx) -> None:
    listed_check(app, OPTION, KEY, check, stale_entries)
