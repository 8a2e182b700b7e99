"""tests/forkserver.py: a forked child behaves as ``python -c`` in a fresh interpreter, with torch_xla imported."""

from __future__ import annotations

import json
import os
import subprocess
import textwrap

import pytest

from conftest import run_python


def test_a_forked_child_is_a_fresh_interpreter_with_torch_xla_imported() -> None:
    first = run_python(
        """
        import sys
        import torch, torch_xla
        import torch_xla.debug.metrics as met
        print("main", __name__, sys.argv, "torch_xla" in sys.modules)
        print("compiles before", met.metric_data("CompileTime"))
        y = (torch.ones(3, device=torch_xla.device()) * 2).sum()
        torch_xla.sync(wait=True)
        print("compiles after", met.metric_data("CompileTime")[0], y.item())
        print("to stderr", file=sys.stderr)
        LEFT_BEHIND = 1
        """,
        fork=True,
    )
    assert "main __main__ ['-c'] True" in first.stdout, first.stdout
    assert "compiles before None" in first.stdout and "compiles after 1 6.0" in first.stdout, first.stdout
    assert first.stderr.strip().endswith("to stderr"), first.stderr
    # the next child starts from the server, not from the last child: no counters, no globals, no cached program
    second = run_python(
        """
        import torch, torch_xla
        import torch_xla.debug.metrics as met
        print("globals", "LEFT_BEHIND" in globals(), met.metric_data("CompileTime"))
        (torch.ones(3, device=torch_xla.device()) * 2).sum().item()
        print("compiles", met.metric_data("CompileTime")[0])
        """,
        fork=True,
    )
    assert "globals False None" in second.stdout and "compiles 1" in second.stdout, second.stdout


def test_each_test_gets_a_fork_with_its_own_environment() -> None:
    """A fork, not a fresh interpreter (its parent is the server, not this process), in this test's environment:
    pytest's PYTEST_CURRENT_TEST differs from the test that started the server."""
    out = run_python("import os; print(os.getppid(), os.environ['PYTEST_CURRENT_TEST'])", fork=True).stdout.split()
    assert int(out[0]) != os.getpid(), "a fresh interpreter ran, not a fork of the server"
    assert out[1] == os.environ["PYTEST_CURRENT_TEST"].split()[0], out


def test_a_forked_child_exits_as_python_does() -> None:
    assert run_python("import sys; sys.exit(3)", fork=True, check=False).returncode == 3
    assert run_python("import sys; sys.exit('why')", fork=True, check=False).returncode == 1
    failed = run_python("def f():\n    raise KeyError('k')\nf()", fork=True, check=False)
    assert failed.returncode == 1 and "Traceback" in failed.stderr and "KeyError: 'k'" in failed.stderr
    assert run_python("print('ok')", fork=True).stdout == "ok\n"


def test_a_forked_child_that_runs_too_long_is_stopped_and_the_server_goes_on() -> None:
    with pytest.raises(subprocess.TimeoutExpired):
        run_python(
            textwrap.dedent("""
            import subprocess, sys, time
            subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
            time.sleep(60)
        """),
            fork=True,
            timeout=3,
        )
    assert run_python("print('next')", fork=True).stdout == "next\n"


def test_another_environment_gets_a_fresh_interpreter() -> None:
    out = run_python(
        "import os, sys; print(os.environ['XLAPORT_PROBE'], 'torch_xla' in sys.modules)",
        fork=True,
        env={"XLAPORT_PROBE": "1"},
    )
    assert out.stdout.split() == ["1", "False"], out.stdout


def test_a_forked_childs_environment_is_a_fresh_interpreters() -> None:
    """After importing torch_xla (which sets XLA_FLAGS, JAX_PLATFORMS and more), a fork's environment is the one a
    fresh interpreter started by this test ends with."""
    code = "import json, os, torch, torch_xla; print(json.dumps(dict(os.environ)))"
    forked = json.loads(run_python(code, fork=True).stdout.splitlines()[-1])
    fresh = json.loads(run_python(code).stdout.splitlines()[-1])
    assert forked == fresh, {
        k: (forked.get(k), fresh.get(k)) for k in set(forked) | set(fresh) if forked.get(k) != fresh.get(k)
    }
