"""A source citation as MyST markdown, the one way every generated page and chapter writes one."""

from __future__ import annotations

import re

__all__ = ["source_md"]

_URL = re.compile(r"https?://[^\s<>;,]*[^\s<>;,.)]")
# A call as the wheel spells it, e.g. register_backend('tpu'/'tpu_dist'): literal, so quotes stay straight.
_CALL = re.compile(r"[A-Za-z_][\w.]*\([^()\s]*\)")


def source_md(text: str, *, in_table: bool = False) -> str:
    """``text`` with each URL as a link and each call written as code; ``|`` escaped when ``in_table``."""
    if not isinstance(text, str):
        raise ValueError(f"a source must be text, got {type(text).__name__}")
    parts, pos = [], 0
    for m in _URL.finditer(text):
        parts.append(_CALL.sub(lambda c: f"`{c[0]}`", text[pos : m.start()]))
        parts.append(f"<{m[0]}>")
        pos = m.end()
    parts.append(_CALL.sub(lambda c: f"`{c[0]}`", text[pos:]))
    out = "".join(parts)
    return out.replace("|", "\\|") if in_table else out
