"""Argument types and the parser class every subcommand shares: bad input is one line and exit status 2.

Numbers are parsed by these functions (not by ``type=int``/``float`` alone) so that each error
names the option and what it needs: ``--steps must be a whole number, got '2.5'``.
"""

from __future__ import annotations

import argparse
import re
import sys
from typing import Any, NoReturn

from ..validate import integer, number, positive

__all__ = ["OneLineParser", "TRACE_TARGETS", "add_input_option", "whole", "positive_whole", "real", "positive_real"]

# The targets an op trace is checked against: xlaport.ops.COVERAGE_TARGETS and xlaport.doctor.TARGETS, written
# here so that --help needs no torch (tests/unit/test_cli.py checks the three agree).
TRACE_TARGETS: tuple[str, ...] = ("tpu", "neuron", "xla")


class OneLineParser(argparse.ArgumentParser):
    """Usage errors as one line (exit 2), and '-8e9' read as a (bad) number, not an option."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._negative_number_matcher = re.compile(r"^-(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$|^-(nan|inf)$", re.I)

    def error(self, message: str) -> NoReturn:
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        sys.exit(2)


def whole(name: str, value: Any, *, minimum: int = 0) -> int:
    """A whole number >= ``minimum`` from a command-line string (``2.5`` and ``1e3`` are refused... unless whole)."""
    return integer(name, value, minimum=minimum)


def positive_whole(name: str, value: Any) -> int:
    return integer(name, value, minimum=1)


def real(name: str, value: Any) -> float:
    return number(name, value)


def positive_real(name: str, value: Any) -> float:
    return positive(name, value)


def add_input_option(p: argparse.ArgumentParser, help: str) -> None:
    """``--input SHAPE[:DTYPE]``, repeatable: one example input of a traced entry point per use."""
    p.add_argument("--input", action="append", default=[], metavar="SHAPE[:DTYPE]", help=help)
