"""xlaport.reference.cite: sources render with links, and calls stay literal (no curly quotes)."""

from __future__ import annotations

import pytest

from xlaport.reference.cite import source_md


def test_urls_become_links_and_trailing_punctuation_stays_outside() -> None:
    got = source_md("AWS docs, https://awsdocs.example/a/b.html; see also (https://github.com/o/r/issues/1).")
    assert got == "AWS docs, <https://awsdocs.example/a/b.html>; see also (<https://github.com/o/r/issues/1>)."


def test_calls_are_code_so_their_quotes_stay_straight() -> None:
    got = source_md("torch_tpu 0.2.0 wheel, Backend.register_backend('tpu'/'tpu_dist') in _internal/x.py")
    assert got == "torch_tpu 0.2.0 wheel, `Backend.register_backend('tpu'/'tpu_dist')` in `_internal/x.py`"


def test_paths_and_scoped_names_are_code_so_they_render_as_written() -> None:
    # __init__ would turn bold, the stars italic, and <CamelName> would be dropped as an HTML tag
    got = source_md(
        "wheel, _internal/compile/__init__.py; glue_*/libpywrap_*.so; torch_tpu::Aten<CamelName>, name='tpu'"
    )
    assert got == (
        "wheel, `_internal/compile/__init__.py`; `glue_*/libpywrap_*.so`; `torch_tpu::Aten<CamelName>`, `name='tpu'`"
    )
    assert source_md("a ratio of 3/4, TCP/IP and v2.9.0") == "a ratio of 3/4, TCP/IP and v2.9.0"  # not paths
    assert source_md("a (b) c") == "a (b) c"  # prose in parentheses is not a call


def test_table_cells_escape_bars_and_bad_input_is_one_line() -> None:
    assert source_md("a | b", in_table=True) == "a \\| b" and source_md("a | b") == "a | b"
    with pytest.raises(ValueError, match="must be text"):
        source_md(None)  # type: ignore[arg-type]
