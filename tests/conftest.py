"""Shared test helpers.

``fresh_python`` runs code in a new interpreter. Use it for anything that imports torch_xla
(importing it changes Dynamo's global config for the whole process) or that must start from a clean
``sys.modules``. Tests that use it are marked ``subprocess`` automatically, so ``make unit``
(``-m "not notebook and not subprocess"``) stays fast.
"""

from __future__ import annotations

import atexit
import importlib
import importlib.util
import json
import os
import re
import subprocess
import sys
import textwrap
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
SRC = str(ROOT / "src")

Runner = Callable[..., subprocess.CompletedProcess[str]]

# The environment fresh interpreters start from: this process's as the session began. Tests that run in this
# process import modules that set variables of their own (torch_xla sets XLA_FLAGS and JAX_PLATFORMS, Inductor its
# cache directory); a child that inherited them would depend on which tests ran before it on the same worker.
_SESSION_ENV = dict(os.environ)


def script(name: str) -> ModuleType:
    """The command-line entry point ``scripts/<name>.py``, loaded from its file as the module ``name`` (once), so that
    a test can call its functions. Nothing imports a script but the tests: code the build or the toolkit needs lives
    in ``xlaport`` or in the site's extension (``_ext/xlaport_site``, on the tests' path by pyproject.toml)."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    if spec is None or spec.loader is None:
        raise ImportError(f"no script scripts/{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pickling look the module up by name
    spec.loader.exec_module(module)
    return module


def run_python(
    code: str | None = None,
    *,
    module: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    unset: Sequence[str] = (),
    timeout: float = 300,
    check: bool = True,
    fork: bool = False,
) -> subprocess.CompletedProcess[str]:
    """Run ``code`` (dedented) with ``python -c``, or ``python -m MODULE ARGS...``, in a fresh interpreter.

    The child starts from the environment of the session's start (:data:`_SESSION_ENV`, not what tests in this
    process have set since) and sees this checkout's ``src`` first on ``PYTHONPATH``, ``PJRT_DEVICE=CPU`` and the
    emulator's ``XLA_FLAGS`` (:mod:`xlaport.xla_cpu`) unless ``env`` says otherwise; ``unset`` removes variables. With
    ``check`` a non-zero exit fails the test with the tail of stderr. ``fork``: for code that imports torch_xla
    first thing, a fork of an interpreter that has already imported torch and torch_xla (tests/forkserver.py),
    which saves the 6 s import; under any other environment than the default, a fresh interpreter as without it.
    """
    if (code is None) == (not module):
        raise ValueError("give either code or module, not both")
    child = {
        **_SESSION_ENV,
        **{k: os.environ[k] for k in ("PYTEST_CURRENT_TEST",) if k in os.environ},
        "PJRT_DEVICE": "CPU",
        "PYTHONPATH": os.pathsep.join(p for p in (SRC, _SESSION_ENV.get("PYTHONPATH")) if p),
    }
    from xlaport import xla_cpu  # torch-free

    xla_cpu.configure(child)  # as the toolkit's own processes: XLA:CPU compiles at LLVM -O0
    child.update(env or {})
    for name in unset:
        child.pop(name, None)
    argv = [sys.executable, "-c", textwrap.dedent(code)] if code is not None else [sys.executable, "-m", *module]
    out = _forked(argv[2], child, timeout) if fork and code is not None else None
    if out is None:
        out = subprocess.run(argv, capture_output=True, text=True, env=child, timeout=timeout)
    if check and out.returncode != 0:
        pytest.fail(f"fresh interpreter exited {out.returncode}:\n{out.stderr[-3000:]}", pytrace=False)
    return out


_FORK_SERVER: Any = None  # this process's fork server, started on first use


def _forked(code: str, env: dict[str, str], timeout: float) -> subprocess.CompletedProcess[str] | None:
    """``code`` run in a fork of this process's fork server (started on first use, under ``env``), or None when
    the server cannot stand for a fresh interpreter under ``env``, or has stopped (the caller then starts one)."""
    global _FORK_SERVER
    from forkserver import ForkServer, ForkServerError

    if _FORK_SERVER is None:
        _FORK_SERVER = ForkServer(env)
        atexit.register(_FORK_SERVER.close)
    try:
        child = _FORK_SERVER.child_env(env)
        return None if child is None else _FORK_SERVER.run(code, child, timeout)
    except ForkServerError:
        return None


@pytest.fixture
def fresh_python() -> Runner:
    """:func:`run_python`, as a fixture (marks the test ``subprocess``)."""
    return run_python


def _chapter_budget(item: pytest.Item) -> float:
    """The time budget of the chapter a ``notebook`` test executes (0 for any other test)."""
    if item.get_closest_marker("notebook") is None:
        return 0.0
    path = getattr(item, "callspec", None) and item.callspec.params.get("path")  # type: ignore[attr-defined]
    if not isinstance(path, Path):
        return 0.0
    meta = json.loads(path.read_text(encoding="utf-8")).get("metadata", {})
    return float(meta.get("xlaport", {}).get("budget_s", 0))


# === pytest -n N --dist loadgroup: which tests share a worker =====================================================
# make test runs the unit, site and browser tests on pytest-xdist workers. A module's tests share its fixtures (a
# subprocess that runs a checker on XLA, a converted edition), and the browser tests of one page share one load of it
# (tests/site/test_browser.py), so each module, and each page of the built site, is one unit of work on one worker.
#
# xdist's own loadgroup reads ``xdist_group`` marks by appending "@group" to a test's node id; from pytest 9.2 on that
# assignment no longer changes the id (https://github.com/pytest-dev/pytest-xdist/issues/1386), so the groups were
# silently ignored and every module fixture and page load ran once per worker. The scheduler below reads the unit of
# work from the node id itself, which works with any pytest.

BROWSER_MODULE = "tests/site/test_browser.py"
CHAPTERS_MODULE = "tests/notebooks/test_chapters_execute.py"
_PAGE_IN_ID = re.compile(r"\[([^\[\]]*?\.html)")


def work_unit(nodeid: str) -> str:
    """The unit of work a test belongs to: its module; for a browser test of a built page, that page; a chapter's
    execution is a unit of its own."""
    module, _, rest = nodeid.partition("::")
    if module == CHAPTERS_MODULE:
        return nodeid
    page = _PAGE_IN_ID.search(rest) if module == BROWSER_MODULE else None
    return f"{module}::{page.group(1)}" if page else module


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadgroup``: whole units of work (:func:`work_unit`) to a worker, in the order collected (the
    costliest first, see :func:`pytest_collection_modifyitems`), a new unit as a worker runs out."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ByWorkUnit(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return work_unit(nodeid)

    config.option.loadscopereorder = False  # keep the order below, not the largest count of tests first
    return ByWorkUnit(config, log)


def _unit_cost(items: list[pytest.Item]) -> float:
    """A rough cost of a unit of work, to start the costliest first: a fresh interpreter (about 6 s: torch and
    torch_xla imported again) dominates; a page of the built site costs about the same whatever its tests."""
    return sum(6.0 if item.get_closest_marker("subprocess") else 0.05 for item in items)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "fresh_python" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.subprocess)
    # The chapters come first, longest budget first (make test runs them on two workers: the long ones start early,
    # so neither worker ends long after the other); then the units of work, costliest first, so that the last unit
    # a worker starts is a short one. The sort is stable: within a unit the tests keep their order.
    budgets = {id(item): _chapter_budget(item) for item in items}
    units: dict[str, list[pytest.Item]] = {}
    for item in items:
        units.setdefault(work_unit(item.nodeid), []).append(item)
    cost = {name: _unit_cost(members) for name, members in units.items()}
    order = {name: i for i, name in enumerate(units)}
    items.sort(
        key=lambda item: (
            not budgets[id(item)],
            -budgets[id(item)],
            -cost[work_unit(item.nodeid)],
            order[work_unit(item.nodeid)],
        )
    )


def toc_files(root: Path = ROOT) -> set[str]:
    """Every document of the book's _toc.yml but the root, as sphinx_external_toc (Jupyter Book's) reads it."""
    from sphinx_external_toc.parsing import parse_toc_yaml

    site = parse_toc_yaml(root / "_toc.yml")
    return {str(doc) for doc in site if doc != site.root.docname}
