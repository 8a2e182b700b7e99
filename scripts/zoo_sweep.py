#!/usr/bin/env python
"""Record the full zoo sweep in ``src/xlaport/reference/data/zoo-sweep.json`` (the table the zoo chapter closes with).

Maintainer script. It runs ``xlaport zoo`` (every model in a process of its own) on each target, one family of
the registry at a time so that no single command holds a shared machine for long, and merges the results:

    python scripts/zoo_sweep.py                       # tpu and neuron, the registry's defaults
    python scripts/zoo_sweep.py --target tpu --out /tmp/zoo.json
    flock /tmp/xlaport-heavy.lock ...                  # on a shared machine, wrap each chunk (--lock PATH does it)

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

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from xlaport.zoo import FAMILIES, SweepResult, names  # noqa: E402

OUT = ROOT / "src" / "xlaport" / "reference" / "data" / "zoo-sweep.json"


def run_chunk(target: str, models: tuple[str, ...], lock: str | None, extra: list[str]) -> SweepResult:
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
        return SweepResult.from_dict(json.loads(Path(path).read_text()))
    finally:
        os.unlink(path)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--target", action="append", choices=("tpu", "neuron"), default=None)
    p.add_argument("--out", default=str(OUT))
    p.add_argument("--lock", default=None, help="run each chunk under flock PATH")
    p.add_argument("--machine", default=f"{os.cpu_count()} CPU cores, no accelerator")
    args, extra = p.parse_known_args()
    targets = args.target or ["tpu", "neuron"]
    parts = []
    for target in targets:
        for family in FAMILIES:
            models = names(family)
            if models:
                parts.append(run_chunk(target, models, args.lock, extra))
    merged = SweepResult.merge(parts)
    data = merged.as_dict()
    data["recorded"] = {
        "command": "xlaport zoo "
        + " ".join(f"--target {t}" for t in targets)
        + (" " + " ".join(extra) if extra else ""),
        "how": "run by scripts/zoo_sweep.py, one family of the registry per command, each model in its own process",
        "machine": args.machine,
        "date": datetime.date.today().isoformat(),
        "chunk_wall_s": [round(p.wall_s, 1) for p in parts],
    }
    Path(args.out).write_text(json.dumps(data, indent=1) + "\n")
    print(merged.table())
    print(merged.summary_text())
    print(f"written to {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
