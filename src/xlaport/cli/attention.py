"""``xlaport attention-check``: run the attention inf/NaN reproductions and their fixes on this machine."""

from __future__ import annotations

import argparse
import json

__all__ = ["configure", "run"]


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--target",
        default="cpu",
        choices=("cpu", "tpu", "neuron", "auto"),
        help="where to run: cpu (eager + --backends), or a target (eager + the target's compile); default cpu",
    )
    p.add_argument(
        "--backends",
        default="aot_eager",
        help="with --target cpu: comma-separated torch.compile backends besides eager (default: aot_eager)",
    )
    p.add_argument(
        "--case",
        default=None,
        help="run only this case (autocast_outside_compile, fp16_logits, f32min_mask, fully_masked_rows)",
    )
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")


def run(args: argparse.Namespace) -> int:
    from ..numerics.attention import Outcome, table

    result = table(args.target, args.backends.split(","), args.case)
    if args.json:
        print(json.dumps(result))
        return 0
    print(
        f"torch {result['torch']} on {result['device']}; "
        f"backward_pass_autocast default: {result['backward_pass_autocast_default']!r}"
    )
    for o in result["outcomes"]:
        cell = Outcome(**o).cell
        print(f"{o['case']:26s} {o['variant']:38s} {o['dtype']:9s} {o['mode']:10s} {cell}")
    return 0
