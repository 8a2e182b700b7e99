"""Chapter *Audit your code*: a source the scanner finds clean."""

from __future__ import annotations

from collections.abc import Iterable

from ..text import plural
from .common import ArgumentError, Check, _fail, _none, _ok, guarded

__all__ = ["check_scan_clean"]


@guarded("scan clean")
def check_scan_clean(source: str | None, rules: Iterable[str]) -> Check:
    """``source`` (a Python file as a string) has no finding of ``rules`` left and still parses."""
    import ast

    from ..scan import rule_ids, scan_source

    name = "scan clean"
    want = set(rules)
    unknown = want - set(rule_ids())
    if unknown:
        raise ArgumentError(f"unknown scan rule(s) {', '.join(sorted(unknown))}")
    if source is None:
        return _none(name)
    try:
        ast.parse(source)
    except SyntaxError as e:
        return _fail(name, f"the source no longer parses: line {e.lineno}: {e.msg}")
    left = [f for f in scan_source(source) if f.rule in want]
    if left:
        f = left[0]
        return _fail(
            name, f"{plural(len(left), 'finding')} left; first: line {f.line} {f.rule}: {f.snippet.strip()[:60]}"
        )
    return _ok(name, f"no {', '.join(sorted(want))} finding left")
