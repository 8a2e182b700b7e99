"""What the zoo sweep measured: per stage, per run, per model and target, and the whole sweep (tables, JSON).

Plain records with no torch inside: :class:`SweepResult` reads back a recorded sweep
(``reference/data/zoo-sweep.json``) anywhere, and prints its table, pass rates and summary.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from ..text import plural
from .config import SweepConfig

__all__ = ["StageResult", "RunResult", "ModelResult", "SweepResult"]


@dataclass
class StageResult:
    """One check (forward or training step): did it run, and how close it came to the CPU."""

    ran: bool = False
    passed: bool = False
    error: str | None = None
    tol_needed: float | None = None  # forward: smallest atol=rtol that passes; train: of the loss
    max_abs: float | None = None
    grad_rel_l2: float | None = None  # train only
    compiles: int | None = None
    seconds: float | None = None
    raises: list[str] = field(default_factory=list)  # ops the target would raise on
    falls_back: list[str] = field(default_factory=list)  # ops the target runs on the CPU
    n_ops: int = 0
    why: str = ""
    cpu_fallbacks: dict[str, int] = field(default_factory=dict)  # emulator: ops torch_xla ran on the CPU
    emulator_fault: str | None = None  # a failure caused by the emulator, not by the target's own rules


@dataclass
class RunResult:
    """A short training run: steps, compiles, time, useful tokens.

    ``wall_s`` is the time waited; ``cpu_s`` this process's CPU time over the same steps (None in sweeps recorded
    before it was measured). Throughput compares runs by CPU time where both have it: a busy machine stretches wall
    time unevenly and CPU time hardly at all.
    """

    steps: int = 0
    compiles: int = 0
    distinct_shapes: int = 0
    wall_s: float = 0.0
    compile_s: float | None = None
    useful: int = 0
    positions: int = 0
    cpu_s: float | None = None

    @property
    def tokens_per_s(self) -> float:
        """Useful tokens per second waited."""
        return self.useful / self.wall_s if self.wall_s > 0 else math.nan

    @property
    def tokens_per_cpu_s(self) -> float:
        """Useful tokens per second of this process's CPU time (nan where it was not measured)."""
        return self.useful / self.cpu_s if self.cpu_s else math.nan

    @property
    def useful_share(self) -> float:
        return self.useful / self.positions if self.positions else math.nan


@dataclass
class ModelResult:
    model: str
    family: str
    target: str
    kind: str = ""  # real / emulated
    precision: str | None = None
    params: int = 0
    forward: StageResult = field(default_factory=StageResult)
    train: StageResult = field(default_factory=StageResult)
    fixed: RunResult | None = None
    varied: RunResult | None = None
    varied_error: str | None = None
    untied: int = 0  # tensors that were one tied parameter on the CPU and came apart in .to(device)
    wall_s: float = 0.0

    @property
    def ratio(self) -> float | None:
        """Useful tokens/s of the varied run over the fixed-shape run's: per CPU second where both runs measured
        it (what a busy machine does not move), else per second waited."""
        if self.fixed is None or self.varied is None:
            return None
        if self.fixed.cpu_s and self.varied.cpu_s:
            f, v = self.fixed.tokens_per_cpu_s, self.varied.tokens_per_cpu_s
        else:
            f, v = self.fixed.tokens_per_s, self.varied.tokens_per_s
        return v / f if f and not math.isnan(f) and not math.isnan(v) else None

    def notes(self) -> str:
        """Short reasons for what failed: untied weights, emulator faults, errors, tolerance misses."""
        out = []
        if self.untied:
            out.append("weights untied by .to()")
        for name, st in (("forward", self.forward), ("train", self.train)):
            if st.emulator_fault:
                op = st.emulator_fault.split(" ", 1)[0].removeprefix("aten::").rstrip(",")
                out.append(f"{name}: emulator ({op} on CPU)")
            elif st.error:
                out.append(f"{name}: {_short(st.error)}")
            elif st.ran and not st.passed and "outside" in st.why:
                out.append(f"{name}: outside tolerance")
            if st.raises:
                out.append(f"{name}: {plural(len(st.raises), 'op')} {'raises' if len(st.raises) == 1 else 'raise'}")
        if self.varied_error:
            out.append(f"varied: {_short(self.varied_error)}")
        return "; ".join(dict.fromkeys(out))

    def no_cliff(self, cliff_ratio: float) -> bool:
        r = self.ratio
        return self.train.passed and r is not None and r >= cliff_ratio

    def as_dict(self, cliff_ratio: float) -> dict[str, Any]:
        d = asdict(self)
        for run in ("fixed", "varied"):
            r = getattr(self, run)
            if r is not None:
                d[run]["tokens_per_s"] = _finite(r.tokens_per_s)
                d[run]["useful_share"] = _finite(r.useful_share)
        d["ratio"] = _finite(self.ratio)
        d["no_cliff"] = self.no_cliff(cliff_ratio)
        return _clean(d)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ModelResult:
        """The inverse of :meth:`as_dict` (derived fields are recomputed)."""

        def stage(x: Mapping[str, Any]) -> StageResult:
            return StageResult(**{k: v for k, v in x.items() if k in StageResult.__dataclass_fields__})

        def run(x: Mapping[str, Any] | None) -> RunResult | None:
            if x is None:
                return None
            return RunResult(**{k: v for k, v in x.items() if k in RunResult.__dataclass_fields__})

        plain = {k: v for k, v in d.items() if k in cls.__dataclass_fields__ and k not in _NESTED}
        return cls(
            **plain,
            forward=stage(d["forward"]),
            train=stage(d["train"]),
            fixed=run(d.get("fixed")),
            varied=run(d.get("varied")),
        )


_NESTED = ("forward", "train", "fixed", "varied")


def _short(error: str) -> str:
    """A few words for the table's notes: the op a missing-kernel error names, else the message's start."""
    m = re.search(r"operator '([^']+)' is not implemented", error)
    if m:
        return f"no kernel for {m.group(1).removeprefix('aten::')}"
    msg = error.split(": ", 1)[-1]
    return msg if len(msg) <= 50 else msg[:47].rstrip() + "..."


def _finite(x: float | None) -> float | None:
    return None if x is None or math.isnan(x) or math.isinf(x) else x


def _clean(x: Any) -> Any:
    if isinstance(x, float):
        return _finite(x)
    if isinstance(x, dict):
        return {k: _clean(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_clean(v) for v in x]
    return x


@dataclass
class SweepResult:
    config: SweepConfig
    results: list[ModelResult]
    wall_s: float
    environment: dict[str, str]

    def for_target(self, target: str) -> list[ModelResult]:
        return [r for r in self.results if r.target == target]

    def summary(self) -> dict[str, dict[str, Any]]:
        """Per target: how many models, and the forward / training / no-cliff pass rates (0..1)."""
        out: dict[str, dict[str, Any]] = {}
        for t in self.config.targets:
            rs = self.for_target(t)
            n = len(rs)
            fw = sum(r.forward.passed for r in rs)
            tr = sum(r.train.passed for r in rs)
            nc = sum(r.no_cliff(self.config.cliff_ratio) for r in rs)
            ratios = [r.ratio for r in rs if r.ratio is not None]
            emulator = sum(1 for r in rs if r.forward.emulator_fault or r.train.emulator_fault)
            out[t] = {
                "models": n,
                "forward_pass": fw,
                "train_pass": tr,
                "no_cliff": nc,
                "forward_rate": fw / n if n else math.nan,
                "train_rate": tr / n if n else math.nan,
                "no_cliff_rate": nc / n if n else math.nan,
                "median_ratio": _median(ratios),
                "emulator_faults": emulator,
                "precision": rs[0].precision if rs else None,
                "kind": rs[0].kind if rs else "",
            }
        return out

    LEGEND = (
        "fwd, train: ok within the tolerance of the matmul precision in effect, FAIL outside it, emu: failed because "
        "of the emulator",
        "fwd err: the forward's largest difference from the CPU's float32 logits, as the tolerance an allclose check "
        "would need; grad err: the training step's gradient error (relative L2); ops!: ops that raise on the target",
        "tok/s: useful tokens per wall-clock second at a fixed shape and at varied lengths; compiles: programs "
        "compiled / steps of the varied-length run",
        "ratio: varied over fixed in tokens per CPU second (what the cliff is judged on: wall-clock time counts "
        "whatever else the machine runs); cliff: YES where the ratio is under the sweep's cliff threshold",
    )

    def rows(self) -> list[dict[str, str]]:
        """One row per model and target, as the table shows it (a notebook displays these as a markdown table)."""
        out = []
        for r in self.results:
            ratio = r.ratio
            out.append(
                {
                    "model": r.model,
                    "target": r.target,
                    "fwd": _mark(r.forward),
                    "fwd err": _num(r.forward.tol_needed, ".1e"),
                    "train": _mark(r.train),
                    "grad err": _num(r.train.grad_rel_l2, ".1e"),
                    "ops!": str(len(set(r.forward.raises) | set(r.train.raises))),
                    "fixed tok/s": _num(r.fixed.tokens_per_s if r.fixed else None, ".0f"),
                    "varied tok/s": _num(r.varied.tokens_per_s if r.varied else None, ".0f"),
                    "ratio": _num(ratio, ".2f"),
                    "compiles": f"{r.varied.compiles}/{r.varied.steps}" if r.varied else "-",
                    "cliff": "-" if ratio is None else ("no" if r.no_cliff(self.config.cliff_ratio) else "YES"),
                    "notes": r.notes(),
                }
            )
        return out

    def table(self) -> str:
        """A plain-text table, one line per model and target, then the legend (what the CLI prints)."""
        widths = {"model": -10, "target": -7, "fwd": 4, "fwd err": 8, "train": 5, "grad err": 8, "ops!": 4}
        widths |= {"fixed tok/s": 11, "varied tok/s": 12, "ratio": 6, "compiles": 8, "cliff": 5}

        def line(cells: dict[str, str]) -> str:
            fixed = " ".join(f"{cells[k]:<{-w}}" if w < 0 else f"{cells[k]:>{w}}" for k, w in widths.items())
            return f"{fixed}  {cells['notes']}".rstrip()

        head = line({k: k for k in [*widths, "notes"]})
        return "\n".join([head, "-" * len(head), *(line(r) for r in self.rows()), *self.LEGEND])

    def summary_text(self) -> str:
        lines = []
        for t, s in self.summary().items():
            p = f", matmul precision {s['precision']}" if s["precision"] else ""
            lines.append(
                f"{t} ({s['kind']}{p}): forward {s['forward_pass']}/{s['models']}, training step "
                f"{s['train_pass']}/{s['models']}, varied lengths without a cliff {s['no_cliff']}/{s['models']} "
                f"(median varied/fixed throughput {_num(s['median_ratio'], '.2f')})"
                + (
                    f"; {plural(s['emulator_faults'], 'failure')} caused by the emulator itself"
                    if s["emulator_faults"]
                    else ""
                )
            )
        lines.append(f"sweep wall time {self.wall_s:.0f} s")
        return "\n".join(lines)

    def as_dict(self) -> dict[str, Any]:
        cfg = asdict(self.config)
        cfg["overrides"] = dict(self.config.overrides)
        return _clean(
            {
                "config": cfg,
                "environment": self.environment,
                "wall_s": self.wall_s,
                "summary": self.summary(),
                "results": [r.as_dict(self.config.cliff_ratio) for r in self.results],
            }
        )

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.as_dict(), indent=indent, sort_keys=False)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> SweepResult:
        """Read back :meth:`as_dict` / :meth:`to_json` output."""
        cfg = dict(d["config"])
        for k in ("models", "targets"):
            cfg[k] = tuple(cfg[k])
        config = SweepConfig(**{k: v for k, v in cfg.items() if k in SweepConfig.__dataclass_fields__})
        results = [ModelResult.from_dict(r) for r in d["results"]]
        return cls(config, results, float(d["wall_s"]), dict(d.get("environment", {})))

    @classmethod
    def merge(cls, parts: Sequence[SweepResult]) -> SweepResult:
        """One result from sweeps of the same models on different targets (wall times add up)."""
        if not parts:
            raise ValueError("nothing to merge")
        targets = tuple(dict.fromkeys(t for p in parts for t in p.config.targets))
        models = tuple(dict.fromkeys(m for p in parts for m in p.config.models))
        env: dict[str, str] = {}
        for p in parts:
            env.update(p.environment)
        order = {m: i for i, m in enumerate(models)}
        results = sorted((r for p in parts for r in p.results), key=lambda r: (order[r.model], targets.index(r.target)))
        config = replace(parts[0].config, targets=targets, models=models)
        return cls(config, results, sum(p.wall_s for p in parts), env)


def _median(xs: Sequence[float]) -> float | None:
    if not xs:
        return None
    s = sorted(xs)
    m = len(s) // 2
    return s[m] if len(s) % 2 else (s[m - 1] + s[m]) / 2


def _mark(stage: StageResult) -> str:
    return "ok" if stage.passed else ("emu" if stage.emulator_fault else "FAIL")


def _num(x: float | None, fmt: str) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, fmt)
