"""The book's page of scanner rules, written from the rule modules' own text (:mod:`xlaport.scan.rules`)."""

from __future__ import annotations

__all__ = ["render"]


def render() -> str:
    from ..scan.rules import render_page

    return render_page()
