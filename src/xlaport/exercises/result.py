"""What a check returns, :class:`Check`: shared by the checkers' guard (:mod:`.common`) and the progress records
(:mod:`.progress`), so that neither imports the other's module for it."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Check", "NOT_ATTEMPTED"]

NOT_ATTEMPTED = "not attempted: set `answer` in this cell and run it again"


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
