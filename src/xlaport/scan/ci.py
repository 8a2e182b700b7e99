"""The pull-request check behind ``action.yml``: scan the head and the base, write SARIF, post one comment.

    python -m xlaport.scan.ci --base origin/main [--sarif xlaport.sarif] [--repo OWNER/NAME --pr N] [--dry-run]

Scans the working tree (the pull request's head) and the base commit (checked out with ``git worktree``
into a temporary folder), compares the findings by rule, file and code text (the baseline's fingerprint,
so moved code is neither new nor fixed), and writes a markdown summary: new and fixed findings and the
migration debt in person-weeks (:func:`xlaport.scan.effort.estimate`, the doctor's estimate) before and
after. With ``--repo`` and ``--pr`` it creates or updates one comment on the pull request (found again by a
hidden marker) through the GitHub REST API, with the token in ``$GITHUB_TOKEN``; ``--dry-run`` prints each
request instead of sending it. Exit status 1 when a new finding reaches ``--fail-on`` (default never), 2 on bad input.
Torch-free.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import urllib.request
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from .baseline import fingerprint
from .engine import scan
from .output import to_sarif
from .result import Finding, ScanResult
from .rules import severity_rank

__all__ = ["MARKER", "Delta", "delta", "comment_body", "post_comment", "main"]

MARKER = "<!-- xlaport-scan -->"
API = "https://api.github.com"


class Delta:
    """Findings new in the head and fixed since the base, and the debt in person-weeks on each side."""

    def __init__(self, base: ScanResult, head: ScanResult, base_root: str, head_root: str) -> None:
        b = {_key(f, base_root): f for f in base.findings}
        h = {_key(f, head_root): f for f in head.findings}
        bc = Counter(_key(f, base_root) for f in base.findings)
        hc = Counter(_key(f, head_root) for f in head.findings)
        self.new: list[Finding] = [h[k] for k in sorted((hc - bc).elements())]
        self.fixed: list[Finding] = [b[k] for k in sorted((bc - hc).elements())]
        self.base_total, self.head_total = len(base.findings), len(head.findings)
        self.weeks_before = _weeks(base)
        self.weeks_after = _weeks(head)
        self.head_root = head_root
        self.base_root = base_root


def _key(f: Finding, root: str) -> tuple[str, str, str]:
    rule, path, code = fingerprint(f)  # paths are relative to the root: _scan runs there
    return rule, path.removeprefix("./"), code


def _weeks(res: ScanResult) -> float:
    from .effort import estimate

    return float(estimate(res, use_pyproject=False).total_weeks)


def _scan(root: str, paths: Sequence[str]) -> ScanResult:
    """Scan ``paths`` inside ``root`` with ``root`` as the working folder, so finding paths are relative to it."""
    here = os.getcwd()
    os.chdir(root)
    try:
        return scan([p for p in paths if os.path.lexists(p)] or ["."], jobs=1)
    finally:
        os.chdir(here)


def delta(base_ref: str, paths: Sequence[str] = (".",), repo_dir: str = ".") -> tuple[Delta, ScanResult]:
    """Scan ``repo_dir``'s working tree and ``base_ref`` (via a temporary git worktree); their delta and the head scan."""
    repo = os.path.abspath(repo_dir)
    try:
        subprocess.run(
            ["git", "-C", repo, "rev-parse", "--verify", f"{base_ref}^{{commit}}"], check=True, capture_output=True
        )
    except (subprocess.CalledProcessError, FileNotFoundError):
        raise ValueError(f"no commit {base_ref!r} in {repo} (fetch the base branch first)") from None
    head = _scan(repo, paths)
    with tempfile.TemporaryDirectory(prefix="xlaport-base-") as tmp:
        wt = os.path.join(tmp, "base")
        subprocess.run(["git", "-C", repo, "worktree", "add", "--detach", "--quiet", wt, base_ref], check=True)
        try:
            base = _scan(wt, paths)
            d = Delta(base, head, wt, repo)
        finally:
            subprocess.run(["git", "-C", repo, "worktree", "remove", "--force", wt], check=False, capture_output=True)
    return d, head


def _row(f: Finding, root: str) -> str:
    rel = f.path.removeprefix("./")
    msg = f.message.replace("|", "\\|")
    return f"| `{f.rule}` | {f.severity} | `{rel}:{f.line}` | {msg} |"


def comment_body(d: Delta, max_rows: int = 30) -> str:
    """The pull-request comment: the debt before and after, then the new and the fixed findings."""
    diff = d.weeks_after - d.weeks_before
    lines = [
        MARKER,
        "### xlaport scan: TPU/Trainium migration debt",
        "",
        f"**{len(d.new)} new**, **{len(d.fixed)} fixed** findings; {d.base_total} on the base branch, {d.head_total} here.",
        f"Estimated migration effort: {d.weeks_before:.1f} → {d.weeks_after:.1f} person-weeks ({diff:+.1f}).",
    ]
    for title, rows, root in (("New findings", d.new, d.head_root), ("Fixed findings", d.fixed, d.base_root)):
        if not rows:
            continue
        lines += [
            "",
            f"<details{' open' if title.startswith('New') else ''}><summary>{title} ({len(rows)})</summary>",
            "",
        ]
        lines += ["| rule | severity | where | what it does on TPU/Trainium |", "|---|---|---|---|"]
        lines += [_row(f, root) for f in rows[:max_rows]]
        if len(rows) > max_rows:
            lines.append(f"| … | | | {len(rows) - max_rows} more |")
        lines += ["", "</details>"]
    return "\n".join(lines) + "\n"


Request = Callable[[str, str, dict[str, Any] | None], Any]


def _http(token: str) -> Request:
    def call(method: str, url: str, body: dict[str, Any] | None) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(url, data=data, method=method)
        req.add_header("Accept", "application/vnd.github+json")
        req.add_header("Authorization", f"Bearer {token}")
        req.add_header("X-GitHub-Api-Version", "2022-11-28")
        with urllib.request.urlopen(req, timeout=30) as r:
            return json.loads(r.read() or b"null")

    return call


def _printer(out: Any) -> Request:
    def call(method: str, url: str, body: dict[str, Any] | None) -> Any:
        out.write(f"{method} {url}\n")
        if body is not None:
            out.write(json.dumps(body, indent=1) + "\n")
        return [] if method == "GET" else {}

    return call


def post_comment(repo: str, pr: int, body: str, request: Request) -> str:
    """Create the comment, or update the one that carries :data:`MARKER`; returns "created" or "updated"."""
    comments = request("GET", f"{API}/repos/{repo}/issues/{pr}/comments?per_page=100", None) or []
    mine = next((c for c in comments if MARKER in str(c.get("body", ""))), None)
    if mine is not None:
        request("PATCH", f"{API}/repos/{repo}/issues/comments/{mine['id']}", {"body": body})
        return "updated"
    request("POST", f"{API}/repos/{repo}/issues/{pr}/comments", {"body": body})
    return "created"


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m xlaport.scan.ci", description=__doc__.split("\n\n")[0])
    p.add_argument("paths", nargs="*", default=["."], help="files or folders to scan, relative to the repository")
    p.add_argument("--base", required=True, help="the base commit or branch (e.g. origin/main)")
    p.add_argument("--repo-dir", default=".", help="the repository's working tree (default .)")
    p.add_argument("--sarif", metavar="FILE", help="write the head's findings as SARIF 2.1.0")
    p.add_argument("--comment-file", metavar="FILE", help="write the comment's markdown to FILE")
    p.add_argument("--repo", help="OWNER/NAME, to post the comment")
    p.add_argument("--pr", type=int, help="pull request number, to post the comment")
    p.add_argument("--dry-run", action="store_true", help="print the GitHub API requests instead of sending them")
    p.add_argument("--fail-on", choices=("error", "warning", "note", "never"), default="never")
    args = p.parse_args(argv)
    try:
        d, head = delta(args.base, args.paths, args.repo_dir)
        body = comment_body(d)
        if args.sarif:
            Path(args.sarif).write_text(json.dumps(to_sarif(head), indent=2) + "\n", encoding="utf-8")
        if args.comment_file:
            Path(args.comment_file).write_text(body, encoding="utf-8")
        if args.repo and args.pr:
            if args.dry_run:
                request = _printer(sys.stdout)
            else:
                token = os.environ.get("GITHUB_TOKEN", "")
                if not token:
                    raise ValueError("set GITHUB_TOKEN to post the comment (or pass --dry-run)")
                request = _http(token)
            how = post_comment(args.repo, args.pr, body, request)
            print(f"xlaport: comment {how} on {args.repo}#{args.pr}", file=sys.stderr)
        elif not args.comment_file:
            print(body)
    except ValueError as e:
        print(f"xlaport ci: error: {e}", file=sys.stderr)
        return 2
    if args.fail_on != "never":
        level = severity_rank(args.fail_on)
        if any(severity_rank(f.severity) >= level for f in d.new):
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
