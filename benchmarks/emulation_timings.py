#!/usr/bin/env python
"""Timings the book's emulation page quotes, measured on the machine that runs this script.

1. Start-up: `import torch`, `import torch_xla`, and the first result on the XLA:CPU device, in fresh processes.
2. A Cholesky in a training-like step on XLA:CPU: `torch.linalg.cholesky_ex` (torch_xla runs it through its CPU
   fallback) against the legacy `torch.cholesky` (lowered natively to XLA), forward and backward, median step.

    PJRT_DEVICE=CPU python benchmarks/emulation_timings.py      # writes benchmarks/results/emulation_timings.json

The counts (which ops fall back) hold anywhere; the seconds are this machine's, which is the point the page makes:
on XLA:CPU a fallback is not slower than the native lowering, so the chapters assert counts, not timings.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

OUT = Path(__file__).resolve().parent / "results" / "emulation_timings.json"

STARTUP = """
import time
t0 = time.perf_counter()
import torch
t1 = time.perf_counter()
import torch_xla
t2 = time.perf_counter()
x = torch.ones(3, device=torch_xla.device())
(x + 1).sum().item()
t3 = time.perf_counter()
print(t1 - t0, t2 - t1, t3 - t0)
"""


def startup(runs: int = 3) -> dict[str, list[float]]:
    env = {**os.environ, "PJRT_DEVICE": "CPU"}
    rows = []
    for _ in range(runs):
        out = subprocess.run([sys.executable, "-c", STARTUP], capture_output=True, text=True, env=env, check=True)
        rows.append([float(v) for v in out.stdout.split()[-3:]])
    return {
        "import_torch_s": [r[0] for r in rows],
        "import_torch_xla_s": [r[1] for r in rows],
        "first_result_s": [r[2] for r in rows],
    }


def cholesky(n: int = 256, steps: int = 25, warmup: int = 5) -> dict[str, object]:
    import torch
    import torch_xla
    import torch_xla.debug.metrics as met

    dev = torch_xla.device()
    a = torch.randn(n, n, generator=torch.Generator().manual_seed(0))
    k0 = (a @ a.T / n + torch.eye(n)).to(dev)
    variants = {
        "linalg.cholesky_ex (CPU fallback)": lambda k: torch.linalg.cholesky_ex(k).L,
        "torch.cholesky (native XLA)": torch.cholesky,
    }
    result: dict[str, object] = {"n": n, "steps": steps, "warmup": warmup}
    for name, chol in variants.items():
        times, fallbacks = [], set()
        for _ in range(steps):
            met.clear_all()
            k = k0.clone().requires_grad_()
            t0 = time.perf_counter()
            chol(k).diagonal().log().sum().backward()
            torch_xla.sync(wait=True)
            times.append(time.perf_counter() - t0)
            fallbacks |= set(met.executed_fallback_ops())
        result[name] = {"median_ms": 1000 * statistics.median(times[warmup:]), "fallback_ops": sorted(fallbacks)}
    return result


def main() -> int:
    os.environ.setdefault("PJRT_DEVICE", "CPU")
    data = {
        "machine": {"cores": os.cpu_count(), "python": platform.python_version()},
        "startup": startup(),
        "cholesky": cholesky(),
    }
    import torch
    import torch_xla

    data["machine"] |= {
        "torch": torch.__version__,
        "torch_xla": torch_xla.__version__,
        "date": time.strftime("%Y-%m-%d"),
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(data, indent=2) + "\n")
    print(json.dumps(data, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
