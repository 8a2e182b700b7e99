"""What a notebook's cell outputs show a reader: no stray results, no build-machine noise, no printed tables.

* ``xlaport.stray-result``: a result that is only ``text/plain`` (a repr: ``'2.9.0+cu128'``, ``0``, a dict,
  ``<Future ...>``) is a forgotten ``;``. Rich results (a figure, HTML, markdown, LaTeX) are meant to show. To show a
  plain value, ``print`` it with a label, or tag the cell ``show-result``.
* ``xlaport.noise``: lines a reader should never see: the build machine's warnings (``TqdmWarning``, ``No CUDA
  runtime is found``), ipykernel's temporary file names as call sites (``2997899862.py:14``), build bookkeeping,
  log lines stamped with time and process id (``W1130 21:41:33.918000 4737 ...``) and floats printed with all
  their digits (``0.0021605609999824082``: a dict or dataclass repr). A cell tagged ``show-noise`` may keep them.
* ``xlaport.printed-table``: a markdown table printed as text; ``display(Markdown(...))`` renders it.
* ``xlaport.nan``: ``nan``/``inf`` where a measured number belongs in an output (``nan ms``, ``ratio nanx``, a
  ``nan`` column in a row of numbers). Counts of non-finite values (``4 inf in float16[1, 4]``) are fine.

The first three are checked on the outputs as the notebook is read (every mime type of a result is still there);
the last on the outputs as rendered.
"""

from __future__ import annotations

import re

from docutils import nodes
from sphinx.application import Sphinx

from ._nodes import cell_tags, inside, is_cell, is_notebook, warn

SHOW_RESULT = "show-result"
SHOW_NOISE = "show-noise"

NOISE = [
    (re.compile(r"TqdmWarning|IProgress not found"), "a tqdm/ipywidgets warning from the build machine"),
    (re.compile(r"No CUDA runtime is found"), "a CUDA-toolkit warning from the build machine"),
    (re.compile(r"(?<![\w/])\d{6,}\.py:\d+"), "an ipykernel temporary file name as a call site"),
    (re.compile(r"notebook so far:"), "build bookkeeping"),
    (re.compile(r"(?m)^[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ "), "a log line stamped with time and process id"),
    (re.compile(r"(?<![\w.])\d+\.\d{9,}(?![\w.])"), "a float printed with all its digits (format it)"),
]
PRINTED_TABLE = re.compile(r"(?m)^\s*\|.*\|\s*\n\s*\|(\s*:?-{3,}:?\s*\|)+\s*$")
NAN_AS_NUMBER = re.compile(r"(?<![\w.])-?(nan|inf) ?(ms|s|x|%|tokens/s|GB|MB|GiB)(?!\w)")
NAN_COLUMN = re.compile(r"(?m)^(?=(?:.*?\d+\.\d+){2}).*\s(nan)(\s|$)")
_TAG = re.compile(r"<[^>]+>")


def _outputs(cell: nodes.Element) -> list[nodes.Element]:
    return [c for c in cell.children if isinstance(c, nodes.container) and c.get("nb_element") == "cell_code_output"]


def _plain_blocks(node: nodes.Node) -> list[nodes.literal_block]:
    """Text outputs: streams, stderr and text/plain results (``literal_block.output``)."""
    return [b for b in node.findall(nodes.literal_block) if "output" in b.get("classes", [])]


def check_read(app: Sphinx, doctree: nodes.document) -> None:
    """Stray results, noise and printed tables, on the outputs with every mime type still present."""
    if not is_notebook(doctree):
        return
    for cell in doctree.findall(is_cell):
        tags = cell_tags(cell)
        for out in _outputs(cell):
            for bundle in out.findall(
                lambda n: isinstance(n, nodes.container) and n.get("nb_element") == "mime_bundle"
            ):
                mimes = {c.get("mime_type") for c in bundle.children if isinstance(c, nodes.container)}
                if mimes == {"text/plain"} and SHOW_RESULT not in tags:
                    shown = bundle.astext().strip().splitlines()[0][:60] if bundle.astext().strip() else ""
                    warn(
                        bundle,
                        "stray-result",
                        f"a code cell shows a stray result {shown!r} (end the line with ';', "
                        f"print it with a label, or tag the cell '{SHOW_RESULT}')",
                    )
            for block in _plain_blocks(out):
                text = block.astext()
                if SHOW_NOISE not in tags:
                    for regex, what in NOISE:
                        m = regex.search(text)
                        if m:
                            warn(block, "noise", f"a code cell shows {what}: {m.group(0)!r}")
                if "text_plain" not in block.get("classes", []) and PRINTED_TABLE.search(text):
                    warn(block, "printed-table", "a code cell prints a markdown table as text (display(Markdown(...)))")


_SHOWN = (nodes.literal_block, nodes.raw, nodes.row, nodes.paragraph)
_IN_ROW = lambda n: isinstance(n, nodes.row)  # a row is read whole


def _shown(node: nodes.Node) -> str:
    """An output's text as shown: raw HTML without its tags, a table row on one line, rendered markdown."""
    if isinstance(node, nodes.raw):
        return _TAG.sub("", node.astext())
    if isinstance(node, nodes.row):
        return " ".join(" ".join(entry.astext().split()) for entry in node.children)
    return node.astext()


def check_resolved(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    """``nan``/``inf`` where a number belongs, in the outputs as rendered."""
    for cell in doctree.findall(is_cell):
        for out in _outputs(cell):
            text = "\n".join(
                _shown(n) for n in out.findall(lambda n: isinstance(n, _SHOWN)) if not inside(n.parent, _IN_ROW)
            )
            m = NAN_AS_NUMBER.search(text) or NAN_COLUMN.search(text)
            if m:
                shown = text[max(0, m.start() - 40) : m.end() + 20].strip()
                warn(out, "nan", f"a cell output shows {m.group(1)!r} where a number belongs: {shown!r}")


def setup(app: Sphinx) -> None:
    app.connect("doctree-read", check_read)
    app.connect("doctree-resolved", check_resolved)
