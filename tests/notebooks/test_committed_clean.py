"""Committed notebooks: no outputs, a kernelspec, a papermill parameters cell, a time budget, a TOC entry."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from conftest import toc_files

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def test_there_are_notebooks() -> None:
    assert NOTEBOOKS, "no notebooks found"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_committed_clean(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    dirty = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and (c.outputs or c.execution_count)]
    assert not dirty, f"{path.name}: outputs committed in cells {dirty}"
    assert nb.metadata.get("kernelspec", {}).get("name") == "python3", f"{path.name}: kernelspec must be python3"
    params = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    assert len(params) == 1, f"{path.name}: needs exactly one cell tagged 'parameters'"
    assert float(nb.metadata["xlaport"]["budget_s"]) > 0


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_in_toc(path: Path) -> None:
    assert f"notebooks/{path.stem}" in toc_files(), f"{path.name} is not in _toc.yml"


def _offered_targets(nb: nbformat.NotebookNode) -> set[str]:
    """Targets the parameters cell offers: the quoted names on its `target =` line, and "auto" if it tells the
    reader to set it."""
    import re

    src = next(c.source for c in nb.cells if "parameters" in c.metadata.get("tags", []))
    offered: set[str] = set()
    for line in src.splitlines():
        if line.startswith("target ="):
            offered |= set(re.findall(r'"(tpu|neuron|cuda|cpu|auto)"', line))
    if 'target = "auto"' in src:
        offered.add("auto")
    return offered


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_parameter_matrix_covers_what_the_cell_offers(path: Path) -> None:
    """`make test-params` runs each chapter's metadata matrix: it must hold seeds 0-2 and every offered target."""
    nb = nbformat.read(path, as_version=4)
    matrix = nb.metadata["xlaport"].get("matrix")
    assert matrix, f"{path.name}: metadata.xlaport.matrix is missing (the values make test-params runs)"
    assert {0, 1, 2} <= set(matrix.get("seed", [])), f"{path.name}: the matrix must run seeds 0, 1 and 2"
    missing = _offered_targets(nb) - set(matrix.get("target", []))
    assert not missing, f"{path.name}: the parameters cell offers targets {sorted(missing)} that the matrix never runs"
