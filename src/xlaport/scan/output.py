"""A scan as a terminal table, JSON, SARIF 2.1.0 (for GitHub code scanning) or markdown.

Each function takes the :class:`~xlaport.scan.result.ScanResult` to write: ``scan.table(res)``,
``scan.to_sarif(res)`` (all five are re-exported by :mod:`xlaport.scan`). The records know nothing of this module.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from .. import pages
from ..text import plural
from .result import ScanResult
from .rules import RULES, rule, severity_rank

__all__ = ["to_dict", "to_json", "to_sarif", "to_markdown", "table", "SARIF_SCHEMA", "summary_line"]

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_INFO_URI = pages.REPOSITORY  # the SARIF tool's home page


def _version() -> str:
    from .. import __version__

    return __version__


def summary_line(res: ScanResult) -> str:
    sev = res.by_severity()
    parts = ", ".join(f"{n} {s}{'s' if n != 1 else ''}" for s, n in sev.items() if n) or "no findings"
    extra = f"; {len(res.warnings)} not scanned" if res.warnings else ""
    sup = f"; {res.suppressed} suppressed" if res.suppressed else ""
    return (
        f"{len(res.findings)} finding{'s' if len(res.findings) != 1 else ''} ({parts}) in {plural(res.files, 'file')}, "
        f"{res.lines:,} lines{sup}{extra}; {res.seconds:.2f} s"
    )


def to_dict(res: ScanResult) -> dict[str, Any]:
    used = res.counts()
    return {
        "tool": "xlaport scan",
        "version": _version(),
        "roots": list(res.roots),
        "files": res.files,
        "python_files": res.python_files,
        "lines": res.lines,
        "bytes": res.bytes,
        "seconds": round(res.seconds, 3),
        "suppressed": res.suppressed,
        "summary": used,
        "by_severity": res.by_severity(),
        "rules": {
            r.id: {
                "title": r.title,
                "severity": r.severity,
                "category": r.category,
                "why": r.why,
                "fix": r.fix,
                "chapter": r.chapter,
                "see_also": list(r.see_also),
            }
            for r in RULES
            if r.id in used
        },
        "findings": [f.as_dict() for f in res.findings],
        "warnings": [{"path": w.path, "reason": w.reason} for w in res.warnings],
    }


def to_json(res: ScanResult, indent: int | None = 2) -> str:
    return json.dumps(to_dict(res), indent=indent)


def _camel(rule_id: str) -> str:
    return "".join(p.capitalize() for p in rule_id.split("-"))


def to_sarif(res: ScanResult) -> dict[str, Any]:
    """The scan as a SARIF 2.1.0 log: one run, every rule in the driver, one result per finding."""
    index = {r.id: i for i, r in enumerate(RULES)}
    rules = []
    for r in RULES:
        docs = ", ".join(r.docs) if r.docs else "none"
        rules.append(
            {
                "id": r.id,
                "name": _camel(r.id),
                "shortDescription": {"text": r.title},
                "fullDescription": {"text": r.why},
                "help": {
                    "text": f"{r.why}\nFix: {r.fix}\nBook: {docs}",
                    "markdown": f"{r.why}\n\n**Fix:** {r.fix}\n\n**Book:** {docs}",
                },
                "defaultConfiguration": {"level": r.severity},
                "properties": {"tags": ["xlaport", r.category], "precision": "medium", "chapter": r.chapter},
            }
        )
    results = []
    for f in res.findings:
        fp = hashlib.sha256(f"{f.rule}|{f.path}|{f.snippet}".encode()).hexdigest()[:32]
        region: dict[str, Any] = {"startLine": max(f.line, 1), "startColumn": max(f.col, 1)}
        if f.snippet:
            region["snippet"] = {"text": f.snippet}
        results.append(
            {
                "ruleId": f.rule,
                "ruleIndex": index[f.rule],
                "level": f.severity,
                "message": {"text": f"{f.message}. Fix: {f.fix}"},
                "locations": [
                    {
                        "physicalLocation": {
                            "artifactLocation": {"uri": f.path, "uriBaseId": "%SRCROOT%"},
                            "region": region,
                        }
                    }
                ],
                "partialFingerprints": {"xlaportFinding/v1": fp},
                "properties": {"category": rule(f.rule).category, "lines": f.lines, "confidence": f.confidence},
            }
        )
    notes = [
        {
            "level": "warning",
            "message": {"text": w.reason},
            "locations": [{"physicalLocation": {"artifactLocation": {"uri": w.path, "uriBaseId": "%SRCROOT%"}}}],
        }
        for w in res.warnings
    ]
    invocation: dict[str, Any] = {"executionSuccessful": not res.internal_errors}
    if notes:
        invocation["toolExecutionNotifications"] = notes
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "xlaport",
                        "version": _version(),
                        "informationUri": _INFO_URI,
                        "rules": rules,
                    }
                },
                "invocations": [invocation],
                "results": results,
            }
        ],
    }


def rule_severity(res: ScanResult, rule_id: str) -> str:
    """The severity of a rule's findings in `res`: one word when they share one ("error"), else each with its count
    ("1 error, 5 warnings"), so that a summary's rows add up to the totals (a rule such as ``cuda-api`` raises on
    some calls and does nothing on others)."""
    from ..text import plural

    found: dict[str, int] = {}
    for f in res.findings:
        if f.rule == rule_id:
            found[f.severity] = found.get(f.severity, 0) + 1
    if len(found) <= 1:
        return next(iter(found), rule(rule_id).severity)
    order = sorted(found, key=lambda sev: -severity_rank(sev))
    return ", ".join(plural(found[sev], sev) for sev in order)


def _md(s: str) -> str:
    return s.replace("|", "\\|").replace("\n", " ")


def to_markdown(res: ScanResult, max_findings: int | None = 200) -> str:
    """A markdown report: a summary, one row per rule, then the findings (the first ``max_findings``)."""
    lines = ["# xlaport scan", "", summary_line(res), ""]
    counts = res.counts()
    if counts:
        lines += ["| rule | severity | findings | why | fix | chapter |", "|---|---|---:|---|---|---|"]
        for rid, n in counts.items():
            r = rule(rid)
            book = ", ".join(pages.link(d) for d in r.docs) or "–"  # chapter titles, linked
            lines.append(f"| `{rid}` | {rule_severity(res, rid)} | {n} | {_md(r.why)} | {_md(r.fix)} | {book} |")
        lines += ["", "## Findings", "", "| where | severity | rule | what | fix |", "|---|---|---|---|---|"]
        shown = res.findings if max_findings is None else res.findings[:max_findings]
        for f in shown:
            lines.append(f"| `{_md(f.path)}:{f.line}` | {f.severity} | `{f.rule}` | {_md(f.message)} | {_md(f.fix)} |")
        if len(shown) < len(res.findings):
            lines.append(f"| … | | | {len(res.findings) - len(shown)} more | |")
    if res.warnings:
        lines += ["", "## Not scanned", ""]
        lines += [f"- `{_md(w.path)}`: {_md(w.reason)}" for w in res.warnings]
    return "\n".join(lines) + "\n"


_COLOR = {"error": "\033[31m", "warning": "\033[33m", "note": "\033[36m"}


def table(res: ScanResult, max_findings: int | None = None, color: bool = False) -> str:
    """The terminal view: one line per finding, then a count per rule with its fix and chapter."""
    out: list[str] = []
    shown = res.findings if max_findings is None else res.findings[:max_findings]
    for f in shown:
        sev = f"{_COLOR[f.severity]}{f.severity:<7}\033[0m" if color else f"{f.severity:<7}"
        out.append(f"{f.path}:{f.line}:{f.col}: {sev} [{f.rule}] {f.message}")
    if len(shown) < len(res.findings):
        out.append(f"... {len(res.findings) - len(shown):,} more findings (use --format json for all)")
    counts = res.counts()
    if counts:
        out.append("")
        w = max(len(r) for r in counts)
        sevs = {rid: rule_severity(res, rid) for rid in counts}
        ws = max(8, *(len(v) for v in sevs.values()))
        out.append(f"{'rule':<{w}}  {'severity':<{ws}} {'count':>6}  fix | chapter")
        for rid, n in counts.items():
            r = rule(rid)
            book = "; ".join(pages.title(d) for d in r.docs) or "-"  # chapter titles, not paths
            out.append(f"{rid:<{w}}  {sevs[rid]:<{ws}} {n:>6}  {r.fix} | {book}")
    for wn in res.warnings:
        out.append(f"{wn.path}: not scanned: {wn.reason}")
    out.append(summary_line(res))
    return "\n".join(out)
