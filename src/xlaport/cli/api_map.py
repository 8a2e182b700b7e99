"""``xlaport api-map``: what a ``torch.cuda`` call becomes on ``torch.accelerator``, TorchTPU and TorchNeuron."""

from __future__ import annotations

import argparse

from ..api_mapping import STATUSES, lookup, rows

__all__ = ["configure", "run"]


def run(args: argparse.Namespace) -> int:
    found = lookup(args.query) if args.query else list(rows())
    if args.status:
        found = [r for r in found if r.tpu.status == args.status]
    if not found:
        raise ValueError(
            f"no torch.cuda call in the mapping matches {args.query!r}"
            + (f" with TPU status {args.status}" if args.status else "")
        )
    for r in found:
        print(r.cuda)
        if r.accelerator:
            print(
                f"  torch.accelerator: {r.accelerator}"
                + (f"  (torch >= {r.accelerator_since})" if r.accelerator_since else "")
            )
        for name, c in (("TorchTPU", r.tpu), ("TorchNeuron", r.neuron)):
            note = f" - {c.note}" if c.note else ""
            print(f"  {name}: {c.spelling or '-'} [{c.status}]{note}\n    source: {c.source}")
    return 0


def configure(p: argparse.ArgumentParser) -> None:
    p.description = "Look up torch.cuda calls in xlaport's API mapping (with status and source per backend)."
    p.add_argument(
        "query", nargs="?", default="", help="part of a torch.cuda call, e.g. 'synchronize' (default: all rows)"
    )
    p.add_argument("--status", choices=tuple(STATUSES), help="only rows with this TorchTPU status")
