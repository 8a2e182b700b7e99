"""Measure a codebase's migration debt without running it: CUDA-isms, custom kernels, recompile risks.

>>> from xlaport import scan
>>> res = scan.scan("my_project/")              # every .py, .cu/.cuh, requirements*.txt and pyproject.toml
>>> print(scan.table(res))                      # one line per finding, then a count per rule
>>> res.reaches("error")                        # what `xlaport scan --fail-on error` exits 1 on
>>> scan.to_sarif(res)                          # SARIF 2.1.0 for GitHub code scanning

Modules, from the rules down: :mod:`~xlaport.scan.rules` (one module per rule: its id, severity, why, fix,
chapter, examples and checks; ``xlaport scan --explain RULE``), :mod:`~xlaport.scan.rule` (what a rule is),
:mod:`~xlaport.scan.registry` (where checks register, and the :class:`~xlaport.scan.registry.Hit` they report),
:mod:`~xlaport.scan.walker` (one walk of each syntax tree, calling the checks), :mod:`~xlaport.scan.semantic`
(imports and aliases, scopes, the tensor and host inference the checks judge by), :mod:`~xlaport.scan.result` (the
records: ``Finding``, ``ScanWarning``, ``ScanResult``), :mod:`~xlaport.scan.engine` (parallel scan of files, never
crashes on what it reads), :mod:`~xlaport.scan.files` (which files, of what kind),
:mod:`~xlaport.scan.suppress` (``# xlaport: ignore`` comments, from comment tokens only),
:mod:`~xlaport.scan.config` (``[tool.xlaport]`` in the scanned project's ``pyproject.toml``),
:mod:`~xlaport.scan.output` (a result as a table, JSON, SARIF or markdown: ``table(res)``, ``to_json(res)``, ...),
:mod:`~xlaport.scan.baseline` (accepted findings, matched by rule, file and code text), :mod:`~xlaport.scan.effort`
(person-weeks per finding class, the doctor's estimate), :mod:`~xlaport.scan.ci` (the pull-request check behind
``action.yml``).
Torch-free: nothing here imports torch or the scanned code.
"""

from __future__ import annotations

from .config import DEFAULT_MAX_FILE_SIZE, FAIL_LEVELS, ScanConfig, find_pyproject, load_config
from .engine import SKIP_DIRS, scan, scan_source
from .output import table, to_dict, to_json, to_markdown, to_sarif
from .result import Finding, ScanResult, ScanWarning
from .rules import KERNEL_DOCS, RULES, SEVERITIES, Rule, mapping_fix, rule, rule_ids, severity_rank

__all__ = [
    "scan",
    "scan_source",
    "Finding",
    "ScanWarning",
    "ScanResult",
    "table",
    "to_dict",
    "to_json",
    "to_markdown",
    "to_sarif",
    "Rule",
    "RULES",
    "rule",
    "rule_ids",
    "SEVERITIES",
    "FAIL_LEVELS",
    "severity_rank",
    "mapping_fix",
    "ScanConfig",
    "load_config",
    "find_pyproject",
    "DEFAULT_MAX_FILE_SIZE",
    "SKIP_DIRS",
    "KERNEL_DOCS",
]
