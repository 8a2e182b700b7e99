"""The book cites only what a reader can check: no private notes, briefs or trackers.

A reader of the website or of a clone has the repository and the public web, nothing else. Facts that rest
on a measurement or on reading a wheel are stated, with a snippet to reproduce them, on pages under
``book/evidence/``; everything else links its primary source. This test fails when a published file cites
the private research notes (``shared/research/...`` or a note's file name), the private project brief ("the
seed", "the seed's figures", claim keys such as ``seed_flux_ms_per_step``) or a private tracker ("the issue
behind this chapter"). "seed" as a random-number seed (``seed = 0``, ``manual_seed``, "Seed every
generator") is fine.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conftest import toc_files

ROOT = Path(__file__).resolve().parents[2]

# Published material: what the website renders, what a clone shows a reader, and the data behind both.
SCANNED_DIRS = ("book", "notebooks", "src/xlaport", "scripts")  # src/xlaport: data files, docstrings, messages
SCANNED_FILES = ("README.md", "CONTRIBUTING.md", "_toc.yml", "_config.yml")
RENDERED_SITE = "_build/html"  # scanned when a build exists (``**/*.html`` only)

_W = r"[\s\"',]+"  # words of a phrase may be split across lines (or JSON string boundaries)
PRIVATE = {
    "private research notes": re.compile(
        r"shared/research|research/[\w.-]+\.md"
        r"|\b(?:measured-on-xla-cpu|torchtpu-0\.2\.0|pitfall-evidence|wave2-anchors-and-checks|executable-books"
        r"|neuron)\.md\b"
        rf"|project's{_W}research",
        re.IGNORECASE,
    ),
    "private project brief": re.compile(
        rf"\bthe{_W}seed\b|\bseed's|\bproject{_W}seed\b|\bseed_(?:trillium|qwen|flux)",
        re.IGNORECASE,
    ),
    "private tracker": re.compile(rf"\bissue{_W}behind\b|\bchapter's{_W}issue\b", re.IGNORECASE),
}


def _hits_in_text(text: str) -> list[tuple[int, str, str]]:
    """(1-based line, kind, matched text) for each private mention in ``text``."""
    hits = []
    for kind, pattern in PRIVATE.items():
        for m in pattern.finditer(text):
            hits.append((text.count("\n", 0, m.start()) + 1, kind, " ".join(m.group(0).split())))
    return sorted(hits)


def _scan_notebook(path: Path, rel: str) -> list[str]:
    out = []
    nb = json.loads(path.read_text(encoding="utf-8"))
    for i, cell in enumerate(nb.get("cells", [])):
        src = cell.get("source", "")
        text = "".join(src) if isinstance(src, list) else str(src)
        for line, kind, what in _hits_in_text(text):
            out.append(f"{rel}: cell {i} ({cell.get('cell_type')}), line {line}: {kind}: {what!r}")
    return out


def _scan_file(path: Path, rel: str) -> list[str]:
    if path.suffix == ".ipynb":
        return _scan_notebook(path, rel)
    data = path.read_bytes()
    if b"\0" in data:  # images and other binaries
        return []
    text = data.decode("utf-8", errors="replace")
    return [f"{rel}:{line}: {kind}: {what!r}" for line, kind, what in _hits_in_text(text)]


def find_private_mentions(root: Path) -> list[str]:
    """Every mention of private material in the published files under ``root``, as ``file:line: ...``."""
    files: list[Path] = []
    for d in SCANNED_DIRS:
        if (root / d).is_dir():
            files += [p for p in (root / d).rglob("*") if p.is_file() and "__pycache__" not in p.parts]
    files += [root / f for f in SCANNED_FILES if (root / f).is_file()]
    if (root / RENDERED_SITE).is_dir():
        files += sorted((root / RENDERED_SITE).rglob("*.html"))
    hits = []
    for path in sorted(set(files)):
        hits += _scan_file(path, path.relative_to(root).as_posix())
    return hits


# ---------------------------------------------------------------- the repository


@pytest.mark.built
def test_published_files_cite_no_private_material() -> None:
    hits = find_private_mentions(ROOT)
    assert not hits, (
        "published files cite material a reader does not have; cite the primary source (upstream issue, PR, doc "
        "page, wheel file) or a page under book/evidence/ instead:\n  " + "\n  ".join(hits)
    )


def test_every_evidence_page_is_in_the_toc() -> None:
    pages = sorted((ROOT / "book" / "evidence").glob("*.md"))
    assert pages, "book/evidence/ has no pages"
    listed = toc_files(ROOT)
    missing = [p.relative_to(ROOT).with_suffix("").as_posix() for p in pages]
    missing = [m for m in missing if m not in listed]
    assert not missing, f"evidence pages missing from _toc.yml: {missing}"


def test_evidence_pages_lead_in_bold_and_show_how_to_reproduce() -> None:
    for page in sorted((ROOT / "book" / "evidence").glob("*.md")):
        text = page.read_text(encoding="utf-8")
        body = [b.strip() for b in text.split("\n\n") if b.strip() and not b.lstrip().startswith("#")]
        assert body and body[0].startswith("**"), f"{page.name}: the first paragraph must be a bold lead sentence"
        assert "```python" in text, f"{page.name}: no snippet to reproduce its facts"


def test_evidence_labels_used_in_the_book_exist() -> None:
    labels = set()
    for page in (ROOT / "book" / "evidence").glob("*.md"):
        labels |= set(re.findall(r"^\(([\w-]+)\)=\s*$", page.read_text(encoding="utf-8"), re.MULTILINE))
    used = {}
    for path in [*(ROOT / "book").rglob("*.md"), *(ROOT / "notebooks").glob("*.ipynb")]:
        for target in re.findall(r"\{ref\}`(?:[^`<]*<)?(evidence-[\w-]+)>?`", path.read_text(encoding="utf-8")):
            used.setdefault(target, path.relative_to(ROOT).as_posix())
    unknown = {t: where for t, where in used.items() if t not in labels}
    assert not unknown, f"{{ref}} targets with no label on an evidence page: {unknown}"


# ---------------------------------------------------------------- the scanner itself


def _notebook(*cells: tuple[str, str]) -> str:
    return json.dumps(
        {
            "cells": [
                {"cell_type": t, "id": f"c{i}", "metadata": {}, "source": s.splitlines(keepends=True)}
                for i, (t, s) in enumerate(cells)
            ],
            "metadata": {},
            "nbformat": 4,
            "nbformat_minor": 5,
        },
        indent=1,
    )


@pytest.fixture
def fake_repo(tmp_path: Path) -> Path:
    (tmp_path / "book").mkdir()
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "src/xlaport/reference/data").mkdir(parents=True)
    (tmp_path / "_build/html/notebooks").mkdir(parents=True)
    (tmp_path / "book" / "good.md").write_text(
        "# Good\n\nSeed every generator: `torch.manual_seed(seed)`, `seed = 0`, `seed=1`, two seeds.\n"
        "Evidence: {doc}`evidence/xla_cpu_measurements`, [pytorch/xla#9094](https://github.com/pytorch/xla/issues/9094).\n"
    )
    (tmp_path / "book" / "bad.md").write_text(
        "# Bad\n\nMeasured (`shared/research/measured-on-xla-cpu.md` §1).\nAs the seed's figures say.\n"
    )
    (tmp_path / "notebooks" / "good.ipynb").write_text(
        _notebook(
            ("code", "# Parameters\nseed: int = 0\nseed = 0\ntorch.manual_seed(seed)\n"),
            ("markdown", "Launch-coverage figures: `launch_flux_ms_per_step`.\n"),
        )
    )
    (tmp_path / "notebooks" / "bad.ipynb").write_text(
        _notebook(
            ("markdown", "# Title\n\nThe issue\nbehind this chapter says so.\n"),
            ("code", 'flux = cost.claim("seed_flux_ms_per_step")  # seed\'s figure\n'),
        )
    )
    (tmp_path / "src/xlaport/reference/data" / "facts.toml").write_text(
        'a = { value = 1, source = "project seed" }\nb = { value = 2, source = "torchtpu-0.2.0.md §3.3" }\n'
    )
    (tmp_path / "_build/html/notebooks" / "page.html").write_text("<p>The seed names neither the model</p>\n")
    (tmp_path / "_toc.yml").write_text("format: jb-book\nroot: book/good\n")
    return tmp_path


def test_scanner_flags_bad_files_and_passes_good_ones(fake_repo: Path) -> None:
    hits = find_private_mentions(fake_repo)
    flagged = {h.split(":")[0] for h in hits}
    assert flagged == {
        "book/bad.md",
        "notebooks/bad.ipynb",
        "src/xlaport/reference/data/facts.toml",
        "_build/html/notebooks/page.html",
    }, hits
    assert "book/bad.md:3: private research notes: 'shared/research'" in hits
    assert "book/bad.md:4: private project brief: 'the seed'" in hits
    assert "notebooks/bad.ipynb: cell 0 (markdown), line 3: private tracker: 'issue behind'" in hits
    assert "notebooks/bad.ipynb: cell 1 (code), line 1: private project brief: 'seed_flux'" in hits
    assert 'notebooks/bad.ipynb: cell 1 (code), line 1: private project brief: "seed\'s"' in hits
    assert any(h.startswith("src/xlaport/reference/data/facts.toml:1: private project brief") for h in hits)
    assert any(h.startswith("src/xlaport/reference/data/facts.toml:2: private research notes") for h in hits)
    assert any(h.startswith("_build/html/notebooks/page.html:1: private project brief") for h in hits)


def test_scanner_reports_a_reintroduced_mention(fake_repo: Path) -> None:
    for bad in (
        "book/bad.md",
        "notebooks/bad.ipynb",
        "src/xlaport/reference/data/facts.toml",
        "_build/html/notebooks/page.html",
    ):
        (fake_repo / bad).unlink()
    assert find_private_mentions(fake_repo) == []
    (fake_repo / "README.md").write_text("Numbers from the project seed.\n")
    assert find_private_mentions(fake_repo) == ["README.md:1: private project brief: 'project seed'"]
