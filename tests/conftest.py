"""Shared test helpers.

``fresh_python`` runs code in a new interpreter. Use it for anything that imports torch_xla
(importing it changes Dynamo's global config for the whole process) or that must start from a clean
``sys.modules``. Tests that use it are marked ``subprocess`` automatically, so ``make unit``
(``-m "not notebook and not subprocess"``) stays fast.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import ModuleType

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
SRC = str(ROOT / "src")
SCRIPTS = str(ROOT / "scripts")

Runner = Callable[..., subprocess.CompletedProcess[str]]


def script(name: str) -> ModuleType:
    """Import ``scripts/<name>.py`` as the module ``name`` (the scripts import one another by name)."""
    if SCRIPTS not in sys.path:
        sys.path.insert(0, SCRIPTS)
    return importlib.import_module(name)


def run_python(
    code: str | None = None,
    *,
    module: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    unset: Sequence[str] = (),
    timeout: float = 300,
    check: bool = True,
) -> subprocess.CompletedProcess[str]:
    """Run ``code`` (dedented) with ``python -c``, or ``python -m MODULE ARGS...``, in a fresh interpreter.

    The child sees this checkout's ``src`` first on ``PYTHONPATH``, ``PJRT_DEVICE=CPU`` and the emulator's
    ``XLA_FLAGS`` (:mod:`xlaport.xla_cpu`) unless ``env`` says otherwise; ``unset`` removes variables. With ``check`` a non-zero exit fails the test with the
    tail of stderr.
    """
    if (code is None) == (not module):
        raise ValueError("give either code or module, not both")
    child = {
        **os.environ,
        "PJRT_DEVICE": "CPU",
        "PYTHONPATH": os.pathsep.join(p for p in (SRC, os.environ.get("PYTHONPATH")) if p),
    }
    from xlaport import xla_cpu  # torch-free

    xla_cpu.configure(child)  # as the toolkit's own processes: XLA:CPU compiles at LLVM -O0
    child.update(env or {})
    for name in unset:
        child.pop(name, None)
    argv = [sys.executable, "-c", textwrap.dedent(code)] if code is not None else [sys.executable, "-m", *module]
    out = subprocess.run(argv, capture_output=True, text=True, env=child, timeout=timeout)
    if check and out.returncode != 0:
        pytest.fail(f"fresh interpreter exited {out.returncode}:\n{out.stderr[-3000:]}", pytrace=False)
    return out


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


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "fresh_python" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.subprocess)
    # `pytest -n 2 --dist loadgroup` (make test's unit, site and browser tests): each module's tests go to one worker,
    # so its fixtures are set up once, not once per worker; the browser tests of one page go to one worker, which
    # loads that page once for all of them (tests/site/test_browser.py), and the pages spread over the workers. The
    # chapters (make test runs them one at a time) come first, shortest budget first.
    budgets = {id(item): _chapter_budget(item) for item in items}
    for item in items:
        module = item.nodeid.split("::")[0]
        page = getattr(item, "callspec", None) and item.callspec.params.get("page")  # type: ignore[attr-defined]
        group = "chapters" if budgets[id(item)] else f"{module}::{page}" if isinstance(page, str) else module
        item.add_marker(pytest.mark.xdist_group(group))
    items.sort(key=lambda item: (not budgets[id(item)], budgets[id(item)]))


def toc_files(root: Path = ROOT) -> set[str]:
    """Every `file:` entry of the book's _toc.yml."""
    found: set[str] = set()

    def walk(node: object) -> None:
        if isinstance(node, dict):
            if "file" in node:
                found.add(str(node["file"]))
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(yaml.safe_load((root / "_toc.yml").read_text(encoding="utf-8")))
    return found
