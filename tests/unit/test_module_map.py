"""The module map, the table at the top of book/toolkit.md, is the one list of the package's parts.

It must name every public top-level module and subpackage of ``src/xlaport`` and nothing that is gone; README and
CONTRIBUTING point to it instead of keeping copies.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "src" / "xlaport"
TOOLKIT = ROOT / "book" / "toolkit.md"
ROW = re.compile(r"^\|\s*`xlaport\.(\w+)`\s*\|", re.M)


def package_parts(package: Path = PACKAGE) -> set[str]:
    """Public top-level modules (``targets.py``) and subpackages (``scan/``) of the package."""
    parts = {p.stem for p in package.glob("*.py") if not p.name.startswith("_")}
    parts |= {p.name for p in package.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    return {name for name in parts if not name.startswith("_")}


def map_rows(text: str) -> list[str]:
    """The ``xlaport.<part>`` names in the first column of the map's table (the first table on the page)."""
    table = text.split("\n\n## ", 1)[0]
    return ROW.findall(table)


def test_the_map_lists_every_part_once_and_nothing_else() -> None:
    rows = map_rows(TOOLKIT.read_text(encoding="utf-8"))
    doubled = sorted({r for r in rows if rows.count(r) > 1})
    assert not doubled, f"listed twice in the module map: {doubled}"
    missing = sorted(package_parts() - set(rows))
    gone = sorted(set(rows) - package_parts())
    assert not missing, f"book/toolkit.md's module map lacks: {', '.join('xlaport.' + m for m in missing)}"
    assert not gone, f"book/toolkit.md's module map lists parts that do not exist: {gone}"


def test_the_check_sees_a_missing_row(tmp_path: Path) -> None:
    (tmp_path / "alpha.py").write_text("")
    (tmp_path / "_private.py").write_text("")
    (tmp_path / "beta").mkdir()
    (tmp_path / "beta" / "__init__.py").write_text("")
    (tmp_path / "data").mkdir()  # not a package
    assert package_parts(tmp_path) == {"alpha", "beta"}
    page = "# T\n\n| module | what |\n|---|---|\n| `xlaport.alpha` | a |\n\n## Later\n\n| `xlaport.beta` | b |\n"
    assert map_rows(page) == ["alpha"]  # a row outside the first table is not the map


def test_no_other_copy_of_the_map() -> None:
    init = (PACKAGE / "__init__.py").read_text(encoding="utf-8")
    assert "book/toolkit.md" in init
    assert len(ROW.findall(init)) == 0 and init.count("xlaport.") < 5, "the package docstring copies the module map"
    for doc in ("README.md", "CONTRIBUTING.md"):
        text = (ROOT / doc).read_text(encoding="utf-8")
        assert "book/toolkit.md" in text, f"{doc} does not point to the module map"
        listed = set(re.findall(r"`(\w+)/`", text)) & package_parts()
        assert len(listed) < 3, f"{doc} lists subpackages itself ({sorted(listed)}): link the module map instead"
