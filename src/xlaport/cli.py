"""The ``xlaport`` command line.

Each subcommand lives in the module that owns its concept and exposes
``register(subparsers)``; this file only lists them. Errors in user input
print one line and exit with status 2.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

# Modules that add a subcommand: each defines register(subparsers) -> None.
SUBCOMMAND_MODULES: tuple[str, ...] = ("xlaport.targets_cli", "xlaport.cost_cli", "xlaport.ops", "xlaport.api_mapping", "xlaport.attention_cli")


class UsageError(Exception):
    """Bad input from the user: reported as one line, exit status 2."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="xlaport",
        description="Tools for moving PyTorch CUDA code to TPU (TorchTPU) and Trainium (TorchNeuron).",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for mod in SUBCOMMAND_MODULES:
        importlib.import_module(mod).register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except (UsageError, ValueError, FileNotFoundError) as e:
        print(f"xlaport {args.command}: error: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # e.g. `xlaport cost chips | head`: the reader left, not an error
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
