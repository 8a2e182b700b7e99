"""make test's workers: a module's tests run on one worker, and the browser tests of one built page on one worker.

With pytest 9.2 and pytest-xdist 3.8, xdist's own ``xdist_group`` marks were silently ignored
(https://github.com/pytest-dev/pytest-xdist/issues/1386): module fixtures and page loads ran once per worker. The
scheduler in tests/conftest.py reads the unit of work from the node id; the session below checks it on two workers.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from conftest import ROOT, work_unit


def test_a_module_is_one_unit_and_a_browser_page_is_one_unit() -> None:
    assert work_unit("tests/unit/test_scan.py::test_rule_positive[boolean-mask-index]") == "tests/unit/test_scan.py"
    assert work_unit("tests/unit/test_scan.py::TestX::test_y[a.html]") == "tests/unit/test_scan.py"
    page = "tests/site/test_browser.py::notebooks/sd3_view_offsets.html"
    for test in (
        "test_page_reads_well[notebooks/sd3_view_offsets.html]",
        "test_every_table_column_is_visible_or_scrolls_into_view[notebooks/sd3_view_offsets.html-phone390]",
        "test_plots_fit_the_column_and_their_text_is_legible[notebooks/sd3_view_offsets.html-desktop]",
    ):
        assert work_unit(f"tests/site/test_browser.py::{test}") == page
    assert work_unit("tests/site/test_browser.py::test_desktop_has_one_header_bar") == "tests/site/test_browser.py"
    assert work_unit("tests/site/test_browser.py::test_each_defect_class_is_caught[maths.html]") == (
        "tests/site/test_browser.py::maths.html"
    )
    # Each chapter is a unit of its own, so two chapters run side by side on two workers.
    chapters = [
        f"tests/notebooks/test_chapters_execute.py::test_notebook_runs[{c}]" for c in ("capstone", "distributed")
    ]
    assert [work_unit(c) for c in chapters] == chapters


RECORD = """
import json, os, pytest

@pytest.mark.parametrize("i", range(6))
def test_it(i):
    with open(os.environ["WHERE"], "a") as f:
        f.write(json.dumps([__name__, os.environ.get("PYTEST_XDIST_WORKER", "none")]) + "\\n")
"""


def test_two_workers_run_each_module_whole(tmp_path: Path) -> None:
    """Three modules of six quick tests on two workers: each module's tests all ran on one worker (xdist's load
    balancing alone spreads them over both)."""
    for name in ("test_a", "test_b", "test_c"):
        (tmp_path / f"{name}.py").write_text(RECORD)
    (tmp_path / "conftest.py").write_text(
        textwrap.dedent(f"""
            import importlib.util
            spec = importlib.util.spec_from_file_location("repo_conftest", {str(ROOT / "tests" / "conftest.py")!r})
            repo = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(repo)
            pytest_xdist_make_scheduler = repo.pytest_xdist_make_scheduler
            pytest_collection_modifyitems = repo.pytest_collection_modifyitems
        """)
    )
    where = tmp_path / "where.jsonl"
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-n", "2", "--dist", "loadgroup", "-q", "-p", "no:cacheprovider"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "WHERE": str(where), "PYTHONPATH": str(ROOT / "src")},
    )
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    ran = [json.loads(line) for line in where.read_text().splitlines()]
    assert len(ran) == 18
    workers = {module: {w for m, w in ran if m == module} for module in ("test_a", "test_b", "test_c")}
    assert all(len(w) == 1 for w in workers.values()), f"a module's tests ran on more than one worker: {workers}"
    assert set().union(*workers.values()) == {"gw0", "gw1"}, f"one worker did all the work: {workers}"
