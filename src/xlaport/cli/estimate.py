"""``xlaport estimate MODEL``: predict one step's time, MFU band, chip count and cost on every chip.

xlaport estimate qwen3_8b --batch 1 --seq-len 4096
xlaport estimate my_pkg.model:build --mode inference --input 8x3x224x224 --chip tpu_v6e --chip h100_sxm
xlaport estimate path/to/config.json --chips 8 --json
xlaport estimate qwen3_8b --mode serving --input-len 1024 --output-len 1024 --precision fp8
xlaport estimate qwen3_8b --mode decode --batch 8 --seq-len 8192
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

__all__ = ["configure", "run"]


def configure(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Trace one training step of MODEL on the meta device (no weights, no memory) and, per chip, print the roofline "
        "floor, the expected step calibrated on published runs (with an interval and the runs it rests on), the band "
        "(fused and overlapped .. unfused), the fewest chips whose HBM holds it (FSDP, full activation checkpointing) "
        "and the cost per step and per million tokens. --mode serving, decode or prefill: a decoder LM served "
        "tensor-parallel with a KV cache, calibrated on published serving runs. MODEL is MODULE:FACTORY or "
        "FILE.py:FACTORY (returns an nn.Module or (module, inputs)), a transformers config.json, or a model named in "
        "the data file (qwen3_8b, llama31_8b, llama31_70b, mixtral_8x7b)."
    )
    p.add_argument("model", help="MODULE:FACTORY, FILE.py:FACTORY, config.json, or a known model name")
    p.add_argument(
        "--mode",
        choices=("training", "inference", "prefill", "decode", "serving"),
        default="training",
        help="training: one traced training step; inference: one traced forward (any model); prefill, decode, "
        "serving: a decoder LM served tensor-parallel with a KV cache, calibrated on published serving runs",
    )
    p.add_argument("--batch", default="1", help="sequences (or samples) per step (default 1)")
    p.add_argument("--seq-len", default="2048", help="tokens per sequence; decode: the cached context (default 2048)")
    p.add_argument("--input-len", default="1024", help="serving: prompt tokens per request (default 1024)")
    p.add_argument("--output-len", default="1024", help="serving: generated tokens per request (default 1024)")
    p.add_argument(
        "--concurrency", default=None, help="serving: requests served together (default: as many as the caches fit)"
    )
    p.add_argument(
        "--precision",
        choices=("bf16", "fp8", "int8"),
        default="bf16",
        help="prefill, decode, serving: weights in bf16, fp8 (the chip's fp8 peak where the table has one) or int8 "
        "(weight-only: one byte per weight, multiplied at the bf16 peak)",
    )
    p.add_argument("--dtype", choices=("bfloat16", "float16", "float32"), default="bfloat16", help="traced dtype")
    p.add_argument("--input", action="append", default=[], metavar="SHAPE[:DTYPE]", help="inputs for a non-LM model")
    p.add_argument("--chip", action="append", default=None, help="chip id (repeat; default every chip)")
    p.add_argument("--chips", default=None, help="chips to spread the step over (default: the fewest that fit)")
    p.add_argument(
        "--tensor",
        default="1",
        help="training: tensor/sequence-parallel degree (splits each sample's work, adds its all-reduces; default 1: "
        "FSDP alone, no finer than one sample per chip); prefill, decode, serving split the weights over --chips",
    )
    p.add_argument("--optimizer", choices=("adamw", "sgd", "sgd_momentum"), default="adamw", help="training optimizer")
    p.add_argument(
        "--checkpointing",
        choices=("full", "none"),
        default="full",
        help="training: activation checkpointing for the memory fit (full: each layer's input kept, the rest "
        "recomputed, as large runs do; none: every saved activation)",
    )
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")


def _dur(s: float) -> str:
    """A duration in ms below a second, else in s, three significant figures and no exponent."""
    if s >= 1:
        return f"{s:.3g} s" if s < 1000 else f"{s:,.0f} s"
    return f"{s * 1e3:.3g} ms" if s >= 1e-3 else f"{s * 1e6:.3g} µs"


def _ms(lo: float, hi: float) -> str:
    a, b = _dur(lo), _dur(hi)
    if a.split()[1] == b.split()[1]:  # one unit: "218–499 ms"
        return f"{a.split()[0]}–{b}"
    return f"{a}–{b}"


def run(args: argparse.Namespace) -> int:
    from .. import cost
    from .args import positive_whole

    batch = positive_whole("--batch", args.batch)
    seq = positive_whole("--seq-len", args.seq_len)
    chips = positive_whole("--chips", args.chips) if args.chips is not None else None
    for c in args.chip or []:
        cost.chip(c)  # one-line error for an unknown chip before torch starts
    if args.mode in ("prefill", "decode", "serving"):
        return _inference(args, batch, seq, chips)
    from ..perf.estimate import estimate

    est = estimate(
        args.model,
        mode=args.mode,
        batch=batch,
        seq_len=seq,
        dtype=args.dtype,
        inputs=args.input,
        chip_ids=args.chip,
        chips=chips,
        optimizer=args.optimizer,
        checkpointing=args.checkpointing,
        tensor=positive_whole("--tensor", args.tensor),
    )
    if args.json:
        print(json.dumps(est.to_dict(), indent=2))
        return 0
    s = est.trace.summary()
    print(
        f"{args.model}: {args.mode} step, {s['params'] / 1e9:.3g} B parameters, {s['flop'] / 1e12:.4g} TFLOP, "
        f"{s['bytes_fused'] / 1e9:.3g}–{s['bytes_unfused'] / 1e9:.3g} GB moved, {s['ops']} ops ({s['dtype']})"
    )
    head = ("chip", "chips", "fit", "floor", "expected (interval)", "band", "bound", "$/step", "$/Mtok")
    rows = []
    rests_on: dict[str, str] = {}
    for c in est.chips:
        r = c.row()
        mtok = r.get("usd_per_million_tokens")
        exp = r["expected_step_s"]
        if c.expected is not None:
            rests_on[c.expected.level] = ", ".join(c.expected.rests_on)
        rows.append(
            (
                r["chip"],
                str(r["chips"]),
                f"≥{r['fewest_chips']}" + ("" if r["sample_fits"] else " (TP/SP)"),
                _dur(r["floor_step_s"]),
                f"{_dur(exp)} ({_ms(*r['interval_step_s'])})" if exp is not None else "not calibrated",
                _ms(*r["step_s"]),
                r["low_bound"],
                f"{r['usd_per_step'][0]:.3g}–{r['usd_per_step'][1]:.3g}" if "usd_per_step" in r else "no price",
                f"{mtok[0]:.3g}–{mtok[1]:.3g}" if mtok else "",
            )
        )
    if s["uncounted"]:  # a contraction with no FLOP formula: say so, never a silent zero
        ops = ", ".join(f"{name} ({calls}x)" for name, calls in s["uncounted"].items())
        print(f"not counted: {ops}: no FLOP formula, so their matrix FLOPs are missing from the step", file=sys.stderr)
    _print_table(head, rows)
    print(
        "floor: every matmul at peak, fused and overlapped; expected: the floor over the fraction of it that published "
        "training runs of the same chip family, stack and regime reached, with the spread of those runs (at most 2x; "
        "for inference see --mode serving, decode or prefill); band: fused and overlapped .. unfused (eager); bound: what sets the floor; "
        "(TP/SP): one sample's activations exceed a chip, FSDP alone cannot fit it",
        file=sys.stderr,
    )
    _print_rests_on(rests_on)
    return 0


def _print_table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    """Columns aligned on spaces, one line per row."""
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(head)]
    for line in (head, *rows):
        print("  ".join(v.ljust(w) for v, w in zip(line, widths, strict=True)).rstrip())


def _print_rests_on(rests_on: dict[str, str]) -> None:
    for level, ids in rests_on.items():
        print(f"expected for {level} rests on: {ids}", file=sys.stderr)


def _inference(args: argparse.Namespace, batch: int, seq: int, chips: int | None) -> int:
    from ..perf.estimate import estimate_inference
    from .args import positive_whole

    est = estimate_inference(
        args.model,
        args.mode,
        batch=batch,
        seq_len=seq,
        input_len=positive_whole("--input-len", args.input_len),
        output_len=positive_whole("--output-len", args.output_len),
        concurrency=positive_whole("--concurrency", args.concurrency) if args.concurrency is not None else None,
        precision=args.precision,
        chip_ids=args.chip,
        chips=chips,
    )
    if args.json:
        print(json.dumps(est.to_dict(), indent=2))
        return 0
    m = est.model
    what = {
        "prefill": f"prefill of {batch} × {seq} tokens",
        "decode": f"decode of {batch} sequence(s) at {seq} tokens of context, one token each per step",
        "serving": f"serving requests of {args.input_len} in, {args.output_len} out",
    }[args.mode]
    active = f" ({m.active / 1e9:.3g} B active)" if m.moe else ""
    print(f"{args.model}: {what}; {m.params / 1e9:.3g} B parameters{active}, {args.precision} weights")
    step = {"prefill": "prefill", "decode": "step", "serving": "step"}[args.mode]
    head = ("chip", "chips", "fits", f"floor ({step})", "expected (interval)", "tokens/s/chip", "$/Mtok")
    rows = []
    rests_on: dict[str, str] = {}
    for c in est.chips:
        r = c.row()
        exp = r["expected_step_s"]
        if c.expected is not None:
            rests_on[c.expected.level] = ", ".join(c.expected.rests_on)
        conc = f" ×{r['concurrency']}" if "concurrency" in r else ""
        rows.append(
            (
                r["chip"],
                str(r["chips"]) + conc,
                "yes" if r["fits"] else "no",
                _dur(r["floor_step_s"]),
                f"{_dur(exp)} ({_ms(*r['interval_step_s'])})" if exp is not None else "not calibrated",
                f"{r['tokens_per_s_per_chip']:,.0f}",
                f"{r['usd_per_million_tokens']:.3g}" if "usd_per_million_tokens" in r else "no price",
            )
        )
    _print_table(head, rows)
    print(
        "chips: the tensor-parallel degree (the fewest, a power of two, that hold weights and caches, unless --chips), "
        "×N the requests served together (a serving step: one token for each, prefills included); floor: every FLOP at peak and every byte at full bandwidth; expected: the "
        "floor over the fraction of it published inference runs of the same chip family and stack reached, with their "
        "spread (at most 2x); tokens/s/chip and $/Mtok at the expected time",
        file=sys.stderr,
    )
    _print_rests_on(rests_on)
    return 0
