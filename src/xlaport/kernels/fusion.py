"""Does the plain-PyTorch version need a kernel at all? Count the fusions XLA makes of it.

:func:`xla_fusions` runs RMSNorm (forward, then backward) in plain PyTorch on torch_xla in a fresh
process with ``XLA_FLAGS=--xla_dump_to=...`` (XLA reads its flags once, when its client starts) and
counts the ``fusion`` instructions in each optimized HLO module: each is one generated kernel.
On these machines that is XLA's CPU pipeline (the emulator), whose fusion decisions resemble but are
not the TPU compiler's; on a TPU VM run the same dump with ``PJRT_DEVICE=TPU`` to see the TPU's.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import textwrap
from typing import Any

from ..validate import integer

__all__ = ["count_fusions", "xla_fusions"]

_FUSION = re.compile(r"=\s*\S+\s+fusion\(")
_OP = re.compile(r"^\s+(?:ROOT\s+)?%\S+\s*=\s*\S+\s+([a-z][\w-]*)\(", re.M)

_CHILD = textwrap.dedent(
    """
    import glob, json, sys
    import torch, torch_xla
    rows, dim, eps, out = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
    dev = torch_xla.device()
    g = torch.Generator().manual_seed(0)
    x = torch.randn(rows, dim, generator=g).to(dev).requires_grad_()
    w = torch.randn(dim, generator=g).to(dev).requires_grad_()
    dy = torch.randn(rows, dim, generator=g).to(dev)
    torch_xla.sync(wait=True)
    seen, modules = set(glob.glob(out + "/*after_optimizations.txt")), {}
    def cut(name):
        torch_xla.sync(wait=True)
        new = sorted(set(glob.glob(out + "/*after_optimizations.txt")) - seen)
        seen.update(new)
        modules[name] = [open(f).read() for f in new]
    y = torch.nn.functional.rms_norm(x, (dim,), w, eps)
    cut("forward")
    y.backward(dy)
    cut("backward")
    print(json.dumps(modules))
    """
)


def count_fusions(hlo_text: str) -> dict[str, int]:
    """``fusions`` (fusion instructions: generated kernels) and ``ops`` (all instructions) in HLO text."""
    return {"fusions": len(_FUSION.findall(hlo_text)), "ops": len(_OP.findall(hlo_text))}


def xla_fusions(rows: int = 64, dim: int = 96, eps: float = 1e-6, timeout: float = 120) -> dict[str, Any]:
    """Fusions XLA makes of plain-PyTorch RMSNorm, forward and backward (fresh process, torch_xla on CPU).

    Returns ``{"forward": {"fusions": n, "ops": m}, "backward": {...}, "device": "CPU"}``.
    """
    rows, dim = integer("rows", rows, minimum=1), integer("dim", dim, minimum=1)
    with tempfile.TemporaryDirectory() as out:
        env = {
            **os.environ,
            "PJRT_DEVICE": os.environ.get("PJRT_DEVICE", "CPU"),
            "XLA_FLAGS": f"{os.environ.get('XLA_FLAGS', '')} --xla_dump_to={out} --xla_dump_hlo_as_text".strip(),
        }
        proc = subprocess.run(
            [sys.executable, "-c", _CHILD, str(rows), str(dim), repr(float(eps)), out],
            capture_output=True,
            text=True,
            env=env,
            timeout=timeout,
        )
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"the HLO dump process failed: {tail}")
    modules = json.loads(proc.stdout.strip().splitlines()[-1])
    result: dict[str, Any] = {"device": env["PJRT_DEVICE"]}
    for phase, texts in modules.items():
        counts = [count_fusions(t) for t in texts]
        result[phase] = {k: sum(c[k] for c in counts) for k in ("fusions", "ops")} | {"modules": len(texts)}
    return result
