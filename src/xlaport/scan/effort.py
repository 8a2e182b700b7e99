"""Person-weeks per finding class: the effort a scan's findings cost, with every assumption as data.

The doctor's report (:mod:`xlaport.doctor`, which re-exports this module's API from :mod:`xlaport.doctor.effort`)
and the pull-request check (:mod:`xlaport.scan.ci`: the debt before and after) both price a scan with it, so it
lives here, below both.

The defaults are planning assumptions, not measurements: a team should replace them with its own
(``[tool.xlaport.effort]`` in the project's ``pyproject.toml``, or ``xlaport doctor --assume KEY=VALUE``).
``weeks_per_kernel`` matches the default of :class:`xlaport.cost.Migration`, so the estimate and
the break-even agree when nothing is overridden.

>>> est = estimate(scan_result)                         # defaults
>>> est = estimate(scan_result, {"weeks_per_kernel": 3})
>>> est.total_weeks, est.rows[0]
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..text import plural
from ..validate import non_negative

__all__ = [
    "ASSUMPTIONS",
    "Assumption",
    "EffortRow",
    "Effort",
    "estimate",
    "assumptions",
    "parse_assume",
]

# key -> (default, unit, what it prices)
ASSUMPTIONS: dict[str, tuple[float, str, str]] = {
    "weeks_per_kernel": (2.0, "person-weeks per kernel", "rewrite one custom kernel in Pallas/NKI and test it"),
    "weeks_per_100_kernel_lines": (
        0.25,
        "person-weeks per 100 lines",
        "extra for long kernels (Triton, CUDA C++ and .cu/.cuh lines)",
    ),
    "weeks_per_device_site": (0.02, "person-weeks per finding", "a device string, .cuda() or torch.cuda call"),
    "weeks_per_amp_site": (0.05, "person-weeks per finding", "fp16 autocast or GradScaler to bf16"),
    "weeks_per_stream_site": (0.1, "person-weeks per finding", "remove a stream, event or CUDA graph"),
    "weeks_per_distributed_site": (0.5, "person-weeks per finding", "NCCL to the target's process group"),
    "weeks_per_dependency": (1.0, "person-weeks per package", "replace one CUDA-only package"),
    "weeks_per_dynamic_shape_site": (0.25, "person-weeks per finding", "make one data-dependent shape static"),
    "weeks_per_host_sync_site": (0.05, "person-weeks per finding", "move a host sync out of a loop"),
    "weeks_per_recompile_site": (0.5, "person-weeks per finding", "a growing cache, view offset or ragged batch"),
    "weeks_per_unparsed_file": (0.2, "person-weeks per file", "port a file that is not Python 3"),
    "weeks_per_raising_op": (
        1.0,
        "person-weeks per op",
        "replace one ATen op that raises on the target (a decomposition, a rewrite or a kernel)",
    ),
    "validation_share": (0.5, "× engineering weeks", "numerics and performance validation on the target"),
}

# finding category -> (assumption, how units are counted)
_CLASSES: dict[str, tuple[str, str]] = {
    "device": ("weeks_per_device_site", "findings"),
    "amp": ("weeks_per_amp_site", "findings"),
    "streams": ("weeks_per_stream_site", "findings"),
    "distributed": ("weeks_per_distributed_site", "findings"),
    "dependency": ("weeks_per_dependency", "packages"),
    "kernel": ("weeks_per_kernel", "kernels"),
    "dynamic-shape": ("weeks_per_dynamic_shape_site", "findings"),
    "host-sync": ("weeks_per_host_sync_site", "findings"),
    "recompile": ("weeks_per_recompile_site", "findings"),
    "unparsed": ("weeks_per_unparsed_file", "files"),
}


@dataclass(frozen=True)
class Assumption:
    key: str
    value: float
    unit: str
    what: str
    source: str  # "default", a pyproject path, or "command line"


@dataclass(frozen=True)
class EffortRow:
    category: str
    findings: int
    units: float
    unit: str
    weeks_per_unit: float
    weeks: float
    lines: int = 0  # the kernels' lines (the kernel row only), priced on top of the units
    weeks_per_100_lines: float = 0.0

    @property
    def amount(self) -> str:
        """The units with their noun in the right number: ``"1 kernel"``, ``"3 findings"``, ``"0.5 findings"``;
        the kernel row adds its lines (``"1 kernel, 10 lines"``)."""
        one = self.unit.removesuffix("s")
        if float(self.units).is_integer():
            text = plural(int(self.units), one, self.unit)
        else:
            text = f"{self.units:g} {self.unit}"
        return f"{text}, {plural(self.lines, 'line')}" if self.weeks_per_100_lines else text

    @property
    def rate(self) -> str:
        """What one unit costs, as the row's weeks are computed: ``"0.02"``, or for kernels
        ``"2 + 0.25 per 100 lines"`` (so that units x rate gives the weeks shown)."""
        if self.weeks_per_100_lines:
            return f"{self.weeks_per_unit:g} + {self.weeks_per_100_lines:g} per 100 lines"
        return f"{self.weeks_per_unit:g}"


@dataclass(frozen=True)
class Effort:
    """The estimate: one row per finding class, kernels apart, and validation on top."""

    rows: tuple[EffortRow, ...]
    assumptions: tuple[Assumption, ...]
    kernels: int
    kernel_lines: int
    kernel_weeks: float
    port_weeks: float
    validation_weeks: float

    @property
    def engineering_weeks(self) -> float:
        return self.kernel_weeks + self.port_weeks

    @property
    def total_weeks(self) -> float:
        return self.engineering_weeks + self.validation_weeks

    def by_category(self) -> dict[str, float]:
        return {r.category: r.weeks for r in self.rows}

    def value(self, key: str) -> float:
        return next(a.value for a in self.assumptions if a.key == key)

    def migration(self, usd_per_person_week: float = 5000.0, **kw: Any) -> Any:
        """The estimate as :class:`xlaport.cost.Migration` (kernels, weeks per kernel, port and validation weeks)."""
        from ..cost import Migration

        per_kernel = self.kernel_weeks / self.kernels if self.kernels else self.value("weeks_per_kernel")
        return Migration(
            kernels=self.kernels,
            person_weeks_per_kernel=per_kernel,
            port_person_weeks=self.port_weeks,
            validation_person_weeks=self.validation_weeks,
            usd_per_person_week=usd_per_person_week,
            **kw,
        )


def parse_assume(items: list[str] | tuple[str, ...]) -> dict[str, float]:
    """``["weeks_per_kernel=3", ...]`` -> dict; one-line ValueError for anything else."""
    out: dict[str, float] = {}
    for s in items:
        key, sep, val = str(s).partition("=")
        key = key.strip().replace("-", "_")
        if not sep or not key:
            raise ValueError(f"bad --assume {s!r}: expected KEY=NUMBER, e.g. weeks_per_kernel=3")
        if key not in ASSUMPTIONS:
            raise ValueError(f"unknown assumption {key!r}; assumptions: {', '.join(ASSUMPTIONS)}")
        try:
            out[key] = float(val)
        except ValueError:
            raise ValueError(f"bad --assume {s!r}: {val!r} is not a number") from None
    return out


def assumptions(
    pyproject: Mapping[str, Any] | None = None, overrides: Mapping[str, Any] | None = None, pyproject_source: str = ""
) -> tuple[Assumption, ...]:
    """Defaults, then the project's ``[tool.xlaport.effort]``, then ``overrides`` (e.g. from the command line)."""
    values = {k: (v[0], "default") for k, v in ASSUMPTIONS.items()}
    for layer, label in ((pyproject or {}, pyproject_source or "pyproject.toml"), (overrides or {}, "command line")):
        for k, v in layer.items():
            key = str(k).replace("-", "_")
            if key not in ASSUMPTIONS:
                raise ValueError(f"unknown effort assumption {k!r} ({label}); assumptions: {', '.join(ASSUMPTIONS)}")
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise ValueError(f"effort assumption {key} must be a number, got {v!r} ({label})")
            values[key] = (non_negative(key, v), label)
    return tuple(Assumption(k, values[k][0], ASSUMPTIONS[k][1], ASSUMPTIONS[k][2], values[k][1]) for k in ASSUMPTIONS)


def estimate(result: Any, overrides: Mapping[str, Any] | None = None, *, use_pyproject: bool = True) -> Effort:
    """Person-weeks for the findings of a :class:`~xlaport.scan.ScanResult`.

    Per class: findings × weeks per finding, except dependencies (distinct packages), kernels (each
    Triton kernel, CUDA extension and ``__global__`` function, plus lines) and files that do not parse.
    """
    from .config import load_config
    from .rules import rule

    py: dict[str, Any] = {}
    src = ""
    if use_pyproject:
        for s in getattr(result, "config_sources", ()):
            if s and s != "defaults":
                cfg = load_config(s)
                if cfg.effort:
                    py, src = cfg.effort, s
                    break
    a = assumptions(py, overrides, src)
    val = {x.key: x.value for x in a}
    groups: dict[str, list[Any]] = {}
    for f in result.findings:
        groups.setdefault(rule(f.rule).category, []).append(f)
    rows = []
    kernels = kernel_lines = 0
    kernel_weeks = port = 0.0
    for cat, (key, unit) in _CLASSES.items():
        fs = groups.get(cat, [])
        if not fs:
            continue
        per = val[key]
        if cat == "dependency":
            units: float = len({f.detail for f in fs})
            weeks = units * per
        elif cat == "kernel":
            n = sum(int(f.detail) if f.rule == "cuda-source" and f.detail.isdigit() else 1 for f in fs)
            lines = sum(f.lines for f in fs)
            kernels, kernel_lines = n, lines
            units = n
            weeks = n * per + lines / 100 * val["weeks_per_100_kernel_lines"]
        elif cat == "unparsed":
            units = len({f.path for f in fs})
            weeks = units * per
        else:
            units = len(fs)
            weeks = units * per
        if cat == "kernel":
            kernel_weeks = weeks
        else:
            port += weeks
        extra = (kernel_lines, val["weeks_per_100_kernel_lines"]) if cat == "kernel" else (0, 0.0)
        rows.append(EffortRow(cat, len(fs), units, unit, per, weeks, *extra))
    validation = (kernel_weeks + port) * val["validation_share"]
    return Effort(tuple(rows), a, kernels, kernel_lines, kernel_weeks, port, validation)
