"""The site build refuses executed copies that would render wrong (unexecuted cells, errors, stale copies); the site's
extension generates its pages when the build starts."""

from __future__ import annotations

import json
import os
from pathlib import Path

import nbformat
import pytest
from sphinx_project import build

from conftest import script
from xlaport import reference

build_site = script("build_site")


def _write(path: Path, cells: list[nbformat.NotebookNode]) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.cells = cells
    nbformat.write(nb, path)
    return path


def _ran(src: str, n: int, outputs: list | None = None, tags: list[str] | None = None) -> nbformat.NotebookNode:
    c = nbformat.v4.new_code_cell(src, execution_count=n, outputs=outputs or [])
    if tags:
        c.metadata["tags"] = tags
    return c


@pytest.fixture
def src(tmp_path: Path) -> Path:
    return _write(tmp_path / "src.ipynb", [nbformat.v4.new_code_cell("x = 1")])


def _done(tmp_path: Path, src: Path, cells: list[nbformat.NotebookNode]) -> Path:
    out = _write(tmp_path / "done.ipynb", cells)
    os.utime(out, (src.stat().st_mtime + 10, src.stat().st_mtime + 10))
    return out


def test_sound_copy_passes(tmp_path: Path, src: Path) -> None:
    assert build_site.check_executed(src, _done(tmp_path, src, [_ran("x = 1", 1)])) == []


def test_missing_copy(tmp_path: Path, src: Path) -> None:
    assert "no executed copy" in build_site.check_executed(src, tmp_path / "nope.ipynb")[0]


def test_unexecuted_cell_fails_unless_skipped(tmp_path: Path, src: Path) -> None:
    cells = [nbformat.v4.new_code_cell("x = 1")]
    assert "not executed" in build_site.check_executed(src, _done(tmp_path, src, cells))[0]
    skipped = nbformat.v4.new_code_cell("x = 1")
    skipped.metadata["tags"] = ["skip-execution"]
    assert build_site.check_executed(src, _done(tmp_path, src, [skipped])) == []


def test_error_output_fails_unless_expected(tmp_path: Path, src: Path) -> None:
    err = [nbformat.v4.new_output("error", ename="ValueError", evalue="boom", traceback=[])]
    assert "shows an error" in build_site.check_executed(src, _done(tmp_path, src, [_ran("raise", 1, err)]))[0]
    ok = [_ran("raise", 1, err, tags=["raises-exception"])]
    assert build_site.check_executed(src, _done(tmp_path, src, ok)) == []


def test_stale_copy_fails(tmp_path: Path, src: Path) -> None:
    out = _write(tmp_path / "done.ipynb", [_ran("x = 1", 1)])
    os.utime(out, (src.stat().st_mtime - 10, src.stat().st_mtime - 10))
    assert "older than the notebook" in build_site.check_executed(src, out)[0]


def test_reference_pages_render() -> None:
    for page in reference.PAGES:
        assert reference.render(page).startswith("# "), f"{page}: generated page must start with a title"
    with pytest.raises(ValueError, match="unknown reference page"):
        reference.render("nope")


def test_the_build_generates_pages_when_it_starts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """builder-inited writes the flowchart the home page shows and the curriculum pages, before any page is read.

    The chapters' timings are pinned: under ``make test`` the chapters run beside this test and rewrite
    _build/executed/timings.json between the build's read and the expected pages' read."""
    from xlaport_site import curriculum as pages_script

    timings = tmp_path / "timings.json"
    timings.write_text(json.dumps({"01_first_steps": {"seconds": 61.0}, "port_training": {"seconds": 47.5}}))
    monkeypatch.setattr(pages_script, "TIMINGS", timings)
    page = "# Flow\n\n![The migration path](book/generated/figures/migration.svg)\n"
    warnings = build(
        tmp_path,
        {"flow.md": page},
        conf="xlaport_generate = ['flowchart', 'curriculum']\nexclude_patterns.append('book/generated/*.md')\n",
    )
    assert warnings == []
    assert (tmp_path / "_build" / "_images" / "migration.svg").read_text().startswith("<?xml")
    expected = pages_script.write(tmp_path / "expected")
    for page in expected:
        assert (tmp_path / "book" / "generated" / page.name).read_text() == page.read_text()
    sessions = (tmp_path / "book" / "generated" / "curriculum_sessions.md").read_text()
    assert "| 1. Where execution happens | " in sessions and "+ not yet run: port_inference" in sessions


def test_an_unknown_generated_page_fails(tmp_path: Path) -> None:
    with pytest.raises(Exception, match="xlaport_generate: unknown"):
        build(tmp_path, {"a.md": "# A\n"}, conf="xlaport_generate = ['nope']\n")


def test_build_sources_exist() -> None:
    for name in build_site.SOURCES:
        assert (build_site.ROOT / name).exists(), f"build_site.SOURCES lists {name}, which does not exist"


def test_the_reference_kind_writes_when_the_facts_were_checked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The "What changed" page includes book/generated/facts_checked.md; the extension writes it from the data."""
    import importlib

    from sphinx_project import EXT

    from xlaport.reference import freshness

    monkeypatch.syspath_prepend(str(EXT))
    generated = importlib.import_module("xlaport_site.generated")
    monkeypatch.setattr(reference, "PAGES", ())  # the pages themselves are tested above; op_coverage needs torch_xla
    made = generated.reference_pages(tmp_path)
    assert [p.relative_to(tmp_path).as_posix() for p in made] == ["book/generated/facts_checked.md"]
    assert made[0].read_text(encoding="utf-8") == freshness.render()
