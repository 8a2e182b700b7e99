"""The emulator's XLA:CPU settings, in one place: every process that starts torch_xla on the CPU gets them.

* ``PJRT_DEVICE=CPU`` unless the environment names another device (on a TPU VM: ``TPU``).
* ``--xla_backend_optimization_level=0`` in ``XLA_FLAGS``: XLA:CPU hands the program to LLVM without its optimising
  passes. The chapters' models are tiny, so a step costs a few milliseconds either way and most of an emulated
  run is compilation; XLA's HLO passes (fusion among them) still run. Measured by
  ``benchmarks/xla_cpu_opt_level.py`` (results in ``benchmarks/results/xla_cpu_opt_level.json``): twelve compiles
  of a small training step took 7.6 s instead of 14.2 s, a cached step 32 ms instead of 29. Compile counts, cache hits and
  CPU fallbacks, the events the book counts, do not depend on the level. ``XLAPORT_XLA_CPU_OPT=default`` keeps XLA's
  own level; a level already given in ``XLA_FLAGS`` wins.

* :func:`dump_flags` and :func:`new_dump_dir`: ``XLA_FLAGS`` that make XLA write what it compiled (the optimized HLO,
  and for XLA:CPU each program's buffer assignment) into a directory, read by :mod:`xlaport.distributed.hlo` and
  :mod:`xlaport.perf.compiled_memory`.

Nothing here imports torch_xla; call :func:`configure` before the first XLA device is created.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import MutableMapping

__all__ = ["FAST_COMPILE_FLAG", "OPT_ENV", "configure", "describe", "dump_flags", "new_dump_dir", "with_fast_compile"]

FAST_COMPILE_FLAG = "--xla_backend_optimization_level=0"
OPT_ENV = "XLAPORT_XLA_CPU_OPT"  # "fast" (the default) or "default" (XLA's own optimisation level)


def with_fast_compile(flags: str, opt: str | None = None) -> str:
    """``flags`` (an ``XLA_FLAGS`` value) with the fast-compile flag added, unless ``opt`` is ``"default"`` or
    ``flags`` already sets a backend optimisation level."""
    given = opt
    opt = (opt or "fast").strip().lower()
    if opt not in ("fast", "default"):
        raise ValueError(f"{OPT_ENV} must be 'fast' or 'default', not {given!r}")
    if opt == "default" or "--xla_backend_optimization_level" in flags:
        return flags
    return f"{flags} {FAST_COMPILE_FLAG}".strip()


def configure(environ: MutableMapping[str, str] | None = None) -> None:
    """Set the emulator's defaults in ``environ`` (this process's environment by default, or a child's)."""
    env = os.environ if environ is None else environ
    env.setdefault("PJRT_DEVICE", "CPU")
    if env["PJRT_DEVICE"].upper() == "CPU":
        flags = with_fast_compile(env.get("XLA_FLAGS", ""), env.get(OPT_ENV))
        if flags:
            env["XLA_FLAGS"] = flags


def describe(environ: MutableMapping[str, str] | None = None) -> str:
    """How XLA:CPU compiles in ``environ``, for a banner: ``"LLVM -O0"`` or ``"XLA's default optimisation"``."""
    env = os.environ if environ is None else environ
    return "LLVM -O0" if FAST_COMPILE_FLAG in env.get("XLA_FLAGS", "").split() else "XLA's default optimisation"


def dump_flags(directory: str | os.PathLike[str], existing: str = "") -> str:
    """``XLA_FLAGS`` that make XLA write every module's HLO, as text, into ``directory`` (kept: ``existing``)."""
    d = str(directory)
    if not d or any(c.isspace() for c in d):
        raise ValueError(f"the dump directory must be a path without spaces (XLA_FLAGS is split on them), got {d!r}")
    return " ".join(p for p in (existing.strip(), f"--xla_dump_to={d}", "--xla_dump_hlo_as_text") if p)


def new_dump_dir(prefix: str = "xla_dump_") -> str:
    """A new, empty temporary directory for :func:`dump_flags` (no spaces in its path; :func:`read_dump` with
    ``remove=True`` deletes it)."""
    d = tempfile.mkdtemp(prefix=prefix)
    if any(c.isspace() for c in d):
        shutil.rmtree(d, ignore_errors=True)
        raise ValueError(f"the temporary directory {d!r} has spaces (XLA_FLAGS is split on them): set TMPDIR")
    return d
