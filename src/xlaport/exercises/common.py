"""What every exercise checker shares: the :class:`Check` it returns and the helpers that build one.

Each ``check_*`` (one module per chapter) takes the reader's answer (``None`` when the exercise has not been
attempted) and whatever the chapter measured, recomputes the effect the chapter teaches with the toolkit, and returns
a :class:`Check`: passed or not, and one line that names what is wrong (``"3 compiles; the budget is 2: the 301-frame
batch got its own bucket"``). Bad arguments from the chapter itself (not the reader's answer) raise a one-line
``ValueError``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["Check", "NOT_ATTEMPTED"]

NOT_ATTEMPTED = "not attempted: set `answer` in the cell above and run it again"


@dataclass(frozen=True)
class Check:
    """The outcome of one exercise check: ``passed`` is None when the reader gave no answer."""

    name: str
    passed: bool | None
    message: str

    def __bool__(self) -> bool:
        return bool(self.passed)

    @property
    def status(self) -> str:
        return "not attempted" if self.passed is None else ("pass" if self.passed else "fail")

    def __str__(self) -> str:
        if self.passed is None:
            return f"{self.name}: {self.message}"
        return f"{self.status}: {self.name}: {self.message}"


def _none(name: str) -> Check:
    return Check(name, None, NOT_ATTEMPTED)


def _ok(name: str, message: str) -> Check:
    return Check(name, True, message)


def _fail(name: str, message: str) -> Check:
    return Check(name, False, message)


def _ints(name: str, values: Any) -> list[int]:
    try:
        out = [int(v) for v in values]
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a list of whole numbers") from None
    if any(v < 1 for v in out):
        raise ValueError(f"{name} must be positive, got {out[:8]}")
    return out
