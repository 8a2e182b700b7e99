#!/usr/bin/env python
"""The chapters and the test suite on a busy machine (``make soak``).

A chapter asserts what its mechanism promises, and it must keep promising it when the machine is busy: ``make test``
runs two chapters side by side on two cores, CI shares its runner, and a reader's laptop is never idle. Two ways to
load the machine, both used by ``make soak``:

``chapters``  every chapter in ``--copies`` papermill processes at once (two by default: on a 2-core machine each
              copy gets about one core, while the other copy competes for it), optionally with ``--busy N`` busy
              loops beside them. Each copy gets a temporary directory of its own. A chapter passes when every copy
              ran to the end (its asserts included); the table gives each copy's wall time and CPU time (user +
              system of papermill, its kernel and their children, from ``wait4``).
``busy``      ``N`` busy loops (Python processes that spin at normal priority) beside a command, e.g. ``make test``;
              the loops end with the command, or after ``--limit`` seconds.

    python scripts/soak.py chapters [-k STEM] [--copies 2] [--busy 0] [-p seed=3] [--json PATH]
    python scripts/soak.py busy 2 -- make test
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
OUT = ROOT / "_build" / "soak"


@dataclass
class Copy:
    chapter: str
    copy: int
    passed: bool
    error: str
    wall_s: float
    cpu_s: float
    budget_s: float


def _budget(nb: Path) -> float:
    return float(json.loads(nb.read_text())["metadata"]["xlaport"]["budget_s"])


def _cell_error(executed: Path) -> str:
    """The first error a cell of the executed copy raised, as "Name: message" (one line, 300 characters at most)."""
    try:
        nb = json.loads(executed.read_text())
    except (OSError, ValueError):
        return ""
    for cell in nb.get("cells", []):
        for o in cell.get("outputs", []):
            if o.get("output_type") == "error":
                return f"{o.get('ename', '')}: {o.get('evalue', '')}".splitlines()[0][:300]
    return ""


def _busy_loops(n: int, limit_s: float) -> list[subprocess.Popen[bytes]]:
    """``n`` processes that spin at normal priority, each ending by itself after ``limit_s`` seconds."""
    code = f"import time\nend = time.monotonic() + {limit_s}\nwhile time.monotonic() < end:\n    pass\n"
    return [subprocess.Popen([sys.executable, "-c", code]) for _ in range(n)]


def _stop(procs: list[subprocess.Popen[bytes]]) -> None:
    for p in procs:
        if p.poll() is None:
            p.terminate()
    for p in procs:
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()


def run_chapter(nb: Path, copies: int, timeout_factor: float, params: tuple[str, ...] = ()) -> list[Copy]:
    """Run ``copies`` papermill processes of ``nb`` at once and wait for all of them."""
    budget = _budget(nb)
    OUT.mkdir(parents=True, exist_ok=True)
    started: list[tuple[int, subprocess.Popen[bytes], Path, float, str]] = []
    for k in range(copies):
        out = OUT / f"{nb.stem}.{k}.ipynb"
        tmp = tempfile.mkdtemp(prefix=f"soak-{nb.stem}-{k}-")
        env = {**os.environ, "TMPDIR": tmp}
        argv = [sys.executable, "-m", "papermill", str(nb), str(out), "--cwd", str(nb.parent), "-k", "python3"]
        argv += ["--execution-timeout", str(int(budget * timeout_factor)), "--no-progress-bar"]
        for kv in params:
            name, _, value = kv.partition("=")
            argv += ["-p", name, value]
        with open(OUT / f"{nb.stem}.{k}.log", "wb") as log:  # a file, not a pipe: no copy waits on a full pipe
            proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=log)
        started.append((k, proc, out, time.perf_counter(), tmp))
    results = []
    for k, proc, out, t0, tmp in started:
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        stderr = (OUT / f"{nb.stem}.{k}.log").read_text(errors="replace")
        err = "" if proc.returncode == 0 else (_cell_error(out) or (stderr.strip().splitlines() or ["failed"])[-1])
        cpu = usage.ru_utime + usage.ru_stime
        results.append(Copy(nb.stem, k, proc.returncode == 0, err, round(wall, 1), round(cpu, 1), budget))
        subprocess.run(["rm", "-rf", tmp], check=False)
    return results


def chapters(args: argparse.Namespace) -> int:
    nbs = sorted(NOTEBOOKS.glob("*.ipynb"), key=lambda p: -_budget(p))
    if args.only:
        nbs = [nb for nb in nbs if any(k in nb.stem for k in args.only)]
    if not nbs:
        print("no chapter matches", file=sys.stderr)
        return 2
    busy = _busy_loops(args.busy, limit_s=4 * 3600) if args.busy else []
    rows: list[Copy] = []
    start = time.perf_counter()
    try:
        for i, nb in enumerate(nbs, 1):
            print(f"[{i}/{len(nbs)}] {nb.stem}: {args.copies} copies at once", file=sys.stderr, flush=True)
            rows += run_chapter(nb, args.copies, args.timeout_factor, tuple(args.param))
    finally:
        _stop(busy)
    total = time.perf_counter() - start
    print(f"{'chapter':24} {'copy':>4} {'result':6} {'wall s':>7} {'CPU s':>6} {'budget':>6}  error")
    for r in rows:
        print(
            f"{r.chapter:24} {r.copy:>4} {'ok' if r.passed else 'FAIL':6} {r.wall_s:>7.1f} {r.cpu_s:>6.1f} "
            f"{r.budget_s:>6.0f}  {r.error}"
        )
    failed = sorted({r.chapter for r in rows if not r.passed})
    print(
        f"{len(nbs) - len(failed)} of {len(nbs)} chapters passed in every copy ({args.copies} copies side by side"
        + (f", {args.busy} busy loops beside them" if args.busy else "")
        + f") in {total:.0f} s"
        + (f"; failed: {', '.join(failed)}" if failed else "")
    )
    if args.json:
        record: dict[str, Any] = {
            "date": time.strftime("%Y-%m-%d", time.gmtime()),
            "cores": os.cpu_count(),
            "copies": args.copies,
            "busy_loops": args.busy,
            "seconds": round(total),
            "copies_run": [asdict(r) for r in rows],
        }
        Path(args.json).write_text(json.dumps(record, indent=1) + "\n")
    return 1 if failed else 0


def busy(args: argparse.Namespace) -> int:
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        print("soak.py busy: give the command to run after --, e.g. soak.py busy 2 -- make test", file=sys.stderr)
        return 2
    loops = _busy_loops(args.n, args.limit)
    print(f"[soak] {args.n} busy loops beside: {' '.join(command)}", file=sys.stderr, flush=True)
    start = time.perf_counter()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    try:
        rc = subprocess.call(command)
    except KeyboardInterrupt:
        rc = 128 + signal.SIGINT
    finally:
        _stop(loops)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(
        f"[soak] {' '.join(command)}: exit {rc} after {time.perf_counter() - start:.0f} s beside {args.n} busy loops "
        f"(the busy loops and the command used {after.ru_utime - before.ru_utime:.0f} s of CPU together)",
        file=sys.stderr,
    )
    return rc


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="mode", required=True)
    c = sub.add_parser("chapters", help="every chapter in several copies at once")
    c.add_argument("-k", dest="only", action="append", default=None, help="only chapters whose name contains this")
    c.add_argument("--copies", type=int, default=2, help="copies of each chapter run at once (default 2)")
    c.add_argument("--busy", type=int, default=0, help="busy loops beside the chapters (default 0)")
    c.add_argument("--timeout-factor", type=float, default=8.0, help="a cell may take this many budgets (default 8)")
    c.add_argument("--json", default=None, metavar="PATH", help="write the table as JSON")
    c.add_argument(
        "-p", "--param", action="append", default=[], metavar="NAME=VALUE", help="a parameter for every chapter"
    )
    c.set_defaults(run=chapters)
    b = sub.add_parser("busy", help="N busy loops beside a command")
    b.add_argument("n", type=int, help="busy loops")
    b.add_argument("--limit", type=float, default=4 * 3600, help="seconds after which each loop ends by itself")
    b.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND ...")
    b.set_defaults(run=busy)
    args = p.parse_args(argv)
    if getattr(args, "copies", 1) < 1 or getattr(args, "busy", 0) < 0 or getattr(args, "n", 0) < 0:
        p.error("counts must be whole numbers >= 0 (copies >= 1)")
    return int(args.run(args))


if __name__ == "__main__":
    sys.exit(main())
