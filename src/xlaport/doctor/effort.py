"""Person-weeks per finding class: the doctor's effort estimate, with every assumption as data.

The estimate of a scan (:func:`estimate`, :class:`Effort`, the assumptions) is :mod:`xlaport.scan.effort`,
re-exported here: the pull-request check prices a scan with it too, and the scanner does not import the doctor.
This module adds what only the doctor knows: the ops its trace of an entry point finds raising (:func:`with_ops`).

>>> est = estimate(scan_result)                         # defaults
>>> est = estimate(scan_result, {"weeks_per_kernel": 3})
>>> est.total_weeks, est.rows[0]
"""

from __future__ import annotations

from ..scan.effort import ASSUMPTIONS, Assumption, Effort, EffortRow, assumptions, estimate, parse_assume

__all__ = [
    "ASSUMPTIONS",
    "Assumption",
    "EffortRow",
    "Effort",
    "estimate",
    "with_ops",
    "assumptions",
    "parse_assume",
]


def with_ops(effort: Effort, raising: int, target: str) -> Effort:
    """``effort`` with the ops that raise on ``target`` priced in (``weeks_per_raising_op`` each, validation on top):
    the op trace of the doctor's entry point finds what the scan of the source cannot."""
    from dataclasses import replace

    n = int(raising)
    if n <= 0:
        return effort
    per = effort.value("weeks_per_raising_op")
    row = EffortRow(f"ops raising on {target}", n, n, "ops", per, n * per)
    port = effort.port_weeks + row.weeks
    validation = (effort.kernel_weeks + port) * effort.value("validation_share")
    return replace(effort, rows=(*effort.rows, row), port_weeks=port, validation_weeks=validation)
