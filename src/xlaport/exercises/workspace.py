"""A learner's workspace (torch-free): their own copies of a session's chapters, without the solutions.

- :func:`learner_edition` turns a chapter notebook into the copy a learner works in: every folded solution (the
  cells from ``{solution-start}`` to ``{solution-end}``) is replaced by one note that says how to reveal it, and
  outputs are cleared, so "Run All" never runs a solution; an ``{include}`` (the exercises preamble) is replaced by
  the text it includes, which Jupyter would not show. The directives are found by the parser the book is built with
  (:mod:`xlaport.myst`).
- :func:`start` writes a session's chapters into a folder outside the repository, with a ``.xlaport-learn.toml``
  that names the learner and the progress folder; :func:`reset` puts one chapter back (the old copy is kept).
- :func:`reveal` prints an exercise's solution from the book's own notebook, when the learner asks for it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from pathlib import Path
from typing import Any

from ..myst import Directive, directives
from .curriculum import session
from .progress import CONFIG

__all__ = [
    "CONFIG",
    "book_root",
    "chapter_path",
    "exercise_labels",
    "learner_edition",
    "reset",
    "reveal",
    "solution_text",
    "start",
]


def book_root() -> Path:
    """The book's folder (with ``notebooks/``): ``$XLAPORT_BOOK``, else the clone this toolkit is installed from."""
    env = os.environ.get("XLAPORT_BOOK")
    candidates = [Path(env)] if env else [Path(__file__).resolve().parents[3]]
    for c in candidates:
        if (c / "notebooks").is_dir():
            return c
    raise FileNotFoundError("the book's notebooks are not here: set XLAPORT_BOOK to a clone of the xlaport repository")


def chapter_path(chapter: str, root: Path | None = None) -> Path:
    """The book's notebook for ``chapter`` (its stem; a leading ``01_`` may be left out)."""
    nbs = (root or book_root()) / "notebooks"
    for stem in (chapter, *(p.stem for p in sorted(nbs.glob(f"*_{chapter}.ipynb")))):
        if (nbs / f"{stem}.ipynb").exists():
            return nbs / f"{stem}.ipynb"
    known = ", ".join(sorted(p.stem for p in nbs.glob("*.ipynb")))
    raise ValueError(f"no chapter {chapter!r}; the chapters are {known}")


def _text(cell: dict[str, Any]) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else str(src)


def _first(cell: dict[str, Any], name: str) -> Directive | None:
    """The first directive ``{name}`` of a markdown cell."""
    if cell["cell_type"] != "markdown":
        return None
    return next((d for d in directives(_text(cell)) if d.name == name), None)


def exercise_labels(nb: dict[str, Any]) -> list[str]:
    """The exercise labels of a notebook, in order (exercise 1 is the first)."""
    return [str(d.options.get("label", "")) for c in nb["cells"] if (d := _first(c, "exercise"))]


def _lines(text: str) -> list[str]:
    parts = text.split("\n")
    return [p + "\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def _inline_includes(text: str, folder: Path) -> str:
    """``text`` with each ``{include}`` directive replaced by the file it names (relative to ``folder``, as MyST reads
    it from the notebook's folder)."""
    lines = text.split("\n")
    for d in reversed([d for d in directives(text) if d.name == "include"]):
        start, end = d.lines
        lines[start:end] = (folder / d.argument).read_text().rstrip("\n").split("\n")
    return "\n".join(lines)


def learner_edition(nb: dict[str, Any], chapter: str, root: Path | None = None) -> dict[str, Any]:
    """A copy of the notebook without solution cells and outputs; each solution becomes a note on how to reveal it,
    and each ``{include}`` the text it includes (read from ``root``'s ``notebooks/``, the book's by default)."""
    labels = exercise_labels(nb)
    out = {k: v for k, v in nb.items() if k != "cells"}
    cells: list[dict[str, Any]] = []
    inside = False
    pending = 0  # the exercise whose answer cell comes next
    for c in nb["cells"]:
        text = _text(c)
        if exercise := _first(c, "exercise"):
            pending = labels.index(str(exercise.options.get("label", ""))) + 1
        if start := _first(c, "solution-start"):
            inside = True
            n = labels.index(start.argument) + 1 if start.argument in labels else 0
            note = (
                f"*Solution hidden in your copy.* Stuck? Run `from xlaport.exercises import reveal; "
                f"reveal({chapter!r}, {n})` in a new cell, or `xlaport learn reveal {chapter} {n}` in a terminal; on "
                "the website it is folded under the exercise."
            )
            cells.append({"cell_type": "markdown", "id": f"solution-note-{n}", "metadata": {}, "source": _lines(note)})
            continue
        if inside:
            if _first(c, "solution-end"):
                inside = False
            continue
        c = dict(c)
        if _first(c, "include"):
            c["source"] = _lines(_inline_includes(text, (root or book_root()) / "notebooks"))
        if c["cell_type"] == "code":
            c["outputs"], c["execution_count"] = [], None
            if pending:  # the answer cell: its checks are recorded under this exercise for the team table
                short = chapter.removeprefix("01_")
                c["source"] = _lines(
                    f"from xlaport.exercises import progress\nprogress.at({short!r}, {pending})   # records this cell's checks\n\n{text}"
                )
                pending = 0
        cells.append(c)
    out["cells"] = cells
    return out


def solution_text(chapter: str, n: int, root: Path | None = None) -> str:
    """Exercise ``n`` of ``chapter``'s solution: its explanation and code, as the book's notebook has them."""
    path = chapter_path(chapter, root)
    nb = json.loads(path.read_text())
    labels = exercise_labels(nb)
    if not isinstance(n, int) or not 1 <= n <= len(labels):
        raise ValueError(f"{path.stem} has exercises 1 to {len(labels)}, not {n!r}")
    label, parts, inside = labels[n - 1], [], False
    for c in nb["cells"]:
        text = _text(c)
        start = _first(c, "solution-start")
        if start and start.argument == label:
            inside = True
            prose = "\n".join(text.split("\n")[start.lines[1] :]).strip()  # what follows the directive in its cell
            if prose:
                parts.append(prose)
            continue
        if inside:
            if _first(c, "solution-end"):
                break
            parts.append(f"```python\n{text.rstrip()}\n```" if c["cell_type"] == "code" else text.strip())
    return f"Solution to {path.stem} exercise {n} ({label}):\n\n" + "\n\n".join(parts)


def reveal(chapter: str, n: int) -> None:
    """Print the solution to exercise ``n`` of ``chapter`` (the learner asked for it: nothing runs it)."""
    print(solution_text(chapter, n))


def _write_config(folder: Path, who: str, progress: Path | None) -> None:
    lines = [f'who = "{who}"']
    if progress is not None:
        lines.append(f'progress = "{progress.resolve().as_posix()}"')
    (folder / CONFIG).write_text("\n".join(lines) + "\n")


def _safe_name(who: str) -> str:
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}", who):
        raise ValueError(f"a learner's name is letters, digits, '.', '_' or '-' (at most 64), not {who!r}")
    return who


def start(
    n: int, folder: Path, who: str, progress: Path | None = None, root: Path | None = None, force: bool = False
) -> list[Path]:
    """Write session ``n``'s chapters (learner editions) into ``folder``; an existing copy is kept unless ``force``."""
    root = root or book_root()
    folder = Path(folder).expanduser()
    if folder.resolve().is_relative_to(root.resolve()):
        raise ValueError(f"{folder} is inside the book's clone: choose a folder outside it (e.g. ~/xlaport-work)")
    folder.mkdir(parents=True, exist_ok=True)
    _write_config(folder, _safe_name(who), progress)
    (Path(progress).expanduser() if progress is not None else folder / ".progress").mkdir(parents=True, exist_ok=True)
    written = []
    for stem in session(n).chapters:
        dest = folder / f"{stem}.ipynb"
        if dest.exists() and not force:
            continue
        nb = json.loads(chapter_path(stem, root).read_text())
        dest.write_text(json.dumps(learner_edition(nb, stem, root), indent=1, ensure_ascii=False) + "\n")
        written.append(dest)
    return written


def reset(chapter: str, folder: Path, root: Path | None = None) -> tuple[Path, Path | None]:
    """Put a fresh learner edition of ``chapter`` in ``folder``; the old copy moves to ``.reset/`` (returned)."""
    src = chapter_path(chapter, root)
    folder = Path(folder).expanduser()
    dest = folder / src.name
    kept = None
    if dest.exists():
        backups = folder / ".reset"
        backups.mkdir(exist_ok=True)
        kept = backups / f"{src.stem}-{time.strftime('%Y%m%dT%H%M%S')}.ipynb"
        shutil.move(str(dest), kept)
    folder.mkdir(parents=True, exist_ok=True)
    dest.write_text(
        json.dumps(learner_edition(json.loads(src.read_text()), src.stem, root), indent=1, ensure_ascii=False) + "\n"
    )
    return dest, kept
