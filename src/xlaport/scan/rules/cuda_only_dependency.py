"""``cuda-only-dependency``: CUDA-only dependency.

Imports of packages that exist only for CUDA (apex, bitsandbytes, flash-attn, xformers, DeepSpeed's ops, CuPy,
PyCUDA, Triton, Transformer Engine, ...) and the same packages in `requirements*.txt`, `pyproject.toml`
(dependencies, optional dependencies, dependency groups, Poetry) and `setup(install_requires=...)`. An import
of the scanned tree's own package of the same name is not a dependency; one inside `try: ... except
ImportError` is still reported, as an optional import (a warning, not an error).
"""

from __future__ import annotations

import ast
import re
import tomllib
from typing import TYPE_CHECKING, Any

from ..registry import Hit, check, file_check
from ..rule import Rule
from ._common import _EXTENSIONS, CUDA_ONLY_PACKAGES, _strings, dependency_advice

if TYPE_CHECKING:  # pragma: no cover
    from ..walker import Walker

RULE = Rule(
    id="cuda-only-dependency",
    title="CUDA-only dependency",
    severity="error",
    category="dependency",
    why="The package ships CUDA kernels or CUDA bindings and has no TPU or Trainium build.",
    fix="Replace it with the PyTorch built-in named in the finding, or import it inside `try: ... except ImportError` with a PyTorch fallback.",
    chapter="book/support_matrix",
    see_also=("book/pitfalls",),
    position=5,
    invalid=("import apex\nfrom flash_attn import flash_attn_func\n",),
    valid=("import torch.nn.functional as F\nout = F.scaled_dot_product_attention(\n    q, k, v)\n",),
)


@check(RULE.id, ast.Import, ast.ImportFrom)
def cuda_only_import(w: Walker, node: Any) -> None:
    if node.__class__ is ast.Import:
        modules = [a.name for a in node.names]
    else:
        if node.level or not node.module:
            return
        modules = [node.module]
    for module in modules:
        top = module.split(".", 1)[0]
        info = CUDA_ONLY_PACKAGES.get(top)
        if info is None or (top == "nvidia" and not module.startswith("nvidia.dali")):
            continue
        if top in w.own_packages:
            continue  # the package's own source importing itself (Liger-Kernel's `from liger_kernel.ops import`)
        key = ("cuda-only-dependency", top)
        if key in w.once:
            continue  # one finding per package per file
        w.once.add(key)
        optional = w.optional_import > 0
        if optional:
            what = f"optional import of `{module}` is skipped on a TPU VM or Trainium host (no CUDA build)"
        else:
            what = f"import of `{module}` fails on a TPU VM or Trainium host (CUDA only)"
        w.hit(
            RULE.id,
            node,
            f"{what}; instead: {info[1]}",
            detail=top,
            severity="warning" if optional else "",
        )


@check(RULE.id, ast.Call, attrs={"setup"})
def cuda_only_setup(w: Walker, node: ast.Call) -> None:
    q = w.q
    if q is None or q.startswith("torch.") or q in _EXTENSIONS or w.attr != "setup" or not q.endswith("setup"):
        return
    for k in node.keywords:
        if k.arg not in ("install_requires", "extras_require", "setup_requires"):
            continue
        for s in _strings(k.value):
            m = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", s)
            adv = dependency_advice(m.group(1)) if m else None
            if adv is not None:
                w.hit(
                    RULE.id,
                    node,
                    f"`{s.strip()}` in {k.arg} has no TPU/Trainium build (CUDA only); instead: {adv[1]}",
                    adv[0],
                )


_REQ = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def _requirement_hit(spec: str, line: int) -> Hit | None:
    """The finding for one requirement (``flash-attn>=2``) when it names a CUDA-only package."""
    m = _REQ.match(spec)
    adv = dependency_advice(m.group(1)) if m else None
    if adv is None:
        return None
    msg = (
        f"`{spec}` has no TPU/Trainium build, so installing or importing it fails there (CUDA only); instead: {adv[1]}"
    )
    return Hit(RULE.id, line, 0, msg, adv[0])


@file_check(RULE.id, "req", "pyproject")
def requirements_file(text: str, kind: str) -> list[Hit]:
    """Each CUDA-only package a ``requirements*.txt`` line or a ``pyproject.toml`` dependency list names."""
    if kind == "req":
        specs = [(ln.split("#", 1)[0].strip(), i + 1) for i, ln in enumerate(text.splitlines())]
        found = [_requirement_hit(s, n) for s, n in specs if s and not s.startswith("-")]
        return [h for h in found if h is not None]
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return []  # reported by syntax-error
    lines = text.splitlines()
    hits = []
    for s in _pyproject_requirements(raw):
        m = _REQ.match(s)
        at = next((i + 1 for i, ln in enumerate(lines) if m is not None and m.group(1) in ln), 1)
        h = _requirement_hit(s, at)
        if h is not None:
            hits.append(h)
    return hits


def _pyproject_requirements(raw: dict[str, Any]) -> list[str]:
    """Dependencies, optional dependencies, dependency groups and Poetry's dependencies, as written."""
    names: list[str] = []
    proj = raw.get("project", {}) if isinstance(raw.get("project"), dict) else {}
    names += [s for s in proj.get("dependencies", []) if isinstance(s, str)]
    for v in (proj.get("optional-dependencies") or {}).values():
        names += [s for s in v if isinstance(s, str)] if isinstance(v, list) else []
    groups = raw.get("dependency-groups", {})
    if isinstance(groups, dict):
        for v in groups.values():
            names += [s for s in v if isinstance(s, str)] if isinstance(v, list) else []
    poetry = raw.get("tool", {}).get("poetry", {}) if isinstance(raw.get("tool"), dict) else {}
    if isinstance(poetry, dict) and isinstance(poetry.get("dependencies"), dict):
        names += list(poetry["dependencies"])
    return names
