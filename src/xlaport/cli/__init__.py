"""The ``xlaport`` command line: one module per subcommand, loaded only when that subcommand runs.

``COMMANDS`` maps each subcommand to the module that implements it and a one-line help. A
subcommand module defines ``configure(parser)`` (its arguments) and ``run(args) -> int``.
``xlaport --help`` imports none of them, so it starts without torch; so do ``xlaport scan``, ``xlaport cost``
and ``xlaport doctor PATH`` (the static report). ``pip install xlaport`` installs no torch: a command (or an
option such as ``doctor --entry``) that needs it says so in one line, naming the extra to install.
Bad user input prints one line (``xlaport CMD: error: ...``) and exits with status 2.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from types import ModuleType

from .args import OneLineParser

__all__ = ["COMMANDS", "Command", "build_parser", "main"]


@dataclass(frozen=True)
class Command:
    """A subcommand: its name, the module that implements it, and its one-line help."""

    name: str
    module: str
    help: str
    needs_torch: bool
    #: options that need torch even when the command does not (``doctor --entry``)
    torch_options: tuple[str, ...] = ()

    def load(self) -> ModuleType:
        return importlib.import_module(self.module)


COMMANDS: dict[str, Command] = {
    c.name: c
    for c in (
        Command(
            "target",
            "xlaport.cli.target",
            "show the device a target name gives on this machine (real or emulated)",
            True,
        ),
        Command(
            "ops",
            "xlaport.cli.ops",
            "list the ATen ops a Python file or callable dispatches and what each target does with them",
            True,
        ),
        Command(
            "api-map",
            "xlaport.cli.api_map",
            "what a torch.cuda call becomes on torch.accelerator, TorchTPU and TorchNeuron",
            False,
        ),
        Command(
            "cost",
            "xlaport.cli.cost",
            "pricing math: peak FLOP/s, MFU, cost per token, image and run, migration break-even",
            False,
        ),
        Command("scan", "xlaport.cli.scan", "find CUDA-isms, custom kernels and recompile risks in a codebase", False),
        Command(
            "doctor",
            "xlaport.cli.doctor",
            "one migration report: scan, ops, recompile probe, effort, cost",
            False,
            ("entry", "probe"),
        ),
        Command("estimate", "xlaport.cli.estimate", "predict a step's time, MFU, chip count and cost per chip", True),
        Command(
            "learn", "xlaport.cli.learn", "a learner's copies of a session's chapters, solutions, team progress", False
        ),
        Command("zoo", "xlaport.cli.zoo", "sweep tiny HF models: forward, training step, varied-length cliff", True),
        Command(
            "attention-check",
            "xlaport.cli.attention",
            "run the attention inf/NaN reproductions and their fixes on this machine",
            True,
        ),
    )
}


def _version() -> str:
    from .. import __version__

    return __version__


def _command_in(argv: Sequence[str]) -> str | None:
    """The subcommand named in argv (the first argument that is not an option), if any."""
    for a in argv:
        if a == "--":
            return None
        if not a.startswith("-"):
            return a if a in COMMANDS else None
    return None


def build_parser(argv: Sequence[str] = ()) -> argparse.ArgumentParser:
    """The top-level parser. Only the subcommand named in ``argv`` (if any) is imported and configured."""
    parser = OneLineParser(
        prog="xlaport",
        description="Tools for moving PyTorch CUDA code to TPU (TorchTPU) and Trainium (TorchNeuron). "
        "Run 'xlaport COMMAND --help' for a command's options.",
    )
    parser.add_argument("--version", action="version", version=f"xlaport {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=OneLineParser)
    chosen = _command_in(argv)
    for cmd in COMMANDS.values():
        p = sub.add_parser(cmd.name, help=cmd.help, description=cmd.help)
        if cmd.name == chosen:
            module = cmd.load()
            module.configure(p)
            p.set_defaults(func=module.run)
    return parser


EMULATOR_EXTRA = 'pip install "xlaport[emulator]"'
# packages the extra brings (import names); a command that meets one of them missing says which extra to install
_EXTRA_MODULES = ("torch", "torch_xla", "numpy", "matplotlib", "markdown_it")


def _missing_extra(command: str, what: str) -> int:
    print(
        f"xlaport {command}: error: {what} needs torch and the emulator; install them: {EMULATOR_EXTRA}",
        file=sys.stderr,
    )
    return 2


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    chosen = _command_in(argv)
    cmd = COMMANDS.get(chosen) if chosen else None
    if cmd is not None and cmd.needs_torch and importlib.util.find_spec("torch") is None:
        return _missing_extra(cmd.name, f"'xlaport {cmd.name}' needs torch, which is not installed")
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    if cmd is not None and importlib.util.find_spec("torch") is None:
        for opt in cmd.torch_options:
            if getattr(args, opt, None):
                return _missing_extra(cmd.name, f"--{opt.replace('_', '-')} needs torch, which is not installed")
    try:
        return int(args.func(args) or 0)
    except ModuleNotFoundError as e:
        if (e.name or "").split(".")[0] in _EXTRA_MODULES:
            return _missing_extra(args.command, f"this needs {e.name}, which is not installed")
        raise
    except (ValueError, FileNotFoundError, KeyError) as e:
        msg = e.args[0] if isinstance(e, KeyError) and e.args else e
        print(f"xlaport {args.command}: error: {msg}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # e.g. `xlaport cost chips | head`: the reader left, not an error
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
