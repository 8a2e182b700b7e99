"""Checked exercises: one module of checkers per chapter, each checker returning a :class:`~xlaport.exercises.result.Check`.

>>> from xlaport.exercises import check_buckets
>>> print(check_buckets(lambda lengths, budget: [128, 256], budget=2))  # doctest: +ELLIPSIS
fail: buckets: on a job with batches of ...: the ...-frame batch fits no bucket (the largest is 256)

A reader passes their own answer, a function, to a checker in the chapter (``None`` prints "not attempted"); the
checker runs it on data the chapter never shows (its ``hidden_*`` functions and tables), so a value copied from the
page fails and code that does the right thing passes. CI runs the same checker on the solution folded under each
exercise and asserts that it passes.

Layout: ``result`` holds :class:`Check`; ``common`` holds :func:`~xlaport.exercises.common.guarded`, the decorator
every checker is written under (it names the result and answers for a ``None`` answer, a value where a function is
asked for, and an answer that raises), and the helpers the checkers use; ``progress``, ``curriculum`` and
``workspace`` serve ``xlaport learn``. These are :data:`SUPPORT_MODULES`; every other module is a chapter's, named
after the chapter's notebook (``first_steps``, ``port_training``, ...), its ``__all__`` listing its checkers and hidden
data. A new chapter needs only its module: the modules are found when this package is imported
(:data:`CHAPTER_MODULES`), and whatever their ``__all__`` lists is importable from here. (A new module that is not a
chapter's goes in :data:`SUPPORT_MODULES`; ``tests/unit/test_exercises.py`` fails on a chapter module without a
notebook.)
"""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType

from .._lazy import lazy_exports
from . import curriculum, progress, workspace
from .result import NOT_ATTEMPTED, Check
from .workspace import reveal

#: The modules of this package that are not a chapter's checkers.
SUPPORT_MODULES = frozenset({"common", "curriculum", "progress", "result", "workspace"})

#: The chapter modules, by name; each lists its checkers (and the hidden data they use) in its ``__all__``.
CHAPTER_MODULES: tuple[ModuleType, ...] = tuple(
    importlib.import_module(f"{__name__}.{info.name}")
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda info: info.name)
    if info.name not in SUPPORT_MODULES and not info.ispkg
)


def _exports(modules: tuple[ModuleType, ...]) -> dict[str, str]:
    """Each name a chapter module exports, with the module's name; two chapters exporting one name is an error."""
    out: dict[str, str] = {}
    for m in modules:
        short = m.__name__.rsplit(".", 1)[1]
        for name in m.__all__:
            if name in out:
                raise ImportError(f"chapter modules {out[name]} and {short} both export {name}: rename one")
            out[name] = short
    return out


_EXPORTS = _exports(CHAPTER_MODULES)

__all__ = ["CHAPTER_MODULES", "Check", "NOT_ATTEMPTED", "curriculum", "progress", "reveal", "workspace", *_EXPORTS]

# ``from xlaport.exercises import check_buckets``: each exported name is looked up in its chapter module (PEP 562).
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
