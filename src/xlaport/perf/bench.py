"""This machine's CPU as a roofline machine, and predicted vs measured step times on it.

:func:`measure_cpu` times a large float32 matmul (peak matrix FLOP/s), a large copy (memory
bandwidth) and a stack of tiny linear layers (the fixed cost of one eager op call), each the median of several
runs, in CPU time of one thread (so other processes on shared cores do not count). :func:`validate` predicts each case in :data:`CASES` with the same code the chip estimates use
(trace on ``meta``, roofline, eager = the unfused end of the band plus the per-call cost) and then
runs it for real, timed the same way. Contention for caches and memory bandwidth from other processes
still shows: run it when the machine is quiet.
"""

from __future__ import annotations

import copy
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..validate import integer
from .machine import Machine
from .roofline import band
from .trace import Mode, trace_step

__all__ = ["Case", "CASES", "measure_cpu", "per_op_cost", "time_call", "predict_case", "measure_case", "validate"]


def time_call(
    fn: Callable[[], Any], repeats: int = 5, warmup: int = 1, min_s: float = 0.05, clock: str = "cpu"
) -> float:
    """Median seconds of one call of ``fn`` (each sample loops until ``min_s`` has passed).

    ``clock="cpu"`` (default) counts this process's CPU time (``time.process_time``): with one thread, time the
    process spends waiting while other processes hold the core does not count, so a shared machine gives the
    same answer as a quiet one (contention for caches and memory bandwidth still shows). ``"wall"`` counts
    elapsed time."""
    if clock not in ("cpu", "wall"):
        raise ValueError(f"clock must be 'cpu' or 'wall', got {clock!r}")
    now = time.process_time if clock == "cpu" else time.perf_counter
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(repeats):
        n, t0 = 0, now()
        while True:
            fn()
            n += 1
            dt = now() - t0
            if dt >= min_s:
                break
        samples.append(dt / n)
    return statistics.median(samples)


def per_op_cost(repeats: int = 5) -> float:
    """Seconds per ATen op call of eager PyTorch driven through ``nn.Module`` calls: a stack of tiny linear layers
    (no arithmetic to speak of) timed, divided by the op calls a trace of it counts."""
    import torch
    from torch import nn

    from .trace import trace_call

    stack = nn.Sequential(*[nn.Linear(8, 8) for _ in range(16)])
    x = torch.randn(1, 8)

    def run(z: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            out: torch.Tensor = stack(z)
            return out

    calls = sum(o.calls for o in trace_call(run, (x,)).ops)
    return time_call(lambda: run(x), repeats, min_s=0.02) / calls


def measure_cpu(threads: int = 1, repeats: int = 5, size: int = 1024, copy_mb: int = 256) -> Machine:
    """This CPU: float32 matmul FLOP/s, copy bandwidth (bytes read + written per second), per-op cost."""
    import torch

    torch.set_num_threads(integer("threads", threads, minimum=1))
    g = torch.Generator().manual_seed(0)
    a = torch.randn(size, size, generator=g)
    b = torch.randn(size, size, generator=g)
    c = torch.empty(size, size)
    t_mm = time_call(lambda: torch.mm(a, b, out=c), repeats)
    n = copy_mb * 2**20 // 4
    x, y = torch.ones(n), torch.empty(n)
    t_copy = time_call(lambda: y.copy_(x), repeats)
    t_op = per_op_cost(repeats)
    return Machine(
        id="cpu",
        name=f"this CPU ({threads} thread{'s' if threads > 1 else ''}, float32)",
        peak_flop_per_s=2 * size**3 / t_mm,
        hbm_bytes_per_s=2 * n * 4 / t_copy,
        per_op_s=t_op,
    )


@dataclass(frozen=True)
class Case:
    """A model, its inputs and the mode of the step; ``expect`` says which roof should bind; ``caveat`` what the
    roofline leaves out for this case (why it may miss)."""

    name: str
    build: Callable[[], tuple[Any, tuple[Any, ...]]]
    mode: Mode
    expect: str
    caveat: str = ""


def _mlp() -> tuple[Any, tuple[Any, ...]]:
    import torch
    from torch import nn

    m = nn.Sequential(nn.Linear(1024, 4096), nn.GELU(), nn.Linear(4096, 1024))
    return m, (torch.randn(512, 1024),)


def _gemv() -> tuple[Any, tuple[Any, ...]]:
    import torch
    from torch import nn

    return nn.Linear(4096, 4096), (torch.randn(1, 4096),)


def _elementwise() -> tuple[Any, tuple[Any, ...]]:
    import torch
    from torch import nn

    class Pointwise(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            for _ in range(4):
                x = torch.nn.functional.gelu(x) * 0.5 + x
            return x

    return Pointwise(), (torch.randn(4, 2**20),)


def _gpt_train() -> tuple[Any, tuple[Any, ...]]:
    import torch

    from ..models.gpt import GPT

    g = torch.Generator().manual_seed(0)
    return GPT(vocab=1024, max_len=128, d=256, heads=4, layers=4), (torch.randint(0, 1024, (8, 128), generator=g),)


def _gpt_small() -> tuple[Any, tuple[Any, ...]]:
    import torch

    from ..models.gpt import GPT

    return GPT(vocab=256, max_len=64, d=64, heads=2, layers=2), (torch.zeros(1, 16, dtype=torch.long),)


def _conv() -> tuple[Any, tuple[Any, ...]]:
    import torch
    from torch import nn

    return nn.Conv2d(64, 64, 3, padding=1), (torch.randn(8, 64, 56, 56),)


def _attention() -> tuple[Any, tuple[Any, ...]]:
    import torch
    from torch import nn

    class Attn(nn.Module):
        def forward(self, q: torch.Tensor) -> torch.Tensor:
            return torch.nn.functional.scaled_dot_product_attention(q, q, q, is_causal=True)

    return Attn(), (torch.randn(4, 8, 512, 64),)


CASES: dict[str, Case] = {
    c.name: c
    for c in (
        Case("mlp 1024-4096-1024, batch 512, forward", _mlp, "inference", "compute", "GELU's erf is vector work"),
        Case(
            "conv 3x3 64ch, 8x56x56, forward",
            _conv,
            "inference",
            "compute",
            "a convolution reaches a different fraction of peak than the matmul that measured it",
        ),
        Case(
            "GPT d256 L4, 8x128, training step",
            _gpt_train,
            "training",
            "compute",
            "Python's per-module and autograd bookkeeping is not an ATen op; small backward matmuls run below peak",
        ),
        Case(
            "linear 4096x4096, batch 1 (GEMV)",
            _gemv,
            "inference",
            "memory",
            "reading alone streams faster than the copy that measured the bandwidth",
        ),
        Case(
            "GELU/add chain on 4M floats",
            _elementwise,
            "inference",
            "memory",
            "GELU's erf costs tens of vector instructions per element: on one core it is compute, not memory, that binds",
        ),
        Case(
            "causal attention 4x8x512x64",
            _attention,
            "inference",
            "memory",
            "the CPU's fused (flash) kernel runs below the matmul peak: its softmax exponentials are vector work",
        ),
        Case(
            "GPT d64 L2, 1x16 tokens, forward",
            _gpt_small,
            "inference",
            "overhead",
            "all dispatch: Python's module calls cost more than the one-element add that measured the per-op cost",
        ),
    )
}


def predict_case(case: Case, m: Machine) -> dict[str, Any]:
    """Trace the case on meta and predict its eager step time on ``m`` (the unfused end of the band)."""
    import torch

    torch.manual_seed(0)
    model, inputs = case.build()
    meta = copy.deepcopy(model).to("meta")
    args = tuple(torch.empty_like(x, device="meta") for x in inputs)
    tr = trace_step(meta, args, case.mode, optimizer="adamw")
    b = band(tr, m)
    return {"trace": tr, "band": b, "predicted_s": b.high_s, "ops": sum(o.calls for o in tr.ops)}


def measure_case(case: Case, repeats: int = 5) -> float:
    """Median seconds of one real eager step of the case on this CPU (training: fused AdamW)."""
    import torch

    torch.manual_seed(0)
    model, inputs = case.build()
    if case.mode == "inference":
        model.eval()

        def step() -> None:
            with torch.no_grad():
                model(*inputs)

    else:
        from .trace import _default_loss

        opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)

        def step() -> None:
            opt.zero_grad(set_to_none=True)
            _default_loss(model(*inputs), inputs).backward()
            opt.step()

    return time_call(step, repeats, warmup=2, min_s=0.1)


def validate(
    m: Machine | None = None, repeats: int = 5, cases: list[str] | None = None, threads: int = 1
) -> list[dict[str, Any]]:
    """Predicted vs measured for each case: rows with ``case``, ``expect``, ``predicted_s``, ``measured_s``,
    ``error`` (predicted / measured - 1), ``bound`` (what the model says binds), ``ops`` and the machine numbers used.

    Without ``m`` the CPU is measured again right before each case, so that load from other processes
    weighs on the machine's numbers and the case's time alike."""
    rows = []
    for name in cases or list(CASES):
        if name not in CASES:
            raise ValueError(f"unknown case {name!r}; known: {', '.join(CASES)}")
        c = CASES[name]
        mm = m or measure_cpu(threads=threads, repeats=3)
        p = predict_case(c, mm)
        meas = measure_case(c, repeats)
        b = p["band"]
        overhead = p["ops"] * mm.per_op_s
        roof = b.high_s - overhead
        bound = "overhead" if overhead > roof else ("compute" if b.compute_s >= b.unfused_s / 2 else "memory")
        rows.append(
            {
                "case": name,
                "mode": c.mode,
                "expect": c.expect,
                "flop": p["trace"].flop,
                "bytes_unfused": p["trace"].bytes_unfused,
                "ops": p["ops"],
                "predicted_s": p["predicted_s"],
                "measured_s": meas,
                "error": p["predicted_s"] / meas - 1,
                "bound": bound,
                "caveat": c.caveat,
                "peak_flop_per_s": mm.peak_flop_per_s,
                "bytes_per_s": mm.hbm_bytes_per_s,
                "per_op_s": mm.per_op_s,
            }
        )
    return rows
