#!/usr/bin/env python
"""Run every chapter with the other values its parameters cell offers (``make test-params``).

A chapter's asserts must hold for every seed and target a reader may set, not only for the defaults CI
runs. Each notebook declares what it offers in its metadata, ``"xlaport": {"matrix": {"seed": [0, 1, 2],
"target": ["tpu", "neuron", "auto"]}}``; ``tests/notebooks/test_committed_clean.py`` checks that the matrix names
every target the parameters cell's comment offers. This script runs, for each notebook, one variant per
non-default value (the other parameters at their defaults: ``seed=1``, ``seed=2``, ``target="neuron"``,
...); ``--full`` runs the whole product instead. The default values are what ``make test`` already runs.

    python scripts/param_matrix.py                  # every chapter, one value changed at a time
    python scripts/param_matrix.py -k sd3 --full    # one chapter, every combination

Executed copies go to ``_build/params/``; a summary table is printed and written to
``_build/params/summary.json``. Exit status 1 when any run fails.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import itertools
import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "_build" / "params"


def defaults(nb: dict[str, Any]) -> dict[str, Any]:
    """The literal assignments of the notebook's parameters cell."""
    for cell in nb["cells"]:
        if cell["cell_type"] == "code" and "parameters" in cell.get("metadata", {}).get("tags", []):
            values = {}
            for node in ast.parse("".join(cell["source"])).body:
                if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                    with contextlib.suppress(ValueError):  # not a literal: leave it out
                        values[node.targets[0].id] = ast.literal_eval(node.value)
            return values
    return {}


def variants(nb: dict[str, Any], full: bool) -> list[dict[str, Any]]:
    """Parameter overrides to run: one non-default value at a time, or (full) every combination."""
    matrix: dict[str, list[Any]] = nb["metadata"].get("xlaport", {}).get("matrix", {})
    base = defaults(nb)
    if full:
        keys = list(matrix)
        combos = [dict(zip(keys, vals)) for vals in itertools.product(*(matrix[k] for k in keys))]
        return [
            {k: v for k, v in c.items() if base.get(k) != v}
            for c in combos
            if any(base.get(k) != v for k, v in c.items())
        ]
    return [{k: v} for k, values in matrix.items() for v in values if base.get(k) != v]


def run(path: Path, override: dict[str, Any], budget: float) -> dict[str, Any]:
    import papermill

    tag = "-".join(f"{k}={v}" for k, v in override.items())
    out = OUT / f"{path.stem}--{tag}.ipynb"
    start = time.perf_counter()
    row: dict[str, Any] = {"chapter": path.stem, "params": override}
    try:
        papermill.execute_notebook(
            str(path),
            str(out),
            parameters=override,
            kernel_name="python3",
            cwd=str(path.parent),
            progress_bar=False,
            execution_timeout=int(budget * 6),
        )
        row["ok"] = True
    except Exception as e:  # papermill's error carries the failing cell's traceback
        lines = [ln for ln in str(e).splitlines() if ln.strip()]
        row["ok"], row["error"] = False, " | ".join(lines[-3:])[:400]
    row["seconds"] = round(time.perf_counter() - start, 1)
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-k", default="", help="only chapters whose file name contains this")
    ap.add_argument("--full", action="store_true", help="every combination of the matrix, not one value at a time")
    ap.add_argument("--list", action="store_true", help="print the runs, run nothing")
    args = ap.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    plan = []
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        if args.k not in path.stem:
            continue
        nb = json.loads(path.read_text(encoding="utf-8"))
        budget = float(nb["metadata"].get("xlaport", {}).get("budget_s", 120))
        plan += [(path, o, budget) for o in variants(nb, args.full)]
    if args.list:
        for path, o, _ in plan:
            print(f"{path.stem}: {o}")
        return 0
    rows = []
    for i, (path, o, budget) in enumerate(plan, 1):
        print(f"[{i}/{len(plan)}] {path.stem} {o} ...", end=" ", flush=True)
        rows.append(run(path, o, budget))
        print("ok" if rows[-1]["ok"] else "FAILED", f"({rows[-1]['seconds']} s)", flush=True)
    (OUT / "summary.json").write_text(json.dumps(rows, indent=2))
    failed = [r for r in rows if not r["ok"]]
    print(f"\n{len(rows) - len(failed)} passed, {len(failed)} failed")
    for r in failed:
        print(f"  {r['chapter']} {r['params']}: {r['error']}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
