"""Find the files, read each once, parse it once, walk it once; in parallel where it pays.

:func:`scan` never raises for what it finds on disk: a file that is not Python 3 becomes a
``syntax-error`` finding; a file that cannot be read, is binary, is not valid in its encoding, is
too large, is a symlink loop or is nested too deeply to parse becomes a :class:`ScanWarning`.
Bad *arguments* (a path that does not exist, a bad ``[tool.xlaport]``) raise ``ValueError``.
"""

from __future__ import annotations

import ast
import io
import os
import re
import stat
import sys
import time
import tokenize
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from . import suppress
from .config import ScanConfig, find_pyproject, load_config
from .files import SKIP_DIRS, display_name, kind_of, own_packages, walk
from .registry import FILE_CHECKS, Hit
from .result import Finding, ScanResult, ScanWarning
from .rules import mapping_fix, rule, rule_ids
from .rules.syntax_error import from_syntax_error
from .walker import analyse

_KNOWN = frozenset(rule_ids())  # rule ids a suppression comment may name

__all__ = ["scan", "scan_source", "SKIP_DIRS"]

# Folders never entered below a scanned root (a root itself is always scanned).
_PARALLEL_MIN_FILES = 128
_BATCH = 24
_COOKIE = re.compile(rb"^[ \t\f]*#.*?coding[:=]", re.M)


# --------------------------------------------------------------------------- per file
_Outcome = tuple[str, list[tuple[Hit, str]], list[str], int, int, int, bool, str | None]


def _size(n: int) -> str:
    return f"{n / 2**20:,.1f} MiB" if n >= 2**20 else f"{n / 1024:,.1f} KiB"


def _decode(data: bytes) -> tuple[str | None, str | None]:
    """(text, None) or (None, why not)."""
    if b"\x00" in data:
        return None, "binary file (contains NUL bytes), not scanned"
    try:
        enc, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as e:
        head = b"\n".join(data.split(b"\n", 2)[:2])
        if _COOKIE.search(head):
            return None, f"bad encoding declaration ({e.msg}), not scanned"
        return None, "not valid utf-8 (and no coding declaration), not scanned"
    try:
        return data.decode(enc), None
    except (UnicodeDecodeError, LookupError):
        return None, f"not valid {enc}, not scanned"


def _python_hits(text: str, display: str, own: frozenset[str] = frozenset()) -> tuple[list[Hit], str | None]:
    try:
        tree = ast.parse(text, filename=display)
    except SyntaxError as e:
        return [from_syntax_error(e, text)], None
    except (RecursionError, MemoryError):
        return [], "nested too deeply to parse, not scanned"
    except ValueError as e:  # e.g. a surrogate the parser refuses
        return [], f"cannot parse: {e}, not scanned"
    try:
        return analyse(tree, own), None
    except RecursionError:
        return [], "nested too deeply to walk, not scanned"


def _file_hits(text: str, kind: str) -> list[Hit]:
    """What the rules' whole-file checks find in a CUDA source, requirements file or ``pyproject.toml``."""
    return [h for _, fn in FILE_CHECKS.get(kind, []) for h in fn(text, kind)]


def _scan_one(
    path: str, display: str, kind: str, max_size: int, ignored: frozenset[str], own: frozenset[str] = frozenset()
) -> _Outcome:
    """(display, kept hits with snippets, warnings, lines, bytes, suppressed, parsed_python, internal error)."""
    warnings: list[str] = []
    try:
        st = os.stat(path)
    except OSError as e:
        if e.errno == 40:  # ELOOP
            return display, [], ["symlink loop, not scanned"], 0, 0, 0, False, None
        if os.path.islink(path):
            return display, [], ["broken symlink, not scanned"], 0, 0, 0, False, None
        return display, [], [f"cannot stat: {e.strerror or e}, not scanned"], 0, 0, 0, False, None
    if not stat.S_ISREG(st.st_mode):
        return display, [], ["not a regular file, not scanned"], 0, 0, 0, False, None
    if st.st_size > max_size:
        too_big = f"{_size(st.st_size)} is over the {_size(max_size)} limit, not scanned"
        return display, [], [too_big], 0, 0, 0, False, None
    try:
        with open(path, "rb") as fh:
            data = fh.read(max_size + 1)
    except OSError as e:
        return display, [], [f"cannot read: {e.strerror or e}, not scanned"], 0, 0, 0, False, None
    if len(data) > max_size:
        return display, [], ["grew past the size limit while reading, not scanned"], 0, 0, 0, False, None
    try:
        if kind == "cu":
            text = data.decode("utf-8", errors="replace")
            hits = _file_hits(text, kind)
        else:
            text_or_none, why = _decode(data)
            if text_or_none is None:
                return display, [], [str(why)], 0, len(data), 0, False, None
            text = text_or_none
            if kind == "py":
                hits, why = _python_hits(text, display, own)
                if why:
                    warnings.append(why)
            else:
                hits = _file_hits(text, kind)
        nlines = text.count("\n") + (1 if text and not text.endswith("\n") else 0)
        kept: list[tuple[Hit, str]] = []
        suppressed = 0
        sup = suppress.read(text, kind, _KNOWN)
        warnings += sup.warnings()
        src_lines = text.splitlines()
        for h in hits:
            rid, line = h.rule, h.line
            if rid in ignored or sup.silences(rid, line):
                suppressed += 1
                continue
            snippet = src_lines[line - 1].strip()[:160] if 0 < line <= len(src_lines) else ""
            kept.append((h, snippet))
        return display, kept, warnings, nlines, len(data), suppressed, kind == "py", None
    except Exception as e:  # a bug in a rule must not stop a scan of 20,000 files
        return display, [], [], 0, len(data), 0, False, f"{type(e).__name__}: {e}"


def _scan_batch(batch: list[tuple[str, str, str, int, frozenset[str], frozenset[str]]]) -> list[_Outcome]:
    return [_scan_one(*item) for item in batch]


def scan_source(text: str, path: str = "<snippet>.py") -> list[Finding]:
    """Findings in one Python source string (suppression comments honoured); for tests and notebooks."""
    if not isinstance(text, str):
        raise ValueError(f"scan_source needs a string of Python source, got {type(text).__name__}")
    kind = kind_of(Path(path)) or "py"
    if kind == "py":
        hits, _ = _python_hits(text, path)
    else:
        hits = _file_hits(text, kind)
    sup = suppress.read(text, kind, _KNOWN)
    lines = text.splitlines()
    out = []
    for h in hits:
        if sup.silences(h.rule, h.line):
            continue
        snippet = lines[h.line - 1].strip()[:160] if 0 < h.line <= len(lines) else ""
        out.append(_finding(path, h, snippet, ScanConfig()))
    return out


# --------------------------------------------------------------------------- assembling findings
def _finding(display: str, h: Hit, snippet: str, config: ScanConfig) -> Finding:
    r = rule(h.rule)
    fix = r.fix
    if h.detail.startswith("torch.") and h.rule in ("cuda-api", "cuda-streams", "cuda-amp"):
        mf = mapping_fix(h.detail)
        if mf is not None:  # the message says what the line as written does there; the table gives the port
            fix = mf[0]
    severity = config.severity.get(h.rule, h.severity or r.severity)
    return Finding(
        h.rule, display, h.line, h.col + 1, severity, h.message, fix, snippet, h.detail, h.lines, h.confidence
    )


class _Progress:
    def __init__(self, total: int, stream: TextIO | None) -> None:
        self.total, self.stream, self.done = total, stream, 0
        self._last = 0.0

    def update(self, n: int) -> None:
        self.done += n
        if self.stream is None:
            return
        now = time.perf_counter()
        if now - self._last < 0.1 and self.done < self.total:
            return
        self._last = now
        frac = self.done / self.total if self.total else 1.0
        bar = "#" * int(30 * frac) + "-" * (30 - int(30 * frac))
        self.stream.write(f"\rxlaport scan [{bar}] {self.done:,}/{self.total:,} files {frac:4.0%}")
        self.stream.flush()

    def close(self) -> None:
        if self.stream is not None:
            self.stream.write("\n")
            self.stream.flush()


def _pool_context() -> Any:
    import multiprocessing as mp

    heavy = any(m in sys.modules for m in ("torch", "torch_xla", "jax"))
    return mp.get_context("spawn" if heavy or sys.platform != "linux" else "fork")


def scan(
    paths: Sequence[str | os.PathLike[str]] | str | os.PathLike[str],
    *,
    config: ScanConfig | str | os.PathLike[str] | None = None,
    jobs: int | None = None,
    progress: bool | TextIO | None = None,
    max_file_size: int | None = None,
) -> ScanResult:
    """Scan files and folders for CUDA-isms and recompile risks.

    ``config``: a :class:`ScanConfig`, a ``pyproject.toml`` path, or None to use the nearest
    ``pyproject.toml`` at or above each path. ``jobs``: worker processes (None: all cores once there
    are enough files to pay for starting them; 1: this process). ``progress``: True (stderr), a
    stream, or None/False.
    """
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    if not paths:
        raise ValueError("give at least one file or folder to scan")
    roots = []
    for p in paths:
        if not isinstance(p, (str, os.PathLike)) or not str(p):
            raise ValueError(f"bad path {p!r}")
        rp = Path(p)
        if not os.path.lexists(rp):
            raise ValueError(f"no such file or folder: {p}")
        roots.append(rp)
    if jobs is not None and (not isinstance(jobs, int) or isinstance(jobs, bool) or jobs < 1):
        raise ValueError(f"jobs must be a whole number >= 1, got {jobs!r}")
    if max_file_size is not None and (
        not isinstance(max_file_size, int) or isinstance(max_file_size, bool) or max_file_size <= 0
    ):
        raise ValueError(f"max_file_size must be a positive whole number of bytes, got {max_file_size!r}")
    start = time.perf_counter()
    cwd = Path.cwd()
    warnings: list[ScanWarning] = []
    items: list[tuple[str, str, str, int, frozenset[str], frozenset[str]]] = []
    configs: dict[str, ScanConfig] = {}
    display_cfg: dict[str, ScanConfig] = {}
    seen_files: set[str] = set()
    single = len(roots) == 1
    fail_on = None
    for root in roots:
        if isinstance(config, ScanConfig):
            cfg = config
        elif config is not None:
            cfg = load_config(Path(config))
        else:
            pp = find_pyproject(root)
            key = str(pp)
            if key not in configs:
                configs[key] = load_config(pp)
            cfg = configs[key]
        fail_on = fail_on or cfg.fail_on
        size = max_file_size or cfg.max_file_size

        def warn(p: Path, reason: str, _root: Path = root) -> None:
            warnings.append(ScanWarning(display_name(p, _root, single, cwd), reason))

        found = list(walk(root, cfg, warn))
        own = own_packages(root, [p for p, kind in found if kind == "py"])
        for p, kind in found:
            key = os.path.abspath(p)
            if key in seen_files:
                continue
            seen_files.add(key)
            disp = display_name(p, root, single, cwd)
            ignored = cfg.ignore | cfg.ignored_in(cfg.relative(p))
            items.append((str(p), disp, kind, size, ignored, own))
            display_cfg[disp] = cfg
    n_jobs = jobs if jobs is not None else (min(os.cpu_count() or 1, 8) if len(items) >= _PARALLEL_MIN_FILES else 1)
    n_jobs = max(1, min(n_jobs, len(items) or 1))
    stream: TextIO | None
    if progress is True:
        stream = sys.stderr
    elif progress in (None, False):
        stream = None
    else:
        stream = progress  # type: ignore[assignment]
    bar = _Progress(len(items), stream)
    outcomes: list[_Outcome] = []
    batches = [items[i : i + _BATCH] for i in range(0, len(items), _BATCH)]
    if n_jobs == 1:
        for b in batches:
            outcomes += _scan_batch(b)
            bar.update(len(b))
    else:
        with _pool_context().Pool(n_jobs) as pool:
            for res in pool.imap_unordered(_scan_batch, batches):
                outcomes += res
                bar.update(len(res))
    if stream is not None and items:
        bar.close()
    findings: list[Finding] = []
    internal: list[ScanWarning] = []
    n_lines = n_bytes = n_sup = n_py = 0
    for disp, kept, warns, nlines, nbytes, sup, parsed, err in outcomes:
        cfg = display_cfg.get(disp, ScanConfig())
        findings += [_finding(disp, h, snippet, cfg) for h, snippet in kept]
        warnings += [ScanWarning(disp, w) for w in warns]
        if err is not None:
            internal.append(ScanWarning(disp, f"internal error (please report): {err}"))
        n_lines += nlines
        n_bytes += nbytes
        n_sup += sup
        n_py += parsed
    findings.sort(key=lambda f: (f.path, f.line, f.col, f.rule))
    warnings.sort(key=lambda w: w.path)
    return ScanResult(
        roots=tuple(str(r) for r in roots),
        findings=findings,
        warnings=warnings + internal,
        files=len(items),
        python_files=n_py,
        lines=n_lines,
        bytes=n_bytes,
        suppressed=n_sup,
        seconds=time.perf_counter() - start,
        jobs=n_jobs,
        config_sources=tuple(sorted({c.source for c in display_cfg.values()})),
        fail_on=fail_on,
        internal_errors=internal,
    )
