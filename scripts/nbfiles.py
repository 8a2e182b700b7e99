"""Reading and writing the chapter notebooks the way the repository keeps them (for scripts that edit them)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

# Inline markup in a chapter's markdown whose text is not prose (scripts/prose_numbers.py lets numbers stand there;
# scripts/glossary_links.py never links a term there): roles ({doc}`x`, {glue:text}`k`), code, maths, links, URLs.
ROLE = re.compile(r"\{[\w:.-]+\}`[^`]*`")
CODE = re.compile(r"``[^`]+``|`[^`\n]*`")
MATH = re.compile(r"\$\$.*?\$\$|\$[^$\n]+\$", re.S)
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\([^)]*\)")
URL = re.compile(r"<?https?://[^\s>)]+>?")
INLINE_MARKUP = (ROLE, CODE, MATH, LINK, URL)


def chapters(root: Path = ROOT) -> list[Path]:
    """The chapter notebooks, ``notebooks/*.ipynb``, in name order."""
    return sorted((root / "notebooks").glob("*.ipynb"))


def source_lines(text: str) -> list[str]:
    """A cell's ``source`` as nbformat stores it: one string per line, each but the last ending in a newline."""
    parts = text.split("\n")
    return [p + "\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def dump(nb: dict[str, Any]) -> str:
    """The notebook as committed: JSON indented by one, non-ASCII kept, a final newline."""
    import json

    return json.dumps(nb, indent=1, ensure_ascii=False) + "\n"
