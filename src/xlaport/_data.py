"""The one reader of the package's data files (``xlaport/reference/data/``): the bottom of the import graph.

Every module that loads a data file (profiles, cost facts, op tables, published runs, the API mapping) reads it here,
so none of them imports :mod:`xlaport.reference`, which renders the book's pages from those modules and so sits above
them. ``xlaport.reference.data_text`` is this same function.
"""

from __future__ import annotations

from importlib import resources

__all__ = ["data_text"]


def data_text(name: str) -> str:
    """The text of data file ``name`` in ``xlaport/reference/data/``."""
    path = resources.files(__package__ or "xlaport").joinpath("reference", "data", name)
    if not path.is_file():
        raise ValueError(f"no reference data file {name!r}")
    return path.read_text(encoding="utf-8")
