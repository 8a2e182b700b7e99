"""Each scanner rule is one module (xlaport/scan/rules/<rule>.py) holding its RULE, its docs and its examples;
the tests here are generated from those examples, and ``--explain`` and the book's page print the same text."""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

from xlaport.scan import RULES, scan_source
from xlaport.scan import rules as rules_pkg

SCAN = Path(rules_pkg.__file__).resolve().parents[1]


def _found(code: str, path: str) -> list[str]:
    return [f.rule for f in scan_source(code, path)]


@pytest.mark.parametrize(
    ("rule_id", "n", "code", "path"),
    [(r.id, n, code, r.example_path) for r in RULES for n, code in enumerate(r.invalid)],
)
def test_each_rule_reports_its_invalid_examples(rule_id: str, n: int, code: str, path: str) -> None:
    found = _found(code, path)
    assert rule_id in found, f"{rule_id} missed its invalid example {n}; found {found}"


@pytest.mark.parametrize(
    ("rule_id", "n", "code", "path"),
    [(r.id, n, code, r.example_path) for r in RULES for n, code in enumerate(r.valid)],
)
def test_each_rule_leaves_its_valid_examples_alone(rule_id: str, n: int, code: str, path: str) -> None:
    found = _found(code, path)
    assert rule_id not in found, f"{rule_id} fired on its valid example {n}: {found}"


def test_every_rule_is_one_module_with_docs_examples_and_a_chapter() -> None:
    modules = sorted(m.name for m in pkgutil.iter_modules(rules_pkg.__path__) if not m.name.startswith("_"))
    assert modules == sorted(r.id.replace("-", "_") for r in RULES)
    for r in RULES:
        mod = importlib.import_module(f"xlaport.scan.rules.{r.id.replace('-', '_')}")
        assert mod.RULE.id == r.id and r.finds, f"{r.id}: no docstring saying what it finds"
        assert r.invalid, f"{r.id}: no invalid example"
        assert r.id == "cuda-source" or r.valid, f"{r.id}: no valid example"
        assert r.id == "syntax-error" or r.chapter, f"{r.id} names no chapter"
    assert [r.position for r in RULES] == sorted(r.position for r in RULES)


def test_the_examples_the_page_shows_fit_a_phone() -> None:
    """The book's page shows each rule's first example of each side; at 40 characters a line fits a 390 px phone's
    code block without scrolling past what the example is about."""
    wide = [
        (r.id, ln) for r in RULES for code in (*r.invalid[:1], *r.valid[:1]) for ln in code.splitlines() if len(ln) > 40
    ]
    assert not wide, wide


def test_no_module_of_the_scanner_is_over_600_lines() -> None:
    sizes = {p.relative_to(SCAN).as_posix(): len(p.read_text().splitlines()) for p in SCAN.rglob("*.py")}
    assert max(sizes.values()) <= 600, {k: v for k, v in sizes.items() if v > 600}


def test_explain_prints_the_rule_from_its_module() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "xlaport.cli", "scan", "--explain", "nccl-backend"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    r = next(r for r in RULES if r.id == "nccl-backend")
    assert done.stdout.strip() == r.explain()
    lines = done.stdout.splitlines()
    assert max(len(ln) for ln in lines) <= 80 and "`" not in done.stdout, "not wrapped for a terminal, or raw markup"
    for part in ("What it finds:", "Why:", "Fix:", "backend='nccl')", "backend='tpu_dist')"):
        assert part in done.stdout, part
    assert "https://xlaport.github.io/xlaport/book/support_matrix.html" in done.stdout  # the chapter, not a path
    bad = subprocess.run(
        [sys.executable, "-m", "xlaport.cli", "scan", "--explain", "nccl-backnd"], capture_output=True, text=True
    )
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1 and "unknown rule" in bad.stderr


def test_the_books_rule_page_is_written_from_the_same_text() -> None:
    page = rules_pkg.render_page()
    for r in RULES:
        assert f"(scan-rule-{r.id})=\n## `{r.id}`\n\n**{r.title}.**" in page and r.why in page and r.fix in page
        assert r.invalid[0].rstrip("\n") in page
        assert " ".join(r.finds.split()) in page
