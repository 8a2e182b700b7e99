"""make verify's pieces: XLAPORT_TARGET picks the target, a chapter's run record, the verified-on page (xlaport.runs)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import xlaport
from xlaport import runs

ROOT = Path(__file__).resolve().parents[2]

BANNER = (
    "[xlaport] target=tpu (emulated) device=xla:0 backend=openxla | emulated on torch_xla XLA:CPU | "
    "python 3.11.7 torch 2.9.0+cu128 torch_xla 2.9.0\n"
)


def _glued(name: str, plain: str) -> dict[str, Any]:
    return {
        "output_type": "display_data",
        "data": {"application/papermill.record/text/plain": plain},
        "metadata": {"scrapbook": {"name": name, "mime_prefix": "application/papermill.record/"}},
    }


def _executed() -> dict[str, Any]:
    outputs = [
        {"output_type": "stream", "name": "stdout", "text": ["loading\n", BANNER]},
        _glued("compiles", "16"),
        _glued("error_text", "'not implemented'"),
        _glued("ratio", "41.25"),
    ]
    return {"cells": [{"cell_type": "code", "outputs": outputs, "metadata": {}}]}


def test_env_var_replaces_the_parameters_cell_target(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XLAPORT_TARGET", "cpu")
    assert xlaport.target("tpu").name == "cpu"  # what the parameters cell asked for is overridden


def test_bad_env_target_is_a_one_line_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XLAPORT_TARGET", "gpu")
    with pytest.raises(ValueError, match="XLAPORT_TARGET='gpu' is not a target"):
        xlaport.target("tpu")


def test_chapter_record_reads_banner_and_numeric_glue() -> None:
    rec = runs.chapter_record(_executed(), passed=True)
    assert (rec["target"], rec["mode"], rec["device"]) == ("tpu", "emulated", "xla:0")
    assert rec["figures"] == {"compiles": 16.0, "ratio": 41.25}  # the text glue is not a figure
    assert rec["passed"] is True


def test_page_lists_every_run_per_chapter() -> None:
    emulated = {
        "date": "this build",
        "torch": "2.9.0",
        "chapters": {"op_fallbacks": runs.chapter_record(_executed(), True)},
    }
    real = {
        "date": "2026-12-01",
        "torch": "2.9.0",
        "chapters": {
            "op_fallbacks": {"passed": False, "target": "tpu", "mode": "real", "device": "tpu:0", "figures": {}}
        },
    }
    page = runs.render_page([emulated, real])
    assert page.startswith("# Verified on")
    assert "| this build | tpu | emulated | xla:0 | 2.9.0 | yes | `compiles` 16, `ratio` 41.2 |" in page
    assert "| 2026-12-01 | tpu | real | tpu:0 | 2.9.0 | no | – |" in page


def test_page_without_records_says_so() -> None:
    assert "No run has been recorded yet." in runs.render_page([])


def test_figures_read_as_numbers_not_exponents() -> None:
    assert [runs._figure(v) for v in (8192.0, 1797, 122.51, 0.268, 1.5e-7, 2.5e7)] == [
        "8,192",
        "1,797",
        "123",
        "0.268",
        "1.5e-07",
        "25,000,000",
    ]
