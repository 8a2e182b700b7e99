"""Checks for numbers a user passes in (arguments, configs, command-line options): one-line ValueErrors.

Each check names the value it rejects and what it needs, e.g.
``--steps must be a whole number, got '2.5'``. Torch-free, so the CLI can use it before loading torch.
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["number", "positive", "non_negative", "fraction", "unit_interval", "integer"]


def number(name: str, x: Any) -> float:
    if isinstance(x, bool):
        raise ValueError(f"{name} must be a number, got {x!r}")
    try:
        v = float(x)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number, got {x!r}") from None
    if math.isnan(v) or math.isinf(v):
        raise ValueError(f"{name} must be a finite number, got {x!r}")
    return v


def positive(name: str, x: Any) -> float:
    v = number(name, x)
    if v <= 0:
        raise ValueError(f"{name} must be > 0, got {x!r}")
    return v


def non_negative(name: str, x: Any) -> float:
    v = number(name, x)
    if v < 0:
        raise ValueError(f"{name} must be >= 0, got {x!r}")
    return v


def fraction(name: str, x: Any) -> float:
    """A fraction in (0, 1]: MFU, utilisation."""
    v = positive(name, x)
    if v > 1:
        raise ValueError(f"{name} must be a fraction in (0, 1], got {x!r} (write 40% as 0.4)")
    return v


def unit_interval(name: str, x: Any) -> float:
    """A fraction in [0, 1): a loss or a discount."""
    v = non_negative(name, x)
    if v >= 1:
        raise ValueError(f"{name} must be in [0, 1), got {x!r}")
    return v


def integer(name: str, x: Any, *, minimum: int | None = None) -> int:
    """A whole number (``3``, ``"3"``, ``3.0``, ``"1e3"``), at least ``minimum`` when given; ``2.5`` is refused."""
    v = number(name, x)
    if v != int(v):
        raise ValueError(f"{name} must be a whole number, got {x!r}")
    if minimum is not None and v < minimum:
        raise ValueError(f"{name} must be a whole number >= {minimum}, got {x!r}")
    return int(v)
