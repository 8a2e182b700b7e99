"""One migration report for a codebase: the scan, the ops per target, a recompile probe, the effort, the cost.

>>> from xlaport import doctor
>>> rep = doctor.diagnose("my_project", entry="my_project/model.py:Step", inputs=["8x64"],
...                       probes=["8x64", "8x80"], cost=doctor.CostInputs("h100_sxm", 64, 0.4, "tpu_v6e", 0.35))
>>> print(rep.to_markdown()); rep.write_html("report.html")

Modules: :mod:`~xlaport.doctor.report` (``diagnose``, ``Report``: markdown, JSON and a self-contained
HTML page), :mod:`~xlaport.doctor.effort` (person-weeks per finding class, assumptions as data),
:mod:`~xlaport.doctor.probe` (the recompile probe, run in a fresh interpreter). Importing this package
does not import torch; tracing an entry point does.
"""

from __future__ import annotations

from .effort import ASSUMPTIONS, Assumption, Effort, EffortRow, assumptions, estimate, parse_assume
from .probe import ProbeCall, ProbeResult, parse_probe, run_probe
from .report import TARGETS, CostInputs, OpsSection, Report, diagnose

__all__ = [
    "diagnose",
    "Report",
    "CostInputs",
    "OpsSection",
    "TARGETS",
    "estimate",
    "Effort",
    "EffortRow",
    "Assumption",
    "ASSUMPTIONS",
    "assumptions",
    "parse_assume",
    "run_probe",
    "parse_probe",
    "ProbeResult",
    "ProbeCall",
]
