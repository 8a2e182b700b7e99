"""Checks on what a reader meets: the executed notebooks' outputs and the rendered HTML pages.

Run by ``scripts/build_site.py`` (executed copies before the Jupyter Book build, rendered pages after it); each rule
has a test in ``tests/site/test_reader_checks.py`` that reintroduces the defect and sees the check fail.

Rules
-----
Executed notebooks (``check_notebook``):

* **stray result**: a code cell's ``execute_result`` that is only ``text/plain`` (a repr: ``'2.9.0+cu128'``, ``0``,
  a dict, ``<Future ...>``) is a forgotten ``;``. Rich results (a figure, HTML, markdown, LaTeX) are meant to show.
  To show a plain value, ``print`` it with a label, or tag the cell ``show-result``.
* **noise**: stderr/stdout lines a reader should never see: the build machine's environment warnings
  (``TqdmWarning``, ``No CUDA runtime is found``), ipykernel's temporary file names as call sites
  (``2997899862.py:14``), build bookkeeping (``notebook so far: 52 s``), log lines stamped with the time and the
  process id (``W1130 21:41:33.918000 4737 ...``: torch's log format), and floats printed with all their digits
  (``0.0021605609999824082``: a dict or dataclass repr). A cell tagged ``show-noise`` may keep them.
* **printed table**: a markdown table printed as text; ``display(Markdown(...))`` renders it.

Rendered pages (``check_html``):

* **raw table**: a paragraph whose lines start and end with ``|`` is a markdown table that did not render.
* **nan/inf**: ``nan``/``inf`` (Python's float repr) in glued prose (``span.pasted-text``); in a cell's output where
  a measured number belongs (``nan ms``, ``ratio nanx``, a ``nan`` column in a row of numbers). Counts of non-finite
  values and ``NaN``/``inf`` as words, which the numerics chapter teaches, are fine.
* **exact zero in exponent form**: a glued ``0.0e+00`` (the site's extension writes an exact zero as ``0``).
* **heading numbered twice**: the book numbers sections ("12.1."), so a heading that starts with its own number reads
  "12.1. 1. Autocast".
* **emoji**: colour emoji (✅, ❌, ⚠️, ...) show as empty boxes where no emoji font is installed; use text marks.
* **machine path**: a path of the build machine (``/work/``, ``/root/``, ``/home/<user>/``, ``/tmp/ipykernel_``,
  ``site-packages``, ``.../.venv/...``) anywhere in the visible text. The project's own relative ``.venv/bin/python``
  in a how-to, and documented defaults such as ``/tmp/neuron_backend``, are fine.
"""

from __future__ import annotations

import html as htmllib
import re
from pathlib import Path
from typing import Any

from xlaport.text import is_exact_zero_in_e

SHOW_RESULT = "show-result"
SHOW_NOISE = "show-noise"
SKIP_TAGS = {"skip-execution", "remove-cell", "remove-output"}

NOISE = [
    (re.compile(r"TqdmWarning|IProgress not found"), "a tqdm/ipywidgets warning from the build machine"),
    (re.compile(r"No CUDA runtime is found"), "a CUDA-toolkit warning from the build machine"),
    (re.compile(r"(?<![\w/])\d{6,}\.py:\d+"), "an ipykernel temporary file name as a call site"),
    (re.compile(r"notebook so far:"), "build bookkeeping"),
    (re.compile(r"(?m)^[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ "), "a log line stamped with time and process id"),
    (re.compile(r"(?<![\w.])\d+\.\d{9,}(?![\w.])"), "a float printed with all its digits (format it)"),
]
# A markdown table printed as text (print(report.to_markdown())): display(Markdown(...)) renders it.
PRINTED_TABLE = re.compile(r"(?m)^\s*\|.*\|\s*\n\s*\|(\s*:?-{3,}:?\s*\|)+\s*$")
MACHINE_PATH = re.compile(r"(/work/|/root/|/home/[\w.-]+/|/tmp/ipykernel_|site-packages|/\.venv/)")
NAN_INF = re.compile(r"(?<![\w.])-?(nan|inf)(?![\w(])")
# In a cell's output, nan/inf where a measured number belongs: before a unit ("nan ms", "nanx"), or a bare nan
# column in a row of numbers. Counts of non-finite values ("4 inf in float16[1, 4]") are what some chapters teach.
NAN_AS_NUMBER = re.compile(r"(?<![\w.])-?(nan|inf) ?(ms|s|x|%|tokens/s|GB|MB|GiB)(?!\w)")
NAN_COLUMN = re.compile(r"(?m)^(?=(?:.*?\d+\.\d+){2}).*\s(nan)(\s|$)")
EMOJI = re.compile("[\U0001f300-\U0001faff\u2705\u274c\u274e\u2753-\u2755\u2b50\u2b55]|[\u2600-\u27bf]\ufe0f")
DOUBLE_NUMBER = re.compile(r"^(\d+\.)+\s+\d+[.)]\s")
RAW_TABLE_LINE = re.compile(r"^\s*\|.*\|\s*$")


def _text(cell_output: dict[str, Any]) -> str:
    if cell_output.get("output_type") == "stream":
        t = cell_output.get("text", "")
    else:
        t = cell_output.get("data", {}).get("text/plain", "")
    return "".join(t) if isinstance(t, list) else str(t)


def check_notebook(nb: dict[str, Any], name: str) -> list[str]:
    """Problems in an executed notebook's outputs (JSON dict as nbformat writes it), one line each."""
    problems = []
    for i, cell in enumerate(nb.get("cells", [])):
        if cell.get("cell_type") != "code":
            continue
        tags = set(cell.get("metadata", {}).get("tags", []))
        if tags & SKIP_TAGS:
            continue
        for out in cell.get("outputs", []):
            kind = out.get("output_type")
            if kind == "execute_result" and set(out.get("data", {})) <= {"text/plain"} and SHOW_RESULT not in tags:
                shown = _text(out).strip().splitlines()[0][:60] if _text(out).strip() else ""
                problems.append(
                    f"{name}: code cell {i} shows a stray result {shown!r} (end the line with ';', or print it "
                    f"with a label, or tag the cell '{SHOW_RESULT}')"
                )
            if kind in ("stream", "execute_result", "display_data") and SHOW_NOISE not in tags:
                text = _text(out)
                for pattern, what in NOISE:
                    m = pattern.search(text)
                    if m:
                        problems.append(f"{name}: code cell {i} shows {what}: {m.group(0)!r}")
            if kind == "stream" and PRINTED_TABLE.search(_text(out)):
                problems.append(f"{name}: code cell {i} prints a markdown table as text (display(Markdown(...)))")
    return problems


def _visible_text(fragment: str) -> str:
    fragment = re.sub(r"<(script|style)\b.*?</\1>", " ", fragment, flags=re.S | re.I)
    return htmllib.unescape(re.sub(r"<[^>]+>", "", fragment))


def _blocks(page: str, pattern: str) -> list[str]:
    return re.findall(pattern, page, flags=re.S | re.I)


def _outputs(page: str) -> list[str]:
    """The HTML of each cell's output area (up to the next cell or section)."""
    found = []
    for m in re.finditer(r'<div class="cell_output\b', page):
        ends = [page.find(stop, m.end()) for stop in ('<div class="cell docutils', "<section", "</section>")]
        end = min([e for e in ends if e != -1], default=len(page))
        found.append(page[m.start() : end])
    return found


def check_html(page: str, name: str) -> list[str]:
    """Problems in one rendered HTML page, one line each."""
    problems = []
    for para in _blocks(page, r"<p\b[^>]*>(.*?)</p>"):
        lines = [ln for ln in _visible_text(para).splitlines() if ln.strip()]
        if len(lines) >= 2 and sum(bool(RAW_TABLE_LINE.match(ln)) for ln in lines) >= 2:
            problems.append(f"{name}: a markdown table did not render: {lines[0].strip()[:70]!r}")
    for span in _blocks(page, r'<span class="pasted-(?:text|inline)[^"]*">(.*?)</span>'):
        m = NAN_INF.search(_visible_text(span))
        if m:
            problems.append(f"{name}: glued prose shows {m.group(0)!r}")
        if is_exact_zero_in_e(_visible_text(span)):
            problems.append(f"{name}: glued prose shows an exact zero as {_visible_text(span).strip()!r}")
    for out in _outputs(page):
        text = _visible_text(out)
        m = NAN_AS_NUMBER.search(text) or NAN_COLUMN.search(text)
        if m:
            start = max(0, m.start() - 40)
            shown = text[start : m.end() + 20].strip()
            problems.append(f"{name}: a cell output shows {m.group(1)!r} where a number belongs: {shown!r}")
    for heading in _blocks(page, r"<h[1-4]\b[^>]*>(.*?)</h[1-4]>"):
        text = " ".join(_visible_text(heading).split())
        if DOUBLE_NUMBER.match(text):
            problems.append(f"{name}: a heading is numbered twice (the book numbers sections): {text[:60]!r}")
    body = _visible_text(page)
    emoji = EMOJI.search(body)
    if emoji:
        problems.append(f"{name}: an emoji needs an emoji font (use a text mark such as ✓ or ✗): {emoji.group(0)!r}")
    for m in MACHINE_PATH.finditer(body):
        start = max(0, m.start() - 30)
        problems.append(f"{name}: a machine path is shown: {body[start : m.end() + 30].strip()!r}")
        break
    return problems


def check_site(html_dir: Path) -> list[str]:
    """Every rendered page under html_dir (except Sphinx's own search and index pages)."""
    problems = []
    for page in sorted(html_dir.rglob("*.html")):
        rel = page.relative_to(html_dir).as_posix()
        if rel.startswith(("_", "mathjax/")) or rel in ("search.html", "genindex.html"):
            continue
        problems += check_html(page.read_text(encoding="utf-8"), rel)
    return problems
