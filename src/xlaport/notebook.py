"""Small helpers the book's notebooks share (work the same in Jupyter, Colab and papermill).

- :func:`glue` records a measured value for the prose (myst-nb's ``glue`` when it
  is installed; otherwise it just displays the value, e.g. in Colab).
- :func:`timer` measures wall time of a block.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

__all__ = ["glue", "timer", "Timing"]


def glue(name: str, value: Any, display: bool = False) -> Any:
    """Make ``value`` available to the book's prose as ``{glue:text}`name```; returns ``value``."""
    if not name or not isinstance(name, str):
        raise ValueError(f"glue name must be a non-empty string, got {name!r}")
    try:
        from myst_nb import glue as _glue
    except ImportError:  # outside the book build (Colab, a plain Jupyter)
        if display:
            print(f"{name} = {value}")
        return value
    _glue(name, value, display=display)
    return value


@dataclass
class Timing:
    seconds: float = 0.0


@contextmanager
def timer() -> Iterator[Timing]:
    """``with timer() as t: ...`` then ``t.seconds``."""
    t = Timing()
    start = time.perf_counter()
    try:
        yield t
    finally:
        t.seconds = time.perf_counter() - start
