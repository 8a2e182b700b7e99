"""Every number in a chapter's prose is glued, a parameter, or a constant with its source (scripts/prose_numbers.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import script

ROOT = Path(__file__).resolve().parents[2]
pn = script("prose_numbers")


def _notebook(tmp_path: Path, markdown: str, params: str = "steps = 20\nlr = 3.0\n") -> Path:
    nb = {
        "cells": [
            {"cell_type": "markdown", "metadata": {}, "source": [markdown]},
            {"cell_type": "code", "metadata": {"tags": ["parameters"]}, "source": [params], "outputs": []},
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path = tmp_path / "chapter.ipynb"
    path.write_text(json.dumps(nb))
    return path


def test_every_chapter_is_clean() -> None:
    problems = pn.check()
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize(
    "text",
    [
        "took {glue:text}`storm_s:.1f` s",
        "see `torch.compile(dynamic=True)` and `x[:, 3]`",
        "[pytorch/xla#4203](https://github.com/pytorch/xla/issues/4203) and <https://example.com/a/1/2>",
        "torch_tpu 0.2.0 wheel, TorchNeuron 2.14.3.0, torch ≥ 2.11, Python 3.11, AWS Neuron 2.33",
        "## Fix 2: buckets\n\nExercise 1 and sections 2-4, exit status 2, steps 2 and later",
        "1. first\n2. second",
        "## 3. A mask constant",
        "with $x \\leftarrow x + 3 v$",
        "for 20 steps at 3.0 and at 3",  # parameters cell values
        "v5e, fp16, bf16, float32, H100, trn2 and 8x128 are names",
    ],
)
def test_allowed_places(tmp_path: Path, text: str) -> None:
    findings, _ = pn.check_chapter(_notebook(tmp_path, text), {})
    assert findings == [], findings


@pytest.mark.parametrize(
    ("text", "number"),
    [
        ("the limit is 8 per function", "8"),
        ("1,797 images", "1,797"),
        ("a logit of 65504 overflows", "65504"),
        ("took 122.51 ms", "122.51"),
        ("a 2-core machine", "2"),
    ],
)
def test_typed_numbers_are_found(tmp_path: Path, text: str, number: str) -> None:
    findings, _ = pn.check_chapter(_notebook(tmp_path, text), {})
    assert [f.number for f in findings] == [number]
    assert findings[0].chapter == "chapter" and findings[0].cell == 0


def test_allow_list_entries_are_used_and_sourced(tmp_path: Path) -> None:
    nb = _notebook(tmp_path, "fp16's maximum is 65504")
    allow = tmp_path / "allow.toml"
    allow.write_text('[chapter]\n"65504" = "torch.finfo(torch.float16).max"\n"7" = "float32 digits, IEEE 754"\n')
    problems = pn.check([nb], allow)
    assert problems == ["chapter: allow-list entry '7' in allow.toml matches no number any more"]
    allow.write_text('[chapter]\n"65504" = ""\n')
    with pytest.raises(ValueError, match="needs its source"):
        pn.check([nb], allow)
    allow.write_text('[other]\n"1" = "a source that is long enough"\n')
    assert "allow.toml: [other] is not a chapter" in pn.check([nb], allow)[-1]
