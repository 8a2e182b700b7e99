#!/usr/bin/env python
"""Check every URL the book cites: its pages, its chapters' prose and the toolkit's data files (``make linkcheck``).

The URLs come from ``book/**/*.md``, the markdown cells of ``notebooks/*.ipynb`` and the sourced data files in
``src/xlaport/reference/data`` (their sources are rendered into the book's reference pages). Each distinct URL is
fetched once (HEAD, then GET where a server refuses HEAD), a few at a time, with a timeout; a URL answering 4xx or
5xx, or not at all, is dead. Without network access the check skips with one line and exits 0, so that ``make``
works offline; a scheduled workflow (``.github/workflows/linkcheck.yml``) runs it where the network is up.

    python scripts/linkcheck.py            # check, print dead links, exit 1 if any
    python scripts/linkcheck.py --list     # only list the URLs and where each is cited
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import re
import socket
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
URL = re.compile(r"https?://[^\s<>\"'`\]|]+")
TRAILING = ".,;:"
# Hosts that answer robots or rate limits with 403/429 to scripts although the page exists.
SOFT_STATUSES = {403, 429}
USER_AGENT = "xlaport-linkcheck/1 (+https://github.com/xlaport/xlaport)"


def _clean(url: str) -> str:
    url = url.rstrip(TRAILING)
    while url.endswith(")") and url.count("(") < url.count(")"):
        url = url[:-1]
    return url


def urls_in_text(text: str) -> list[str]:
    """The http(s) URLs in a piece of markdown, TOML or JSON, in order, trailing punctuation removed."""
    return [_clean(m.group(0)) for m in URL.finditer(text)]


def sources(root: Path = ROOT) -> Iterable[tuple[str, str]]:
    """(file relative to root, text) for every file whose URLs the book shows to readers."""
    for p in sorted((root / "book").rglob("*.md")):
        if "_build" not in p.parts:
            yield str(p.relative_to(root)), p.read_text(encoding="utf-8")
    for p in sorted((root / "notebooks").glob("*.ipynb")):
        nb = json.loads(p.read_text(encoding="utf-8"))
        text = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
        yield str(p.relative_to(root)), text
    data = root / "src" / "xlaport" / "reference" / "data"
    for p in sorted(data.glob("*.toml")):
        yield str(p.relative_to(root)), p.read_text(encoding="utf-8")


def collect(root: Path = ROOT) -> dict[str, list[str]]:
    """Every cited URL and the files that cite it."""
    out: dict[str, list[str]] = {}
    for name, text in sources(root):
        for u in urls_in_text(text):
            where = out.setdefault(u, [])
            if name not in where:
                where.append(name)
    return out


def online(urls: Iterable[str], timeout: float = 3.0) -> bool:
    """Whether the hosts the book cites can be reached at all: a TCP connect to the three most cited ones.

    (A package index alone may be reachable on a machine that reaches nothing else, so it is no test.)
    """
    hosts: dict[str, int] = {}
    for u in urls:
        h = urllib.parse.urlsplit(u).hostname
        if h:
            hosts[h] = hosts.get(h, 0) + 1
    for host in sorted(hosts, key=lambda h: -hosts[h])[:3]:
        try:
            with socket.create_connection((host, 443), timeout=timeout):
                return True
        except OSError:
            continue
    return False


def check(url: str, timeout: float = 20.0) -> tuple[str, int | None, str]:
    """(url, HTTP status or None, problem or ""): HEAD first, GET when the server refuses HEAD."""
    last = ""
    for method in ("HEAD", "GET"):
        req = urllib.request.Request(url, method=method, headers={"User-Agent": USER_AGENT})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return url, r.status, ""
        except urllib.error.HTTPError as e:
            if e.code in (405, 501) and method == "HEAD":
                continue
            if e.code in SOFT_STATUSES:
                return url, e.code, ""
            last = f"HTTP {e.code}"
            if method == "HEAD":
                continue
            return url, e.code, last
        except (urllib.error.URLError, TimeoutError, OSError) as e:
            last = f"{type(e).__name__}: {getattr(e, 'reason', e)}"
    return url, None, last


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--list", action="store_true", help="list the URLs and where each is cited; fetch nothing")
    p.add_argument("--workers", type=int, default=8)
    p.add_argument("--json", default=None, metavar="PATH", help="write the results as JSON to PATH")
    args = p.parse_args(argv)
    cited = collect()
    if args.list:
        for u, where in sorted(cited.items()):
            print(f"{u}  ({', '.join(where)})")
        print(f"{len(cited)} distinct URLs", file=sys.stderr)
        return 0
    if not online(cited):
        print(f"linkcheck: skipped, no network ({len(cited)} URLs not checked)")
        return 0
    dead = []
    results = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.workers)) as pool:
        for url, status, problem in pool.map(check, sorted(cited)):
            results.append({"url": url, "status": status, "problem": problem, "cited_in": cited[url]})
            if problem:
                dead.append((url, problem))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1) + "\n")
    for url, problem in dead:
        print(f"DEAD {url}: {problem} (cited in {', '.join(cited[url])})")
    print(f"linkcheck: {len(cited)} URLs, {len(dead)} dead")
    return 1 if dead else 0


if __name__ == "__main__":
    sys.exit(main())
