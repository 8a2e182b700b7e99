"""xlaport.doctor and `xlaport doctor`: the effort estimate follows its assumptions, the cost section follows
xlaport.cost, the reports are self-contained, bad specs are one line, and the whole report on the sample
project (trace and recompile probe included) takes under 60 s."""

from __future__ import annotations

import dataclasses
import json
import math
import re
import resource
import time
from html.parser import HTMLParser
from pathlib import Path

import pytest

from conftest import Runner
from xlaport import cost, pages
from xlaport.cli import main
from xlaport.doctor import ASSUMPTIONS, CostInputs, diagnose, estimate, parse_assume, parse_probe
from xlaport.doctor.probe import ProbeCall, ProbeResult
from xlaport.scan import rule, scan

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "examples" / "cuda_project"
ENTRY = f"{SAMPLE / 'tinylm.py'}:TrainStep"


def _expected_weeks(res: object, values: dict[str, float]) -> float:
    """The estimate recomputed from the findings, independently of xlaport.doctor.effort's code."""
    per_cat = {
        "device": "weeks_per_device_site",
        "amp": "weeks_per_amp_site",
        "streams": "weeks_per_stream_site",
        "distributed": "weeks_per_distributed_site",
        "dynamic-shape": "weeks_per_dynamic_shape_site",
        "host-sync": "weeks_per_host_sync_site",
        "recompile": "weeks_per_recompile_site",
    }
    total = 0.0
    deps: set[str] = set()
    for f in res.findings:  # type: ignore[attr-defined]
        cat = rule(f.rule).category
        if cat in per_cat:
            total += values[per_cat[cat]]
        elif cat == "dependency":
            deps.add(f.detail)
        elif cat == "kernel":
            n = int(f.detail) if f.rule == "cuda-source" else 1
            total += n * values["weeks_per_kernel"] + f.lines / 100 * values["weeks_per_100_kernel_lines"]
    total += len(deps) * values["weeks_per_dependency"]
    return total * (1 + values["validation_share"])


def test_effort_follows_its_assumptions() -> None:
    res = scan(SAMPLE)
    defaults = {k: v[0] for k, v in ASSUMPTIONS.items()}
    est = estimate(res)
    assert est.total_weeks == pytest.approx(_expected_weeks(res, defaults))
    assert all(a.source == "default" for a in est.assumptions)
    changed = {**defaults, "weeks_per_kernel": 5.0, "validation_share": 0.2}
    est2 = estimate(res, {"weeks_per_kernel": 5, "validation_share": 0.2})
    assert est2.total_weeks == pytest.approx(_expected_weeks(res, changed))
    assert {a.key: a.source for a in est2.assumptions}["weeks_per_kernel"] == "command line"
    assert est.kernels == sum(f.rule == "triton-kernel" for f in res.findings) >= 1
    m = est.migration(usd_per_person_week=4000)
    assert m.engineering_person_weeks == pytest.approx(est.total_weeks)  # Migration counts validation in it
    assert cost.one_time_usd(m) == pytest.approx(est.total_weeks * 4000)


def test_effort_from_pyproject(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.xlaport.effort]\nweeks_per_kernel = 7\n")
    (tmp_path / "k.py").write_text("import triton\n@triton.jit\ndef k(x):\n    pass\n")
    est = estimate(scan(tmp_path))
    assert est.value("weeks_per_kernel") == 7 and est.kernels == 1
    assert next(a for a in est.assumptions if a.key == "weeks_per_kernel").source.endswith("pyproject.toml")
    assert estimate(scan(tmp_path), {"weeks_per_kernel": 1}).value("weeks_per_kernel") == 1  # command line wins


@pytest.mark.parametrize(
    ("items", "message"),
    [
        (["weeks_per_kernel"], "expected KEY=NUMBER"),
        (["nope=1"], "unknown assumption 'nope'"),
        (["weeks_per_kernel=lots"], "is not a number"),
    ],
)
def test_parse_assume_errors(items: list[str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_assume(items)
    with pytest.raises(ValueError, match=r"must be >= 0|non-negative|negative"):
        estimate(scan(SAMPLE / "tinylm.py"), {"weeks_per_kernel": -1})


def test_cost_section_matches_xlaport_cost() -> None:
    ci = CostInputs("h100_sxm", 64, 0.4, "tpu_v6e", 0.35, from_utilisation=0.8)
    rep = diagnose(SAMPLE, cost=ci)
    c = rep.cost
    assert c is not None
    cur = cost.Side("h100_sxm", cost.chip("h100_sxm").usd_per_chip_hour(), 0.4, 0.8)
    new = cost.Side("tpu_v6e", cost.chip("tpu_v6e").usd_per_chip_hour(), 0.35, 1.0)
    flop = 64 * cost.hours_per_month() * 3600 * 0.8 * 0.4 * cost.chip("h100_sxm").peak_bf16_flop_per_s
    d = cost.decide(flop, cur, new, rep.effort.migration(), 24)
    assert c["break_even_months"] == pytest.approx(d.break_even_months)
    assert c["one_time_usd"] == pytest.approx(rep.effort.total_weeks * 5000)
    assert c["verdict"] == ("migrate" if d.migrate else "stay")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"from_chip": "a100"}, "unknown chip|no chip|a100"),
        ({"from_mfu": 1.5}, "from_mfu"),
        ({"to_chip": "tpu_v7x"}, "no published on_demand price for tpu_v7x"),
        ({"from_chips": 0}, "from_chips"),
    ],
)
def test_cost_inputs_are_checked(kwargs: dict[str, object], message: str) -> None:
    base: dict[str, object] = {
        "from_chip": "h100_sxm",
        "from_chips": 8,
        "from_mfu": 0.4,
        "to_chip": "tpu_v6e",
        "to_mfu": 0.3,
    }
    with pytest.raises(ValueError, match=message):
        CostInputs(**{**base, **kwargs})  # type: ignore[arg-type]


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.srcs: list[str] = []
        self.hrefs: list[str] = []
        self.tables = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "table":
            self.tables += 1
        if "src" in a:
            self.srcs.append(a["src"] or "")
        if "href" in a:
            self.hrefs.append(a["href"] or "")


def test_reports_without_entry(tmp_path: Path) -> None:
    rep = diagnose(SAMPLE, cost=CostInputs("h100_sxm", 64, 0.4, "tpu_v6e", 0.35))
    md = rep.to_markdown()
    for head in ("# xlaport doctor", "## Scan", "## Effort", "## Break-even"):
        assert head in md
    assert "## Ops per target" not in md and rep.ops is None and rep.probe is None
    # Inside another page: titles one level down, or bold lines with no heading at all.
    nested = rep.to_markdown(heading_level=3)
    assert nested.startswith("### xlaport doctor") and "\n#### Scan\n" in nested
    bold = rep.to_markdown(heading_level=None)
    assert not any(line.startswith("#") for line in bold.splitlines()) and "**Scan**" in bold
    for bad in (0, 6, 2.5, True):
        with pytest.raises(ValueError, match="heading_level"):
            rep.to_markdown(heading_level=bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_findings"):
        rep.to_markdown(max_findings=-1)

    page = rep.to_html()
    tags = _Tags()
    tags.feed(page)
    assert tags.tables >= 4 and len(tags.srcs) == 3  # findings, effort and break-even plots
    # self-contained: nothing is fetched; the only links are to the book's chapters, by title
    assert all(s.startswith("data:image/png;base64,") for s in tags.srcs)
    assert tags.hrefs and all(h.startswith(pages.SITE) for h in tags.hrefs), tags.hrefs
    outside = page.replace("https://github.com", "").replace(pages.SITE, "")
    assert "<script" not in page and "<link" not in page and "http://" not in page and "https://" not in outside
    assert "notebooks/port_training |" not in md and pages.link("notebooks/port_training") in md  # titles, not paths
    data = json.loads(rep.to_json())
    assert data["summary"]["findings"] == len(rep.scan.findings)
    assert data["summary"]["person_weeks"] == pytest.approx(rep.effort.total_weeks, abs=0.01)


class _Tables(HTMLParser):
    """Each table of a page as rows of cell texts (entities decoded, as a browser shows them)."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[list[list[str]]] = []
        self.cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self.cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self.cell is not None:
            self.tables[-1][-1].append("".join(self.cell))
            self.cell = None

    def handle_data(self, data: str) -> None:
        if self.cell is not None:
            self.cell.append(data)


def _cells(row: str) -> int:
    """Cells in a markdown table row: pipes not escaped with a backslash, less the two at its ends."""
    return len(re.findall(r"(?<!\\)\|", row)) - 1


TRICKY = "a <script>alert(1)</script> & `a | b` | *not bold* &amp; $5 or $6"
SHOWN = "a <script>alert(1)</script> & a | b | *not bold* &amp; $5 or $6"  # as a reader sees it


def test_markdown_and_html_show_a_finding_as_written(tmp_path: Path) -> None:
    """Markup in a finding (raw HTML, entities, pipes, emphasis, dollars) is shown as text in both renderings,
    and every table keeps its columns."""
    (tmp_path / "m.py").write_text("import torch\n\nx = torch.zeros(3).cuda()\n")
    rep = diagnose(tmp_path, cost=CostInputs("h100_sxm", 8, 0.4, "tpu_v6e", 0.35))
    rep.scan.findings[0] = dataclasses.replace(rep.scan.findings[0], message=TRICKY, snippet="y = a | b  # <b>")
    for md in (rep.to_markdown(), rep.to_markdown(detail=True), rep.to_markdown(heading_level=None)):
        assert "\\<script>" in md and not re.search(r"(?<!\\)<script", md)  # escaped: shown, never run
        for block in re.split(r"\n\n", md):
            rows = [r for r in block.splitlines() if r.startswith("|")]
            assert len({_cells(r) for r in rows}) <= 1, f"a table lost or gained a column:\n{block}"

    page = rep.to_html()
    assert "<script" not in page and "&lt;script&gt;" in page
    tables = _Tables()
    tables.feed(page)
    for table in tables.tables:
        assert len({len(row) for row in table}) == 1, table
    findings = next(t for t in tables.tables if t[0][:4] == ["where", "severity", "rule", "what"])
    assert findings[0] == ["where", "severity", "rule", "what", "code"]
    assert findings[1] == [f"{rep.scan.findings[0].path}:3", "error", "cuda-device", SHOWN, "y = a | b  # <b>"]
    scan_rules = next(t for t in tables.tables if t[0][0] == "rule")
    assert scan_rules[0] == ["rule", "severity", "findings", "why", "fix", "chapter"] and scan_rules[1][:3] == [
        "cuda-device",
        "error",
        "1",
    ]
    cost_rows = dict(tuple(r) for r in next(t for t in tables.tables if t[0] == ["quantity", "value"])[1:])
    assert cost_rows["verdict"] in ("migrate", "stay") and cost_rows["saving per month"].startswith(("$", "-$", "$-"))


def test_report_without_findings_says_so(tmp_path: Path) -> None:
    (tmp_path / "clean.py").write_text("import torch\n\n\ndef f(x):\n    return x + 1\n")
    md = diagnose(tmp_path).to_markdown()
    assert "No findings." in md and "| rule | severity |" not in md and "| where |" not in md


def test_the_report_names_which_torch_tpu_is_installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from xlaport import detect

    (tmp_path / "clean.py").write_text("import torch\n")
    monkeypatch.setattr(detect, "torch_tpu_package", lambda: None)
    rep = diagnose(tmp_path)
    assert rep.torch_tpu is None and "torch_tpu" not in rep.to_markdown() and rep.to_dict()["torch_tpu"] is None
    sophgo = detect.TorchTpuPackage("torch_tpu", "2.1.0.post1", "sophgo")
    monkeypatch.setattr(detect, "torch_tpu_package", lambda: sophgo)
    md = diagnose(tmp_path).to_markdown()
    assert "This environment's torch_tpu: Sophgo's torch_tpu 2.1.0.post1" in md and "TorchTPU 2" not in md


def test_probe_result_verdicts() -> None:
    calls = [ProbeCall(0, 1, "4x8", 2, 0.1, 0.1, True), ProbeCall(1, 2, "4x8", 1, 0.1, 0.1, False)]
    r = ProbeResult("m.py:f", "tpu", calls=calls)
    assert (r.compiles, r.shapes, r.repeat_compiles) == (3, 1, 1) and "depends on the data" in r.verdict()
    clean = ProbeResult("m.py:f", "tpu", calls=[calls[0], ProbeCall(1, 2, "4x8", 0, 0.0, 0.0, False)])
    assert clean.repeat_compiles == 0 and "compiled nothing" in clean.verdict()
    # on a target without a compile counter (the CPU path of a TPU VM) zeros are not "compiled nothing"
    uncounted = ProbeResult("m.py:f", "auto", calls=[ProbeCall(0, 1, "4x8", 0, 0.0, 0.0, True)], counts_compiles=False)
    assert "compiles not counted" in uncounted.verdict() and "compiled nothing" not in uncounted.verdict()
    assert parse_probe("4x8; 4x8:bool") == ["4x8", "4x8:bool"]
    with pytest.raises(ValueError, match="bad --probe"):
        parse_probe(" ; ")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["doctor", str(SAMPLE), "--input", "4x3"], "need --entry"),
        (["doctor", str(SAMPLE), "--entry", "nosuch.py:f"], "no such file nosuch.py"),
        (["doctor", str(SAMPLE), "--entry", "m.py"], "expected FILE.py:CALLABLE"),
        (["doctor", str(SAMPLE), "--entry", ENTRY, "--input", "4xq"], "bad input shape '4xq'"),
        (["doctor", str(SAMPLE), "--entry", ENTRY, "--probe", "4x8;wide"], "bad input shape 'wide'"),
        (["doctor", str(SAMPLE), "--assume", "speed=3"], "unknown assumption 'speed'"),
        (["doctor", str(SAMPLE), "--from-chip", "h100_sxm"], "needs --from-chip, --from-chips"),
        (["doctor", str(SAMPLE), "--probe-repeat", "1.5"], "--probe-repeat must be a whole number"),
        (["doctor", "/no/such/project"], "no such file or folder"),
    ],
)
def test_bad_input_is_one_line_exit_2(capsys: pytest.CaptureFixture[str], argv: list[str], message: str) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err


def test_doctor_on_the_sample_project_under_60_s(fresh_python: Runner, tmp_path: Path) -> None:
    """The whole report, trace and recompile probe on emulated tpu included, in a new interpreter: under 60 s of
    CPU time (user + system of the doctor's process and its children), which a busy machine hardly changes."""
    html = tmp_path / "report.html"
    js = tmp_path / "report.json"
    args = [
        "xlaport.cli", "doctor", str(SAMPLE), "--entry", ENTRY, "--input", "4x33:int64",
        "--probe", "4x17:int64", "--probe", "4x33:int64",
        "--from-chip", "h100_sxm", "--from-chips", "64", "--from-mfu", "0.4", "--to-chip", "tpu_v6e", "--to-mfu", "0.35",
        "--html", str(html), "--json", str(js),
    ]  # fmt: skip
    before, start = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    out = fresh_python(module=args, timeout=240)
    after, wall = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter() - start
    seconds = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    assert seconds < 60, f"doctor took {seconds:.1f} s of CPU ({wall:.1f} s waited) on the sample project"
    data = json.loads(js.read_text())
    probe = data["probe"]
    assert probe["error"] is None and all(c["error"] is None for c in probe["calls"]), probe
    assert len(probe["calls"]) == 4 and [c["new_shape"] for c in probe["calls"]] == [True, True, False, False]
    assert all(c["compiles"] >= 1 for c in probe["calls"][:2]), probe["calls"]  # every new shape compiles
    ops = data["ops"]
    assert ops["error"] is None and ops["ops"] > 10
    tpu = next(v for k, v in ops["per_target"].items() if k.startswith("TorchTPU"))
    assert sum(tpu.values()) == ops["ops"]
    assert "## Recompile probe (tpu)" in out.stdout and "## Ops per target" in out.stdout
    assert html.read_text().count("data:image/png;base64,") == 4
    assert math.isfinite(data["cost"]["break_even_months"]) or data["cost"]["verdict"] == "stay"


def test_the_fixed_sample_differs_from_the_sample_only_in_its_three_fixes() -> None:
    """examples/cuda_project_fixed (audit_your_code's ported copy): the same files, the three fixed ones changed,
    the fixed rules gone from its scan and every other finding unchanged."""
    fixed = ROOT / "examples" / "cuda_project_fixed"
    names = {p.name for p in SAMPLE.iterdir() if p.is_file()}
    assert names == {p.name for p in fixed.iterdir() if p.is_file()}
    changed = {n for n in names if (SAMPLE / n).read_text() != (fixed / n).read_text()}
    assert changed == {"README.md", "train.py", "tinylm.py", "generate.py"}, changed
    before, after = scan(SAMPLE).counts(), scan(fixed).counts()
    fixed_rules = {"cuda-amp", "dynamic-shape-op", "growing-cache", "view-offset-in-loop", "tensor-condition"}
    assert all(before.get(r, 0) > 0 and after.get(r, 0) == 0 for r in fixed_rules), (before, after)
    assert after.get("host-sync-in-loop", 0) == before["host-sync-in-loop"] - 1
    untouched = {r: n for r, n in before.items() if r not in fixed_rules | {"host-sync-in-loop"}}
    assert all(after.get(r, 0) == n for r, n in untouched.items()), (before, after)


def test_effort_units_and_break_even_table_read_as_words() -> None:
    from xlaport.doctor.effort import EffortRow

    assert EffortRow("kernel", 1, 1, "kernels", 2, 2).amount == "1 kernel"
    assert EffortRow("device", 3, 3, "findings", 0.1, 0.3).amount == "3 findings"
    assert EffortRow("device", 1, 0.5, "findings", 0.1, 0.05).amount == "0.5 findings"
    md = diagnose(SAMPLE, cost=CostInputs("h100_sxm", 64, 0.4, "tpu_v6e", 0.35)).to_markdown()
    assert not re.search(r"\| 1 (findings|kernels|packages|files) \|", md)
    assert "| quantity | value |" in md and not re.search(r"^\|( \|)+$", md, re.M)  # no empty header row


def test_ops_that_raise_on_the_target_are_priced_and_said_beside_the_scan(tmp_path: Path) -> None:
    """A project whose source the scanner finds nothing in, but whose entry point dispatches two ops TorchTPU's
    tables say raise (linalg_eig, i0): the report must not read '0 findings, 0 person-weeks, migrate' above a table
    of ops that raise. The ops are priced in the effort and the verdict, and the summary names them."""
    from xlaport.doctor import diagnose
    from xlaport.doctor.report import CostInputs

    (tmp_path / "model.py").write_text(
        "import torch\n\n\nclass Step(torch.nn.Module):\n"
        "    def forward(self, x):\n"
        "        return torch.linalg.eigvals(x @ x.T).real.sum() + torch.special.i0(x).sum()\n"
    )
    cost = CostInputs(from_chip="h100_sxm", from_chips=8, from_mfu=0.4, to_chip="tpu_v6e", to_mfu=0.35)
    plain = diagnose(tmp_path, cost=cost)
    rep = diagnose(tmp_path, entry=f"{tmp_path / 'model.py'}:Step", inputs=["4x4"], cost=cost)
    assert not plain.scan.findings and plain.effort.total_weeks == 0
    row = next(r for r in rep.effort.rows if r.category == "ops raising on tpu")
    per = rep.effort.value("weeks_per_raising_op")
    assert row.units == 2 and rep.effort.total_weeks == pytest.approx(
        2 * per * (1 + rep.effort.value("validation_share"))
    )
    assert rep.cost is not None and plain.cost is not None
    assert rep.cost["one_time_usd"] > plain.cost["one_time_usd"]
    md = rep.to_markdown()
    summary = md.split("## Scan")[0]
    assert (
        "0 scanner findings" in summary and "TorchTPU 0.2.0: 2 raise" in summary and "priced in the effort" in summary
    )
    assert f"**{rep.effort.total_weeks:.1f} person-weeks**" in summary
