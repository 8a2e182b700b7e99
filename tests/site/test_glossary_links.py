"""Each chapter links a glossary term at its first use (scripts/glossary_links.py), and the links resolve."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import script

ROOT = Path(__file__).resolve().parents[2]
G = script("glossary_links")

VOCABULARY = G.terms()
CHAPTERS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def _md(*cells: str) -> dict:
    return {"cells": [{"cell_type": "markdown", "metadata": {}, "source": [c]} for c in cells]}


def test_the_glossary_defines_the_terms_chapters_need() -> None:
    for term in ("PrivateUse1", "StableHLO", "PJRT", "lazy tensor", "Dynamo guard", "recompile limit", "MXU", "HBM"):
        assert term in VOCABULARY
    for term in ("NEFF", "NKI", "Pallas", "SPMD", "FSDPv2", "MPMD", "MFU", "CEANF"):
        assert term in VOCABULARY


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_first_use_of_each_term_is_linked(path: Path) -> None:
    uses = G.first_uses(json.loads(path.read_text()), VOCABULARY)
    missing = sorted(t for t, (_, _, linked) in uses.items() if not linked)
    assert not missing, f"{path.stem}: first use not linked to the glossary: {missing} (run scripts/glossary_links.py)"


def test_links_only_prose_and_only_once() -> None:
    nb = _md(
        "# Title with XLA\nThe `XLA` code, [XLA](https://openxla.org), XLA:CPU and PyTorch/XLA stay plain.",
        "```python\nx = XLA  # code\n```\nReal XLA here, and lazy tensors too.\n:::{tip}\nXLA again, MXU inside.\n:::",
    )
    assert G.link(nb, VOCABULARY) == ["XLA", "lazy tensor", "MXU"]
    text = "".join(c["source"][0] if len(c["source"]) == 1 else "".join(c["source"]) for c in nb["cells"])
    assert "Real {term}`XLA` here" in text and "{term}`lazy tensors <lazy tensor>`" in text
    assert "# Title with XLA" in text and "x = XLA  # code" in text and "XLA again" in text
    assert "{term}`MXU` inside" in text
    assert all(ok for _, _, ok in G.first_uses(nb, VOCABULARY).values())
    assert G.link(nb, VOCABULARY) == []  # idempotent
