"""What the emulator's fast-compile level (xlaport.xla_cpu) costs and saves on XLA:CPU.

A small training step (four MLP blocks of width 64/256 with LayerNorm, AdamW), run in a fresh process per level:
twelve steps, each with a new sequence length (twelve compiles), then twenty steps at one cached shape. Reports
torch_xla's CompileTime total, the wall time of the compiling steps, the mean cached step and the compile count, at
XLA's default backend optimisation level and at level 0, ``--repeat`` times each, alternating.

    python benchmarks/xla_cpu_opt_level.py --repeat 3 --json benchmarks/results/xla_cpu_opt_level.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

CHILD = r"""
import json, time
import torch, torch.nn as nn
import torch_xla
import torch_xla.debug.metrics as met
dev = torch_xla.device()
torch.manual_seed(0)
blocks = [nn.Sequential(nn.Linear(64, 256), nn.GELU(), nn.Linear(256, 64), nn.LayerNorm(64)) for _ in range(4)]
model = nn.Sequential(*blocks).to(dev)
opt = torch.optim.AdamW(model.parameters())
gen = torch.Generator().manual_seed(0)

def step(x):
    loss = model(x).pow(2).mean()
    loss.backward()
    opt.step()
    opt.zero_grad()
    torch_xla.sync(wait=True)

start = time.perf_counter()
for length in range(8, 20):
    step(torch.randn(4, length, 64, generator=gen).to(dev))
compiling_s = time.perf_counter() - start
x = torch.randn(4, 19, 64, generator=gen).to(dev)
start = time.perf_counter()
for _ in range(20):
    step(x)
cached_ms = (time.perf_counter() - start) / 20 * 1000
print(json.dumps({"compiling_steps_s": compiling_s, "cached_step_ms": cached_ms,
                  "compile_time_s": met.metric_data("CompileTime")[1] / 1e9,
                  "compiles": met.counter_value("UncachedCompile")}))
"""

LEVELS = {"default": "", "O0": "--xla_backend_optimization_level=0"}


def run(flags: str) -> dict[str, float]:
    env = {**os.environ, "PJRT_DEVICE": "CPU", "XLA_FLAGS": flags, "XLAPORT_XLA_CPU_OPT": "default"}
    out = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, check=True)
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3, help="runs per level (default 3)")
    ap.add_argument("--json", type=Path, help="write the runs and their medians here")
    args = ap.parse_args()
    if args.repeat < 1:
        ap.error("--repeat must be at least 1")
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in LEVELS}
    for i in range(args.repeat):
        for name, flags in LEVELS.items():
            r = run(flags)
            runs[name].append(r)
            print(f"[{i + 1}/{args.repeat}] {name:8s} " + ", ".join(f"{k} {v:.2f}" for k, v in r.items()), flush=True)
    medians = {name: {k: statistics.median(r[k] for r in rs) for k in rs[0]} for name, rs in runs.items()}
    for name, m in medians.items():
        print(f"median {name:8s} " + ", ".join(f"{k} {v:.2f}" for k, v in m.items()))
    if args.json:
        import torch
        import torch_xla

        record = {
            "date": time.strftime("%Y-%m-%d"),
            "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
            "versions": {
                "python": platform.python_version(),
                "torch": torch.__version__,
                "torch_xla": torch_xla.__version__,
            },
            "levels": LEVELS,
            "runs": runs,
            "medians": medians,
        }
        args.json.write_text(json.dumps(record, indent=2) + "\n")


if __name__ == "__main__":
    main()
