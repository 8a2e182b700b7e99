"""Count the collectives in XLA's optimized HLO: what the compiler really put on the wire.

Ask XLA for its HLO with :func:`dump_flags` (``XLA_FLAGS`` must be set before torch_xla starts its
runtime, so in a fresh process), run the program, then read the dump::

    >>> from xlaport.distributed.hlo import dump_flags, read_dump
    >>> env = {"XLA_FLAGS": dump_flags("/tmp/dump")}   # for the child process
    >>> modules = read_dump("/tmp/dump")                # {module name: Collectives}
    >>> modules["module_0000.SyncTensorsGraph.179"].counts
    {'all-gather': 5, 'all-reduce': 7, 'reduce-scatter': 0, ...}

:func:`collectives` reads HLO text directly (one module, as XLA prints it). Asynchronous forms
(``all-gather-start``/``-done``, ``all-reduce-start``/``-done``, ``async-start`` wrapping a
collective) count once, under the collective's name, with ``async=True``. Torch-free.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..xla_cpu import dump_flags, new_dump_dir

__all__ = ["COLLECTIVES", "Collective", "Collectives", "collectives", "dump_flags", "new_dump_dir", "read_dump"]

COLLECTIVES: tuple[str, ...] = (
    "all-gather",
    "all-reduce",
    "reduce-scatter",
    "all-to-all",
    "collective-permute",
    "collective-broadcast",
    "send",
    "recv",
)
_SUFFIX = "after_optimizations.txt"  # XLA's optimized module; ``*-buffer-assignment.txt`` etc. are not matched

# `  [ROOT] %name = <shape> <opcode>(<operands>), <attributes>`; the shape may be a tuple "(f32[2]{0}, ...)".
_INSTR = re.compile(
    r"^\s*(?:ROOT\s+)?%?(?P<name>[\w.\-]+)\s*=\s*(?P<shape>.+?)\s+(?P<op>[a-z][a-z0-9\-]*)\((?P<rest>.*)$"
)
_GROUPS = re.compile(r"replica_groups=(\{[^=]*?\}\}|\{\}|\[[^\]]*\][^,]*)")
_DIMS = re.compile(r"dimensions=\{([0-9,]*)\}")
_CALLS = re.compile(r"calls=%?([\w.\-]+)")
_BACKEND_TAG = re.compile(r"\.(?:cpu|tpu|gpu|sm_[0-9.]+_gpu)$")  # "module_0000.SyncTensorsGraph.179.cpu"
_COMPUTATION = re.compile(r"^\s*(?:ENTRY\s+)?%?([\w.\-]+)\s.*\{\s*$")


@dataclass(frozen=True)
class Collective:
    """One collective instruction of an HLO module."""

    op: str  # one of COLLECTIVES
    name: str  # the instruction's name in the module, e.g. "all-gather.2"
    shape: str  # its result shape as HLO prints it, e.g. "f32[64,32]{1,0}"
    dimensions: tuple[int, ...] = ()  # gather/scatter dimension(s), when the op has them
    replica_groups: str = ""  # e.g. "{{0,1,2,3}}"
    is_async: bool = False  # a -start/-done pair (or async-start) in the module

    @property
    def dims(self) -> tuple[int, ...]:
        """The result's dimensions, e.g. ``(64, 32)`` for ``f32[64,32]{1,0}``; ``()`` for a scalar or a tuple."""
        m = re.fullmatch(r"\s*[a-z]+[0-9]*\[([0-9,]*)\](?:\{[^}]*\})?\s*", self.shape)
        if not m or not m.group(1):
            return ()
        return tuple(int(d) for d in m.group(1).split(","))


@dataclass(frozen=True)
class Collectives:
    """The collectives of one HLO module, in the order they appear in its text."""

    module: str
    ops: tuple[Collective, ...] = field(default_factory=tuple)

    @property
    def counts(self) -> dict[str, int]:
        """How many of each collective (every name in :data:`COLLECTIVES`, zeros included)."""
        out = dict.fromkeys(COLLECTIVES, 0)
        for c in self.ops:
            out[c.op] += 1
        return out

    def count(self, op: str) -> int:
        if op not in COLLECTIVES:
            raise ValueError(f"unknown collective {op!r}; choose one of: {', '.join(COLLECTIVES)}")
        return self.counts[op]

    def of(self, op: str) -> tuple[Collective, ...]:
        """The collectives of kind ``op``."""
        self.count(op)  # validates the name
        return tuple(c for c in self.ops if c.op == op)

    @property
    def total(self) -> int:
        return len(self.ops)

    def table(self, carries: Sequence[str] | None = None) -> str:
        """The collectives in order as a markdown table; ``carries``, one note per collective, says what each moves."""
        notes = list(carries) if carries is not None else [""] * len(self.ops)
        if len(notes) != len(self.ops):
            raise ValueError(f"carries has {len(notes)} notes for {len(self.ops)} collectives")
        lines = ["| collective | result shape | carries | async |", "|---|---|---|---|"]
        lines += [f"| {c.op} | `{c.shape}` | {w} | {'yes' if c.is_async else 'no'} |" for c, w in zip(self.ops, notes)]
        return "\n".join(lines)


def _base(op: str) -> tuple[str | None, bool, bool]:
    """(collective name, is an async form, is the -done half) for an HLO opcode."""
    for suffix, is_done in (("-start", False), ("-done", True)):
        if op.endswith(suffix) and op[: -len(suffix)] in COLLECTIVES:
            return op[: -len(suffix)], True, is_done
    if op in COLLECTIVES:
        return op, False, False
    return None, False, False


def collectives(hlo_text: str, module: str = "") -> Collectives:
    """The collectives in one module's HLO text (e.g. the contents of ``*after_optimizations.txt``)."""
    if not isinstance(hlo_text, str):
        raise ValueError(f"hlo_text must be HLO text (a str), got {type(hlo_text).__name__}")
    if not module:
        m = re.search(r"^HloModule\s+([\w.\-]+)", hlo_text, re.MULTILINE)
        module = m.group(1) if m else ""
    # Computations wrapped by async-start (e.g. an async reduce-scatter) are counted at the async-start.
    bodies: dict[str, list[str]] = {}
    current = None
    for line in hlo_text.splitlines():
        head = _COMPUTATION.match(line) if line[:1] not in (" ", "\t") else None  # headers are not indented
        if head and not line.startswith("HloModule"):
            current = head.group(1)
            bodies[current] = []
        elif current is not None:
            bodies[current].append(line)
    wrapped: set[str] = set()
    ops: list[Collective] = []
    for line in hlo_text.splitlines():
        m = _INSTR.match(line)
        if not m:
            continue
        op, shape, rest = m.group("op"), m.group("shape"), m.group("rest")
        is_async = False
        if op == "async-start":
            called = _CALLS.search(rest)
            inner = None
            for body_line in bodies.get(called.group(1), []) if called else []:
                im = _INSTR.match(body_line)
                if im and _base(im.group("op"))[0]:
                    inner = im
                    break
            if inner is None:
                continue
            if called:
                wrapped.add(called.group(1))
            op, shape, rest, is_async = inner.group("op"), inner.group("shape"), inner.group("rest"), True
        kind, async_form, is_done = _base(op)
        if kind is None or is_done:
            continue
        dims = _DIMS.search(rest)
        groups = _GROUPS.search(rest)
        ops.append(
            Collective(
                op=kind,
                name=m.group("name"),
                shape=shape.strip(),
                dimensions=tuple(int(d) for d in dims.group(1).split(",") if d) if dims else (),
                replica_groups=groups.group(1) if groups else "",
                is_async=is_async or async_form,
            )
        )
    # Drop the copies of wrapped collectives inside the async computations themselves.
    if wrapped:
        inner_names = set()
        for comp in wrapped:
            for body_line in bodies.get(comp, []):
                im = _INSTR.match(body_line)
                if im:
                    inner_names.add(im.group("name"))
        ops = [c for c in ops if c.is_async or c.name not in inner_names]
    return Collectives(module, tuple(ops))


def read_dump(
    directory: str | os.PathLike[str], modules: list[str] | None = None, remove: bool = False
) -> dict[str, Collectives]:
    """Collectives of each optimized module XLA dumped into ``directory``, keyed by the file's module prefix.

    ``modules`` keeps only the modules whose key starts with one of the given prefixes (e.g. ``"module_0003"``);
    ``remove=True`` deletes the directory once it is read.
    """
    root = Path(directory)
    if not root.is_dir():
        raise ValueError(f"no XLA dump directory at {str(root)!r} (was XLA_FLAGS set before torch_xla started?)")
    out: dict[str, Collectives] = {}
    for path in sorted(root.glob(f"*{_SUFFIX}")):
        key = _BACKEND_TAG.sub("", path.name[: -len(_SUFFIX)].rstrip("._-"))
        if modules is not None and not any(key.startswith(p) for p in modules):
            continue
        out[key] = collectives(path.read_text(errors="replace"), module=key)
    if remove:
        shutil.rmtree(root, ignore_errors=True)
    return out
