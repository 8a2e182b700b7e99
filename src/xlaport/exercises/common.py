"""What every exercise checker shares: the :class:`Check` it returns and the helpers that build one.

Each ``check_*`` (one module per chapter) takes the reader's answer (``None`` when the exercise has not been
attempted) and whatever the chapter measured, recomputes the effect the chapter teaches with the toolkit, and returns
a :class:`Check`: passed or not, and one line that names what is wrong (``"3 compiles; the budget is 2: the 301-frame
batch got its own bucket"``). Bad arguments from the chapter itself (not the reader's answer) raise a one-line
``ValueError``.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

__all__ = ["ArgumentError", "Check", "NOT_ATTEMPTED", "guarded", "raised"]

NOT_ATTEMPTED = "not attempted: set `answer` in this cell and run it again"


class ArgumentError(ValueError):
    """A bad argument from the chapter itself (not from the reader's answer): raised, never reported as a fail."""


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
        raise ArgumentError(f"{name} must be a list of whole numbers") from None
    if any(v < 1 for v in out):
        raise ArgumentError(f"{name} must be positive, got {out[:8]}")
    return out


def raised(e: BaseException, who: str = "") -> str:
    """``"make_batches raised TypeError: ..."``: the first line of what the reader's code raised."""
    text = str(e).splitlines()[0] if str(e) else ""
    return f"{who + ' ' if who else ''}raised {type(e).__name__}" + (f": {text}" if text else "")


F = TypeVar("F", bound=Callable[..., Check])


def guarded(name: str) -> Callable[[F], F]:
    """Make a checker report, never raise, on any answer: an exception that is not an :class:`ArgumentError` (a
    mistake of the chapter's own arguments) becomes a failed :class:`Check` that names it."""

    def wrap(fn: F) -> F:
        sig = inspect.signature(fn)

        @functools.wraps(fn)
        def inner(*args: Any, **kwargs: Any) -> Check:
            sig.bind(*args, **kwargs)  # a chapter calling the checker wrongly gets Python's own TypeError
            try:
                result = fn(*args, **kwargs)
            except ArgumentError:
                raise
            except Exception as e:  # the reader's answer broke the check: say so in one line
                result = Check(
                    name, False, f"could not check this answer: {raised(e, 'it')}; see the exercise for its form"
                )
            from .progress import record  # in a learner's workspace: a record for the team table; elsewhere nothing

            record(result)
            return result

        return inner  # type: ignore[return-value]

    return wrap
