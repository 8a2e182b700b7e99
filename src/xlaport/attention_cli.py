"""``xlaport attention-check``: run the attention inf/NaN reproductions and their fixes on this machine.

Kept apart from :mod:`xlaport.attention_numerics` so that building the CLI parser does not import torch.
"""

from __future__ import annotations

import argparse


def _run(args: argparse.Namespace) -> int:
    from . import attention_numerics

    return attention_numerics._run(args)


def register(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    p = sub.add_parser("attention-check", help="run the attention inf/NaN reproductions and their fixes on this machine")
    p.add_argument("--target", default="cpu", choices=("cpu", "tpu", "neuron", "auto"),
                   help="where to run: cpu (eager + --backends), or a target (eager + the target's compile); default cpu")
    p.add_argument("--backends", default="aot_eager",
                   help="with --target cpu: comma-separated torch.compile backends besides eager (default: aot_eager)")
    p.add_argument("--case", default=None,
                   help="run only this case (autocast_outside_compile, fp16_logits, f32min_mask, fully_masked_rows)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(func=_run)
