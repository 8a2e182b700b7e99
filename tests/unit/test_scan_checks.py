"""The scanner's checks are registered one function per rule per node type, each against a row of RULES."""

from __future__ import annotations

import ast

from xlaport.scan import RULES
from xlaport.scan.walker import CHECKS, check, checked_rules

# Rules found outside a Python syntax tree (by the engine, per file).
FILE_LEVEL = {"syntax-error", "cuda-source"}


def test_every_rule_has_a_check_and_every_check_a_rule() -> None:
    ids = {r.id for r in RULES}
    checked = checked_rules()
    assert set(checked) <= ids, f"checks for rules without a RULES row: {set(checked) - ids}"
    assert ids - FILE_LEVEL <= set(checked), f"rules without a check: {ids - FILE_LEVEL - set(checked)}"
    for pairs in CHECKS.values():
        fns = [fn for _, fn in pairs]
        assert len(fns) == len(set(fns)), "a check registered twice on one node type"


def test_one_rule_one_function_per_node_type() -> None:
    for t, pairs in CHECKS.items():
        per_rule: dict[str, int] = {}
        for rid, _ in pairs:
            per_rule[rid] = per_rule.get(rid, 0) + 1
        assert max(per_rule.values()) == 1, f"{t.__name__}: {per_rule}"


def test_a_new_rule_is_one_function() -> None:
    """Registering a check makes the walker call it; removing it restores the registry."""
    from xlaport.scan.walker import analyse

    before = {t: list(v) for t, v in CHECKS.items()}
    try:

        @check("cuda-api", ast.Global)
        def _global(w, node):  # type: ignore[no-untyped-def]
            w.hit("cuda-api", node, "global statement")

        hits = analyse(ast.parse("def f():\n    global X\n"))
        assert [h[0] for h in hits] == ["cuda-api"] and hits[0][1] == 2
    finally:
        CHECKS.clear()
        CHECKS.update(before)
