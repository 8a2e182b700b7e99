"""Execute every chapter once, on CPU, into _build/executed (what the site then renders).

Each notebook asserts the effect it teaches, so a regression in the effect fails
here. Its time budget (seconds, the budget the chapter declares) is in the
notebook's metadata under ``xlaport.budget_s``; a run whose kernel used more than 1.5x the budget in CPU time (user +
system of the kernel and its children) fails. CPU time, not wall time: beside other work (a second chapter, a busy
laptop, ``make soak``'s busy loops) a chapter waits longer for the same work, and its wall time says more about the
machine than about the chapter; the wall time is printed and recorded beside it. ``make test`` runs the chapters
on two pytest-xdist workers, longest budget first, with lint and the unit tests beside them at the lowest CPU priority
(nice 19). A chapter runs mostly on one core (its CPU time is about its wall time), so two side by side on two cores
take about what each takes alone: in four clean-clone runs all fourteen took 260-323 s, against 544 s one after
another; the most a chapter used of its budget was 0.90 (beyond_forward, 109 of 120 s, in the slowest run). An
earlier, heavier beyond_forward used two cores: beside the unit tests at the same priority it overran, 189 s against
118 s alone.
"""

from __future__ import annotations

import fcntl
import json
import os
import resource
import time
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
EXECUTED = ROOT / "_build" / "executed"
TIMINGS = EXECUTED / "timings.json"
SLACK = 1.5  # CI machines vary; a notebook's CPU time must stay within 1.5x its budget


def _record(name: str, seconds: float, budget: float, cpu_s: float) -> None:
    # make test runs chapters side by side (pytest -n): one writer at a time, each adding its own entry.
    TIMINGS.parent.mkdir(parents=True, exist_ok=True)
    with open(TIMINGS.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        data = json.loads(TIMINGS.read_text()) if TIMINGS.exists() else {}
        data[name] = {"seconds": round(seconds, 1), "budget_s": budget, "cpu_s": round(cpu_s, 1)}
        # Readers take no lock (the curriculum page, a test beside the chapters): they see the old file or the new.
        fresh = TIMINGS.with_suffix(".json.tmp")
        fresh.write_text(json.dumps(data, indent=2, sort_keys=True))
        os.replace(fresh, TIMINGS)


def _children_cpu() -> float:
    """CPU seconds (user + system) of this process's finished children: the chapter's kernel once it has exited."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


@pytest.mark.notebook
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs(path: Path) -> None:
    import papermill

    budget = float(nbformat.read(path, as_version=4).metadata["xlaport"]["budget_s"])
    out = EXECUTED / "notebooks" / path.name
    out.parent.mkdir(parents=True, exist_ok=True)
    start, used = time.perf_counter(), _children_cpu()
    papermill.execute_notebook(
        str(path),
        str(out),
        kernel_name="python3",
        cwd=str(path.parent),
        progress_bar=False,
        execution_timeout=int(budget * 4),
    )
    seconds, cpu_s = time.perf_counter() - start, _children_cpu() - used
    _record(path.stem, seconds, budget, cpu_s)
    print(f"{path.name}: {seconds:.1f} s, {cpu_s:.1f} s of CPU (budget {budget:.0f} s)")
    assert cpu_s <= budget * SLACK, f"{path.name} used {cpu_s:.1f} s of CPU ({seconds:.1f} s waited), budget {budget:.0f} s"
