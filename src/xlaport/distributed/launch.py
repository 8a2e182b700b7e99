"""Run plain Python functions in fresh processes, one per rank, in the background; clean up after them.

A chapter can define a training function in a notebook cell and still run it in its own processes
(a gloo process group needs one process per rank; SPMD on emulated devices needs an environment set
before torch_xla starts): :func:`launch` copies the functions' source into a script, starts
``nprocs`` interpreters with ``RANK``, ``WORLD_SIZE``, ``MASTER_ADDR`` and a free ``MASTER_PORT``
per call, and returns at once::

    >>> from xlaport.distributed.launch import call, launch
    >>> job = launch(call(train_ddp, steps=8), call(train_fsdp2, steps=8), nprocs=2, timeout_s=60)
    >>> ...                                  # the notebook does other work meanwhile
    >>> per_rank = job.result()              # [{"train_ddp": ..., "train_fsdp2": ...}, {...}]

Each function is called as ``fn(rank, world_size, **kwargs)`` in every process, the calls one after
another in the same processes (each with its own port, so each may create and destroy its own
process group); what it returns must be JSON-serialisable. The functions must be self-contained:
module-level functions (not lambdas or closures) that import what they use; ``helpers=`` adds more
functions they call. A process that fails or outlives ``timeout_s`` stops the whole job: the other
processes are killed (a rank waiting in a collective would wait forever) and :meth:`Job.result`
raises with the failing rank's stderr. The job's temporary directory is removed when it ends.
Torch-free.
"""

from __future__ import annotations

import contextlib
import inspect
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FunctionType, TracebackType
from typing import Any

from .. import validate

__all__ = ["Call", "Job", "call", "launch", "free_ports"]

_MAX_PROCS = 64


@dataclass(frozen=True)
class Call:
    """A function and the keyword arguments it gets after ``(rank, world_size)``."""

    fn: Callable[..., Any]
    kwargs: Mapping[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.fn.__name__


def call(fn: Callable[..., Any], /, **kwargs: Any) -> Call:
    """``call(train, steps=8)``: run ``train(rank, world_size, steps=8)`` in each process."""
    _check_function(fn, "the called function")
    try:
        json.dumps(kwargs)
    except (TypeError, ValueError) as e:
        raise ValueError(
            f"arguments of {fn.__name__} must be JSON-serialisable (numbers, strings, lists): {e}"
        ) from None
    return Call(fn, dict(kwargs))


def _check_function(fn: Any, what: str) -> None:
    if not isinstance(fn, FunctionType):
        raise ValueError(f"{what} must be a plain function defined with def, got {type(fn).__name__}")
    if fn.__name__ == "<lambda>":
        raise ValueError(f"{what} must be defined with def, not a lambda (its source is copied into the script)")
    if fn.__code__.co_freevars:
        raise ValueError(
            f"{what} {fn.__name__!r} is a closure over {', '.join(fn.__code__.co_freevars)}: "
            "define it at module level and pass values as arguments"
        )


def _source(fn: Callable[..., Any]) -> str:
    try:
        return textwrap.dedent(inspect.getsource(fn))
    except (OSError, TypeError) as e:
        raise ValueError(
            f"cannot read the source of {fn.__name__!r} ({e}); define it in a file or a notebook cell"
        ) from None


def free_ports(n: int) -> list[int]:
    """``n`` distinct TCP ports on 127.0.0.1 that were free a moment ago."""
    n = validate.integer("n", n, minimum=1)
    socks, ports = [], []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            socks.append(s)
            ports.append(s.getsockname()[1])
    finally:
        for s in socks:
            s.close()
    return ports


_MAIN = """

def _xlaport_main():
    import json, os
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    calls = json.loads(os.environ["XLAPORT_CALLS"])
    out = {}
    for name, port, kwargs in calls:
        os.environ["MASTER_PORT"] = str(port)
        out[name] = globals()[name](rank, world, **kwargs)
    tmp = os.environ["XLAPORT_RESULT"] + ".tmp"
    with open(tmp, "w") as f:
        json.dump(out, f)
    os.replace(tmp, os.environ["XLAPORT_RESULT"])


if __name__ == "__main__":
    _xlaport_main()
"""


class Job:
    """Processes started by :func:`launch`; :meth:`result` waits for them (or use it as a context manager)."""

    def __init__(
        self,
        calls: Sequence[Call],
        nprocs: int,
        helpers: Sequence[Callable[..., Any]],
        env: Mapping[str, str],
        timeout_s: float,
    ) -> None:
        self.calls = tuple(calls)
        self.nprocs = nprocs
        self.timeout_s = timeout_s
        self._dir = Path(tempfile.mkdtemp(prefix="xlaport_launch_"))
        self._result: list[dict[str, Any]] | None = None
        self._error: BaseException | None = None
        script = self._dir / "job.py"
        names = {c.name for c in self.calls}
        parts = [_source(h) for h in helpers if h.__name__ not in names]
        parts += [_source(fn) for fn in dict.fromkeys(c.fn for c in self.calls)]
        script.write_text("\n\n".join(parts) + _MAIN)
        ports = free_ports(len(self.calls))
        spec = [[c.name, port, dict(c.kwargs)] for c, port in zip(self.calls, ports)]
        package_root = str(Path(__file__).resolve().parents[2])
        base = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(p for p in (package_root, os.environ.get("PYTHONPATH", "")) if p),
            "MASTER_ADDR": "127.0.0.1",
            "WORLD_SIZE": str(nprocs),
            "XLAPORT_CALLS": json.dumps(spec),
            **env,
        }
        self._procs: list[subprocess.Popen[bytes]] = []
        self._logs: list[tuple[Any, Any]] = []
        self.started = time.monotonic()
        self.wall_s: float | None = None
        try:
            for rank in range(nprocs):
                out = (self._dir / f"rank{rank}.out").open("wb")
                err = (self._dir / f"rank{rank}.err").open("wb")
                self._logs.append((out, err))
                child = {
                    **base,
                    "RANK": str(rank),
                    "LOCAL_RANK": str(rank),
                    "XLAPORT_RESULT": str(self._dir / f"rank{rank}.json"),
                }
                self._procs.append(
                    subprocess.Popen(
                        [sys.executable, str(script)],
                        cwd=self._dir,
                        env=child,
                        stdout=out,
                        stderr=err,
                        start_new_session=True,  # its own process group, so a timeout kills its children too
                    )
                )
        except BaseException:
            self.close()
            raise

    # ---------------------------------------------------------------- state
    @property
    def running(self) -> bool:
        return any(p.poll() is None for p in self._procs)

    def _tail(self, rank: int, n: int = 2500) -> str:
        path = self._dir / f"rank{rank}.err"
        text = path.read_text(errors="replace") if path.exists() else ""
        return text[-n:].strip() or "(no stderr)"

    # ---------------------------------------------------------------- results
    def result(self) -> list[dict[str, Any]]:
        """Wait for every rank; one dict per rank mapping each call's name to what it returned.

        Raises ``RuntimeError`` (a rank failed) or ``TimeoutError`` (past ``timeout_s``), after
        killing the remaining processes; the job's files are removed either way.
        """
        if self._result is not None:
            return self._result
        if self._error is not None:
            raise self._error
        try:
            deadline = self.started + self.timeout_s
            while True:
                codes = [p.poll() for p in self._procs]
                failed = [r for r, c in enumerate(codes) if c not in (None, 0)]
                if failed:
                    r = failed[0]
                    raise RuntimeError(f"rank {r} of {self.nprocs} exited with status {codes[r]}:\n{self._tail(r)}")
                if all(c == 0 for c in codes):
                    break
                if time.monotonic() > deadline:
                    slow = [r for r, c in enumerate(codes) if c is None]
                    raise TimeoutError(
                        f"rank(s) {slow} still running after {self.timeout_s:.0f} s (killed); "
                        f"stderr of rank {slow[0]}:\n{self._tail(slow[0])}"
                    )
                time.sleep(0.02)
            self.wall_s = time.monotonic() - self.started
            results = []
            for rank in range(self.nprocs):
                path = self._dir / f"rank{rank}.json"
                if not path.exists():
                    raise RuntimeError(f"rank {rank} exited without writing its result:\n{self._tail(rank)}")
                results.append(json.loads(path.read_text()))
            self._result = results
            return results
        except BaseException as e:
            self._error = e
            raise
        finally:
            self.close()

    def stdout(self, rank: int = 0) -> str:
        """What rank ``rank`` printed (available until the job's files are removed, i.e. before :meth:`result`)."""
        path = self._dir / f"rank{rank}.out"
        return path.read_text(errors="replace") if path.exists() else ""

    # ---------------------------------------------------------------- cleanup
    def close(self) -> None:
        """Kill processes still running (with their children) and remove the job's files."""
        for p in self._procs:
            if p.poll() is None:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(p.pid, signal.SIGKILL)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    p.wait(timeout=5)
        for out, err in self._logs:
            out.close()
            err.close()
        self._logs = []
        shutil.rmtree(self._dir, ignore_errors=True)

    def __enter__(self) -> Job:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __del__(self) -> None:  # pragma: no cover - last resort if a notebook drops the job unread
        with contextlib.suppress(Exception):
            self.close()


def launch(
    *calls: Call,
    nprocs: int,
    helpers: Sequence[Callable[..., Any]] = (),
    env: Mapping[str, str] | None = None,
    timeout_s: float = 120,
) -> Job:
    """Start ``nprocs`` fresh interpreters that run ``calls`` in order; returns a :class:`Job` at once."""
    if not calls:
        raise ValueError("launch needs at least one call(fn, ...)")
    for c in calls:
        if not isinstance(c, Call):
            raise ValueError(f"pass call(fn, **kwargs) objects to launch, got {type(c).__name__}")
    names = [c.name for c in calls]
    if len(set(names)) != len(names):
        raise ValueError(f"each function may be called once per launch, got {names}")
    n = validate.integer("nprocs", nprocs, minimum=1)
    if n > _MAX_PROCS:
        raise ValueError(f"nprocs must be at most {_MAX_PROCS}, got {nprocs!r}")
    timeout = validate.positive("timeout_s", timeout_s)
    for h in helpers:
        _check_function(h, "a helper")
    extra = dict(env or {})
    for k, v in extra.items():
        if not isinstance(k, str) or not isinstance(v, str):
            raise ValueError(f"env must map names to strings, got {k!r}: {v!r}")
    return Job(calls, n, helpers, extra, timeout)
