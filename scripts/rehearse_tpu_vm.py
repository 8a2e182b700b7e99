#!/usr/bin/env python
"""Rehearse the TPU-VM environment on a machine without a TPU (``make rehearse-tpu-vm``).

Run with the Python of a venv built from ``requirements-tpu.txt`` (torch 2.14.1 + torch_tpu 0.2.0) and the toolkit.
Every chapter is executed once with ``XLAPORT_TARGET=auto``, which on a machine without a TPU must take its CPU
path, under three conditions:

* ``TORCH_DEVICE_BACKEND_AUTOLOAD=0`` (the switch the pitfalls page teaches), so that ``import torch`` does not load
  torch_tpu and libtpu;
* sockets blocked except loopback (a ``sitecustomize`` in every Python process, the notebook kernels included,
  refuses connections to any other address), so nothing may reach a network;
* libtpu must not start: each process records at exit whether a ``libtpu`` library was mapped into it.

The table printed at the end (and written as JSON with ``--json``) gives per chapter: passed or the first line of
its error, seconds, libtpu loaded or not, connections refused.

``--no-switch`` rehearses the reader who installed ``requirements-tpu.txt`` on a CPU machine and set nothing:
``TORCH_DEVICE_BACKEND_AUTOLOAD`` unset, so ``import torch`` autoloads torch_tpu and maps libtpu into every kernel.
There libtpu may be loaded, but it must never ask the cloud metadata server for the TPU's topology (which hangs a
chapter off Google Cloud: about 30 s per key, many keys): the toolkit sets ``TPU_SKIP_MDS_QUERY=1`` when it finds
torch_tpu autoloaded without a TPU (``xlaport.detect.keep_libtpu_offline``). A chapter fails here if libtpu's own
log shows a metadata query, or if it does not finish within ``--timeout`` seconds (60 by default in this mode).

    .venv-tpu/bin/python scripts/rehearse_tpu_vm.py [-k STEM] [--json PATH] [--lock /tmp/nb.lock] [--no-switch]

On a shared machine ``--lock PATH`` runs each chapter under ``flock PATH``, so that it never runs beside another
heavy job that takes the same lock.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SWITCH = "TORCH_DEVICE_BACKEND_AUTOLOAD"

# Installed as sitecustomize.py in a directory put first on PYTHONPATH for every process of the rehearsal.
GUARD = r"""
import atexit, os, socket

_LOG = os.environ.get("XLAPORT_REHEARSAL_LOG")
_refused = []


def _loopback(address):
    host = address[0] if isinstance(address, tuple) else address
    return isinstance(host, str) and (host in ("localhost", "::1") or host.startswith("127.") or host == "")


_connect, _connect_ex = socket.socket.connect, socket.socket.connect_ex


def connect(self, address):
    if self.family in (socket.AF_INET, socket.AF_INET6) and not _loopback(address):
        _refused.append(str(address))
        raise OSError(101, f"network blocked by the TPU-VM rehearsal: {address}")
    return _connect(self, address)


def connect_ex(self, address):
    if self.family in (socket.AF_INET, socket.AF_INET6) and not _loopback(address):
        _refused.append(str(address))
        return 101
    return _connect_ex(self, address)


socket.socket.connect, socket.socket.connect_ex = connect, connect_ex


@atexit.register
def _report():
    if not _LOG:
        return
    try:
        maps = open("/proc/self/maps").read()
    except OSError:
        maps = ""
    line = {"pid": os.getpid(), "libtpu": "libtpu" in maps, "refused": _refused[:5], "n_refused": len(_refused)}
    with open(os.path.join(_LOG, f"{os.getpid()}.json"), "w") as f:
        f.write(__import__("json").dumps(line))
"""


def chapters() -> list[Path]:
    return sorted((ROOT / "notebooks").glob("*.ipynb"))


# What libtpu logs when it asks the cloud metadata server of a TPU VM for its topology (libtpu 0.0.52 off Google
# Cloud: "Failed to get TPU metadata", "Failed to fetch URL after 30 tries", gcp_metadata_utils.cc in the trace).
METADATA_MARKS = ("Failed to get TPU metadata", "Failed to fetch URL", "gcp_metadata")


def metadata_queried(stderr: str) -> bool:
    """Whether a process's stderr shows libtpu querying the cloud metadata server."""
    return any(mark in stderr for mark in METADATA_MARKS)


def run_chapter(
    nb: Path, work: Path, guard_dir: Path, timeout: int, lock: str | None = None, switch: bool = True
) -> dict[str, Any]:
    log = Path(tempfile.mkdtemp(prefix="rehearsal-log-"))
    env = {
        **os.environ,
        "XLAPORT_TARGET": "auto",
        "PYTHONPATH": os.pathsep.join([str(guard_dir), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
        "XLAPORT_REHEARSAL_LOG": str(log),
    }
    if switch:
        env[SWITCH] = "0"
    else:  # the reader who set nothing: neither switch
        for name in (SWITCH, "TPU_SKIP_MDS_QUERY"):
            env.pop(name, None)
    out = work / nb.name
    argv = [sys.executable, "-m", "papermill", str(nb), str(out), "--cwd", str(nb.parent), "-k", "python3"]
    if lock:
        argv = ["flock", lock, *argv]
    start = time.perf_counter()
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=timeout)
        ok, err, stderr = proc.returncode == 0, _first_error(proc.stderr), proc.stderr
    except subprocess.TimeoutExpired as e:
        stderr = e.stderr.decode(errors="replace") if isinstance(e.stderr, bytes) else (e.stderr or "")
        ok, err = False, f"timed out after {timeout} s"
    seconds = time.perf_counter() - start
    executed = _read_notebook(out)
    if lock:  # time spent waiting for the lock is not the chapter's: papermill records each cell's duration
        seconds = _executed_seconds(executed, seconds)
    records = [json.loads(p.read_text()) for p in log.glob("*.json")]
    raised = _cell_error(executed)
    if not ok and raised:
        err = raised
    return {
        "chapter": nb.stem,
        "passed": ok,
        # stopped by its own banner's check (xlaport.CannotRunHere): a need the CPU path cannot meet, said in one line
        "declared": not ok and err.startswith("CannotRunHere:"),
        "error": "" if ok else err,
        "seconds": round(seconds, 1),
        "libtpu_loaded": any(r["libtpu"] for r in records),
        "metadata_queried": metadata_queried(stderr),
        "connections_refused": sum(r["n_refused"] for r in records),
        "processes": len(records),
    }


def environment() -> dict[str, str]:
    """Python and the versions of the packages that make this environment a TPU VM's (read from their metadata)."""
    import importlib.metadata
    import platform

    env = {"python": platform.python_version()}
    for dist in ("torch", "torch_tpu", "libtpu", "transformers", "numpy"):
        try:
            env[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            env[dist] = "not installed"
    return env


def _read_notebook(out: Path) -> dict[str, Any]:
    """The executed copy as JSON, or {} where papermill left none (or a broken one)."""
    try:
        nb = json.loads(out.read_text())
    except (OSError, ValueError):
        return {}
    return nb if isinstance(nb, dict) else {}


def _executed_seconds(nb: dict[str, Any], default: float) -> float:
    """The chapter's own run time: the sum of papermill's per-cell durations in the executed copy ``nb``."""
    durations = [c.get("metadata", {}).get("papermill", {}).get("duration") for c in nb.get("cells", [])]
    return float(sum(d for d in durations if isinstance(d, (int, float)))) or default


def _cell_error(nb: dict[str, Any]) -> str:
    """The exception a cell of the executed copy ``nb`` raised, as "Name: message" (cut to 300 characters), or ""."""
    for cell in nb.get("cells", []):
        for o in cell.get("outputs", []):
            if o.get("output_type") == "error":
                return f"{o.get('ename', '')}: {o.get('evalue', '')}"[:300]
    return ""


def _first_error(stderr: str) -> str:
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    for ln in reversed(lines):
        if "Error" in ln or "Exception" in ln:
            return ln[:200]
    return lines[-1][:200] if lines else "failed"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "-k", dest="only", action="append", default=None, help="run only chapters whose name contains this (repeatable)"
    )
    p.add_argument("--timeout", type=int, default=None, help="seconds per chapter (default 1800; 60 with --no-switch)")
    p.add_argument("--json", default=None, metavar="PATH")
    p.add_argument("--lock", default=None, metavar="PATH", help="run each chapter under flock PATH")
    p.add_argument(
        "--no-switch",
        action="store_true",
        help=f"run the chapters as a reader who set nothing: {SWITCH} unset, torch_tpu autoloaded in every kernel",
    )
    args = p.parse_args(argv)
    switch = not args.no_switch
    timeout = args.timeout or (1800 if switch else 60)
    if switch and os.environ.get(SWITCH) != "0":
        print(f"error: set {SWITCH}=0 before Python starts (make rehearse-tpu-vm does)", file=sys.stderr)
        return 2
    if "torch_tpu" in sys.modules:
        print("error: torch_tpu was imported in the rehearsal driver itself", file=sys.stderr)
        return 2
    guard_dir = Path(tempfile.mkdtemp(prefix="rehearsal-site-"))
    (guard_dir / "sitecustomize.py").write_text(GUARD)
    work = ROOT / "_build" / "rehearsal"
    work.mkdir(parents=True, exist_ok=True)
    rows = []
    for nb in chapters():
        if args.only and not any(k in nb.stem for k in args.only):
            continue
        print(f"== {nb.stem}", file=sys.stderr, flush=True)
        rows.append(run_chapter(nb, work, guard_dir, timeout, args.lock, switch))
    print(f"{'chapter':26} {'result':7} {'s':>7} {'libtpu':>6} {'metadata':>8} {'refused':>7}  error")
    for r in rows:
        result = "ok" if r["passed"] else "cannot" if r["declared"] else "FAIL"
        print(
            f"{r['chapter']:26} {result:7} {r['seconds']:>7.1f} {'YES' if r['libtpu_loaded'] else 'no':>6} "
            f"{'ASKED' if r['metadata_queried'] else 'no':>8} {r['connections_refused']:>7}  {r['error']}"
        )
    if args.json:
        record = {
            "date": time.strftime("%Y-%m-%d", time.gmtime()),
            "environment": environment(),
            "conditions": (f"{SWITCH}=0" if switch else f"{SWITCH} unset (torch_tpu autoloaded)")
            + f", XLAPORT_TARGET=auto, sockets blocked except loopback, {timeout} s per chapter",
            "chapters": rows,
        }
        Path(args.json).write_text(json.dumps(record, indent=1) + "\n")
    bad = [r for r in rows if (not r["passed"] and not r["declared"]) or failed_guard(r, switch)]
    said = sum(r["declared"] for r in rows)
    print(
        f"{sum(r['passed'] for r in rows)} of {len(rows)} chapters ran on the CPU path, {said} said in their banner"
        f" why they cannot, {len(bad)} failed otherwise or "
        + ("started libtpu" if switch else "let libtpu query the metadata server")
    )
    return 1 if bad else 0


def failed_guard(row: dict[str, Any], switch: bool) -> bool:
    """With the switch, libtpu must not even be loaded; without it (autoloaded), it must not query the metadata
    server."""
    return bool(row["libtpu_loaded"] if switch else row["metadata_queried"])


if __name__ == "__main__":
    sys.exit(main())
