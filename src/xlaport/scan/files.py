"""Which files a scan reads, what kind each is, how it is shown, and which packages are the scanned tree's own.

:func:`walk` yields ``(path, kind)`` for every file a scan reads under a root (``kind``: ``py``, ``cu``, ``req``,
``pyproject``), skipping :data:`SKIP_DIRS` and what ``[tool.xlaport] exclude`` names, and reports what it
cannot enter through ``warn``; :func:`own_packages` names the tree's own top-level packages, so that its
imports of itself are not taken for dependencies.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

from .config import ScanConfig

__all__ = ["SKIP_DIRS", "display_name", "kind_of", "own_packages", "walk"]

SKIP_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        "__pycache__",
        ".venv",
        "venv",
        ".tox",
        ".nox",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        "node_modules",
        ".ipynb_checkpoints",
        "site-packages",
    }
)


def kind_of(p: Path) -> str | None:
    name = p.name
    suf = p.suffix
    if suf == ".py":
        return "py"
    if suf in (".cu", ".cuh"):
        return "cu"
    if name == "pyproject.toml":
        return "pyproject"
    if suf == ".txt" and ("requirements" in name or name.startswith("constraints") or p.parent.name == "requirements"):
        return "req"
    return None


def display_name(p: Path, root: Path, single: bool, cwd: Path) -> str:
    try:
        rel = os.path.relpath(p, cwd)
        if not rel.startswith(".."):
            return Path(rel).as_posix()
    except ValueError:
        pass
    if root.is_dir() or not root.exists():
        base = root if single else root.parent
        try:
            return Path(os.path.relpath(p, base)).as_posix()
        except ValueError:
            return p.as_posix()
    return p.name


def walk(root: Path, config: ScanConfig, warn: Callable[[Path, str], None]) -> Iterator[tuple[Path, str]]:
    """(path, kind) for every file to scan under ``root``; follows folder symlinks once each."""
    try:
        st = root.stat()
    except OSError as e:
        if e.errno == 40:
            warn(root, "symlink loop, not scanned")
        else:
            warn(root, f"cannot read: {e.strerror or e}, not scanned")
        return
    if not stat.S_ISDIR(st.st_mode):
        kind = kind_of(root)
        yield root, kind or "py"  # a file named explicitly is read as Python unless its name says otherwise
        return
    seen = {(st.st_dev, st.st_ino)}
    stack = [root]
    while stack:
        d = stack.pop()
        try:
            with os.scandir(d) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as e:
            warn(d, f"cannot list folder: {e.strerror or e}, not scanned")
            continue
        subdirs = []
        for ent in entries:
            p = Path(ent.path)
            try:
                is_dir = ent.is_dir(follow_symlinks=True)
            except OSError:
                is_dir = False
            if is_dir:
                if ent.name in SKIP_DIRS or ent.name.endswith(".egg-info"):
                    continue
                rel = config.relative(p)
                if rel is not None and config.excluded(rel):
                    continue
                try:
                    s = ent.stat(follow_symlinks=True)
                except OSError as err:
                    warn(p, "symlink loop, not scanned" if err.errno == 40 else f"cannot read: {err.strerror}")
                    continue
                key = (s.st_dev, s.st_ino)
                if key in seen:
                    if ent.is_symlink():
                        warn(p, "symlink to a folder already scanned (a loop or a duplicate), not scanned again")
                    continue
                seen.add(key)
                subdirs.append(p)
                continue
            kind = kind_of(p)
            if kind is None:
                if ent.is_symlink() and p.suffix in ("", ".py"):
                    try:
                        p.stat()
                    except OSError as err:
                        if err.errno == 40:
                            warn(p, "symlink loop, not scanned")
                continue
            rel = config.relative(p)
            if rel is not None and config.excluded(rel):
                continue
            yield p, kind
        stack.extend(reversed(subdirs))


def own_packages(root: Path, py_files: list[Path]) -> frozenset[str]:
    """Top-level import names of the code being scanned, so that its imports of itself are not dependencies.

    The folders and modules at the root and under ``src/`` (where ``import <name>`` of a checkout finds
    them), and for each scanned file the outermost folder of its chain of ``__init__.py`` packages (a scan
    of a subfolder such as ``src/pkg/ops``).
    """
    names: set[str] = set()
    if root.is_dir():
        for base in (root, root / "src"):
            try:
                entries = list(os.scandir(base))
            except OSError:
                continue
            for ent in entries:
                stem = ent.name[:-3] if ent.name.endswith(".py") else ent.name
                if stem.isidentifier() and ent.name not in SKIP_DIRS and (stem != ent.name or ent.is_dir()):
                    names.add(stem)
    top: dict[Path, str | None] = {}
    for p in py_files:
        d = p.parent
        if d in top:
            name = top[d]
        else:
            name, cur = None, d
            while (cur / "__init__.py").is_file() and cur.parent != cur:
                name, cur = cur.name, cur.parent
            top[d] = name
        if name is not None and name.isidentifier():
            names.add(name)
    return frozenset(names)
