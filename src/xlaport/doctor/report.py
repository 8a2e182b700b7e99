"""``xlaport doctor``: one migration report for a codebase, as markdown, JSON or a self-contained HTML page.

Sections: the scan (:mod:`xlaport.scan`); for an entry point, the ATen ops it dispatches and what each
target does with them (:mod:`xlaport.ops`); a recompile probe on the emulated ``tpu`` in a fresh
interpreter (:mod:`xlaport.doctor.probe`); the effort in person-weeks per finding class
(:mod:`xlaport.doctor.effort`); and, given chips, prices and utilisation, the break-even of the move
(:mod:`xlaport.cost`).

>>> rep = diagnose("my_project", entry="my_project/model.py:Step", inputs=["8x64"], probes=[["8x64"], ["8x80"]],
...                cost=CostInputs("h100_sxm", 64, 0.4, "tpu_v6e", 0.35))
>>> rep.write_html("report.html"); print(rep.to_markdown())
"""

from __future__ import annotations

import base64
import html
import io
import json
import math
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import detect, pages
from ..cost import PRICE_TERMS
from ..text import plural, usd
from ..validate import fraction, integer, positive
from .effort import Effort, estimate, with_ops
from .probe import ProbeResult, parse_probe, run_probe

__all__ = ["CostInputs", "OpsSection", "Report", "diagnose", "TARGETS"]

TARGETS: tuple[str, ...] = ("tpu", "neuron", "xla")


@dataclass(frozen=True)
class CostInputs:
    """The fleet now and the fleet after: chips, MFU, price (None: the published one) and utilisation."""

    from_chip: str
    from_chips: int
    from_mfu: float
    to_chip: str
    to_mfu: float
    from_price: float | None = None
    to_price: float | None = None
    from_utilisation: float = 1.0
    to_utilisation: float = 1.0
    term: str = "on_demand"
    usd_per_person_week: float = 5000.0
    horizon_months: float = 24.0

    def __post_init__(self) -> None:
        from .. import cost

        cost.chip(self.from_chip)
        cost.chip(self.to_chip)
        integer("from_chips", self.from_chips, minimum=1)
        fraction("from_mfu", self.from_mfu)
        fraction("to_mfu", self.to_mfu)
        fraction("from_utilisation", self.from_utilisation)
        fraction("to_utilisation", self.to_utilisation)
        for k in ("from_price", "to_price"):
            v = getattr(self, k)
            if v is not None:
                positive(k, v)
        if self.term not in PRICE_TERMS:
            raise ValueError(f"unknown price term {self.term!r}; use one of {', '.join(PRICE_TERMS)}")
        positive("usd_per_person_week", self.usd_per_person_week)
        positive("horizon_months", self.horizon_months)
        self.prices()  # a chip without a published price and no price given: one line now, not later

    def prices(self) -> tuple[float, str, float, str]:
        from .. import cost

        out: list[Any] = []
        for chip_id, given in ((self.from_chip, self.from_price), (self.to_chip, self.to_price)):
            if given is not None:
                out += [float(given), "given"]
            else:
                f = cost.chip(chip_id).price_fact(self.term)  # the label says what its record says of it
                out += [f.value, f"{self.term}, {PRICE_EVIDENCE.get(f.evidence, 'evidence ' + f.evidence)}"]
        return out[0], out[1], out[2], out[3]


# How a price's evidence marker in the data file (xlaport.cost: V, V2, U) reads in the report, so that the doctor
# never calls a price "published" that the pricing chapter and the decision brief call unverified.
PRICE_EVIDENCE = {"V": "published", "V2": "published, read via a copy", "U": "unverified"}


@dataclass
class OpsSection:
    """Op coverage of the entry per target: counts per status and the rows that are not fine."""

    entry: str
    inputs: list[str]
    ops: int = 0
    calls: int = 0
    per_target: dict[str, dict[str, int]] = field(default_factory=dict)
    problems: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)
    error: str | None = None
    seconds: float = 0.0
    titles: dict[str, str] = field(default_factory=dict)  # target id -> its title in per_target

    def counts(self, target: str) -> dict[str, int]:
        """Ops per status on ``target`` (an id: tpu, neuron, xla)."""
        return self.per_target.get(self.titles.get(target, ""), {})

    def raising(self, target: str) -> list[str]:
        """The ops that raise on ``target`` and that a port must replace: not the CPU-only kernels (``*_for_cpu``)
        that the trace meets because it runs on the CPU, where the target dispatches its own kernel."""
        rows = self.problems.get(self.titles.get(target, ""), [])
        return [r["op"] for r in rows if r["status"] == "raises" and not r["op"].endswith("_for_cpu")]


@dataclass
class Report:
    path: str
    scan: Any
    effort: Effort
    ops: OpsSection | None = None
    probe: ProbeResult | None = None
    cost: dict[str, Any] | None = None
    cost_inputs: CostInputs | None = None
    timings: dict[str, float] = field(default_factory=dict)
    torch_tpu: str | None = None  # which torch_tpu this environment has, from its package metadata (None: none)

    def _ops_sentence(self) -> str:
        """The op trace in one sentence beside the scan's: what raises or is unknown per target, and what of it the
        effort prices."""
        assert self.ops is not None
        parts = []
        for title in self.ops.titles.values():
            c = self.ops.per_target.get(title, {})
            parts.append(
                f"{_md(title)}: {c.get('raises', 0)} raise, {c.get('falls back', 0)} fall back, "
                f"{c.get('unknown', 0)} unknown"
            )
        priced = [r for r in self.effort.rows if r.category.startswith("ops raising on")]
        cpu_only = sorted(
            {r["op"] for rows in self.ops.problems.values() for r in rows if r["op"].endswith("_for_cpu")}
        )
        tail = (
            f"the {plural(int(priced[0].units), 'op')} raising on {priced[0].category.rsplit(' ', 1)[-1]} are priced in the effort"
            if priced
            else "none that a port must replace raises, so none is priced in the effort"
        )
        if cpu_only:
            tail += f" ({', '.join(_code(o) for o in cpu_only)}: a CPU kernel the trace meets on the CPU, not priced)"
        return (
            f"Ops the entry point dispatched, per target: {'; '.join(parts)}. Of these, {tail}; unknown ops are not "
            "(the target's tables do not list them: run them on the target)."
        )

    # ------------------------------------------------------------------ plain data
    def summary(self) -> dict[str, Any]:
        s = self.scan
        out: dict[str, Any] = {
            "files": s.files,
            "lines": s.lines,
            "findings": len(s.findings),
            "by_severity": s.by_severity(),
            "by_rule": s.counts(),
            "kernels": self.effort.kernels,
            "kernel_lines": self.effort.kernel_lines,
            "person_weeks": round(self.effort.total_weeks, 2),
        }
        if self.ops is not None and not self.ops.error:
            out["ops_raise"] = {t: c.get("raises", 0) for t, c in self.ops.per_target.items()}
        if self.probe is not None:
            out["probe_compiles"] = self.probe.compiles
            out["probe_repeat_compiles"] = self.probe.repeat_compiles
        if self.cost is not None:
            out["break_even_months"] = self.cost["break_even_months"]
            out["verdict"] = self.cost["verdict"]
        return out

    def to_dict(self) -> dict[str, Any]:
        from ..scan.output import to_dict

        e = self.effort
        return {
            "path": self.path,
            "summary": self.summary(),
            "scan": to_dict(self.scan),
            "effort": {
                "rows": [r.__dict__ for r in e.rows],
                "assumptions": [a.__dict__ for a in e.assumptions],
                "kernel_weeks": e.kernel_weeks,
                "port_weeks": e.port_weeks,
                "validation_weeks": e.validation_weeks,
                "total_weeks": e.total_weeks,
            },
            "ops": None if self.ops is None else self.ops.__dict__,
            "probe": None if self.probe is None else self.probe.as_dict(),
            "cost": self.cost,
            "torch_tpu": self.torch_tpu,
            "timings": {k: round(v, 2) for k, v in self.timings.items()},
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, default=_json_default)

    # ------------------------------------------------------------------ markdown
    def to_markdown(self, max_findings: int = 50, heading_level: int | None = 1, *, detail: bool = False) -> str:
        """The report as markdown, its one rendering (:meth:`to_html` converts it to a page).

        ``heading_level`` is the title's level (sections one below it); ``None`` writes titles as bold lines, for a
        report shown inside another page (a notebook cell's output). ``detail`` adds each rule's why, each finding's
        line of code and the probe's whole backend banner, as the HTML page shows them."""
        return self._markdown(max_findings, heading_level, detail=detail)

    def _markdown(
        self,
        max_findings: int,
        heading_level: int | None,
        *,
        detail: bool = False,
        images: dict[str, str] | None = None,
    ) -> str:
        if isinstance(max_findings, bool) or not isinstance(max_findings, int) or max_findings < 0:
            raise ValueError(f"max_findings must be a whole number >= 0, got {max_findings!r}")
        if heading_level is not None and (
            isinstance(heading_level, bool) or not isinstance(heading_level, int) or not 1 <= heading_level <= 5
        ):
            raise ValueError(f"heading_level must be 1 to 5, or None for bold titles, got {heading_level!r}")
        pngs = images or {}

        def h(text: str, sub: bool = True) -> str:
            if heading_level is None:
                return f"**{text}**"
            return "#" * (heading_level + sub) + " " + text

        def img(key: str, alt: str) -> list[str]:
            return [f"![{alt}](data:image/png;base64,{pngs[key]})", ""] if key in pngs else []

        s, e = self.scan, self.effort
        sev = s.by_severity()
        L = [
            h(f"xlaport doctor: {_code(self.path)}", sub=False),
            "",
            f"**{len(s.findings)} scanner findings** ({sev['error']} errors, {sev['warning']} warnings, {sev['note']} notes) in "
            f"{s.files} files and {s.lines:,} lines; {e.kernels} custom kernels ({e.kernel_lines} lines); "
            f"estimated effort **{e.total_weeks:.1f} person-weeks**.",
        ]
        if self.ops is not None and not self.ops.error:
            L += ["", self._ops_sentence()]
        if self.probe is not None:
            L += ["", f"Recompile probe on {_code(self.probe.target)}: {_md(self.probe.verdict())}."]
        if self.torch_tpu is not None:
            L += ["", f"This environment's torch_tpu: {_md(self.torch_tpu)}."]
        if self.cost is not None:
            L += ["", f"Break-even: {_months(self.cost['break_even_months'])}; verdict **{self.cost['verdict']}**."]
        L += ["", h("Scan"), ""]
        from ..scan import rule
        from ..scan.output import rule_severity

        if not s.findings:
            L.append("No findings.")
        else:
            L += img("findings", "findings per rule")
            why = ("why | ", "---|") if detail else ("", "")
            L += [f"| rule | severity | findings | {why[0]}fix | chapter |", f"|---|---|---:|{why[1]}---|---|"]
            for rid, n in s.counts().items():
                ru = rule(rid)
                cells = [_code(rid), rule_severity(s, rid), str(n), *([_md(ru.why)] if detail else [])]
                cells += [_md(ru.fix), ", ".join(pages.link(d) for d in ru.docs) or "–"]  # titles, linked
                L.append("| " + " | ".join(cells) + " |")
        if s.findings and max_findings:
            code = (" code |", "---|") if detail else ("", "")
            L += ["", f"| where | severity | rule | what |{code[0]}", f"|---|---|---|---|{code[1]}"]
            for f in s.findings[:max_findings]:
                cells = [_code(f"{f.path}:{f.line}"), f.severity, _code(f.rule), _md(f.message)]
                if detail:
                    cells.append(_code(f.snippet) if f.snippet else "")
                L.append("| " + " | ".join(cells) + " |")
            if len(s.findings) > max_findings:
                L.append(f"| … | | | {len(s.findings) - max_findings} more (see the JSON report) |" + " |" * detail)
        if s.warnings:
            L += ["", "Not scanned: " + "; ".join(f"{_code(w.path)} ({_md(w.reason)})" for w in s.warnings)]
        if self.ops is not None:
            L += ["", h("Ops per target"), ""]
            if self.ops.error:
                L.append(f"Could not trace {_code(self.ops.entry)}: {_md(self.ops.error)}")
            else:
                inputs = ", ".join(_code(i) for i in self.ops.inputs) or "(its example_inputs)"
                L += [
                    f"{_code(self.ops.entry)} with inputs {inputs} dispatched "
                    f"{self.ops.ops} distinct ATen ops ({self.ops.calls} calls).",
                    "",
                    "| target | " + " | ".join(_STATUSES) + " |",
                    "|---|" + "---:|" * len(_STATUSES),
                ]
                for t, counts in self.ops.per_target.items():
                    L.append(f"| {_md(t)} | " + " | ".join(str(counts.get(st, 0)) for st in _STATUSES) + " |")
                if any(self.ops.problems.values()):
                    L.append("")  # a list right after a table would be read as one more row
                for t, rows in self.ops.problems.items():
                    for row in rows:
                        calls = f"{plural(row['count'], 'call')}, " if "count" in row else ""
                        L.append(
                            f"- {_md(t)}: {_code(row['op'])} {row['status']} ({calls}{_md(row['via'])}) "
                            f"at {_md(row['site'])}"
                        )
        if self.probe is not None:
            L += ["", h(f"Recompile probe ({self.probe.target})"), ""]
            if self.probe.banner and detail:
                L += ["~~~~text", self.probe.banner, "~~~~", ""]
            elif self.probe.banner:
                L += [f"Backend: {_md(self.probe.banner.splitlines()[0])}", ""]
            if self.probe.error:
                L.append(f"Probe failed: {_md(self.probe.error)}")
            else:
                L += img("probe", "compiles per probe call")
                L += [
                    "| call | pass | inputs | new shape | compiles | compile s | wall s |",
                    "|---:|---:|---|---|---:|---:|---:|",
                ]
                for c in self.probe.calls:
                    cs = f"{c.compile_s:.2f}" if c.compile_s is not None else "–"
                    err = f" ({_md(c.error)})" if c.error else ""
                    L.append(
                        f"| {c.index} | {c.repeat} | {_code(c.inputs)}{err} | {'yes' if c.new_shape else 'no'} | "
                        f"{c.compiles} | {cs} | {c.wall_s:.2f} |"
                    )
                L += ["", _md(self.probe.verdict()) + "."]
        L += ["", h("Effort"), "", *img("effort", "person-weeks per class")]
        L += ["| class | findings | units | person-weeks per unit | person-weeks |", "|---|---:|---:|---:|---:|"]
        for er in e.rows:
            L.append(f"| {er.category} | {er.findings} | {er.amount} | {er.rate} | {er.weeks:.2f} |")
        L.append(f"| validation | | | {e.value('validation_share'):g} × engineering | {e.validation_weeks:.2f} |")
        counted = len(s.findings) + sum(r.findings for r in e.rows if r.category.startswith("ops raising on"))
        L.append(f"| **total** | {counted} | | | **{e.total_weeks:.2f}** |")
        L += ["", "Assumptions (override in `[tool.xlaport.effort]` or with `--assume KEY=VALUE`):", ""]
        L += [f"- {_code(a.key)} = {a.value:g} {_md(a.unit)}: {_md(a.what)} ({_md(a.source)})" for a in e.assumptions]
        if self.cost is not None:
            L += ["", h("Break-even"), "", *img("cost", "cumulative net"), "| quantity | value |", "|---|---|"]
            for k, v in _cost_rows(self.cost):
                L.append(f"| {_md(k)} | {_md(v)} |")
        L += ["", "Times: " + ", ".join(f"{k} {v:.1f} s" for k, v in self.timings.items()) + "."]
        return "\n".join(L) + "\n"

    # ------------------------------------------------------------------ html
    def plots(self) -> dict[str, str]:
        """Base64 PNGs: findings per rule, effort per class, compiles per probe call, net over the horizon."""
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
        from matplotlib.ticker import MaxNLocator

        out: dict[str, str] = {}

        def png(fig: Any) -> str:
            FigureCanvasAgg(fig)
            buf = io.BytesIO()
            fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
            return base64.b64encode(buf.getvalue()).decode()

        counts = self.scan.counts()
        if counts:
            from ..scan import rule

            fig = Figure(figsize=(6.5, 0.3 * len(counts) + 1))
            ax = fig.add_subplot()
            names = list(counts)[::-1]
            colors = {"error": "#c0392b", "warning": "#e67e22", "note": "#2980b9"}
            ax.barh(names, [counts[n] for n in names], color=[colors[rule(n).severity] for n in names])
            ax.set_xlabel("findings")
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
            ax.set_title("Findings per rule (red: error, orange: warning)")
            out["findings"] = png(fig)
        if self.effort.rows:
            fig = Figure(figsize=(6.5, 0.3 * len(self.effort.rows) + 1.3))
            ax = fig.add_subplot()
            rows = [*self.effort.rows][::-1]
            labels = ["validation", *[r.category for r in rows]]
            vals = [self.effort.validation_weeks, *[r.weeks for r in rows]]
            ax.barh(labels, vals, color="#34495e")
            ax.set_xlabel("person-weeks")
            ax.set_title(f"Effort: {self.effort.total_weeks:.1f} person-weeks")
            out["effort"] = png(fig)
        if self.probe is not None and self.probe.calls:
            fig = Figure(figsize=(6.5, 2.6))
            ax = fig.add_subplot()
            xs = [c.index for c in self.probe.calls]
            ax.bar(
                xs,
                [c.compiles for c in self.probe.calls],
                color=["#c0392b" if not c.new_shape and c.compiles else "#7f8c8d" for c in self.probe.calls],
            )
            ax.set_xticks(xs, [f"{c.inputs}\npass {c.repeat}" for c in self.probe.calls], fontsize=7)
            ax.set_ylabel("programs compiled")
            ax.yaxis.set_major_locator(MaxNLocator(integer=True))
            ax.set_title(f"Recompile probe on {self.probe.target} (red: a shape already seen compiled again)")
            out["probe"] = png(fig)
        if self.cost is not None:
            c = self.cost
            h = c["horizon_months"]
            months = [h * i / 48 for i in range(49)]
            fig = Figure(figsize=(6.5, 2.6))
            ax = fig.add_subplot()
            ax.plot(months, [c["monthly_saving_usd"] * m - c["one_time_usd"] for m in months], color="#16a085")
            ax.axhline(0, color="black", lw=0.8)
            ax.set_xlabel("months after the move")
            ax.set_ylabel("net USD")
            ax.set_title(f"Cumulative net: break-even {_months(c['break_even_months'])}")
            out["cost"] = png(fig)
        return out

    def to_html(self, max_findings: int = 300) -> str:
        """A self-contained page: :meth:`to_markdown` in detail, with the plots as inline base64 PNGs, converted by
        markdown-it-py (raw HTML in a finding is shown as text), with inline CSS; nothing is fetched."""
        from markdown_it import MarkdownIt

        md = self._markdown(max_findings, 1, detail=True, images=self.plots())
        body = MarkdownIt("commonmark", {"html": False}).enable("table").render(md)
        return (
            '<!doctype html><html><head><meta charset=utf-8><meta name=viewport content="width=device-width,initial-scale=1">'
            f"<title>xlaport doctor: {html.escape(self.path)}</title><style>{_CSS}</style></head><body>\n"
            + body
            + "</body></html>\n"
        )

    def write_html(self, path: str | Path) -> Path:
        p = Path(path)
        p.write_text(self.to_html(), encoding="utf-8")
        return p


_STATUSES = ("supported", "decomposed", "falls back", "raises", "unknown")
_CSS = (
    "body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}"
    "table{border-collapse:collapse;margin:.8em 0;font-size:.9em;display:block;overflow-x:auto}td{min-width:5em}td:last-child code{overflow-wrap:anywhere}td,th{border:1px solid #ccc;padding:.3em .5em;"
    "text-align:left;vertical-align:top}th{background:#f3f3f3}code,pre{background:#f6f6f6}img{max-width:100%}"
    ".lead{font-size:1.1em}.small{color:#666;font-size:.85em}"
)


def _json_default(o: Any) -> Any:
    if isinstance(o, float) and not math.isfinite(o):
        return None
    if hasattr(o, "__dict__"):
        return o.__dict__
    return str(o)


_SPAN = re.compile(r"(`+)(.+?)(?<!`)\1(?!`)")  # a code span inside a message: `x.cuda()`
# What markdown (or MyST's dollar maths) would act on mid-line (< opens raw HTML, a lone > does nothing there);
# an underscore only at a word's edge (snake_case stays).
_ACTIVE = re.compile(r"([\\`*\[\]<&|$]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9]))")


def _md(s: object) -> str:
    """Text for a markdown line or table cell, shown as it is: its code spans kept, raw HTML, entities, emphasis,
    pipes and dollar signs escaped; one line."""
    text, out, pos = str(s).replace("\n", " "), [], 0
    for m in _SPAN.finditer(text):
        out += [_ACTIVE.sub(r"\\\1", text[pos : m.start()]), _code(m[2])]
        pos = m.end()
    out.append(_ACTIVE.sub(r"\\\1", text[pos:]))
    return "".join(out)


def _code(s: object) -> str:
    """`s` as a code span that survives a table cell: fenced by more backticks than it holds, pipes escaped."""
    text = str(s).replace("\n", " ").replace("|", "\\|")
    ticks = "`" * (max((len(r) for r in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def _months(m: float) -> str:
    return "never (no monthly saving)" if not math.isfinite(m) else f"{m:.1f} months"


def _band_rows(c: dict[str, Any]) -> list[tuple[str, str]]:
    """With an MFU band from the entry's estimate (``xlaport doctor --entry``): the band per side and the break-even
    at the band's fast end, beside the slow end the verdict uses."""
    band, months = c.get("mfu_band"), c.get("break_even_months_band")
    if not band or not months:
        return []
    mfu = "; ".join(f"{side} ({b['chip']}) {b['mfu'][0]:.1%} to {b['mfu'][1]:.1%}" for side, b in band.items())
    return [
        ("MFU from the entry's estimate", mfu),
        ("break-even at the band's fast end", _months(months[0])),
    ]


def _cost_rows(c: dict[str, Any]) -> list[tuple[str, str]]:
    return [
        ("now", c["current"]),
        ("after", c["proposed"]),
        ("compute per month now", usd(c["current_monthly_usd"])),
        ("compute per month after", usd(c["proposed_monthly_usd"])),
        ("saving per month", usd(c["monthly_saving_usd"])),
        ("one-time cost", f"{usd(c['one_time_usd'])} ({c['person_weeks']:.1f} person-weeks)"),
        *_band_rows(c),
        ("break-even", _months(c["break_even_months"])),
        (f"net over {c['horizon_months']:g} months", usd(c["net_over_horizon_usd"])),
        ("verdict", c["verdict"]),
    ]


def _cost(ci: CostInputs, effort: Effort) -> dict[str, Any]:
    from .. import cost

    fp, fhow, tp, thow = ci.prices()
    cur = cost.Side(ci.from_chip, fp, ci.from_mfu, ci.from_utilisation)
    new = cost.Side(ci.to_chip, tp, ci.to_mfu, ci.to_utilisation)
    c0 = cost.chip(ci.from_chip)
    flop = ci.from_chips * cost.hours_per_month() * 3600 * cur.utilisation * cur.mfu * c0.peak_bf16_flop_per_s
    m = effort.migration(ci.usd_per_person_week)
    d = cost.decide(flop, cur, new, m, ci.horizon_months)
    return {
        "current": f"{ci.from_chips} × {c0.name} at ${fp:.2f}/h ({fhow}), MFU {ci.from_mfu:.0%}, "
        f"utilisation {ci.from_utilisation:.0%}",
        "proposed": f"{cost.chip(ci.to_chip).name} at ${tp:.2f}/h ({thow}), MFU {ci.to_mfu:.0%}, "
        f"utilisation {ci.to_utilisation:.0%}",
        "current_monthly_usd": d.current_monthly_usd,
        "proposed_monthly_usd": d.proposed_monthly_usd,
        "monthly_saving_usd": d.monthly_saving_usd,
        "one_time_usd": d.one_time_usd,
        "person_weeks": effort.total_weeks,
        "break_even_months": d.break_even_months,
        "horizon_months": d.horizon_months,
        "net_over_horizon_usd": d.net_over_horizon_usd,
        "verdict": "migrate" if d.migrate else "stay",
    }


def _ops(entry: str, inputs: Sequence[str], targets: Sequence[str], seed: int) -> OpsSection:
    import torch

    from ..ops import coverage
    from ..ops.entry import load_entry, parse_input, trace_entry

    sec = OpsSection(entry, list(inputs))
    start = time.perf_counter()
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    xs = [parse_input(s, gen) for s in inputs]
    ent = load_entry(entry)
    trace = trace_entry(ent, xs)
    sec.ops = len(set(trace.names))
    sec.calls = sum(c.count for c in trace)
    for t in targets:
        cov = coverage(trace, t)
        sec.titles[t] = cov.title
        sec.per_target[cov.title] = cov.summary()
        sec.sources[cov.title] = cov.source
        sec.problems[cov.title] = [
            {"op": r.op, "status": r.status, "count": r.count, "via": r.via, "site": r.site}
            for r in cov
            if r.status in ("raises", "falls back", "unknown")
        ]
    sec.seconds = time.perf_counter() - start
    return sec


def diagnose(
    path: str | Path,
    *,
    entry: str | None = None,
    inputs: Sequence[str] = (),
    probes: Sequence[Sequence[str] | str] = (),
    targets: Sequence[str] = ("tpu", "neuron"),
    probe_target: str = "tpu",
    probe_repeat: int = 2,
    probe_timeout: float = 180.0,
    effort: dict[str, Any] | None = None,
    cost: CostInputs | None = None,
    seed: int = 0,
    jobs: int | None = None,
) -> Report:
    """Scan ``path``; trace and probe ``entry`` if given; estimate the effort; price the move if ``cost`` is given.

    Every argument is checked before anything runs; a bad one raises ``ValueError`` with one line.
    """
    from ..scan import scan

    if not isinstance(path, (str, Path)) or not str(path):
        raise ValueError(f"bad path {path!r}")
    for t in targets:
        if t not in TARGETS:
            raise ValueError(f"unknown target {t!r}; use {', '.join(TARGETS)}")
    if probe_target not in ("tpu", "neuron"):
        raise ValueError(f"the probe runs on tpu or neuron, not {probe_target!r}")
    integer("probe_repeat", probe_repeat, minimum=1)
    positive("probe_timeout", probe_timeout)
    integer("seed", seed)
    probe_specs = [parse_probe(p) if isinstance(p, str) else list(p) for p in probes]
    if (inputs or probe_specs) and entry is None:
        raise ValueError("--input and --probe need --entry FILE.py:CALLABLE")
    if entry is not None:
        _check_entry_spec(entry)
        _check_shapes([*inputs, *[s for p in probe_specs for s in p]])
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    res = scan(path, jobs=jobs)
    timings["scan"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    est = estimate(res, effort)
    installed = detect.torch_tpu_package()  # metadata only: Google's TorchTPU and Sophgo's share the module name
    rep = Report(
        str(path), res, est, timings=timings, cost_inputs=cost, torch_tpu=installed.describe() if installed else None
    )
    timings["effort and cost"] = time.perf_counter() - t0
    if entry is not None:
        t0 = time.perf_counter()
        rep.ops = _ops(entry, inputs, targets, seed)
        if not rep.ops.error:
            move_to = _move_target(cost, targets, rep.ops)
            if move_to is not None:
                rep.effort = with_ops(rep.effort, len(rep.ops.raising(move_to)), move_to)
        timings["ops"] = time.perf_counter() - t0
        if probe_specs:
            t0 = time.perf_counter()
            rep.probe = run_probe(
                entry, probe_specs, target=probe_target, repeat=probe_repeat, seed=seed, timeout=probe_timeout
            )
            timings["probe"] = time.perf_counter() - t0
    if cost is not None:  # after the op trace: the ops that raise are part of the one-time cost
        t0 = time.perf_counter()
        rep.cost = _cost(cost, rep.effort)
        timings["effort and cost"] += time.perf_counter() - t0
    return rep


def _move_target(cost: CostInputs | None, targets: Sequence[str], ops: OpsSection) -> str | None:
    """The target whose raising ops the move must fix: the family of the chip moved to, when the cost is asked;
    else the traced target with the most ops that raise (None when none raises)."""
    from .. import cost as cost_mod

    if cost is not None:
        family = str(cost_mod.chip(cost.to_chip).family)
        if family in targets:
            return family
    worst = max(targets, key=lambda t: len(ops.raising(t)), default=None)
    return worst if worst is not None and ops.raising(worst) else None


def _check_entry_spec(entry: str) -> None:
    if not isinstance(entry, str) or not entry.strip():
        raise ValueError("bad --entry: expected FILE.py:CALLABLE or MODULE:CALLABLE")
    path_s, sep, attr = entry.rpartition(":")
    if not sep or not attr.isidentifier():
        raise ValueError(f"bad --entry {entry!r}: expected FILE.py:CALLABLE or MODULE:CALLABLE")
    if path_s.endswith(".py") and not Path(path_s).is_file():
        raise ValueError(f"bad --entry {entry!r}: no such file {path_s}")


def _check_shapes(specs: Sequence[str]) -> None:
    """The shape grammar of xlaport.ops.entry.parse_input, checked without torch (dtype checked when built)."""
    import re

    for s in specs:
        if not isinstance(s, str) or not re.fullmatch(r"\s*\d+(\s*[x,]\s*\d+)*\s*(:\s*[A-Za-z_]\w*)?\s*", s):
            raise ValueError(f"bad input shape {s!r}: expected a shape like 4x3 or 4,3 with an optional :dtype")
