"""Small helpers the book's notebooks share (work the same in Jupyter, Colab and papermill).

- :func:`glue` records a measured value for the prose (myst-nb's ``glue`` when it
  is installed; otherwise it just displays the value, e.g. in Colab).
- :func:`timer` measures wall time of a block.

Importing this module also keeps the build machine out of what a reader sees (:func:`reader_friendly_logs`):
PyTorch's log lines name a function's file as ``basename.py`` (a notebook cell as ``<cell>``) instead of an absolute
path, each torch log line starts with its level and logger (``WARNING torch._dynamo.convert_frame: ...``) rather
than torch's time stamp, process id and source line (``W1130 21:41:33.918000 4737 torch/_dynamo/...:1358]``), and
two environment warnings that say nothing about the lesson (tqdm's "IProgress not found" without ipywidgets, torch's
"No CUDA runtime is found" on a machine without CUDA) are not shown.
"""

from __future__ import annotations

import logging
import os
import re
import sys
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from .text import plural, sci

__all__ = ["glue", "plural", "sci", "timer", "Timing", "reader_friendly_logs"]

_CELL_FILE = re.compile(r"/[^\s'\"():]*/ipykernel_\d+/\d+\.py")
_ABS_FILE = re.compile(r"(?<![\w.])/(?:[^\s'\"():/]+/)+([^\s'\"():/]+\.py)")
_installed = False
# Torch's own switch for its log format (torch/_logging/_internal.py, TORCH_LOGS_FORMAT); read when torch starts.
TORCH_LOG_FORMAT = "%(levelname)s %(name)s: %(message)s"


def _shorten(text: str) -> str:
    return _ABS_FILE.sub(r"\1", _CELL_FILE.sub("<cell>", text))


def reader_friendly_logs() -> None:
    """Shorten file paths in PyTorch's log records and hide two environment-only warnings (idempotent)."""
    global _installed
    if _installed:
        return
    _installed = True
    base = logging.getLogRecordFactory()

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = base(*args, **kwargs)
        if record.name.startswith("torch"):
            try:
                message = record.getMessage()
            except Exception:  # a malformed record is logging's to report, not ours
                return record
            short = _shorten(message)
            if short != message:
                record.msg, record.args = short, None
        return record

    logging.setLogRecordFactory(factory)
    os.environ.setdefault("TORCH_LOGS_FORMAT", TORCH_LOG_FORMAT)  # torch not started yet, or a child process
    internal = sys.modules.get("torch._logging._internal")
    if internal is not None:  # torch already started: its handlers hold the stamped formatter
        formatter = logging.Formatter(os.environ["TORCH_LOGS_FORMAT"])
        if hasattr(internal, "DEFAULT_FORMATTER"):  # used again whenever torch sets its logs up anew
            setattr(internal, "DEFAULT_FORMATTER", formatter)  # noqa: B010
        for name in internal.log_registry.get_log_qnames():
            for handler in logging.getLogger(name).handlers:
                if getattr(handler, "formatter", None).__class__.__name__ == "TorchLogsFormatter":
                    handler.setFormatter(formatter)
    logging.getLogger("torch.utils.cpp_extension").setLevel(logging.ERROR)  # "No CUDA runtime is found"
    warnings.filterwarnings("ignore", message="IProgress not found")  # tqdm.auto without ipywidgets


def glue(name: str, value: Any, display: bool = False) -> None:
    """Make ``value`` available to the book's prose as ``{glue:text}`name```.

    Returns None, so a cell that ends with ``glue(...)`` shows nothing more (a returned value would print as a
    stray result under the cell).
    """
    if not name or not isinstance(name, str):
        raise ValueError(f"glue name must be a non-empty string, got {name!r}")
    try:
        from myst_nb import glue as _glue
    except ImportError:  # outside the book build (Colab, a plain Jupyter)
        if display:
            print(f"{name} = {value}")
        return
    _glue(name, value, display=display)


@dataclass
class Timing:
    seconds: float = 0.0


@contextmanager
def timer() -> Iterator[Timing]:
    """``with timer() as t: ...`` then ``t.seconds``."""
    t = Timing()
    start = time.perf_counter()
    try:
        yield t
    finally:
        t.seconds = time.perf_counter() - start


reader_friendly_logs()
