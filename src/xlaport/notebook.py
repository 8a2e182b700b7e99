"""Small helpers the book's notebooks share (work the same in Jupyter, Colab and papermill).

- :func:`glue` records a measured value for the prose (myst-nb's ``glue`` when it
  is installed; otherwise it just displays the value, e.g. in Colab).
- :func:`glue_many` glues several values at once (``glue_many(n_ops=3, gap=0.2)``); :func:`glue_fields` glues a
  result object's fields (a dataclass, a dict, a named tuple) under a prefix. Formats stay in the prose roles
  (``{glue:text}`gap:.1f```).
- :func:`markdown_table` turns rows into a table a cell displays (a chapter builds no markdown by hand).
- :func:`example` finds a committed example project (``examples/<name>``) wherever the chapter runs: beside the
  notebooks of a clone, or in the clone the toolkit was installed from (Colab's setup cell clones the repository).
- :func:`scratch_copy`, :func:`load_project` and :func:`show_diff` work on a small project kept as files
  (``examples/``): a copy to change, its modules imported fresh, and what a port changed, as a diff.
- :func:`timer` measures wall time of a block.

Imported in a Jupyter kernel, this module also gives the chapter's plots the book's size and type scale
(:func:`xlaport.plots.use_book_style`: legible on a phone and on a desktop, each PNG recording its smallest text).

Importing this module also keeps the build machine out of what a reader sees (:func:`reader_friendly_logs`):
PyTorch's log lines name a function's file as ``basename.py`` (a notebook cell as ``<cell>``) instead of an absolute
path, each torch log line starts with its level and logger (``WARNING torch._dynamo.convert_frame: ...``) rather
than torch's time stamp, process id and source line (``W1130 21:41:33.918000 4737 torch/_dynamo/...:1358]``), and
two environment warnings that say nothing about the lesson (tqdm's "IProgress not found" without ipywidgets, torch's
"No CUDA runtime is found" on a machine without CUDA) are not shown.
"""

from __future__ import annotations

import dataclasses
import difflib
import importlib
import logging
import os
import re
import shutil
import sys
import tempfile
import time
import warnings
from collections.abc import Iterable, Iterator, Mapping, MutableMapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from .text import plural, sci

__all__ = [
    "glue",
    "glue_many",
    "glue_fields",
    "markdown_table",
    "example",
    "scratch_copy",
    "load_project",
    "show_diff",
    "plural",
    "sci",
    "timer",
    "Timing",
    "reader_friendly_logs",
]

_CELL_FILE = re.compile(r"/[^\s'\"():]*/ipykernel_\d+/\d+\.py")
_ABS_FILE = re.compile(r"(?<![\w.])/(?:[^\s'\"():/]+/)+([^\s'\"():/]+\.py)")
_installed = False
# Torch's own switch for its log format (torch/_logging/_internal.py, TORCH_LOGS_FORMAT); read when torch starts.
TORCH_LOG_FORMAT = "%(levelname)s %(name)s: %(message)s"


def _shorten(text: str) -> str:
    return _ABS_FILE.sub(r"\1", _CELL_FILE.sub("<cell>", text))


def reader_friendly_logs() -> None:
    """Shorten file paths in PyTorch's log records and hide warnings and progress bars that only this environment
    prints (idempotent)."""
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
    # the Hugging Face libraries' bars for saving and loading a checkpoint of a few hundred kB (read when they start)
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    # torchao 0.16 on the emulator's torch 2.9 runs its Python path; its C++ extension is built for torch 2.10
    logging.getLogger("torchao").addFilter(lambda r: not str(r.msg).startswith("Skipping import of cpp extensions"))
    # the Trainer's loader pins host memory by default, which a machine without an accelerator cannot do
    warnings.filterwarnings("ignore", message=".*'pin_memory' argument is set as true but no accelerator")
    # torchao's int8 weight-only transform calls torch.set_float32_matmul_precision("high") (its
    # recommended_inductor_config_setter), an API torch 2.9 warns about; the quantization chapter shows the call's effect
    warnings.filterwarnings("ignore", message="Please use the new API settings to control TF32 behavior")
    # peft 0.21 calls a transformers 5 method that transformers renamed (is_activation_checkpointing)
    warnings.filterwarnings("ignore", message="`is_gradient_checkpointing` is deprecated", category=FutureWarning)


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


def glue_many(**values: Any) -> None:
    """Glue every keyword as its own key: ``glue_many(n_ops=3, gap=0.2)`` is ``glue("n_ops", 3)`` and
    ``glue("gap", 0.2)``."""
    if not values:
        raise ValueError("glue_many() needs at least one name=value")
    for name, value in values.items():
        glue(name, value)


_SCALARS = (int, float, str)


def _fields(obj: Any) -> dict[str, Any]:
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}
    if isinstance(obj, Mapping):
        return {str(k): v for k, v in obj.items()}
    if hasattr(obj, "_asdict"):  # a named tuple
        return dict(obj._asdict())
    raise ValueError(f"glue_fields() takes a dataclass, a mapping or a named tuple, got {type(obj).__name__}")


def glue_fields(obj: Any, prefix: str = "", names: Iterable[str] | None = None, **extra: Any) -> None:
    """Glue a result's fields as ``prefix + field``: every number or string field, or just ``names``.

    ``obj`` is a dataclass, a mapping or a named tuple; properties a dataclass computes are not fields, so pass
    them by name (``names=["ratio"]`` reads ``obj.ratio``) or as keywords (``extra``, glued under the prefix too).
    """
    fields = _fields(obj)
    if names is None:
        chosen = {k: v for k, v in fields.items() if isinstance(v, _SCALARS) and not isinstance(v, bool)}
    else:
        chosen = {}
        for name in names:
            if name in fields:
                chosen[name] = fields[name]
            elif not isinstance(obj, Mapping) and hasattr(obj, name):
                chosen[name] = getattr(obj, name)
            else:
                raise ValueError(f"glue_fields(): {type(obj).__name__} has no field {name!r}")
    chosen.update(extra)
    if not chosen:
        raise ValueError(f"glue_fields(): nothing to glue in {type(obj).__name__}")
    for name, value in chosen.items():
        glue(f"{prefix}{name}", value)


def _markdown(text: str) -> Any:
    from IPython.display import Markdown  # installed wherever a notebook runs

    return Markdown(text)


def markdown_table(
    rows: Iterable[Mapping[str, Any]] | Iterable[Sequence[Any]], columns: Sequence[str] | None = None
) -> Any:
    """A markdown table a notebook cell displays (``IPython.display.Markdown``): rows of dicts (their keys are the
    columns unless ``columns`` says which, in order) or of sequences (``columns`` names them). A ``|`` in a value
    is escaped, so a cell never splits."""
    table: list[Any] = list(rows)
    if not table:
        raise ValueError("markdown_table() needs at least one row")
    if all(isinstance(r, Mapping) for r in table):
        cols = list(columns) if columns is not None else list(table[0])
        missing = [c for c in cols if any(c not in r for r in table)]
        if missing:
            raise ValueError(f"markdown_table(): rows lack column {missing[0]!r}")
        cells = [[r[c] for c in cols] for r in table]
    elif columns is None:
        raise ValueError("markdown_table(): rows that are not dicts need columns=[...]")
    else:
        cols = list(columns)
        cells = [list(r) for r in table]
        if any(len(r) != len(cols) for r in cells):
            raise ValueError(f"markdown_table(): every row needs {len(cols)} values, one per column")
    from .text import table_lines

    return _markdown(table_lines(cols, cells))


def example(name: str) -> Path:
    """The committed example ``examples/<name>`` (a folder or a file) of the xlaport repository.

    Looked up in the clone the toolkit is installed from (``pip install -e .``, ``make venv``, Colab's setup cell),
    then beside the working directory (``../examples`` from ``notebooks/``, or ``./examples``). A chapter's reader
    edition therefore finds its examples wherever Jupyter or Colab runs it, as long as the toolkit came from a clone.
    """
    if not isinstance(name, str) or not name or name.startswith("/") or "\\" in name or ".." in name.split("/"):
        raise ValueError(f"example(): name an example under examples/, such as 'cuda_project', not {name!r}")
    roots = [Path(__file__).resolve().parents[2] / "examples", Path.cwd().parent / "examples", Path.cwd() / "examples"]
    for root in roots:
        if (root / name).exists():
            return root / name
    raise ValueError(
        f"example(): examples/{name} is not here; the chapters that use examples need a clone of the repository "
        "(git clone, then pip install -e . in it; Colab's setup cell does both)"
    )


def scratch_copy(folder: str | os.PathLike[str], prefix: str = "xlaport-") -> Path:
    """Copy ``folder`` into a new temporary directory and return the copy (same folder name): a project to change
    or run without touching the committed one."""
    src = Path(folder)
    if not src.is_dir():
        raise ValueError(f"scratch_copy(): {src} is not a folder")
    dst = Path(tempfile.mkdtemp(prefix=prefix)) / src.name
    shutil.copytree(src, dst)
    return dst


def load_project(folder: str | os.PathLike[str], *names: str) -> SimpleNamespace:
    """Import modules of a small project that imports its own files by name (``from tinylm import TinyLM``).

    Every module of ``folder`` is imported fresh: a module of the same name that another project loaded earlier
    is dropped from ``sys.modules`` first, so two copies of one project (before and after a port) can be loaded
    in turn, each keeping its own classes. Returns ``SimpleNamespace(name=module, ...)`` for ``names`` and for
    the project's modules those imported.
    """
    root = Path(folder).resolve()
    if not root.is_dir():
        raise ValueError(f"load_project(): {root} is not a folder")
    own = {p.stem for p in root.glob("*.py")}
    if not names or any(n not in own for n in names):
        raise ValueError(f"load_project(): name modules of {root.name} to import, from {sorted(own)}")
    for name in own:
        sys.modules.pop(name, None)
    sys.path.insert(0, str(root))
    try:
        loaded = {name: importlib.import_module(name) for name in names}
    finally:
        sys.path.remove(str(root))
    loaded.update({name: sys.modules[name] for name in own if name in sys.modules and name not in loaded})
    return SimpleNamespace(**loaded)


def show_diff(before: str | os.PathLike[str], after: str | os.PathLike[str], names: Sequence[str] | None = None) -> Any:
    """What changed from folder ``before`` to folder ``after``, file by file, as unified diffs a cell displays
    (``a/name`` and ``b/name``, no machine paths). ``names`` defaults to every file in either folder; a file only
    on one side shows as added or removed, an unchanged file not at all."""
    old, new = Path(before), Path(after)
    for d in (old, new):
        if not d.is_dir():
            raise ValueError(f"show_diff(): {d} is not a folder")
    files = names or sorted({p.name for d in (old, new) for p in d.iterdir() if p.is_file()})
    parts = []
    for name in files:
        a, b = old / name, new / name
        if not (a.is_file() or b.is_file()):
            raise ValueError(f"show_diff(): {name} is in neither folder")
        lines_a = a.read_text().splitlines(keepends=True) if a.is_file() else []
        lines_b = b.read_text().splitlines(keepends=True) if b.is_file() else []
        diff = "".join(difflib.unified_diff(lines_a, lines_b, f"a/{name}", f"b/{name}"))
        if diff:
            parts.append("```diff\n" + diff + ("" if diff.endswith("\n") else "\n") + "```")
    return _markdown("\n\n".join(parts) if parts else "No changes.")


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


def cpu_before_torch_xla(environ: MutableMapping[str, str] | None = None, sysfs: str = "/sys/bus/pci/devices") -> bool:
    """On a machine with neither a TPU nor Trainium, set ``PJRT_DEVICE=CPU`` before torch_xla starts, unless set.

    torch_xla started without it looks for a TPU and Trainium and, finding neither, picks the CPU and logs "Defaulting
    to PJRT_DEVICE=CPU"; transformers (with accelerate installed) imports torch_xla in chapters that only estimate on
    the CPU. Saying CPU first is what the toolkit does for its own processes (:mod:`xlaport.xla_cpu`). A machine with
    any Google PCI device or a ``/dev/neuron*`` node is left to torch_xla. Returns whether it set the variable."""
    from . import detect

    env = os.environ if environ is None else environ
    if "PJRT_DEVICE" in env or "torch_xla" in sys.modules:
        return False
    if detect.google_pci_devices(sysfs) or detect.neuron_devices():
        return False
    env["PJRT_DEVICE"] = "CPU"
    return True


reader_friendly_logs()
cpu_before_torch_xla()


def _book_plots() -> None:
    """In a kernel (not in a plain script or a test), the book's plot style (:mod:`xlaport.plots`)."""
    if "IPython" in sys.modules and getattr(sys.modules["IPython"], "get_ipython", lambda: None)() is not None:
        from .plots import use_book_style

        use_book_style()


_book_plots()
