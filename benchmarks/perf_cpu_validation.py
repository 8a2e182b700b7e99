#!/usr/bin/env python
"""Predicted vs measured step times on this machine's CPU: the check behind xlaport.perf's roofline.

Each round measures the CPU (float32 matmul FLOP/s, copy bandwidth, cost of one eager op call) and then,
for every case in ``xlaport.perf.bench.CASES``, predicts the eager step time from a trace on ``meta``
with that round's numbers and times the real step. Several rounds, medians reported, and the load
average before and after each round, because other processes on the same cores slow the measurement
(not the prediction): run it when the machine is quiet.

    python benchmarks/perf_cpu_validation.py [--rounds 3] [--threads 1]
        # writes benchmarks/results/perf_cpu_validation.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from pathlib import Path

OUT = Path(__file__).resolve().parent / "results" / "perf_cpu_validation.json"


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--out", default=str(OUT))
    a = ap.parse_args()

    import torch

    from xlaport.perf.bench import CASES, measure_cpu, validate

    rounds = []
    for r in range(a.rounds):
        load0 = os.getloadavg()
        t0 = time.time()
        m = measure_cpu(threads=a.threads, repeats=a.repeats)
        rows = validate(None, repeats=a.repeats, threads=a.threads)  # the CPU measured again before each case
        rounds.append(
            {
                "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t0)),
                "load_before": load0,
                "load_after": os.getloadavg(),
                "machine": {
                    "peak_flop_per_s": m.peak_flop_per_s,
                    "bytes_per_s": m.hbm_bytes_per_s,
                    "per_op_s": m.per_op_s,
                },
                "rows": rows,
            }
        )
        print(
            f"round {r + 1}: load {load0[0]:.1f}, {m.peak_flop_per_s / 1e9:.1f} GFLOP/s, "
            f"{m.hbm_bytes_per_s / 1e9:.2f} GB/s, {m.per_op_s * 1e6:.1f} us/op"
        )
        for row in rows:
            print(
                f"  {row['case']:42s} {row['predicted_s'] * 1e3:9.3f} ms pred {row['measured_s'] * 1e3:9.3f} ms "
                f"meas {row['error']:+.0%} ({row['bound']})"
            )
    summary = []
    for name in CASES:
        per = [next(x for x in rd["rows"] if x["case"] == name) for rd in rounds]
        summary.append(
            {
                "case": name,
                "expect": per[0]["expect"],
                "bound": per[0]["bound"],
                "caveat": per[0]["caveat"],
                "predicted_s": statistics.median(x["predicted_s"] for x in per),
                "measured_s": statistics.median(x["measured_s"] for x in per),
                "error": statistics.median(x["error"] for x in per),
                "errors": [x["error"] for x in per],
            }
        )
    record = {
        "what": "xlaport.perf roofline (eager = unfused end + per-op cost) vs measured eager step time, float32 CPU",
        "date": time.strftime("%Y-%m-%d", time.gmtime()),
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "threads": a.threads,
        "torch": torch.__version__,
        "python": platform.python_version(),
        "rounds": rounds,
        "summary": summary,
        "median_abs_error": statistics.median(abs(s["error"]) for s in summary),
    }
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(record, indent=1) + "\n")
    print(f"median |error| {record['median_abs_error']:.0%}; wrote {a.out}")


if __name__ == "__main__":
    main()
