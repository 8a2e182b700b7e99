"""``xlaport zoo``: run tiny Hugging Face architectures forward, through a training step and on varied lengths."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from ..zoo import SweepConfig, SweepResult

__all__ = ["configure", "run"]

_TARGETS = ("tpu", "neuron", "cuda", "cpu")  # xlaport.zoo.sweep.SWEEP_TARGETS, repeated so --help needs no torch
_PRECISIONS = ("default", "high", "highest")  # xlaport.numerics.precision.MODES


def configure(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Build tiny Hugging Face transformers models from configs (random weights, nothing downloaded) and, per "
        "model and target, check a forward pass and a full training step against float32 on the CPU, list the "
        "ops the target would raise on or run on the CPU, and train on varied lengths against a fixed shape: "
        "compiles per step and useful tokens/s. Prints a table and the pass rates (forward, training step, no "
        "throughput cliff); --json writes every measurement. Progress goes to stderr."
    )
    p.add_argument("--model", action="append", default=None, metavar="NAME", help="a model (repeatable; default: all)")
    p.add_argument(
        "--family", default=None, help="only one family: decoder, moe, encoder, encoder-decoder, speech, vision"
    )
    p.add_argument(
        "--target", action="append", choices=_TARGETS, default=None, help="target to run on (repeatable; default: tpu)"
    )
    p.add_argument("--list", action="store_true", help="list the registry and exit (no torch needed)")
    p.add_argument("--steps", default="4", help="varied-length training steps per model (default 4)")
    p.add_argument("--batch", default="2", help="items per batch (default 2)")
    p.add_argument("--fixed-len", default="48", help="the fixed shape, and the longest item (default 48 tokens)")
    p.add_argument("--layers", default=None, help="layers per model (default: the registry's, 2)")
    p.add_argument("--seed", default="0", help="seed for weights, lengths and data (a whole number; default 0)")
    p.add_argument(
        "--precision",
        choices=_PRECISIONS,
        default=None,
        help="float32 matmul precision on targets with a precision rule (tpu); default: the target's own",
    )
    p.add_argument("--cliff-ratio", default="0.5", help="varied/fixed throughput below which it is a cliff (0.5)")
    p.add_argument("--retie", action="store_true", help="call model.tie_weights() after .to(device), as HF's Trainer")
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a config field of every chosen model, e.g. --set hidden_act=gelu (repeatable)",
    )
    p.add_argument(
        "--in-process",
        action="store_true",
        help="run every model and target in this process (faster; a program one model compiled can then be reused "
        "by the next, which lowers its compile count; by default each model runs in a process of its own)",
    )
    p.add_argument("--json", default=None, metavar="PATH", help="write the full results as JSON to PATH ('-' = stdout)")


def run(args: argparse.Namespace) -> int:
    from ..zoo import registry

    names = _models(args)
    if args.list:
        for n in names:
            s = registry.get(n)
            print(f"{n:11} {s.family:16} {s.task:21} {s.model_class:34} {s.summary}")
        return 0
    from ..zoo import SweepConfig, SweepResult, sweep
    from .args import positive_real, positive_whole, whole

    config = SweepConfig(
        models=names,
        targets=tuple(dict.fromkeys(args.target or ["tpu"])),
        seed=whole("--seed", args.seed),
        batch=positive_whole("--batch", args.batch),
        fixed_len=positive_whole("--fixed-len", args.fixed_len),
        steps=positive_whole("--steps", args.steps),
        precision=args.precision,
        cliff_ratio=positive_real("--cliff-ratio", args.cliff_ratio),
        layers=None if args.layers is None else positive_whole("--layers", args.layers),
        retie=args.retie,
        overrides=registry.parse_overrides(args.set),
    ).validated()
    if config.overrides:  # check every override against every chosen config before any work
        for n in config.models:
            registry.get(n).with_overrides(config.overrides).make_config()

    def progress(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    if args.in_process or (len(config.targets) == 1 and len(config.models) == 1):
        result = sweep(config, progress=progress)
    else:  # a process per model and target: nothing compiled for one is reused by the next, as in separate jobs
        import time

        start = time.perf_counter()
        parts = []
        for t in config.targets:
            for i, m in enumerate(config.models, 1):
                progress(f"[{i}/{len(config.models)}] {m} on {t} (own process)")
                parts.append(_in_child(config, t, m))
        result = SweepResult.merge(parts)
        result.wall_s = time.perf_counter() - start  # the whole command, process starts included
    if args.json == "-":
        print(result.to_json())
        return 0
    print(result.table())
    print()
    print(result.summary_text())
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            f.write(result.to_json() + "\n")
        print(f"results written to {args.json}")
    return 0


def _models(args: argparse.Namespace) -> tuple[str, ...]:
    """The models chosen by --model and --family (ValueError, one line, for a bad name)."""
    from ..zoo import registry as reg

    chosen = list(dict.fromkeys(args.model or []))
    for n in chosen:
        reg.get(n)
    if args.family is not None:
        fam = reg.names(args.family)
        chosen = [n for n in chosen if n in fam] if chosen else list(fam)
        if not chosen:
            raise ValueError(f"no model of family {args.family!r} among {', '.join(args.model or [])}")
    return tuple(chosen) or reg.names()


def _in_child(config: SweepConfig, target: str, model: str) -> SweepResult:
    """Run the sweep of ``config`` for one model on one target in a fresh interpreter (progress to stderr)."""
    import json
    import os
    import subprocess
    import tempfile

    from ..zoo import SweepResult

    argv = [sys.executable, "-m", "xlaport.cli", "zoo", "--in-process", "--target", target, "--model", model]
    argv += ["--steps", str(config.steps), "--batch", str(config.batch), "--fixed-len", str(config.fixed_len)]
    argv += ["--seed", str(config.seed), "--cliff-ratio", repr(config.cliff_ratio)]
    if config.layers is not None:
        argv += ["--layers", str(config.layers)]
    if config.precision is not None:
        argv += ["--precision", config.precision]
    if config.retie:
        argv.append("--retie")
    for k, v in config.overrides.items():
        argv += ["--set", f"{k}={v}"]
    fd, path = tempfile.mkstemp(prefix=f"xlaport-zoo-{model}-{target}-", suffix=".json")
    os.close(fd)
    try:
        out = subprocess.run([*argv, "--json", path], stdout=subprocess.DEVNULL, stderr=None)
        if out.returncode != 0:
            raise ValueError(f"the sweep of {model} on {target} exited with status {out.returncode}")
        with open(path, encoding="utf-8") as f:
            return SweepResult.from_dict(json.load(f))
    finally:
        os.unlink(path)
