"""Imports inside ``xlaport`` point one way: no module imports, directly or through others, one that imports it.

The check reads the source with :mod:`ast` and imports nothing. It collects every ``import xlaport...`` and
``from ... import ...`` of an xlaport module, at module level and inside functions (a function-level import is how a
cycle hides: it runs later, but the two modules still depend on each other), with relative imports resolved. An import
under ``if TYPE_CHECKING:`` never runs and is left out.

Where an import goes:

- ``import a.b.c`` is an import of ``a.b.c``; ``from a.b import c`` is an import of ``a.b.c`` when ``c`` is a submodule,
  and of the package ``a.b`` (its ``__init__``) when ``c`` is a name defined there.
- A package that exports names lazily (``lazy_exports`` in ``xlaport/_lazy.py``, PEP 562: ``xlaport``,
  ``xlaport.kernels``, ``xlaport.perf``, ``xlaport.workloads``) imports the defining submodule on first attribute
  access, not when the package is imported. So its lazy table is not an edge from the package; ``from xlaport import
  Target`` is an import of ``xlaport.targets``, the module that runs.
- ``xlaport/__init__.py`` counts like any module. Importing any ``xlaport.x`` runs it first, so its own imports (the
  ``_lazy`` helper, ``detect``) are real edges, and they must not lead back to a module that imports ``xlaport``.
  In the package graph it is the node ``xlaport``.
- ``importlib.import_module`` with a computed name (the CLI's subcommands, the reference pages, the scan rules found by
  ``pkgutil``) is not an import statement and is not seen here: each of those loads a module above the one calling it.

Two graphs are checked: modules, and first-level packages (``xlaport.reference.hardware`` -> ``xlaport.cost.facts``
is the edge ``reference -> cost``; edges inside one package are not in it).
"""

from __future__ import annotations

import ast
import textwrap
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"
PACKAGE = "xlaport"

#: Cycles allowed for now, each the set of modules in it (a strongly connected component), with who fixes it and
#: when, e.g. ``frozenset({"xlaport.a.x", "xlaport.a.y"}): "fixed in the a refactor"``. The test fails if one is gone
#: (remove it here) or has grown (the set no longer matches), so an exception cannot outlive its cycle. Empty: the last
#: one, exercises.common <-> exercises.progress, went with the exercises refactor (exercises.result holds ``Check``).
KNOWN_MODULE_CYCLES: dict[frozenset[str], str] = {}


@dataclass(frozen=True)
class Edge:
    """``source`` imports ``target`` at ``path``:``line``."""

    source: str
    target: str
    path: str
    line: int


def find_modules(root: Path, package: str) -> dict[str, Path]:
    """Every module of ``package`` (a directory under ``root``) by dotted name; a package is its ``__init__.py``."""
    found: dict[str, Path] = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(node: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """The import statements under ``node``, at any depth, except those in the body of ``if TYPE_CHECKING:``."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.Import | ast.ImportFrom):
            yield child
        elif isinstance(child, ast.If) and _is_type_checking(child.test):
            for other in child.orelse:
                yield from _imports(ast.Module(body=[other], type_ignores=[]))
        else:
            yield from _imports(child)


def _lazy_table(tree: ast.Module) -> dict[str, str]:
    """The names a package exports through ``lazy_exports(__name__, TABLE, ...)``, each to its submodule's name."""
    tables: dict[str, dict[str, str]] = {}
    used: list[str] = []
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Dict):
            for target in stmt.targets:
                if isinstance(target, ast.Name):
                    tables[target.id] = {
                        k.value: v.value
                        for k, v in zip(stmt.value.keys, stmt.value.values)
                        if isinstance(k, ast.Constant) and isinstance(v, ast.Constant)
                    }
        for node in ast.walk(stmt):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "lazy_exports"
                and len(node.args) >= 2
                and isinstance(node.args[1], ast.Name)
            ):
                used.append(node.args[1].id)
    return {name: sub for table in used for name, sub in tables.get(table, {}).items()}


def import_edges(root: Path, package: str) -> list[Edge]:
    """Every import of a ``package`` module by a ``package`` module (self-imports left out)."""
    modules = find_modules(root, package)
    trees = {name: ast.parse(path.read_text(encoding="utf-8"), str(path)) for name, path in modules.items()}
    lazy = {name: _lazy_table(tree) for name, tree in trees.items() if modules[name].name == "__init__.py"}

    def known(dotted: str) -> str:
        """``dotted`` or its longest prefix that is a module (an attribute path such as ``a.b.Name``)."""
        while dotted not in modules and "." in dotted:
            dotted = dotted.rsplit(".", 1)[0]
        return dotted

    edges: list[Edge] = []
    for name, tree in trees.items():
        path = modules[name]
        here = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        targets: list[tuple[str, int]] = []
        for stmt in _imports(tree):
            if isinstance(stmt, ast.Import):
                targets += [(known(alias.name), stmt.lineno) for alias in stmt.names]
                continue
            if stmt.level:
                base = here.rsplit(".", stmt.level - 1)[0] if stmt.level > 1 else here
                origin = f"{base}.{stmt.module}" if stmt.module else base
            else:
                origin = stmt.module or ""
            for alias in stmt.names:
                if f"{origin}.{alias.name}" in modules:
                    targets.append((f"{origin}.{alias.name}", stmt.lineno))
                elif alias.name in lazy.get(origin, {}):
                    targets.append((f"{origin}.{lazy[origin][alias.name]}", stmt.lineno))
                else:
                    targets.append((known(origin), stmt.lineno))
        for target, line in targets:
            if target in modules and target != name:
                edges.append(Edge(name, target, path.relative_to(root).as_posix(), line))
    return edges


def package_edges(edges: Iterable[Edge], package: str) -> list[Edge]:
    """The edges between first-level packages and modules of ``package`` (``package`` itself is one node)."""

    def top(module: str) -> str:
        parts = module.split(".")
        return parts[1] if len(parts) > 1 else package

    return [Edge(top(e.source), top(e.target), e.path, e.line) for e in edges if top(e.source) != top(e.target)]


def strongly_connected(edges: Iterable[Edge]) -> list[set[str]]:
    """The strongly connected components with more than one node (Tarjan's algorithm, iterative)."""
    graph: dict[str, set[str]] = defaultdict(set)
    for e in edges:
        graph[e.source].add(e.target)
        graph.setdefault(e.target, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            nxt = next(successors, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(component)
    return found


def shortest_path(edges: Iterable[Edge], component: set[str], start: str, goal: str) -> list[Edge]:
    """A shortest path of edges from ``start`` to ``goal`` inside the component (breadth first, in name order)."""
    by_source: dict[str, list[Edge]] = defaultdict(list)
    for e in sorted(edges, key=lambda e: (e.source, e.target, e.path, e.line)):
        if e.source in component and e.target in component:
            by_source[e.source].append(e)
    came: dict[str, Edge] = {}
    frontier = [start]
    while frontier:
        following: list[str] = []
        for node in frontier:
            for e in by_source[node]:
                if e.target in came or e.target == start:
                    continue
                came[e.target] = e
                if e.target == goal:
                    path = [e]
                    while path[0].source != start:
                        path.insert(0, came[path[0].source])
                    return path
                following.append(e.target)
        frontier = following
    raise AssertionError(f"no path from {start} to {goal} in {sorted(component)}")


def describe(cycle: list[Edge]) -> str:
    """``a -> b -> a``, then each edge with the file and line of its import."""
    names = " -> ".join([cycle[0].source, *(e.target for e in cycle)])
    where = "".join(f"\n    {e.source} -> {e.target}  ({e.path}:{e.line})" for e in cycle)
    return names + where


def cycles(edges: list[Edge], allowed: Iterable[frozenset[str]] = ()) -> list[str]:
    """Each cycle found, described, except in the strongly connected components listed in ``allowed``: for every
    import between two modules of a component, the shortest cycle through it, each cycle once. So every import that
    closes a cycle is named, with where it is; cutting one of the imports of each cycle breaks them all."""
    skip = set(allowed)
    found: list[str] = []
    for component in sorted(strongly_connected(edges), key=min):
        if frozenset(component) in skip:
            continue
        first = {}  # one edge per (source, target): the first import, by file and line
        for e in sorted(edges, key=lambda e: (e.path, e.line)):
            if e.source in component and e.target in component:
                first.setdefault((e.source, e.target), e)
        seen: set[frozenset[tuple[str, str]]] = set()
        for (source, target), e in sorted(first.items()):
            cycle = [e] if target == source else [e, *shortest_path(edges, component, target, source)]
            key = frozenset((c.source, c.target) for c in cycle)
            if key in seen:
                continue
            seen.add(key)
            while cycle[0].source != min(c.source for c in cycle):  # start each cycle at its first name
                cycle = [*cycle[1:], cycle[0]]
            found.append(describe(cycle))
    return found


@pytest.fixture(scope="module")
def edges() -> list[Edge]:
    return import_edges(SRC, PACKAGE)


def test_modules_import_one_way(edges: list[Edge]) -> None:
    found = cycles(edges, KNOWN_MODULE_CYCLES)
    assert not found, "import cycles between modules (files under src/):\n" + "\n".join(found)


def test_packages_import_one_way(edges: list[Edge]) -> None:
    found = cycles(package_edges(edges, PACKAGE))
    assert not found, "import cycles between xlaport's packages (files under src/):\n" + "\n".join(found)


def stale(edges: list[Edge], allowed: dict[frozenset[str], str]) -> list[str]:
    """The allowed cycles that are not, as listed, a strongly connected component of ``edges``."""
    components = [frozenset(c) for c in strongly_connected(edges)]
    return [f"{sorted(c)} ({why})" for c, why in allowed.items() if c not in components]


def test_known_cycles_are_still_there(edges: list[Edge]) -> None:
    """An allowed cycle that is gone (or has grown) must leave the allow-list, so that the exception cannot rot."""
    gone = stale(edges, KNOWN_MODULE_CYCLES)
    assert not gone, "no longer a cycle as listed; remove it from KNOWN_MODULE_CYCLES:\n" + "\n".join(gone)


def test_every_package_is_read(edges: list[Edge]) -> None:
    """The check sees the whole tree: every subpackage, exercises included, and imports inside functions."""
    sources = {e.source.split(".")[1] for e in edges if e.source != PACKAGE}
    for package in ("cli", "cost", "doctor", "exercises", "ops", "perf", "reference", "scan"):
        assert package in sources
    # `from .. import __version__` inside a function of xlaport/cli/__init__.py
    assert any(e.source == "xlaport.cli" and e.target == PACKAGE for e in edges)


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")


def test_checker_finds_a_cycle(tmp_path: Path) -> None:
    """The checker is not vacuous: a cycle through a function-level relative import is found and named."""
    _write(
        tmp_path,
        {
            "pkg/__init__.py": "from ._lazy import lazy_exports\n_LAZY = {'Thing': 'low.things'}\n"
            "__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())\n",
            "pkg/_lazy.py": "",
            "pkg/low/__init__.py": "",
            "pkg/low/things.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..high import page\n",
            "pkg/low/records.py": "def render():\n    from ..high import page\n",
            "pkg/high/__init__.py": "",
            "pkg/high/page.py": "from pkg.low import records\nfrom pkg import Thing\n",
        },
    )
    edges = import_edges(tmp_path, "pkg")
    assert {(e.source, e.target) for e in edges} == {
        ("pkg", "pkg._lazy"),
        ("pkg.low.records", "pkg.high.page"),  # inside a function; `page` is a submodule
        ("pkg.high.page", "pkg.low.records"),
        ("pkg.high.page", "pkg.low.things"),  # a lazy export resolves to the module that defines it
    }  # the TYPE_CHECKING import is left out
    assert cycles(edges) == [
        "pkg.high.page -> pkg.low.records -> pkg.high.page"
        "\n    pkg.high.page -> pkg.low.records  (pkg/high/page.py:1)"
        "\n    pkg.low.records -> pkg.high.page  (pkg/low/records.py:2)"
    ]
    allowed = {frozenset({"pkg.high.page", "pkg.low.records"}): "fixed later"}
    assert cycles(edges, allowed) == [] and stale(edges, allowed) == []
    assert stale(edges, {frozenset({"pkg.high.page", "pkg.low.things"}): "gone"}) == [
        "['pkg.high.page', 'pkg.low.things'] (gone)"
    ]
    assert cycles(package_edges(edges, "pkg")) == [
        "high -> low -> high\n    high -> low  (pkg/high/page.py:1)\n    low -> high  (pkg/low/records.py:2)"
    ]


def test_checker_finds_a_longer_package_cycle(tmp_path: Path) -> None:
    """Three packages in a ring, with no module-level cycle: only the package graph has a cycle."""
    _write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/a/__init__.py": "",
            "pkg/a/x.py": "from ..b import y\n",
            "pkg/b/__init__.py": "",
            "pkg/b/y.py": "",
            "pkg/b/z.py": "import pkg.c.w\n",
            "pkg/c/__init__.py": "",
            "pkg/c/w.py": "from pkg.a import x as _\n",
        },
    )
    edges = import_edges(tmp_path, "pkg")
    assert cycles(edges) == []
    assert cycles(package_edges(edges, "pkg")) == [
        "a -> b -> c -> a\n    a -> b  (pkg/a/x.py:1)\n    b -> c  (pkg/b/z.py:1)\n    c -> a  (pkg/c/w.py:1)"
    ]
