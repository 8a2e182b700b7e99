"""``xlaport ops``: the ATen ops a Python file or callable dispatches, and what each target does with them."""

from __future__ import annotations

import argparse

from .args import TRACE_TARGETS, add_input_option

__all__ = ["configure", "run"]


def configure(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Trace SPEC on CPU and report, per ATen op, whether each target has a kernel, decomposes it, "
        "falls back to CPU, or raises. Exit status 1 when an op would raise on a chosen target (use it "
        "in CI), 2 for bad input."
    )
    p.add_argument("spec", help="FILE.py (runs the file), FILE.py:CALLABLE or MODULE:CALLABLE")
    add_input_option(
        p,
        "an example input for CALLABLE, e.g. 8x4 or 16:int64 (repeat for more; default: the module's example_inputs)",
    )
    p.add_argument(
        "--target",
        action="append",
        choices=TRACE_TARGETS,
        default=None,
        help="target to check (repeatable; default: tpu)",
    )
    p.add_argument(
        "--cpu-fallback", action="store_true", help="TorchTPU with CPU fallback switched on (enable_cpu_fallback)"
    )
    p.add_argument("--problems", action="store_true", help="list only ops that fall back, raise or are unknown")
    p.add_argument("--seed", default="0", help="seed for random example inputs (a whole number; default 0)")


def run(args: argparse.Namespace) -> int:
    import torch

    from ..ops import coverage
    from ..ops.entry import load_entry, parse_input, trace_entry
    from .args import whole

    seed = whole("--seed", args.seed)
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    entry = load_entry(args.spec)
    inputs = [parse_input(s, gen) for s in args.input]
    trace = trace_entry(entry, inputs)
    status = 0
    for t in args.target or ["tpu"]:
        cov = coverage(trace, t, cpu_fallback=args.cpu_fallback)
        print(cov.table(only_problems=args.problems))
        print(f"  source: {cov.source}\n")
        if cov.raises:
            status = 1
    return status
