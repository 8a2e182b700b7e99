"""Where the rules' checks are registered, and what a check reports.

A rule module (:mod:`xlaport.scan.rules`) registers its detection here: :func:`check` for a function called on
every node of some Python syntax-node types as the walker meets them, :func:`file_check` for a function that
reads a whole file of another kind (CUDA sources, requirements files, ``pyproject.toml``). Both report
:class:`Hit` records. This module knows no rule; it is the layer the rules, the walker and the engine share.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from .walker import Walker

__all__ = ["CALL_ATTRS", "CHECKS", "DEFAULTS", "FILE_CHECKS", "Check", "Hit", "check", "file_check"]


@dataclass(frozen=True, slots=True)
class Hit:
    """One thing a check found, before the engine applies suppressions and configuration.

    ``col`` is 0-based; ``detail`` is what the finding names (the ``torch.cuda`` call, the package); ``lines`` the
    size of a kernel where the rule counts one; ``severity`` overrides the rule's (``""``: the rule's own);
    ``confidence`` is ``"low"`` when the finding rests on a name taken for a tensor from its spelling alone.
    """

    rule: str
    line: int
    col: int
    message: str
    detail: str = ""
    lines: int = 0
    severity: str = ""
    confidence: str = "high"


Check = Callable[["Walker", Any], None]
FileCheck = Callable[[str, str], list[Hit]]

#: node type -> the (rule id, check) pairs called on each node of that type, in registration order.
CHECKS: dict[type, list[tuple[str, Check]]] = {}

#: A pseudo node type for checks on a function's (or lambda's) default values: the check receives the
#: ``ast.arguments`` node and reads :meth:`Walker.defaults`.
DEFAULTS = ast.arguments

#: a call check registered with ``attrs`` runs only on calls whose callee's last name is one of them
CALL_ATTRS: dict[Check, frozenset[str]] = {}

#: file kind (``cu``, ``req``, ``pyproject``) -> the (rule id, check) pairs that read files of that kind
FILE_CHECKS: dict[str, list[tuple[str, FileCheck]]] = {}


def check(rule_id: str, *node_types: type, attrs: Iterable[str] | None = None) -> Callable[[Check], Check]:
    """Register ``fn(walker, node)`` as rule ``rule_id``'s check on every node of ``node_types``.

    Checks run before the walker visits the node's children, so the context (scope, loops, imports)
    is the node's own. For ``ast.Call`` nodes, :attr:`Walker.q` and :attr:`Walker.attr` hold the callee's
    resolved dotted name and last name; for an ``ast.Attribute`` (only whole chains such as
    ``torch.cuda.synchronize`` under ``torch.`` reach checks) the chain's. ``attrs``: for ``ast.Call`` checks,
    the callee last names the check is about (``{"item", "tolist"}``); the walker skips other calls.
    """
    if not node_types:
        raise ValueError(f"check for {rule_id!r} names no node type")

    def register(fn: Check) -> Check:
        for t in node_types:
            CHECKS.setdefault(t, []).append((rule_id, fn))
        if attrs is not None:
            CALL_ATTRS[fn] = frozenset(attrs)
        return fn

    return register


def file_check(rule_id: str, *kinds: str) -> Callable[[FileCheck], FileCheck]:
    """Register ``fn(text, kind) -> [Hit]`` as rule ``rule_id``'s check on whole files of the given kinds."""
    if not kinds:
        raise ValueError(f"file check for {rule_id!r} names no file kind")

    def register(fn: FileCheck) -> FileCheck:
        for k in kinds:
            FILE_CHECKS.setdefault(k, []).append((rule_id, fn))
        return fn

    return register
