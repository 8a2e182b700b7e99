"""Sphinx extension for the xlaport site (loaded from _config.yml ``local_extensions``).

One module per family:

* :mod:`.generated`: the pages made from the toolkit's data when the build starts (``builder-inited``), the
  curriculum's among them (:mod:`.curriculum`; :mod:`.checkout` finds what the build reads beside the book);
* :mod:`.glue`: ``{glue:md}`` values marked as glued (``inline.pasted-markdown``), as ``{glue:text}`` values are;
* :mod:`.html`: fixes to the rendered pages (scripts once per page; alt text for plots and exact zeros as ``0``, as
  post-transforms);
* the reader checks, each a doctree visitor that warns ``xlaport.<check>`` (a strict build, ``-W``, fails on it):
  :mod:`.prose_numbers` (numbers in a chapter's prose are glued, parameters or sourced), :mod:`.derived` (a
  table's derived columns recompute from the cells shown), :mod:`.read_dates` (each cited web page shows the day
  it was read), :mod:`.glossary` (a term's
  first use in a chapter is a ``{term}`` link), :mod:`.outputs` (stray results, build-machine noise, printed tables,
  ``nan`` where a number belongs in an output), :mod:`.pages` (unrendered tables, ``nan`` or ``0.0e+00`` in glued
  prose, headings numbered twice, emoji, machine paths);
* :mod:`.editions`: each chapter's reader edition for Colab and Jupyter, written from its resolved doctree (after the
  checks, ``doctree-resolved`` at priority 900) as plain markdown (:mod:`.markdown`), and the Colab buttons that open
  it.

``tests/site/test_reader_checks.py`` builds small projects with this extension, reintroduces each defect and sees
its warning.
"""

from __future__ import annotations

from typing import Any

from sphinx.application import Sphinx

from . import derived, editions, generated, glossary, glue, html, outputs, pages, prose_numbers, read_dates


def setup(app: Sphinx) -> dict[str, Any]:
    for module in (generated, glue, html, prose_numbers, derived, read_dates, glossary, outputs, pages, editions):
        module.setup(app)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
