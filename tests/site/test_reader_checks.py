"""Each reader-facing check in scripts/site_checks.py fails when its defect is reintroduced, and passes clean pages."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import script

ROOT = Path(__file__).resolve().parents[2]
sc = script("site_checks")


def _nb(source: str, outputs: list[dict[str, Any]], tags: list[str] | None = None) -> dict[str, Any]:
    cell = {"cell_type": "code", "source": source, "metadata": {"tags": tags or []}, "outputs": outputs}
    return {"cells": [cell]}


def _result(text: str, **extra: str) -> dict[str, Any]:
    return {"output_type": "execute_result", "data": {"text/plain": text, **extra}, "execution_count": 1}


def _stream(text: str, name: str = "stderr") -> dict[str, Any]:
    return {"output_type": "stream", "name": name, "text": text}


@pytest.mark.parametrize("shown", ["'2.9.0+cu128'", "0", "{'a': 0.1234567890123456}", "<Future at 0x7f state=running>"])
def test_stray_plain_result_fails(shown: str) -> None:
    problems = sc.check_notebook(_nb("x", [_result(shown)]), "ch.ipynb")
    assert problems and "stray result" in problems[0]


def test_rich_or_tagged_result_passes() -> None:
    assert sc.check_notebook(_nb("df", [_result("<df>", **{"text/html": "<table></table>"})]), "ch") == []
    assert sc.check_notebook(_nb("x", [_result("3")], tags=["show-result"]), "ch") == []
    assert sc.check_notebook(_nb("print(x)", [_stream("x = 3\n", "stdout")]), "ch") == []


@pytest.mark.parametrize(
    "text",
    [
        "/work/main/.venv/lib/python3.11/site-packages/tqdm/auto.py:21: TqdmWarning: IProgress not found.",
        "W1130 torch/utils/cpp_extension.py:117] No CUDA runtime is found, using CUDA_HOME='/usr/local'",
        "first call at 2997899862.py:14",
        "notebook so far: 52 s",
    ],
)
def test_noise_fails_unless_tagged(text: str) -> None:
    assert sc.check_notebook(_nb("f()", [_stream(text)]), "ch")
    assert sc.check_notebook(_nb("f()", [_stream(text)], tags=["show-noise"]), "ch") == []


def _page(body: str) -> str:
    return f"<html><head><script>var p = '/work/x';</script></head><body>{body}</body></html>"


def test_raw_markdown_table_fails() -> None:
    raw = "<p>| case | dtype |\n|—|—|\n| a | float16 |</p>"
    assert any("did not render" in p for p in sc.check_html(_page(raw), "p.html"))
    rendered = "<table><tr><td>a</td></tr></table><p>a | b is prose with one bar</p>"
    assert sc.check_html(_page(rendered), "p.html") == []


@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
def test_nan_in_glued_prose_fails(value: str) -> None:
    page = _page(f'<p>the ratio is <span class="pasted-text">{value}</span>x</p>')
    assert any("glued prose" in p for p in sc.check_html(page, "p.html"))
    assert sc.check_html(_page('<p>the ratio is <span class="pasted-text">12.5</span>x</p>'), "p.html") == []


@pytest.mark.parametrize("value", ["0e+00", "0.0e+00", "-0.00e+00"])
def test_exact_zero_in_exponent_form_fails(value: str) -> None:
    page = _page(f'<p>it matches to <span class="pasted-text">{value}</span></p>')
    assert any("exact zero" in p for p in sc.check_html(page, "p.html"))
    fine = _page('<p>it matches to <span class="pasted-text">2.0e-07</span> and <span class="pasted-text">0</span></p>')
    assert sc.check_html(fine, "p.html") == []


def test_the_site_extension_writes_an_exact_zero_as_0() -> None:
    from docutils import nodes

    sys.path.insert(0, str(ROOT / "_ext"))
    import xlaport_site

    doc = nodes.paragraph()
    for text in ("0.0e+00", "2.0e-07", "0e+00"):
        doc += nodes.inline(text, text, classes=["pasted-text"])
    xlaport_site._exact_zero(None, doc, "p")  # type: ignore[arg-type]
    assert [n.astext() for n in doc.children] == ["0", "2.0e-07", "0"]


def test_printed_markdown_table_and_stamped_log_lines_fail() -> None:
    def nb(text: str, name: str = "stdout") -> dict:
        return {
            "cells": [
                {
                    "cell_type": "code",
                    "metadata": {},
                    "outputs": [{"output_type": "stream", "name": name, "text": text}],
                }
            ]
        }

    assert any("markdown table" in p for p in sc.check_notebook(nb("| a | b |\n|---|---:|\n| 1 | 2 |\n"), "n"))
    stamped = "W1130 21:41:33.918000 4737 torch/_dynamo/convert_frame.py:1358] [0/8] hit config.recompile_limit (8)\n"
    assert any("time and process id" in p for p in sc.check_notebook(nb(stamped, "stderr"), "n"))
    assert any("all its digits" in p for p in sc.check_notebook(nb("{'s': 0.0021605609999824082}\n"), "n"))
    clean = "WARNING torch._dynamo.convert_frame: hit config.recompile_limit (8)\nstep 0.0022 s\n"
    assert sc.check_notebook(nb(clean), "n") == []


def _output(text: str) -> str:
    return f'<div class="cell docutils container"><div class="cell_output docutils container"><pre>{text}</pre></div></div>'


@pytest.mark.parametrize(
    "text", ["cached step median nan ms, ratio nanx", "diffusers, timesteps   8  True   3.28   353.3   nan"]
)
def test_nan_where_a_number_belongs_fails(text: str) -> None:
    assert any("where a number belongs" in p for p in sc.check_html(_page(_output(text)), "p.html"))


def test_nonfinite_counts_pass() -> None:
    text = "first fault in mm_1 [compiled]: 0 NaN, 4 inf in float16[1, 4]; losses [nan, nan, nan]"
    assert sc.check_html(_page(_output(text)), "p.html") == []


@pytest.mark.parametrize(
    "path",
    [
        "/work/main/src/xlaport/models/dit.py",
        "/root/.cache/x",
        "/home/alice/proj/a.py",
        "/tmp/ipykernel_13130/1644709049.py",
        "lib/python3.11/site-packages/tqdm/auto.py",
        "/opt/x/.venv/lib/python3.11",
    ],
)
def test_machine_path_fails(path: str) -> None:
    assert any("machine path" in p for p in sc.check_html(_page(f"<pre>warning at {path}:1</pre>"), "p.html"))


def test_relative_project_paths_pass() -> None:
    page = _page("<p>run <code>.venv/bin/python -m pytest</code>; the debug dir defaults to /tmp/neuron_backend</p>")
    assert sc.check_html(page, "p.html") == []


def test_check_site_walks_pages(tmp_path: Path) -> None:
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "notebooks" / "ch.html").write_text(_page("<p>| a | b |\n| 1 | 2 |</p>"))
    (tmp_path / "search.html").write_text(_page("<p>/work/ in the search page's own scripts is not checked</p>"))
    problems = sc.check_site(tmp_path)
    assert len(problems) == 1 and problems[0].startswith("notebooks/ch.html")


def test_heading_numbered_twice_fails() -> None:
    twice = '<h2>12.1. 1. Autocast around a compiled region<a class="headerlink" href="#x">#</a></h2>'
    assert any("numbered twice" in p for p in sc.check_html(_page(twice), "p.html"))
    once = "<h2>12.1. Mechanism 1: Autocast around a compiled region</h2><h2>3. Running</h2>"
    assert sc.check_html(_page(once), "p.html") == []


@pytest.mark.parametrize("mark", ["✅ kernel", "❌ raises", "⚠️ CPU fallback", "💲"])
def test_emoji_fails(mark: str) -> None:
    assert any("emoji" in p for p in sc.check_html(_page(f"<td>{mark}</td>"), "p.html"))


def test_text_marks_pass() -> None:
    assert sc.check_html(_page("<td>✓ kernel</td><td>✗ raises</td><td>! CPU fallback</td>"), "p.html") == []
