"""The "Target rules" reference page: every target's rules with their sources."""

from __future__ import annotations

from ..profiles import profile, profile_names
from .cite import code_md, source_md

__all__ = ["render"]


def render() -> str:
    """The reference page listing every target's rules with their sources (rendered at build time)."""
    lines = [
        "# Target rules",
        "",
        "**Every behaviour the emulated targets reproduce, and every documented difference the book relies on, "
        "is one rule in `src/xlaport/reference/data/profiles.toml`, with its source.** This page is generated from that "
        "file when the site is built; `xlaport target NAME --rules` prints the same list.",
        "",
    ]
    for p in (profile(n) for n in profile_names()):
        lines += [f"## `{p.name}`: {p.title}", ""]
        if p.package:
            lines += [
                f"Package `{p.package}` {p.package_version or ''}, device type `{p.device_type}`.".replace(" ,", ","),
                "",
            ]
        if not p.rules:
            lines += ["No rules beyond plain PyTorch.", ""]
            continue
        lines += ["| rule | kind | behaviour | source |", "|---|---|---|---|"]
        for r in p.rules:
            summary = code_md(r.summary).replace("|", "\\|")
            source = source_md(r.source, in_table=True)
            if r.extra.get("checked"):
                source += f" (read {r.extra['checked']})"
            lines.append(f"| `{r.id}` | {r.kind} | {summary} | {source} |")
        lines.append("")
    return "\n".join(lines)
