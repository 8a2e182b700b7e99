"""xlaport.myst: the chapters' directives as the parser the book is built with reads them."""

from __future__ import annotations

from pathlib import Path

import yaml

from xlaport import myst

ROOT = Path(__file__).resolve().parents[2]


def test_the_extensions_are_the_books() -> None:
    book = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    assert sorted(myst.EXTENSIONS) == sorted(book["parse"]["myst_enable_extensions"])


def test_directives_with_argument_options_and_body() -> None:
    text = (
        "## Exercises\n\n```{exercise} Port the loop\n:label: ch-loop\n\nWrite `answer`.\n```\n\n"
        ":::{solution-start} ch-loop\n:class: dropdown\n:::\n\n````{include} ../book/fragments/exercises.md\n````\n"
    )
    found = myst.directives(text)
    assert [(d.name, d.argument, d.options, d.body) for d in found] == [
        ("exercise", "Port the loop", {"label": "ch-loop"}, "Write `answer`."),
        ("solution-start", "ch-loop", {"class": "dropdown"}, ""),
        ("include", "../book/fragments/exercises.md", {}, ""),
    ]
    assert [d.lines for d in found] == [(2, 7), (8, 11), (12, 14)]


def test_what_only_looks_like_a_directive_is_not_one() -> None:
    text = (
        "````markdown\n```{exercise} Inside a code block\n:label: no\n```\n````\n\n"  # an example in a code block
        "Text with `{exercise}` in code, and ```` ```{solution-end} ```` inline.\n\n"
        "```python\nx = {1}\n```\n\n    ```{note}\n    indented: a code block\n    ```\n"
    )
    assert myst.directives(text) == []
