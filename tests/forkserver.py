"""Fresh interpreters without the import: forks of one that has already imported torch and torch_xla.

Importing torch and torch_xla costs about 6 s of CPU per interpreter (torch_xla pulls in Dynamo, Inductor and
functorch), and the tests that run code on XLA:CPU each start a new interpreter (importing torch_xla changes Dynamo's
global configuration, so it stays out of the test process). A :class:`ForkServer` is one interpreter that imports
them once and then, for each snippet, forks a child that runs it as ``python -c`` would: in a new ``__main__``, with
its own standard output and error, its exit status the reply. The child starts with nothing of XLA's runtime
initialised (no PJRT client, no compiled program, no counters), as a fresh interpreter does.

Only for code that imports torch_xla itself, first thing, under the environment the server was started with: a
variable the code sets before its import would come too late here. Variables that change from test to test
(:data:`VOLATILE`) may differ; the child gets the caller's. ``run_python(..., fork=True)`` in conftest.py falls back
to a fresh interpreter for any other difference.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path

# Runs in the server: import once, then one child per request (a JSON line on stdin). Replies on a copy of the
# original stdout: {"pid": ...} when the child starts, {"returncode": ...} when it ends.
SERVER = r"""
import json, os, sys, traceback, types
import torch, torch_xla  # what every child is spared

reply = os.fdopen(os.dup(1), "w", buffering=1)
print(json.dumps({"env": dict(os.environ)}), file=reply)  # the environment as the imports left it
requests = sys.stdin
for line in requests:
    req = json.loads(line)
    pid = os.fork()
    if pid == 0:
        rc = 1
        try:
            os.setpgid(0, 0)  # the caller can stop the child and whatever it started, together
            reply.close()
            sys.stdin = open(os.devnull)
            os.dup2(sys.stdin.fileno(), 0)
            for fd, path in ((1, req["stdout"]), (2, req["stderr"])):
                f = os.open(path, os.O_WRONLY | os.O_TRUNC)
                os.dup2(f, fd)
                os.close(f)
            os.chdir(req["cwd"])
            os.environ.clear()
            os.environ.update(req["env"])
            sys.argv = ["-c"]
            main = types.ModuleType("__main__")
            main.__dict__["__builtins__"] = __builtins__
            sys.modules["__main__"] = main
            exec(compile(req["code"], "<string>", "exec"), main.__dict__)
            rc = 0
        except SystemExit as e:
            if e.code is None or isinstance(e.code, int):
                rc = e.code or 0
            else:
                print(e.code, file=sys.stderr)
                rc = 1
        except BaseException:
            traceback.print_exc()
            rc = 1
        finally:
            try:
                import atexit, threading
                threading._shutdown()  # as at interpreter exit: wait for threads that are not daemons
                atexit._run_exitfuncs()
                sys.stdout.flush()
                sys.stderr.flush()
            finally:
                os._exit(rc)
    print(json.dumps({"pid": pid}), file=reply)
    _, status = os.waitpid(pid, 0)
    print(json.dumps({"returncode": os.waitstatus_to_exitcode(status)}), file=reply)
"""


class ForkServerError(RuntimeError):
    """The server stopped answering: the caller runs the code in a fresh interpreter instead."""


class ForkServer:
    """One server process; :meth:`run` is ``subprocess.run([python, "-c", code], ...)`` for code that imports
    torch_xla, under the server's environment ``env``."""

    def __init__(self, env: Mapping[str, str]) -> None:
        self.env = dict(env)
        self.proc = subprocess.Popen(
            [sys.executable, "-c", SERVER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=self.env,
        )
        self._buffer = b""
        self._after_import: dict[str, str] | None = None

    def alive(self) -> bool:
        return self.proc.poll() is None

    def _reply(self, timeout: float) -> dict:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                chunk = os.read(fd, 65536)
                if not chunk:
                    raise ForkServerError("the fork server exited")
                self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return json.loads(line)

    def _imported(self) -> dict[str, str]:
        """The server's environment after its imports (torch_xla sets some variables, XLA_FLAGS among them)."""
        if self._after_import is None:
            try:
                self._after_import = self._reply(timeout=120)["env"]
            except (TimeoutError, KeyError) as e:
                self.close()
                raise ForkServerError(f"the fork server did not finish its imports: {e!r}") from e
        return self._after_import

    def child_env(self, env: Mapping[str, str]) -> dict[str, str] | None:
        """The environment a fresh interpreter started under ``env`` would have once it imported torch and
        torch_xla, if a child of this server can stand for it: ``env`` is the server's own, but for variables that
        differ from test to test and that nothing reads on import (:data:`VOLATILE`). None if it cannot."""
        if not self.alive() or _stable(env) != _stable(self.env):
            return None
        return {**_stable(self._imported()), **{k: v for k, v in env.items() if k in VOLATILE}}

    def run(self, code: str, env: Mapping[str, str], timeout: float) -> subprocess.CompletedProcess[str]:
        """``code`` in a new child under ``env`` (from :meth:`child_env`)."""
        if not self.alive():
            raise ForkServerError("the fork server exited")
        assert self.proc.stdin is not None
        argv = [sys.executable, "-c", code]
        with tempfile.TemporaryDirectory(prefix="xlaport-fork-") as tmp:
            out, err = Path(tmp) / "stdout", Path(tmp) / "stderr"
            out.touch()
            err.touch()
            request = {"code": code, "env": dict(env), "cwd": os.getcwd(), "stdout": str(out), "stderr": str(err)}
            try:
                self.proc.stdin.write((json.dumps(request) + "\n").encode())
                self.proc.stdin.flush()
                pid = self._reply(timeout=60)["pid"]
            except (OSError, TimeoutError) as e:
                self.close()
                raise ForkServerError(f"the fork server did not start a child: {e!r}") from e
            try:
                returncode = self._reply(timeout)["returncode"]
            except TimeoutError:
                os.killpg(pid, signal.SIGKILL)
                self._reply(timeout=30)
                raise subprocess.TimeoutExpired(argv, timeout, out.read_text(), err.read_text()) from None
            return subprocess.CompletedProcess(argv, returncode, out.read_text(), err.read_text())

    def close(self) -> None:
        if self.alive():
            self.proc.kill()
        self.proc.wait()
        for pipe in (self.proc.stdin, self.proc.stdout):
            if pipe is not None:
                pipe.close()


# Variables that change while the tests run and that nothing reads on import; the child gets the caller's value.
# PYTEST_CURRENT_TEST: the running test's id. TORCHINDUCTOR_CACHE_DIR: set to its default by the first test in the
# process that uses Inductor, and read when Inductor first needs its cache.
VOLATILE = frozenset({"PYTEST_CURRENT_TEST", "TORCHINDUCTOR_CACHE_DIR"})


def _stable(env: Mapping[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if k not in VOLATILE}
