"""xlaport.pages: the titles and addresses a report links to match the book."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import pytest
import yaml

from xlaport import pages
from xlaport.scan.rules import RULES

ROOT = Path(__file__).resolve().parents[2]


def _heading(page: str) -> str:
    if page.startswith("book/generated/"):
        from xlaport import reference

        text = reference.render(page.removeprefix("book/generated/"))
    elif page.startswith("notebooks/"):
        cells = json.loads((ROOT / f"{page}.ipynb").read_text(encoding="utf-8"))["cells"]
        text = "".join(cells[0]["source"])
    else:
        text = (ROOT / f"{page}.md").read_text(encoding="utf-8")
    m = re.search(r"^# (.+)$", text, re.M)
    assert m, f"{page}: no heading"
    return m.group(1).strip()


@pytest.mark.parametrize("page", sorted(pages.TITLES))
def test_each_title_is_the_pages_own_heading(page: str) -> None:
    assert pages.title(page) == _heading(page)


def test_every_rule_chapter_has_a_title() -> None:
    missing = sorted({d for r in RULES for d in r.docs} - set(pages.TITLES))
    assert not missing, f"scan rules point to pages without a title here: {missing}"


def test_the_repository_is_written_alike_everywhere() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["urls"]["Repository"] == pages.REPOSITORY
    book = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    assert book["repository"]["url"] == pages.REPOSITORY  # the site's buttons, and the editions' Colab links
    assert pages.SITE == "https://xlaport.github.io/xlaport/"


def test_colab_opens_the_edition_on_its_branch() -> None:
    assert pages.colab_url("distributed") == (
        "https://colab.research.google.com/github/xlaport/xlaport/blob/editions/notebooks/distributed.ipynb"
    )
    with pytest.raises(ValueError, match=re.escape("not a GitHub repository address: 'https://example.org/x'")):
        pages.colab_url("distributed", "https://example.org/x")


def test_link_and_unknown_page() -> None:
    assert pages.link("book/pitfalls") == f"[Pitfalls]({pages.SITE}book/pitfalls.html)"
    with pytest.raises(ValueError, match="no book page 'book/nope'"):
        pages.url("book/nope")
