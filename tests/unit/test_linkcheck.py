"""scripts/linkcheck.py: which URLs the book cites, and the offline skip."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import script

linkcheck = script("linkcheck")


def test_urls_lose_trailing_punctuation_and_markdown() -> None:
    text = "See [docs](https://a.example/x.html), <https://b.example/y>. And (https://c.example/z_(1))."
    assert linkcheck.urls_in_text(text) == [
        "https://a.example/x.html",
        "https://b.example/y",
        "https://c.example/z_(1)",
    ]


def test_collect_reads_pages_chapters_and_data_files(tmp_path: Path) -> None:
    (tmp_path / "book").mkdir()
    (tmp_path / "book" / "p.md").write_text("[a](https://a.example/1)\n")
    (tmp_path / "notebooks").mkdir()
    nb = {
        "cells": [
            {"cell_type": "markdown", "source": ["https://a.example/1 and https://b.example/2"]},
            {"cell_type": "code", "source": ["'https://code.example/not-cited'"]},
        ]
    }
    (tmp_path / "notebooks" / "c.ipynb").write_text(json.dumps(nb))
    data = tmp_path / "src" / "xlaport" / "reference" / "data"
    data.mkdir(parents=True)
    (data / "d.toml").write_text('source = "https://c.example/3 ; https://b.example/2"\n')
    cited = linkcheck.collect(tmp_path)
    assert cited == {
        "https://a.example/1": ["book/p.md", "notebooks/c.ipynb"],
        "https://b.example/2": ["notebooks/c.ipynb", "src/xlaport/reference/data/d.toml"],
        "https://c.example/3": ["src/xlaport/reference/data/d.toml"],
    }


def test_the_book_cites_its_primary_sources() -> None:
    cited = linkcheck.collect()
    assert len(cited) > 50
    assert "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/guides/how-to-work-with-nki.html" in cited


def test_offline_it_skips_with_one_line(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(linkcheck, "online", lambda urls: False)
    assert linkcheck.main([]) == 0
    out = capsys.readouterr().out.strip()
    assert len(out.splitlines()) == 1 and out.startswith("linkcheck: skipped, no network")


def test_dead_links_fail(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(linkcheck, "online", lambda urls: True)
    monkeypatch.setattr(
        linkcheck, "collect", lambda: {"https://x.example/gone": ["book/p.md"], "https://x.example/ok": ["b"]}
    )
    monkeypatch.setattr(linkcheck, "check", lambda u: (u, 404, "HTTP 404") if "gone" in u else (u, 200, ""))
    assert linkcheck.main([]) == 1
    out = capsys.readouterr().out
    assert "DEAD https://x.example/gone: HTTP 404 (cited in book/p.md)" in out and "2 URLs, 1 dead" in out
