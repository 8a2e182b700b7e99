"""What every exercise checker shares: :func:`guarded`, which turns a checker's findings into the :class:`Check` it
returns, and the helpers its body uses.

Each ``check_*`` (one module per chapter) takes the reader's answer (``None`` when the exercise has not been
attempted) and whatever the chapter measured, recomputes the effect the chapter teaches with the toolkit, and returns
a :class:`Check`: passed or not, and one line that names what is wrong (``"3 compiles; the budget is 2: the 301-frame
batch got its own bucket"``). Bad arguments from the chapter itself (not the reader's answer) raise a one-line
``ValueError``.

A checker is written as its body alone, under ``@guarded(name, ...)``: the body gets an answer that is there (and
callable, when ``must_be`` says it must be a function) and returns :func:`passes` or :func:`fails` with the message;
the guard names the result, says "not attempted" for ``None``, turns an exception of the reader's code into a fail,
and records the check for a team's progress table.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Concatenate, ParamSpec, TypeVar

from .progress import record
from .result import NOT_ATTEMPTED, Check

__all__ = ["ArgumentError", "Check", "NOT_ATTEMPTED", "Verdict", "fails", "guarded", "passes", "raised"]


class ArgumentError(ValueError):
    """A bad argument from the chapter itself (not from the reader's answer): raised, never reported as a fail."""


@dataclass(frozen=True)
class Verdict:
    """What a checker's body found: passed or not (None: the answer could not be judged here), and the one line that
    says why. :func:`guarded` makes it the :class:`Check` that carries the checker's name."""

    passed: bool | None
    message: str


def passes(message: str) -> Verdict:
    return Verdict(True, message)


def fails(message: str) -> Verdict:
    return Verdict(False, message)


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


A = TypeVar("A")
P = ParamSpec("P")


def guarded(
    name: str, *, must_be: str | None = None, arguments: Callable[..., object] | None = None
) -> Callable[[Callable[Concatenate[A, P], Verdict]], Callable[Concatenate[A | None, P], Check]]:
    """Make a checker body (its first argument the reader's answer) the checker ``name``, which reports, never raises,
    on any answer.

    In order: ``arguments``, if given, is called with those of the checker's arguments it names (defaults filled in)
    and raises :class:`ArgumentError` for a mistake of the chapter's own (whatever the answer); a ``None`` answer is
    "not attempted"; with ``must_be`` (``"a function buckets(smallest, budget)"``) an answer that is not callable
    fails with "answer must be <must_be>"; otherwise the body runs. Any exception other than an
    :class:`ArgumentError` becomes a failed :class:`Check` that names it. In a learner's workspace every check is
    recorded (:func:`~xlaport.exercises.progress.record`)."""
    wanted = list(inspect.signature(arguments).parameters) if arguments is not None else []

    def wrap(fn: Callable[Concatenate[A, P], Verdict]) -> Callable[Concatenate[A | None, P], Check]:
        sig = inspect.signature(fn)
        if unknown := [k for k in wanted if k not in list(sig.parameters)[1:]]:
            raise TypeError(
                f"{fn.__name__}: its arguments check takes {unknown}, which are not the checker's arguments"
            )

        @functools.wraps(fn)
        def inner(answer: A | None, /, *args: P.args, **kwargs: P.kwargs) -> Check:
            bound = sig.bind(answer, *args, **kwargs)  # a chapter calling the checker wrongly gets Python's TypeError
            try:
                if arguments is not None:
                    bound.apply_defaults()
                    arguments(**{k: bound.arguments[k] for k in wanted})
                if answer is None:
                    result = Check(name, None, NOT_ATTEMPTED)
                elif must_be is not None and not callable(answer):
                    result = Check(name, False, f"answer must be {must_be}")
                else:
                    verdict = fn(answer, *args, **kwargs)
                    result = Check(name, verdict.passed, verdict.message)
            except ArgumentError:
                raise
            except Exception as e:  # the reader's answer broke the check: say so in one line
                result = Check(
                    name, False, f"could not check this answer: {raised(e, 'it')}; see the exercise for its form"
                )
            record(result)  # in a learner's workspace: a record for the team table; elsewhere nothing
            return result

        return inner

    return wrap
