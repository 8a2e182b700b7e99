"""``[tool.xlaport]`` in the scanned project's ``pyproject.toml``.

.. code-block:: toml

    [tool.xlaport]
    ignore = ["cuda-streams"]                 # rules never reported
    exclude = ["legacy/*", "tests/fixtures"]  # globs, relative to this pyproject.toml
    fail-on = "warning"                       # default for `xlaport scan --fail-on`
    max-file-size = 4_000_000                 # bytes; larger files are skipped with a warning

    [tool.xlaport.severity]                   # a rule's severity for this project
    host-sync-in-loop = "error"

    [tool.xlaport.per-file-ignores]           # glob -> rules ignored in matching files
    "scripts/*" = ["cuda-device"]

    [tool.xlaport.effort]                     # the doctor's effort assumptions (see xlaport.scan.effort)
    weeks_per_kernel = 3

A line comment ``# xlaport: ignore[rule-a, rule-b]`` (or ``# xlaport: ignore`` for every rule)
silences findings on its line; ``# xlaport: ignore-file`` (optionally ``[rules]``) a whole file. Only comments
count (:mod:`xlaport.scan.suppress`); an unknown rule id in one is reported as a warning on its file.
Unknown keys, rules or severities raise ``ValueError`` with one line.
"""

from __future__ import annotations

import fnmatch
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .rules import SEVERITIES, rule

__all__ = ["ScanConfig", "load_config", "find_pyproject", "DEFAULT_MAX_FILE_SIZE", "FAIL_LEVELS"]

DEFAULT_MAX_FILE_SIZE = 8 * 1024 * 1024  # bytes: far above any hand-written module (torch's largest is ~1.2 MB)
FAIL_LEVELS: tuple[str, ...] = (*SEVERITIES, "never")
_KEYS = {"ignore", "exclude", "fail-on", "max-file-size", "severity", "per-file-ignores", "effort"}


@dataclass(frozen=True)
class ScanConfig:
    """What the scan of one project honours. ``base`` is the folder globs are relative to."""

    base: Path | None = None
    source: str = "defaults"
    ignore: frozenset[str] = frozenset()
    exclude: tuple[str, ...] = ()
    fail_on: str | None = None
    max_file_size: int = DEFAULT_MAX_FILE_SIZE
    severity: dict[str, str] = field(default_factory=dict)
    per_file_ignores: tuple[tuple[str, frozenset[str]], ...] = ()
    effort: dict[str, Any] = field(default_factory=dict)

    def relative(self, path: Path) -> str | None:
        """``path`` relative to ``base`` in POSIX form, or None when outside it (or no base)."""
        if self.base is None:
            return None
        try:
            return path.resolve().relative_to(self.base).as_posix()
        except (ValueError, OSError):
            return None

    def excluded(self, rel: str) -> bool:
        """True when ``rel`` (relative to ``base``) or one of its parent folders matches an exclude glob."""
        if not self.exclude:
            return False
        parts = rel.split("/")
        prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
        return any(fnmatch.fnmatchcase(p, g.rstrip("/")) for g in self.exclude for p in prefixes)

    def ignored_in(self, rel: str | None) -> frozenset[str]:
        if rel is None or not self.per_file_ignores:
            return frozenset()
        out: set[str] = set()
        for g, rules in self.per_file_ignores:
            if fnmatch.fnmatchcase(rel, g):
                out |= rules
        return frozenset(out)


def _rules(where: str, value: Any) -> frozenset[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"{where} must be a list of rule ids")
    for v in value:
        rule(v)
    return frozenset(value)


def find_pyproject(start: Path) -> Path | None:
    """The nearest ``pyproject.toml`` at or above ``start`` (a file or a folder)."""
    try:
        p = start.resolve()
    except OSError:
        return None
    if not p.is_dir():
        p = p.parent
    for d in (p, *p.parents):
        cand = d / "pyproject.toml"
        try:
            if cand.is_file():
                return cand
        except OSError:
            return None
    return None


def load_config(pyproject: Path | str | None) -> ScanConfig:
    """The ``[tool.xlaport]`` table of ``pyproject`` (defaults when None or when it has no such table)."""
    if pyproject is None:
        return ScanConfig()
    path = Path(pyproject)
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ValueError(f"no such config file: {path}") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ValueError(f"cannot read {path}: {e}") from None
    except tomllib.TOMLDecodeError as e:
        raise ValueError(f"{path}: not valid TOML ({e})") from None
    table = raw.get("tool", {}).get("xlaport")
    base = path.resolve().parent
    if table is None:
        return ScanConfig(base=base, source=str(path))
    where = f"{path.name} [tool.xlaport]"
    if not isinstance(table, dict):
        raise ValueError(f"{where} must be a table")
    unknown = sorted(set(table) - _KEYS)
    if unknown:
        raise ValueError(f"{where}: unknown key {unknown[0]!r}; keys: {', '.join(sorted(_KEYS))}")
    ignore = _rules(f"{where} ignore", table.get("ignore", []))
    exclude = table.get("exclude", [])
    if not isinstance(exclude, list) or not all(isinstance(v, str) for v in exclude):
        raise ValueError(f"{where} exclude must be a list of glob strings")
    fail_on = table.get("fail-on")
    if fail_on is not None and fail_on not in FAIL_LEVELS:
        raise ValueError(f"{where} fail-on must be one of {', '.join(FAIL_LEVELS)}, got {fail_on!r}")
    size = table.get("max-file-size", DEFAULT_MAX_FILE_SIZE)
    if not isinstance(size, int) or isinstance(size, bool) or size <= 0:
        raise ValueError(f"{where} max-file-size must be a positive whole number of bytes, got {size!r}")
    sev = table.get("severity", {})
    if not isinstance(sev, dict):
        raise ValueError(f"{where} severity must be a table of rule = level")
    for k, v in sev.items():
        rule(k)
        if v not in SEVERITIES:
            raise ValueError(f"{where} severity.{k} must be one of {', '.join(SEVERITIES)}, got {v!r}")
    pfi = table.get("per-file-ignores", {})
    if not isinstance(pfi, dict):
        raise ValueError(f"{where} per-file-ignores must be a table of glob = [rules]")
    per_file = tuple((g, _rules(f"{where} per-file-ignores.{g!r}", v)) for g, v in pfi.items())
    effort = table.get("effort", {})
    if not isinstance(effort, dict):
        raise ValueError(f"{where} effort must be a table of assumption = number")
    return ScanConfig(
        base=base,
        source=str(path),
        ignore=ignore,
        exclude=tuple(exclude),
        fail_on=fail_on,
        max_file_size=size,
        severity=dict(sev),
        per_file_ignores=per_file,
        effort=dict(effort),
    )
