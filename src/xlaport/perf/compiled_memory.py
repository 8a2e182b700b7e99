"""The memory a compiled program needs, as the XLA compiler itself assigned it.

When XLA compiles a program it assigns every buffer the program touches to an allocation, and with
``--xla_dump_to`` (:func:`xlaport.xla_cpu.dump_flags`) XLA:CPU writes that assignment next to each module as
``*-buffer-assignment.txt``: one line per allocation (``allocation 3: size 4194304, parameter 11, shape
|f32[2048,512]| ...``) and ``Total bytes used``, their sum. That is a measurement, not an estimate: the compiler's own
answer for this program, buffers reused where their lives do not overlap. This module reads it and sorts the
allocations into what a reader asks about:

* **inputs** (``parameter N``): what the program is handed, that is weights, optimizer state and the batch;
* **new outputs** (``maybe-live-out`` that is not an input): buffers the program creates and returns, for example
  AdamW's moments on the step that creates them;
* **temporaries** (``preallocated-temp``): activations kept for the backward pass, gradients and scratch, packed
  by the compiler into one block;
* **other**: the output tuple's table, constants, thread-local scratch.

XLA on a TPU or Trainium assigns buffers with its own, target-specific passes, so the numbers differ there; what
carries over is the split, and how it grows with the batch. Torch-free.
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

__all__ = ["ProgramMemory", "program_memory", "read_memory"]

_ALLOCATION = re.compile(r"^allocation (\d+): size (\d+), (.*)$", re.M)
_TOTAL = re.compile(r"^Total bytes used: (\d+)", re.M)
_SUFFIX = "-buffer-assignment.txt"


@dataclass(frozen=True)
class ProgramMemory:
    """One compiled program's memory, in bytes, as XLA assigned it."""

    module: str
    total_bytes: int  # XLA's "Total bytes used": every allocation
    input_bytes: int  # parameters: weights, optimizer state, the batch
    new_output_bytes: int  # returned buffers that are not inputs
    temp_bytes: int  # the preallocated temporary block: activations, gradients, scratch
    other_bytes: int  # output tuple table, constants, thread-local scratch
    allocations: int

    def __post_init__(self) -> None:
        parts = self.input_bytes + self.new_output_bytes + self.temp_bytes + self.other_bytes
        if parts != self.total_bytes:
            raise ValueError(f"{self.module}: allocations add up to {parts} bytes, XLA reports {self.total_bytes}")


def program_memory(text: str, module: str = "") -> ProgramMemory:
    """The :class:`ProgramMemory` of one ``*-buffer-assignment.txt`` (its text)."""
    if not isinstance(text, str):
        raise ValueError(f"program_memory() reads a buffer assignment's text, got {type(text).__name__}")
    total = _TOTAL.search(text)
    found = _ALLOCATION.findall(text)
    if total is None or not found:
        raise ValueError(
            f"{module or 'this text'} is not an XLA buffer assignment (no 'allocation N: size ...' lines or no "
            "'Total bytes used')"
        )
    kinds = {"input": 0, "new output": 0, "temp": 0, "other": 0}
    for _, size, rest in found:
        if rest.startswith("parameter "):
            kind = "input"
        elif "preallocated-temp" in rest:
            kind = "temp"
        elif rest.startswith("output shape") or rest.startswith("constant") or "thread-local" in rest:
            kind = "other"
        elif "maybe-live-out" in rest:
            kind = "new output"
        else:
            kind = "other"
        kinds[kind] += int(size)
    return ProgramMemory(
        module=module,
        total_bytes=int(total.group(1)),
        input_bytes=kinds["input"],
        new_output_bytes=kinds["new output"],
        temp_bytes=kinds["temp"],
        other_bytes=kinds["other"],
        allocations=len(found),
    )


def read_memory(directory: str | os.PathLike[str], remove: bool = False) -> dict[str, ProgramMemory]:
    """The memory of every program XLA dumped into ``directory`` (:func:`xlaport.xla_cpu.dump_flags`), keyed by
    module name (``module_0002.SyncTensorsGraph.289``) in the order XLA compiled them; ``remove=True`` deletes the
    directory once it is read."""
    root = Path(directory)
    if not root.is_dir():
        raise ValueError(f"no XLA dump directory at {str(root)!r} (was XLA_FLAGS set before torch_xla started?)")
    out: dict[str, ProgramMemory] = {}
    for path in sorted(root.glob(f"*{_SUFFIX}")):
        name = path.name[: -len(_SUFFIX)]
        module = re.sub(r"\.(?:cpu|tpu|gpu)_after_optimizations$", "", name)
        out[module] = program_memory(path.read_text(encoding="utf-8", errors="replace"), module)
    if remove:
        shutil.rmtree(root, ignore_errors=True)
    return out
