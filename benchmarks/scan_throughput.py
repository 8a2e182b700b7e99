"""How fast `xlaport scan` is against bare `ast.parse`, and that it survives every real file we have.

    python benchmarks/scan_throughput.py throughput [--repeat N]   # on the installed torch package's sources
    python benchmarks/scan_throughput.py fuzz [--chunk I/N]        # every .py under the venv's site-packages

throughput: reads and parses every ``.py`` file of the installed ``torch`` package with ``ast.parse`` (the
floor any Python-AST scanner pays), then scans the same tree with ``xlaport.scan.scan`` in this process
(``jobs=1``) and with its default parallelism, in one run, alternating; prints MB/s and the ratios, and exits
1 when the scan in one process (jobs=1) is under 50% of bare parsing. The one-process figures are taken in
CPU time of this process (``time.process_time``) as well as wall time: on a shared machine other jobs'
load moves wall time by more than the difference being measured, while the CPU time each side spends is
what the budget is about; the gate reads CPU time. The parallel scan is measured in wall time only (its
work is done in worker processes).

fuzz: scans every ``.py`` file under site-packages (or chunk I of N of them, for runs that must stay short),
each as its own root so no folder is skipped; exits 1 if ``scan`` raises or reports an internal error.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import json
import os
import sys
import time
from collections import Counter
from pathlib import Path

from xlaport.scan import SKIP_DIRS, ScanConfig, scan


def _site_packages() -> Path:
    import sysconfig

    return Path(sysconfig.get_paths()["purelib"])


def _py_files(root: Path, skip: frozenset[str] = frozenset()) -> list[Path]:
    out = []
    for d, dirs, files in os.walk(root):
        dirs[:] = sorted(x for x in dirs if x not in skip and not x.endswith(".egg-info"))
        out += [Path(d) / f for f in sorted(files) if f.endswith(".py")]
    return out


def _bare(files: list[Path]) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds and bytes for read + ast.parse of every file (files that do not parse count)."""
    start, cpu = time.perf_counter(), time.process_time()
    nbytes = 0
    for p in files:
        data = p.read_bytes()
        nbytes += len(data)
        with contextlib.suppress(SyntaxError, ValueError, RecursionError, MemoryError):
            ast.parse(data)
    return time.perf_counter() - start, time.process_time() - cpu, nbytes


def throughput(repeat: int) -> int:
    import importlib.util

    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        print("torch is not installed", file=sys.stderr)
        return 2
    root = Path(next(iter(spec.submodule_search_locations)))
    files = _py_files(root, SKIP_DIRS)
    cfg = ScanConfig()
    rows: dict[str, list[float]] = {"bare ast.parse": [], "scan jobs=1": [], "scan default jobs": []}
    cpu_rows: dict[str, list[float]] = {"bare ast.parse": [], "scan jobs=1": []}
    info: dict[str, object] = {}
    nbytes = 0
    for _ in range(repeat):
        wall, cpu, nbytes = _bare(files)
        rows["bare ast.parse"].append(nbytes / wall)
        cpu_rows["bare ast.parse"].append(nbytes / cpu)
        for label, jobs in (("scan jobs=1", 1), ("scan default jobs", None)):
            cpu0 = time.process_time()
            res = scan(root, config=cfg, jobs=jobs)
            if jobs == 1:
                cpu_rows[label].append(res.bytes / (time.process_time() - cpu0))
            rows[label].append(res.bytes / res.seconds)
            low = sum(f.confidence == "low" for f in res.findings)
            info[label] = {
                "files": res.files,
                "bytes": res.bytes,
                "jobs": res.jobs,
                "findings": len(res.findings),
                "low_confidence": low,
            }
    best = {k: max(v) for k, v in rows.items()}
    best_cpu = {k: max(v) for k, v in cpu_rows.items()}
    print(
        f"torch {root.parent.name}/{root.name}: {len(files):,} .py files, {nbytes / 1e6:,.1f} MB, {os.cpu_count()} cores"
    )
    for k, v in best.items():
        line = f"  {k:<18} wall {v / 1e6:7.2f} MB/s ({v / best['bare ast.parse']:.0%} of bare ast.parse)"
        if k in best_cpu:
            c = best_cpu[k]
            line += f"   CPU {c / 1e6:7.2f} MB/s ({c / best_cpu['bare ast.parse']:.0%})"
        print(line)
    serial_cpu = best_cpu["scan jobs=1"] / best_cpu["bare ast.parse"]
    summary = {
        "files": len(files),
        "mb": round(nbytes / 1e6, 2),
        "mb_per_s": {k: round(v / 1e6, 3) for k, v in best.items()},
        "cpu_mb_per_s": {k: round(v / 1e6, 3) for k, v in best_cpu.items()},
        "ratio_serial": round(best["scan jobs=1"] / best["bare ast.parse"], 3),
        "ratio_serial_cpu": round(serial_cpu, 3),
        "ratio_default": round(best["scan default jobs"] / best["bare ast.parse"], 3),
        "scan": info,
        "repeat": repeat,
    }
    print(json.dumps(summary))
    # the budget is for one process (jobs=1), in CPU time: on a loaded or two-core machine the pool's
    # start-up and other jobs' load dominate wall time
    return 0 if serial_cpu >= 0.5 else 1


def fuzz(chunk: str) -> int:
    try:
        i_s, n_s = chunk.split("/")
        i, n = int(i_s), int(n_s)
        if not 1 <= i <= n:
            raise ValueError
    except ValueError:
        print(f"--chunk must look like 2/4, got {chunk!r}", file=sys.stderr)
        return 2
    root = _site_packages()
    files = _py_files(root)
    size = -(-len(files) // n)
    part = files[(i - 1) * size : i * size]
    start = time.perf_counter()
    try:
        res = scan(part, config=ScanConfig()) if part else None
    except Exception as e:  # the one thing this run exists to catch
        print(f"CRASH: {type(e).__name__}: {e}")
        return 1
    seconds = time.perf_counter() - start
    if res is None:
        print(json.dumps({"chunk": chunk, "files": 0}))
        return 0
    reasons = Counter(w.reason.split(":")[0].split(" (")[0] for w in res.warnings)
    summary = {
        "chunk": chunk,
        "site_packages_py_files": len(files),
        "files": res.files,
        "python_files_parsed": res.python_files,
        "lines": res.lines,
        "findings": len(res.findings),
        "syntax_errors": sum(f.rule == "syntax-error" for f in res.findings),
        "warnings": dict(reasons.most_common()),
        "internal_errors": [f"{w.path}: {w.reason}" for w in res.internal_errors][:20],
        "crashes": 0,
        "seconds": round(seconds, 1),
    }
    print(json.dumps(summary))
    return 1 if res.internal_errors else 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="what", required=True)
    t = sub.add_parser("throughput")
    t.add_argument("--repeat", type=int, default=1)
    f = sub.add_parser("fuzz")
    f.add_argument("--chunk", default="1/1")
    a = p.parse_args()
    return throughput(max(1, a.repeat)) if a.what == "throughput" else fuzz(a.chunk)


if __name__ == "__main__":
    sys.exit(main())
