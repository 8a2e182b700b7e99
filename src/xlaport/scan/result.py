"""What a scan found: :class:`Finding`, :class:`ScanWarning` and :class:`ScanResult`, the records the scanner
(:mod:`xlaport.scan.engine`) makes and everything else reads.

They hold data and answer questions about it (counts, the worst severity, whether a level is reached); writing them
out as a table, JSON, SARIF or markdown is :mod:`xlaport.scan.output`, above them (``scan.table(res)``).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from .config import FAIL_LEVELS
from .rules import RULES, rule, severity_rank

__all__ = ["Finding", "ScanWarning", "ScanResult"]


@dataclass(frozen=True)
class Finding:
    """One hit of one rule. ``col`` is 1-based; ``lines`` counts a kernel's lines (0 otherwise).

    ``confidence``: ``"high"``, or ``"low"`` when the finding rests on a value taken for a tensor from its
    name alone (``out = model(x)``, ``for x, y in loader``); the message then says so.
    """

    rule: str
    path: str
    line: int
    col: int
    severity: str
    message: str
    fix: str
    snippet: str = ""
    detail: str = ""
    lines: int = 0
    confidence: str = "high"

    @property
    def chapter(self) -> str:
        return rule(self.rule).chapter

    def as_dict(self) -> dict[str, Any]:
        r = rule(self.rule)
        return {
            "rule": self.rule,
            "severity": self.severity,
            "category": r.category,
            "path": self.path,
            "line": self.line,
            "col": self.col,
            "message": self.message,
            "fix": self.fix,
            "chapter": r.chapter,
            "snippet": self.snippet,
            "lines": self.lines,
            "confidence": self.confidence,
        }


@dataclass(frozen=True)
class ScanWarning:
    """A file (or folder) the scanner could not look into, and why."""

    path: str
    reason: str


@dataclass
class ScanResult:
    """Everything one scan found, with the figures to judge its coverage."""

    roots: tuple[str, ...]
    findings: list[Finding]
    warnings: list[ScanWarning]
    files: int
    python_files: int
    lines: int
    bytes: int
    suppressed: int
    seconds: float
    jobs: int
    config_sources: tuple[str, ...] = ()
    fail_on: str | None = None
    internal_errors: list[ScanWarning] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        """Findings per rule id, in rule order, rules with none left out."""
        c = Counter(f.rule for f in self.findings)
        return {r.id: c[r.id] for r in RULES if c[r.id]}

    def by_severity(self) -> dict[str, int]:
        c = Counter(f.severity for f in self.findings)
        return {s: c[s] for s in ("error", "warning", "note")}

    def worst(self) -> str | None:
        if not self.findings:
            return None
        return max((f.severity for f in self.findings), key=severity_rank)

    def reaches(self, level: str) -> bool:
        """True when a finding is at ``level`` or worse (``never``: always False)."""
        if level not in FAIL_LEVELS:
            raise ValueError(f"unknown level {level!r}; use one of {', '.join(FAIL_LEVELS)}")
        if level == "never":
            return False
        r = severity_rank(level)
        return any(severity_rank(f.severity) >= r for f in self.findings)

    def kernels(self) -> list[Finding]:
        return [f for f in self.findings if rule(f.rule).category == "kernel"]

    def files_with_findings(self) -> dict[str, int]:
        return dict(Counter(f.path for f in self.findings).most_common())
