"""Where the xlaport checkout is, for what a build reads beside the book: the chapters' timings, ``verified/``, ``.venv``.

The site builds from a staged copy (``_build/site``, by ``scripts/build_site.py``), so the checkout is the first
parent, of this file or of the installed toolkit, that holds ``pyproject.toml`` and ``notebooks/``.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path


@cache
def project_root() -> Path:
    import xlaport

    for start in (Path(__file__).resolve(), Path(xlaport.__file__).resolve()):
        for parent in start.parents:
            if (parent / "pyproject.toml").is_file() and (parent / "notebooks").is_dir():
                return parent
    raise RuntimeError(f"no xlaport checkout (pyproject.toml and notebooks/) above {Path(__file__).resolve()}")
