"""Names a package exports but imports only on first use (PEP 562), so that ``import xlaport`` stays light."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(
    package: str, names: Mapping[str, str], namespace: dict[str, Any]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A module ``__getattr__`` and ``__dir__`` for ``package``: ``names`` maps an exported name to its submodule.

    The first access imports the submodule and caches the value in ``namespace`` (the package's ``globals()``), so
    later accesses are plain lookups.
    """

    def __getattr__(name: str) -> Any:
        if name in names:
            value = getattr(importlib.import_module(f".{names[name]}", package), name)
            namespace[name] = value
            return value
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted([*namespace, *names])

    return __getattr__, __dir__
