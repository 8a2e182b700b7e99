"""Load a user's entry point (``FILE.py``, ``FILE.py:CALLABLE`` or ``MODULE:CALLABLE``) and example inputs.

Used by ``xlaport ops`` (and anything else that traces a user's code): every bad spec or input
raises ``ValueError`` with one line that says what is wrong.
"""

from __future__ import annotations

import importlib
import importlib.util
import math
import runpy
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from .trace import OpRecorder, OpTrace

__all__ = ["Entry", "load_entry", "parse_input", "trace_entry", "MAX_INPUT_BYTES"]

# The largest example input built from a SHAPE spec: far above any op-coverage need, far below a laptop's memory.
MAX_INPUT_BYTES = 1 << 30


@dataclass(frozen=True)
class Entry:
    """A loaded entry point: ``fn`` to call, or ``path`` of a script to run whole (``fn`` is None)."""

    spec: str
    fn: Callable[..., Any] | None
    module: Any
    path: Path | None

    def example_inputs(self) -> list[Any]:
        """The module's ``example_inputs`` (a list or a function returning one), else []."""
        ex = getattr(self.module, "example_inputs", None) if self.fn is not None else None
        if ex is None:
            return []
        return list(ex() if callable(ex) else ex)


def parse_input(spec: str, gen: torch.Generator | None = None) -> torch.Tensor:
    """A random tensor from ``SHAPE[:DTYPE]``: ``8x4``, ``8,4``, ``16:int64``, ``2x3:bool``."""
    if not isinstance(spec, str):
        raise ValueError(f"bad input spec {spec!r}: expected a string like 4x3 or 4,3:int64")
    gen = gen if gen is not None else torch.Generator().manual_seed(0)
    shape_s, _, dtype_s = spec.partition(":")
    try:
        shape = [int(s) for s in shape_s.replace("x", ",").split(",") if s.strip()]
    except ValueError:
        raise ValueError(f"bad --input {spec!r}: expected a shape like 4x3 or 4,3 with an optional :dtype") from None
    if not shape or any(s < 0 for s in shape):
        raise ValueError(f"bad --input {spec!r}: expected a shape like 4x3 or 4,3 with an optional :dtype")
    dtype = getattr(torch, dtype_s or "float32", None)
    if not isinstance(dtype, torch.dtype):
        raise ValueError(f"bad --input {spec!r}: unknown dtype {dtype_s!r}")
    size = math.prod(shape) * dtype.itemsize
    if size > MAX_INPUT_BYTES:
        raise ValueError(
            f"bad --input {spec!r}: {size / 2**30:,.1f} GiB is too large to build "
            f"(limit {MAX_INPUT_BYTES / 2**30:.0f} GiB); op coverage needs only small inputs"
        )
    try:
        if dtype.is_floating_point:
            return torch.randn(*shape, generator=gen, dtype=dtype)
        if dtype.is_complex:
            return torch.randn(*shape, generator=gen, dtype=dtype)
        if dtype == torch.bool:
            return torch.randint(0, 2, shape, generator=gen).bool()
        return torch.randint(0, 4, shape, generator=gen, dtype=dtype)
    except (RuntimeError, MemoryError) as e:
        raise ValueError(
            f"could not build --input {spec!r}: {str(e).splitlines()[0] if str(e) else type(e).__name__}"
        ) from None


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return f"{type(e).__name__}: {text.splitlines()[0]}" if text else type(e).__name__


def load_entry(spec: str) -> Entry:
    """Load ``FILE.py`` (to run whole), ``FILE.py:CALLABLE`` or ``MODULE:CALLABLE``.

    A class that subclasses ``nn.Module`` is built with no arguments.
    """
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError("bad spec: expected FILE.py, FILE.py:CALLABLE or MODULE:CALLABLE")
    path_s, sep, attr = spec.rpartition(":") if spec.count(":") == 1 else (spec, "", "")
    if not sep:
        path_s, attr = spec, ""
    if path_s.endswith(".py"):
        path = Path(path_s)
        if not path.is_file():
            raise ValueError(f"no such file: {path_s}")
        if not attr:
            return Entry(spec, None, None, path)
        mod_spec = importlib.util.spec_from_file_location(f"_xlaport_entry_{path.stem}", path)
        if mod_spec is None or mod_spec.loader is None:
            raise ValueError(f"cannot load {path_s} as a Python module")
        module = importlib.util.module_from_spec(mod_spec)
        sys.path.insert(0, str(path.resolve().parent))
        try:
            mod_spec.loader.exec_module(module)
        except Exception as e:
            raise ValueError(f"{path_s} failed to import: {_first_line(e)}") from None
        finally:
            sys.path.pop(0)
    else:
        if not sep or not attr or not path_s or not all(p.isidentifier() for p in path_s.split(".")):
            raise ValueError(f"bad spec {spec!r}: expected FILE.py, FILE.py:CALLABLE or MODULE:CALLABLE")
        try:
            module = importlib.import_module(path_s)
        except Exception as e:
            raise ValueError(f"could not import module {path_s!r}: {_first_line(e)}") from None
    if not attr.isidentifier():
        raise ValueError(f"bad spec {spec!r}: {attr!r} is not a Python name")
    obj = getattr(module, attr, None)
    if obj is None:
        raise ValueError(f"{path_s} has no attribute {attr!r}")
    if isinstance(obj, type) and issubclass(obj, torch.nn.Module):
        try:
            obj = obj()
        except Exception as e:
            raise ValueError(f"could not build {attr}() without arguments: {_first_line(e)}") from None
    if not callable(obj):
        raise ValueError(f"{spec} is not callable")
    return Entry(spec, obj, module, None)


def trace_entry(entry: Entry, inputs: Sequence[Any] = ()) -> OpTrace:
    """Run the entry once on CPU under the op recorder; its ops. Failures become one-line ValueErrors."""
    inputs = list(inputs) or entry.example_inputs()
    rec = OpRecorder()
    try:
        if entry.fn is None:
            assert entry.path is not None
            sys.path.insert(0, str(entry.path.resolve().parent))
            try:
                with rec:
                    runpy.run_path(str(entry.path), run_name="__main__")
            finally:
                sys.path.pop(0)
        else:
            with rec:
                entry.fn(*inputs)
    except SystemExit as e:
        if e.code not in (0, None):
            raise ValueError(f"{entry.spec} exited with status {e.code} while tracing") from None
    except Exception as e:
        raise ValueError(f"{entry.spec} failed while tracing: {_first_line(e)}") from None
    trace = OpTrace(rec.calls, "cpu")
    if not len(trace):
        raise ValueError(f"{entry.spec} dispatched no ATen ops (did it get its example inputs? pass --input SHAPE)")
    return trace
