"""Checked exercises: one checker per chapter exercise, each returning a :class:`~xlaport.exercises.checks.Check`.

>>> from xlaport.exercises import check_buckets
>>> print(check_buckets([120, 250, 301], [128, 256], budget=2))
fail: buckets: the 301-frame batch fits no bucket (the largest is 256)

A reader runs a checker on their own answer in the chapter (``None`` prints "not attempted"); CI runs the same
checker on the solution folded under each exercise and asserts that it passes.
"""

from __future__ import annotations

from .checks import *  # noqa: F403  (the checkers, listed once in checks.__all__)
from .checks import __all__ as __all__
