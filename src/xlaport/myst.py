"""The chapters' markdown read with the parser the book is built with, for the toolkit's own readers of the chapters.

A learner's copy of a chapter (:mod:`xlaport.exercises.workspace`) and the curriculum's counts need to find the
exercises, the solutions and the included files in a chapter's markdown cells. They ask myst_parser: a directive is
a fence that myst_parser's markdown-it configuration (the book's extensions, :data:`EXTENSIONS`) parses, and its
argument, options and body are what myst_parser's own directive parser reads from it. Nothing here is a regular
expression over MyST. Needs ``myst-parser`` (in the book's environment, and in ``pip install 'xlaport[learn]'``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache, lru_cache
from typing import Any, ClassVar

__all__ = ["EXTENSIONS", "Directive", "directives"]

# _config.yml, parse.myst_enable_extensions (tests/unit/test_myst.py keeps the two equal).
EXTENSIONS = (
    "colon_fence",
    "deflist",
    "dollarmath",
    "amsmath",
    "substitution",
    "smartquotes",
    "tasklist",
    "html_image",
)


@dataclass(frozen=True)
class Directive:
    """One directive of a markdown text: ``{name} argument``, its options and body; ``lines``: where it starts and
    ends in the text (0-based, end excluded)."""

    name: str
    argument: str
    options: dict[str, Any] = field(default_factory=dict)
    body: str = ""
    lines: tuple[int, int] = (0, 0)


@cache
def _parser() -> Any:
    try:
        from markdown_it.renderer import RendererHTML
        from myst_parser.config.main import MdParserConfig
        from myst_parser.parsers.mdit import create_md_parser
    except ImportError:
        raise ImportError(
            "reading the book's chapters needs myst-parser: pip install 'xlaport[learn]' (make venv installs it)"
        ) from None
    return create_md_parser(MdParserConfig(enable_extensions=set(EXTENSIONS)), RendererHTML)


@cache
def _any_directive() -> type:
    """A directive class that takes one argument, any options and a body, as myst_parser's parser wants one."""
    from docutils.parsers.rst import Directive as Base

    class Any_(Base):
        optional_arguments = 1
        final_argument_whitespace = True
        has_content = True
        option_spec: ClassVar[dict[str, Any]] = {
            "class": str
        }  # not empty: myst_parser looks for an option block only when there may be one

    return Any_


def directives(text: str) -> list[Directive]:
    """The directives at the top level of ``text``, in order (a directive inside another's body is not listed)."""
    return list(_directives(text))


@lru_cache(maxsize=1024)
def _directives(text: str) -> tuple[Directive, ...]:
    """Parsed once per text: a learner's copy asks one cell for its exercise, solution and include in turn."""
    from myst_parser.parsers.directives import parse_directive_text

    found = []
    for token in _parser().parse(text):
        if token.type not in ("fence", "colon_fence") or not token.info.startswith("{"):
            continue
        name, close, argument = token.info[1:].partition("}")
        if not close:
            continue
        parsed = parse_directive_text(_any_directive(), argument.strip(), token.content, validate_options=False)
        start, end = token.map or (0, 0)
        found.append(
            Directive(name, " ".join(parsed.arguments), dict(parsed.options), "\n".join(parsed.body), (start, end))
        )
    return tuple(found)
