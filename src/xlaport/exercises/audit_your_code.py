"""Chapter *Audit your code*: a source the scanner finds clean."""

from __future__ import annotations

from collections.abc import Iterable

from ..text import plural
from .common import ArgumentError, Check, _fail, _none, _ok, guarded

__all__ = ["check_scan_clean"]


@guarded("scan clean")
def check_scan_clean(source: str | None, rules: Iterable[str], keep: Iterable[str] = ()) -> Check:
    """``source`` (a Python file as a string) has no finding of ``rules`` left, still parses, and still defines or
    calls every name in ``keep`` (so that deleting the code is not a port: ``keep=["backward", "step"]``)."""
    import ast

    from ..scan import rule_ids, scan_source

    name = "scan clean"
    want = set(rules)
    unknown = want - set(rule_ids())
    if unknown:
        raise ArgumentError(f"unknown scan rule(s) {', '.join(sorted(unknown))}")
    if source is None:
        return _none(name)
    if not isinstance(source, str):
        return _fail(name, f"answer must be the ported source as a string (got {type(source).__name__})")
    try:
        tree = ast.parse(source)
    except SyntaxError as e:
        return _fail(name, f"the source no longer parses: line {e.lineno}: {e.msg}")
    left = [f for f in scan_source(source) if f.rule in want]
    if left:
        f = left[0]
        return _fail(
            name, f"{plural(len(left), 'finding')} left; first: line {f.line} {f.rule}: {f.snippet.strip()[:60]}"
        )
    present = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            present.add(node.name)
        elif isinstance(node, ast.Call):
            fn = node.func
            present.add(fn.attr if isinstance(fn, ast.Attribute) else getattr(fn, "id", ""))
    gone = [k for k in keep if k not in present]
    if gone:
        return _fail(
            name,
            f"the source no longer defines or calls {', '.join(gone)}: keep the code's work and change only how it "
            "runs",
        )
    return _ok(name, f"no {', '.join(sorted(want))} finding left")
