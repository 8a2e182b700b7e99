"""What a scanner rule is: its id, severity, why, fix, chapter, and the examples it is tested on.

Each rule is one module of :mod:`xlaport.scan.rules` holding a :class:`Rule` named ``RULE``, a docstring that says
what the rule finds, and its checks. Severities, from worst: ``error`` (raises or cannot run on TPU/Trainium as
written), ``warning`` (runs, but recompiles, syncs the host, or does nothing useful there), ``note`` (the
scanner could not look).
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass

__all__ = ["KERNEL_DOCS", "SEVERITIES", "Rule", "severity_rank"]

SEVERITIES: tuple[str, ...] = ("error", "warning", "note")
KERNEL_DOCS: tuple[str, ...] = ("notebooks/custom_kernels", "book/generated/kernel_concepts")


def severity_rank(level: str) -> int:
    """2 for error, 1 for warning, 0 for note (higher is worse)."""
    try:
        return len(SEVERITIES) - 1 - SEVERITIES.index(level)
    except ValueError:
        raise ValueError(f"unknown severity {level!r}; use one of {', '.join(SEVERITIES)}") from None


@dataclass(frozen=True)
class Rule:
    """One thing the scanner looks for.

    ``category`` is the effort class the doctor prices it under; ``chapter`` the book page (a Sphinx docname such
    as ``notebooks/recompile_storms``) that teaches the fix; ``see_also`` more pages; ``position`` its place in
    the rule list. ``invalid`` are snippets the rule must report and ``valid`` snippets it must not (the tests
    run every one), scanned as a file named ``example_path``; ``finds`` says what the rule finds (its
    module's docstring, filled in when the rules are collected).
    """

    id: str
    title: str
    severity: str
    category: str
    why: str
    fix: str
    chapter: str
    see_also: tuple[str, ...] = ()
    position: int = 100
    invalid: tuple[str, ...] = ()
    valid: tuple[str, ...] = ()
    example_path: str = "example.py"
    finds: str = ""

    def __post_init__(self) -> None:
        severity_rank(self.severity)
        if not self.id or not self.why or not self.fix:
            raise ValueError(f"rule {self.id!r} needs an id, a why and a fix")

    @property
    def example_file(self) -> str | None:
        """The file name the examples are scanned as, where it matters to a reader (not a plain ``.py`` file)."""
        return None if self.example_path.endswith(".py") else self.example_path

    @property
    def docs(self) -> tuple[str, ...]:
        return (self.chapter, *self.see_also) if self.chapter else self.see_also

    def explain(self, width: int = 80) -> str:
        """The rule in plain text for a terminal (what ``xlaport scan --explain RULE`` prints): what it finds, why
        it matters, the fix, an example of each side and the chapters, wrapped at ``width`` columns."""
        from .. import pages

        def para(text: str) -> str:
            return textwrap.fill(
                " ".join(text.replace("`", "").split()), width, initial_indent="    ", subsequent_indent="    "
            )

        out = [f"{self.id}  [{self.severity}, {self.category}]  {self.title}", ""]
        if self.finds:
            out += ["What it finds:", para(self.finds), ""]
        out += ["Why:", para(self.why), "", "Fix:", para(self.fix), ""]
        where = f" (in a file named {self.example_file})" if self.example_file else ""
        if self.invalid:
            out += [f"Reported{where}:", _indent(self.invalid[0].rstrip("\n")), ""]
        if self.valid:
            out += [f"Not reported{where}:", _indent(self.valid[0].rstrip("\n")), ""]
        if self.docs:
            out.append("Read:")
            for d in self.docs:
                title = pages.TITLES.get(d)
                shown = f"{title.replace('`', '')}\n      {pages.url(d)}" if title else d
                out.append(f"    {shown}")
        return "\n".join(out).rstrip("\n")


def _indent(text: str) -> str:
    return "\n".join(("    " + ln) if ln else "" for ln in text.splitlines())
