"""A tiny Sphinx + MyST-NB project with the site's extension, built in-process, for the reader-check tests."""

from __future__ import annotations

import io
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat
from sphinx.application import Sphinx

ROOT = Path(__file__).resolve().parents[2]
EXT = ROOT / "_ext"
GLOSSARY = """\
# Glossary

```{glossary}
XLA
  The compiler.

lazy tensor
  A tensor whose operations are recorded.
```
"""
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_WARNING = re.compile(r"^(?P<path>.*?)(?::(?P<line>\d+))?: WARNING: (?P<msg>.*?)(?: \[xlaport\.(?P<kind>[\w-]+)\])?$")


def md(text: str, tags: list[str] | None = None) -> nbformat.NotebookNode:
    return nbformat.v4.new_markdown_cell(text, metadata={"tags": tags} if tags else {})


def code(source: str, outputs: list[Any] = (), tags: list[str] | None = None) -> nbformat.NotebookNode:  # type: ignore[assignment]
    cell = nbformat.v4.new_code_cell(source, execution_count=1, outputs=list(outputs))
    if tags:
        cell.metadata["tags"] = tags
    return cell


def stream(text: str, name: str = "stdout") -> nbformat.NotebookNode:
    return nbformat.v4.new_output("stream", name=name, text=text)


def result(text: str, **mimes: str) -> nbformat.NotebookNode:
    data = {"text/plain": text, **{k.replace("_", "/", 1): v for k, v in mimes.items()}}
    return nbformat.v4.new_output("execute_result", data=data, execution_count=1)


def glue(key: str, plain: str, markdown: str | None = None) -> nbformat.NotebookNode:
    """What ``myst_nb.glue(key, value, display=False)`` writes (``markdown``: for a ``Markdown`` value)."""
    data = {"application/papermill.record/text/plain": plain}
    if markdown is not None:
        data["application/papermill.record/text/markdown"] = markdown
    return nbformat.v4.new_output(
        "display_data",
        data=data,
        metadata={"scrapbook": {"name": key, "mime_prefix": "application/papermill.record/"}},
    )


def notebook(*cells: nbformat.NotebookNode, title: str = "A chapter") -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [md(f"# {title}"), *cells]
    return nb


@dataclass(frozen=True)
class Warning:
    doc: str  # the file's stem
    line: int | None
    message: str
    kind: str | None  # "prose-number" for "[xlaport.prose-number]"


def build(src: Path, pages: dict[str, str | nbformat.NotebookNode], conf: str = "") -> list[Warning]:
    """Write ``pages`` (name with suffix -> markdown text or notebook) under ``src`` with a numbered index and the
    glossary, build HTML into ``src/_build`` and return the warnings."""
    src.mkdir(parents=True, exist_ok=True)
    for name, page in pages.items():
        if isinstance(page, str):
            (src / name).write_text(page, encoding="utf-8")
        else:
            nbformat.write(page, src / name)
    docs = "\n".join(Path(n).with_suffix("").as_posix() for n in pages)
    (src / "index.md").write_text(f"# Home\n\n```{{toctree}}\n:numbered:\n{docs}\nglossary\n```\n", encoding="utf-8")
    (src / "glossary.md").write_text(GLOSSARY, encoding="utf-8")
    (src / "conf.py").write_text(
        f"import sys\nsys.path.insert(0, {str(EXT)!r})\n"
        "extensions = ['myst_nb', 'xlaport_site']\nnb_execution_mode = 'off'\nexclude_patterns = ['_build']\n"
        "myst_enable_extensions = ['colon_fence', 'dollarmath']\nnb_render_markdown_format = 'myst'\n"
        "suppress_warnings = ['mystnb.unknown_mime_type']\n" + conf,
        encoding="utf-8",
    )
    out = io.StringIO()
    app = Sphinx(
        src, src, src / "_build", src / "_build" / ".doctrees", "html", status=None, warning=out, freshenv=True
    )
    app.build()
    found = []
    for line in _ANSI.sub("", out.getvalue()).splitlines():
        m = _WARNING.match(line)
        if m:
            where = Path(m["path"]).stem if m["path"] else ""
            found.append(Warning(where, int(m["line"]) if m["line"] else None, m["msg"], m["kind"]))
        elif line.strip() and found:
            continue  # a traceback or continuation line
    return found
