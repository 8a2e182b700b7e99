#!/usr/bin/env python
"""Record the full zoo sweep in ``src/xlaport/reference/data/zoo-sweep.json`` (the table the zoo chapter closes with).

Maintainer script. It runs ``xlaport zoo`` (every model in a process of its own) on each target, one family of
the registry at a time so that no single command holds a shared machine for long, and merges the results:

    python scripts/zoo_sweep.py                       # tpu and neuron, the registry's defaults
    python scripts/zoo_sweep.py --target tpu --out /tmp/zoo.json
    python scripts/zoo_sweep.py --rerun vit --why "..."  # re-run some models, replace their rows in the record
    flock /tmp/xlaport-heavy.lock ...                  # on a shared machine, wrap each chunk (--lock PATH does it)
    python scripts/zoo_sweep.py --parts /tmp/zoo-parts  # resumable: each chunk kept there, a rerun skips it
    python scripts/zoo_sweep.py --per-model --lock L    # one model per command (and per hold of the lock L)
    python scripts/zoo_sweep.py --parts D --collect --why "..."  # write the record from the chunks that finished

The recorded wall time is the sum of the chunks' own wall times (each includes its processes' start-up).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from xlaport.zoo import FAMILIES, SweepResult, names

ROOT = Path(__file__).resolve().parents[1]

OUT = ROOT / "src" / "xlaport" / "reference" / "data" / "zoo-sweep.json"


def run_chunk(
    target: str, models: tuple[str, ...], lock: str | None, extra: list[str], keep: Path | None = None
) -> SweepResult:
    """Run ``models`` on ``target`` in one ``xlaport zoo`` command; with ``keep``, reuse (or save) its result there."""
    if keep is not None and keep.exists():
        print(f"== {target}: {', '.join(models)} (kept in {keep})", file=sys.stderr, flush=True)
        return SweepResult.from_dict(json.loads(keep.read_text()))
    fd, path = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    argv = [sys.executable, "-m", "xlaport.cli", "zoo", "--target", target, "--json", path, *extra]
    for m in models:
        argv += ["--model", m]
    if len(models) == 1:
        argv.append("--in-process")  # one model on one target is already a process of its own
    if lock:
        argv = ["flock", lock, *argv]
    print(f"== {target}: {', '.join(models)}", file=sys.stderr, flush=True)
    try:
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, env={**os.environ, "PJRT_DEVICE": "CPU"})
        text = Path(path).read_text()
        if keep is not None:
            keep.parent.mkdir(parents=True, exist_ok=True)
            keep.write_text(text)
        return SweepResult.from_dict(json.loads(text))
    finally:
        os.unlink(path)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--target", action="append", choices=("tpu", "neuron"), default=None)
    p.add_argument("--out", default=str(OUT))
    p.add_argument("--lock", default=None, help="run each chunk under flock PATH")
    p.add_argument("--machine", default=f"{os.cpu_count()} CPU cores, no accelerator")
    p.add_argument(
        "--rerun",
        action="append",
        default=None,
        metavar="MODEL",
        help="re-run only these models (each in its own process) and replace their rows in --out",
    )
    p.add_argument("--why", default="", help="with --rerun: why these rows were re-run (kept in the record)")
    p.add_argument(
        "--per-model",
        action="store_true",
        help="one command (and one --lock hold) per model instead of per family: shorter holds on a shared machine",
    )
    p.add_argument(
        "--parts",
        default=None,
        metavar="DIR",
        help="keep each chunk's result in DIR and reuse the ones already there (an interrupted sweep resumes)",
    )
    p.add_argument(
        "--collect",
        action="store_true",
        help="run nothing: write --out from the chunks kept in --parts, and carry the rows no chunk has over from "
        "the record already at --out (the record names them and says why)",
    )
    args, extra = p.parse_known_args()
    targets = args.target or ["tpu", "neuron"]
    if args.collect:
        if not args.parts:
            p.error("--collect needs --parts DIR")
        return collect(targets, Path(args.parts), Path(args.out), args)
    if args.rerun:
        return rerun(args.rerun, targets, Path(args.out), args, extra)
    parts = []
    for target in targets:
        for family in FAMILIES:
            models = names(family)
            if not models:
                continue
            keep = Path(args.parts) / f"{target}-{family}.json" if args.parts else None
            if args.per_model and not (keep and keep.exists()):  # a family kept by an earlier run is reused whole
                for m in models:
                    one = Path(args.parts) / f"{target}-{m}.json" if args.parts else None
                    parts.append(run_chunk(target, (m,), args.lock, extra, one))
            else:
                parts.append(run_chunk(target, models, args.lock, extra, keep))
    merged = SweepResult.merge(parts)
    data = merged.as_dict()
    data["recorded"] = {
        "command": "xlaport zoo "
        + " ".join(f"--target {t}" for t in targets)
        + (" " + " ".join(extra) if extra else ""),
        "how": "run by scripts/zoo_sweep.py, "
        + ("one model" if args.per_model else "one family of the registry")
        + " per command, each model in its own process",
        "machine": args.machine,
        "date": datetime.date.today().isoformat(),
        "chunk_wall_s": [round(p.wall_s, 1) for p in parts],
    }
    Path(args.out).write_text(json.dumps(data, indent=1) + "\n")
    print(merged.table())
    print(merged.summary_text())
    print(f"written to {args.out}", file=sys.stderr)
    return 0


def collect(targets: list[str], parts_dir: Path, out: Path, args: argparse.Namespace) -> int:
    """Write the record from the chunks in ``parts_dir`` (an interrupted sweep); rows that no chunk holds are carried
    over from the record at ``out``, and ``recorded.carried_over`` lists them, each with the date it was measured."""
    old = json.loads(out.read_text())
    previous = SweepResult.from_dict(old)
    fresh: list[SweepResult] = []
    for target in targets:
        for family in FAMILIES:
            models = names(family)
            if not models:
                continue
            whole = parts_dir / f"{target}-{family}.json"
            files = [whole] if whole.exists() else [parts_dir / f"{target}-{m}.json" for m in models]
            fresh += [SweepResult.from_dict(json.loads(f.read_text())) for f in files if f.exists()]
    if not fresh:
        print(f"error: no chunks in {parts_dir}", file=sys.stderr)
        return 2
    got = {(r.model, r.target) for part in fresh for r in part.results}
    carried = [r for r in previous.results if r.target in targets and (r.model, r.target) not in got]
    merged = SweepResult.merge([*fresh, SweepResult(previous.config, carried, 0.0, {})] if carried else fresh)
    merged = SweepResult(
        merged.config, merged.results, merged.wall_s + sum(r.wall_s for r in carried), merged.environment
    )
    data = merged.as_dict()
    data["recorded"] = {
        "command": "xlaport zoo " + " ".join(f"--target {t}" for t in targets),
        "how": "run by scripts/zoo_sweep.py, one model (or one family of the registry) per command, each model in "
        "its own process; written with --collect from the chunks that finished",
        "machine": args.machine,
        "date": datetime.date.today().isoformat(),
        "chunk_wall_s": [round(p.wall_s, 1) for p in fresh],
    }
    if carried:
        rec = old.get("recorded", {})
        rerun_models = set(rec.get("rerun", {}).get("models", []))
        data["recorded"]["carried_over"] = {
            "rows": {
                f"{r.target} {r.model}": rec["rerun"]["date"] if r.model in rerun_models else rec.get("date", "unknown")
                for r in carried
            },
            "why": args.why or "not re-run before the record was written",
        }
    out.write_text(json.dumps(data, indent=1) + "\n")
    print(merged.table())
    print(merged.summary_text())
    print(f"{len(got)} rows fresh, {len(carried)} carried over; written to {out}", file=sys.stderr)
    return 0


def rerun(models: list[str], targets: list[str], out: Path, args: argparse.Namespace, extra: list[str]) -> int:
    """Re-run ``models`` on ``targets`` and put their rows into the recorded sweep at ``out``; the full sweep's
    wall time and configuration stay, and ``recorded.rerun`` says what was re-run, when and why."""
    old = json.loads(out.read_text())
    full = SweepResult.from_dict(old)
    unknown = sorted(set(models) - set(full.config.models))
    if unknown:
        print(f"error: not in the record: {', '.join(unknown)}", file=sys.stderr)
        return 2
    parts = [run_chunk(t, (m,), args.lock, extra) for t in targets for m in models]
    fresh = {(r.model, r.target): r for p in parts for r in p.results}
    merged = SweepResult(
        full.config, [fresh.get((r.model, r.target), r) for r in full.results], full.wall_s, full.environment
    )
    data = merged.as_dict()
    data["recorded"] = {
        **old["recorded"],
        "rerun": {
            "date": datetime.date.today().isoformat(),
            "models": models,
            "wall_s": {f"{p.config.targets[0]} {p.config.models[0]}": round(p.wall_s, 1) for p in parts},
            "why": args.why,
            "machine": args.machine,
        },
    }
    out.write_text(json.dumps(data, indent=1) + "\n")
    print(merged.table())
    print(merged.summary_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
