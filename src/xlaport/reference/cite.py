"""A source citation as MyST markdown, the one way every generated page and chapter writes one."""

from __future__ import annotations

import re

__all__ = ["code_md", "source_md"]

_URL = re.compile(r"https?://[^\s<>;,]*[^\s<>;,.)]")
# What a reader must see exactly as written, so it goes in code: a call as the wheel spells it
# (register_backend('tpu'/'tpu_dist'), whose quotes must stay straight), a scoped C++ name (torch_tpu::Aten<Name>,
# whose angle brackets would be read as HTML), a file path (_internal/compile/__init__.py, whose underscores would
# turn bold; glue_*/libpywrap*.so, whose stars would turn italic) and a keyword argument (name='tpu').
_CODE = re.compile(
    r"[A-Za-z_][\w.]*\((?:[^()]|\([^()]*\))*\)"
    r"|\b\w+(?:::\w+)+(?:<[^>\s]*>)*"
    r"|(?<![\w`/.*])(?:[\w.*-]+/)*[\w*-]*[\w*]\.(?:py|so|cc|h|md|txt|toml|json|ipynb|rst)\b"
    r"|\b\w+=(?:'[^'\s]*'|\"[^\"\s]*\")"
)


def code_md(text: str) -> str:
    """``text`` with what must read exactly as written (calls, paths, scoped names, ``name='value'``) in code spans;
    what is already in backticks stays as it is."""
    pieces = re.split(r"(`[^`]*`)", text)
    return "".join(p if p.startswith("`") else _CODE.sub(lambda c: f"`{c[0]}`", p) for p in pieces)


def source_md(text: str, *, in_table: bool = False) -> str:
    """``text`` with each URL as a link and each call, path or scoped name written as code (:func:`code_md`);
    ``|`` escaped when ``in_table``."""
    if not isinstance(text, str):
        raise ValueError(f"a source must be text, got {type(text).__name__}")
    parts, pos = [], 0
    for m in _URL.finditer(text):
        parts.append(code_md(text[pos : m.start()]))
        parts.append(f"<{m[0]}>")
        pos = m.end()
    parts.append(code_md(text[pos:]))
    out = "".join(parts)
    return out.replace("|", "\\|") if in_table else out
