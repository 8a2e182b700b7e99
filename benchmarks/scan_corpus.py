"""Precision and recall of ``xlaport scan`` on a labelled corpus of real PyTorch projects.

    python benchmarks/scan_corpus.py                 # table per rule for each set, then all
    python benchmarks/scan_corpus.py --misses        # also list the tuning set's false positives and negatives
    python benchmarks/scan_corpus.py --set held-out-3 --misses   # one set's misses (spoils it as held out)
    python benchmarks/scan_corpus.py --json          # the numbers as JSON

The corpus holds no one else's code. ``benchmarks/scan_corpus/manifest.toml`` names, for each project, a source
distribution or wheel on the package index (PyPI) at a pinned version with its SHA-256 and the files scanned;
``benchmarks/scan_corpus/<project>/labels.txt`` holds the labels (its first line names the package and version).
The archives are downloaded into a cache (``$XLAPORT_CORPUS_CACHE``, else ``~/.cache/xlaport/scan_corpus``), checked
against their hash, and the listed files extracted there. A finding is scored per (file, line, rule): a true
positive when a label of that rule is on that line, a false positive when there is none (lines labelled
``ambiguous`` for the rule count neither way), and each label no finding hits is a false negative.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import os
import sys
import tarfile
import tomllib
import urllib.error
import urllib.request
import zipfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from xlaport.scan import RULES, ScanConfig, scan

CORPUS = Path(__file__).resolve().parent / "scan_corpus"
MANIFEST = CORPUS / "manifest.toml"
#: the sets, in the order they were added; each later set was labelled before the scanner ran on it
SETS = ("tuning", "held-out-1", "held-out-2", "held-out-3", "held-out-4")


class Offline(RuntimeError):
    """The package index could not be reached (or served something else): the corpus cannot be scored."""


def manifest() -> dict[str, dict[str, object]]:
    """Project folder -> its entry (package, version, archive, url, sha256, files, kind, license, set)."""
    raw = tomllib.loads(MANIFEST.read_text(encoding="utf-8"))
    for name, e in raw.items():
        missing = {"package", "version", "archive", "url", "sha256", "files", "set"} - set(e)
        if missing or e["set"] not in SETS:
            raise ValueError(
                f"{MANIFEST.name}: [{name}] lacks {sorted(missing)} or has an unknown set {e.get('set')!r}"
            )
    return raw


def repos(which: str | None = None) -> list[str]:
    """The project folders (of one set, or all)."""
    return sorted(n for n, e in manifest().items() if which is None or e["set"] == which)


def cache_dir() -> Path:
    return Path(os.environ.get("XLAPORT_CORPUS_CACHE") or Path.home() / ".cache" / "xlaport" / "scan_corpus")


def _download(url: str, sha256: str, dest: Path) -> None:
    try:
        with urllib.request.urlopen(url, timeout=60) as r:
            data = r.read()
    except (urllib.error.URLError, OSError, TimeoutError) as e:
        raise Offline(f"cannot download {url.rsplit('/', 1)[-1]} from the package index ({e})") from None
    got = hashlib.sha256(data).hexdigest()
    if got != sha256:
        raise Offline(f"{dest.name}: SHA-256 {got[:12]}… is not the manifest's {sha256[:12]}…")
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_suffix(dest.suffix + ".part")
    tmp.write_bytes(data)
    tmp.replace(dest)


def _members(archive: Path) -> dict[str, bytes]:
    """Path inside the project (an sdist's top folder dropped) -> bytes, for every file of the archive."""
    out: dict[str, bytes] = {}
    if archive.name.endswith(".whl") or archive.suffix == ".zip":
        with zipfile.ZipFile(archive) as z:
            for n in z.namelist():
                out[n] = z.read(n)
        return out
    with tarfile.open(archive) as t:
        for m in t.getmembers():
            fh = t.extractfile(m) if m.isfile() else None
            if fh is not None and "/" in m.name:
                out[m.name.split("/", 1)[1]] = fh.read()
    return out


def fetch(repo: str) -> Path:
    """The folder holding ``repo``'s listed files, downloaded and extracted on first use; Offline if it cannot be."""
    e = manifest()[repo]
    root = cache_dir() / f"{e['package']}-{e['version']}"
    files = [str(f) for f in e["files"]]  # type: ignore[attr-defined]
    stamp = root / ".sha256"
    if stamp.is_file() and stamp.read_text() == e["sha256"] and all((root / f).is_file() for f in files):
        return root
    archive = cache_dir() / "archives" / str(e["archive"])
    if not archive.is_file() or hashlib.sha256(archive.read_bytes()).hexdigest() != e["sha256"]:
        _download(str(e["url"]), str(e["sha256"]), archive)
    members = _members(archive)
    for f in files:
        if f not in members:
            raise ValueError(f"{repo}: {f} is not in {archive.name}")
        (root / f).parent.mkdir(parents=True, exist_ok=True)
        (root / f).write_bytes(members[f])
    stamp.write_text(str(e["sha256"]))
    return root


Key = tuple[str, int, str]  # (file relative to the repository folder, line, rule)


@dataclass
class Labels:
    must: set[Key] = field(default_factory=set)
    ambiguous: set[Key] = field(default_factory=set)


def load_labels(repo: str) -> Labels:
    """The labels of one project; ValueError on a malformed line, an unknown rule, a file the manifest does not
    list, or a first line that does not name the manifest's package and version."""
    ids = {r.id for r in RULES}
    e = manifest()[repo]
    listed = {str(f) for f in e["files"]}  # type: ignore[attr-defined]
    out = Labels()
    path = CORPUS / repo / "labels.txt"
    text_lines = path.read_text(encoding="utf-8").splitlines()
    pin = f"{e['package']}=={e['version']}"
    if not text_lines or not text_lines[0].startswith(f"# package: {pin} "):
        raise ValueError(f"{path}:1: the first line must name the package, '# package: {pin} ...'")
    for n, raw in enumerate(text_lines, 1):
        text = raw.split("--", 1)[0].strip()
        if not text or text.startswith("#"):
            continue
        parts = text.split()
        loc, rule = parts[0], parts[1] if len(parts) > 1 else ""
        file, _, line = loc.rpartition(":")
        if not file or not line.isdigit() or rule not in ids or parts[2:] not in ([], ["ambiguous"]):
            raise ValueError(f"{path}:{n}: cannot read label {raw!r}")
        if file not in listed:
            raise ValueError(f"{path}:{n}: {file} is not among the files the manifest lists for {repo}")
        (out.ambiguous if parts[2:] else out.must).add((file, int(line), rule))
    return out


@functools.cache
def findings(repo: str) -> frozenset[Key]:
    """(file, line, rule) of every finding of a scan of one project's files (scanned once per process).

    A finding's path is shown relative to the working directory when the scanned folder is under it, else
    relative to the folder; either way it is read back relative to the folder."""
    root = fetch(repo)
    res = scan(root, config=ScanConfig(), jobs=1)
    if res.internal_errors:
        raise RuntimeError(f"internal errors scanning {repo}: {res.internal_errors}")
    out = set()
    for f in res.findings:
        shown = Path(f.path)
        rel = shown.as_posix() if (root / shown).is_file() else Path(os.path.relpath(shown.resolve(), root)).as_posix()
        out.add((rel, f.line, f.rule))
    return frozenset(out)


@dataclass
class Score:
    tp: Counter[str] = field(default_factory=Counter)
    fp: Counter[str] = field(default_factory=Counter)
    fn: Counter[str] = field(default_factory=Counter)
    false_positives: list[tuple[str, Key]] = field(default_factory=list)
    false_negatives: list[tuple[str, Key]] = field(default_factory=list)

    def add(self, repo: str, found: set[Key], labels: Labels) -> None:
        for k in found:
            if k in labels.must:
                self.tp[k[2]] += 1
            elif k not in labels.ambiguous:
                self.fp[k[2]] += 1
                self.false_positives.append((repo, k))
        for k in labels.must - found:
            self.fn[k[2]] += 1
            self.false_negatives.append((repo, k))

    @staticmethod
    def _ratio(a: int, b: int) -> float | None:
        return a / b if b else None

    def precision(self, rule: str | None = None) -> float | None:
        tp = self.tp[rule] if rule else sum(self.tp.values())
        fp = self.fp[rule] if rule else sum(self.fp.values())
        return self._ratio(tp, tp + fp)

    def recall(self, rule: str | None = None) -> float | None:
        tp = self.tp[rule] if rule else sum(self.tp.values())
        fn = self.fn[rule] if rule else sum(self.fn.values())
        return self._ratio(tp, tp + fn)

    def rules(self) -> list[str]:
        seen = set(self.tp) | set(self.fp) | set(self.fn)
        return [r.id for r in RULES if r.id in seen]

    def as_dict(self) -> dict[str, object]:
        return {
            "precision": self.precision(),
            "recall": self.recall(),
            "rules": {
                r: {
                    "tp": self.tp[r],
                    "fp": self.fp[r],
                    "fn": self.fn[r],
                    "precision": self.precision(r),
                    "recall": self.recall(r),
                }
                for r in self.rules()
            },
        }


def evaluate(names: list[str] | tuple[str, ...]) -> Score:
    s = Score()
    for repo in names:
        s.add(repo, findings(repo), load_labels(repo))
    return s


def _fmt(x: float | None) -> str:
    return "    -" if x is None else f"{x:5.2f}"


def table(title: str, s: Score) -> str:
    lines = [title, f"  {'rule':<22} {'tp':>4} {'fp':>4} {'fn':>4}  precision  recall"]
    for r in s.rules():
        lines.append(
            f"  {r:<22} {s.tp[r]:>4} {s.fp[r]:>4} {s.fn[r]:>4}      {_fmt(s.precision(r))}   {_fmt(s.recall(r))}"
        )
    tp, fp, fn = sum(s.tp.values()), sum(s.fp.values()), sum(s.fn.values())
    lines.append(f"  {'overall':<22} {tp:>4} {fp:>4} {fn:>4}      {_fmt(s.precision())}   {_fmt(s.recall())}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--set", choices=SETS, help="score one set only")
    p.add_argument(
        "--misses",
        action="store_true",
        help="list the false positives and negatives (of --set, else of "
        "the tuning set; listing a held-out set's spoils it for rule fixing)",
    )
    p.add_argument("--json", action="store_true", help="print the scores as JSON")
    args = p.parse_args(argv)
    try:
        sets = {k: repos(k) for k in ([args.set] if args.set else SETS)}
        scores = {k: evaluate(v) for k, v in sets.items() if v}
        if not args.set:
            scores["all"] = evaluate(repos())
    except Offline as e:
        print(f"scan corpus: {e}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps({k: v.as_dict() for k, v in scores.items()}, indent=2))
        return 0
    for k, s in scores.items():
        print(table("all" if k == "all" else f"{k} ({', '.join(sets[k])})", s))
    if args.misses:
        s = scores[args.set or "tuning"]
        for kind, rows in (("false positive", s.false_positives), ("false negative", s.false_negatives)):
            for repo, (file, line, rule) in sorted(rows):
                print(f"{kind}: {repo}/{file}:{line} {rule}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
