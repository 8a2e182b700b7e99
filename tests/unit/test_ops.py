"""xlaport.ops: tracing, the support tables, decomposition handling, the emulated missing-op rule, the CLI.

Tests that need torch_xla run in a subprocess: importing it changes Dynamo's global
config for the whole process (book/evidence/xla_cpu_measurements.md).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from conftest import Runner
from xlaport import ops
from xlaport.cli import main
from xlaport.ops.coverage import composite_key
from xlaport.ops.support import tpu_ops_data
from xlaport.profiles import profile
from xlaport.reference import data_text, op_coverage

ROOT = Path(__file__).resolve().parents[2]


def _spd(n: int = 5) -> torch.Tensor:
    g = torch.Generator().manual_seed(0)
    a = torch.randn(n, n, generator=g)
    return a @ a.T + n * torch.eye(n)


def gp_step(a: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
    chol = torch.linalg.cholesky(a)
    uniq = torch.unique(rows, dim=0)
    return chol.sum() + uniq.sum() + (a @ a).sum()


ROWS = torch.tensor([[1, 2], [1, 2], [3, 4]])


# ---------------------------------------------------------------- tracing
def test_trace_records_ops_counts_and_call_sites() -> None:
    tr = ops.aten_ops(gp_step, _spd(), ROWS)
    # linalg.cholesky is CompositeImplicitAutograd: the backend sees cholesky_ex plus the error check
    assert "aten::linalg_cholesky_ex" in tr and "aten::_linalg_check_errors" in tr
    assert "aten::linalg_cholesky" not in tr.names
    assert "aten::unique_dim" in tr
    assert tr["aten::mm"].count == 1
    assert tr["aten::sum"].count == 3
    assert tr["unique_dim"].site.startswith("test_ops.py:") and "gp_step" in tr["unique_dim"].site
    assert "aten::mm" in tr.table()


def test_trace_modules_on_meta_tensors_does_not_touch_the_module() -> None:
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU())
    tr = ops.aten_ops(m, torch.randn(2, 4), device="meta")
    assert "aten::addmm" in tr and "aten::relu" in tr
    assert next(m.parameters()).device.type == "cpu"


def test_trace_records_backward_ops() -> None:
    a = _spd().requires_grad_(True)
    tr = ops.aten_ops(lambda x: torch.linalg.cholesky(x).sum().backward(), a)
    assert "aten::linalg_solve_triangular" in tr  # cholesky's backward


@pytest.mark.parametrize("bad", [None, 3, "f"])
def test_trace_rejects_non_callables(bad: object) -> None:
    with pytest.raises(ValueError, match="function or module"):
        ops.aten_ops(bad)  # type: ignore[arg-type]


def test_trace_rejects_other_devices() -> None:
    with pytest.raises(ValueError, match="'cpu' or 'meta'"):
        ops.aten_ops(torch.sin, torch.ones(1), device="cuda")


# ---------------------------------------------------------------- tables
def test_tpu_table_records_the_wheel_and_its_kernels() -> None:
    d = json.loads(data_text("torch_tpu-0.2.0-ops.json"))
    assert d["package"] == "torch_tpu" and d["version"] == "0.2.0"
    assert len(d["sha256"]) == 64 and d["wheel"].startswith("torch_tpu-0.2.0-")
    assert d["n_ops"] == len(d["ops"]) > 500
    t = ops.support_table("tpu")
    for op in ("aten::mm.out", "aten::_unique2", "aten::linalg_solve_triangular", "aten::add.Tensor", "aten::view"):
        assert t.has_kernel(op), op
    for op in (
        "aten::unique_dim",
        "aten::linalg_cholesky_ex",
        "aten::linalg_cholesky_ex.L",
        "aten::cholesky",
        "aten::mm",
    ):
        assert not t.has_kernel(op), op
    assert t.missing == "raise" and "sha256" in t.source


def test_tpu_table_messages_are_the_ones_in_the_rule() -> None:
    msgs = ops.support_table("tpu").meta["missing_op_messages"]
    rule = profile("tpu").rule("missing-op")
    for template in (rule.message, rule.extra["warning"]):
        tail = template.split("{op}", 1)[1]
        assert any(m.endswith(tail) for m in msgs), tail


def test_neuron_table_is_low_confidence_and_by_name() -> None:
    t = ops.support_table("neuron")
    assert t.confidence.startswith("low") and "aws-neuron-sdk" in t.source
    assert t.has_kernel("aten::add.Tensor") and t.has_kernel("aten::add.out")  # names cover every overload
    assert len(t.kernels) == 41 and t.missing == "fallback" and not t.complete


@pytest.mark.parametrize("bad", ["gpu", "cuda", ""])
def test_unknown_table_is_a_one_line_error(bad: str) -> None:
    with pytest.raises(ValueError, match="no op-support table"):
        ops.support_table(bad)


# ---------------------------------------------------------------- coverage and decompositions
def test_coverage_tpu_raises_by_default_and_falls_back_when_switched_on() -> None:
    tr = ops.aten_ops(gp_step, _spd(), ROWS)
    cov = ops.coverage(tr, "tpu", cpu_fallback=False)
    assert cov["aten::unique_dim"].status == "raises"
    assert cov["aten::linalg_cholesky_ex"].status == "raises"
    assert set(cov.raises) == {"aten::unique_dim", "aten::linalg_cholesky_ex"}
    on = ops.coverage(tr, "tpu", cpu_fallback=True)
    assert not on.raises and set(on.fallbacks) == {"aten::unique_dim", "aten::linalg_cholesky_ex"}
    assert "raises" in cov.table(only_problems=True) and "aten::mm " not in cov.table(only_problems=True)


def test_coverage_follows_the_switch_when_not_told() -> None:
    tr = ops.aten_ops(lambda r: torch.unique(r, dim=0), ROWS)
    assert ops.coverage(tr, "tpu")["unique_dim"].status == "raises"
    with ops.cpu_fallback():
        assert ops.execution_mode.enable_cpu_fallback
        assert ops.coverage(tr, "tpu")["unique_dim"].status == "falls back"
    assert not ops.execution_mode.enable_cpu_fallback


def test_decomposition_is_checked_by_running_the_composite() -> None:
    tr = ops.aten_ops(lambda a: (a @ a, a.sum()), _spd())
    cov = ops.coverage(tr, "tpu")
    mm = cov["aten::mm"]  # no TorchTPU kernel for mm itself: CEANF -> mm.out, which it has
    assert mm.status == "decomposed" and "mm.out" in mm.via and "CEANF" in mm.via
    # a structured op's route is known by name (its structured_delegate); any other composite is not
    by_name = ops.coverage(["aten::mm", "aten::pixel_shuffle"], "tpu")
    assert by_name["aten::mm"].status == "decomposed" and "structured" in by_name["aten::mm"].via
    assert (
        by_name["aten::pixel_shuffle"].status == "unknown" and "no example inputs" in by_name["aten::pixel_shuffle"].via
    )


def test_a_composite_with_a_missing_part_is_not_supported() -> None:
    cov = ops.coverage(ops.aten_ops(torch.linalg.cholesky_ex, _spd()), "tpu")
    row = cov["aten::linalg_cholesky_ex"]
    assert row.status == "raises" and "linalg_cholesky_ex.L" in row.via


def test_xla_excludes_nonfunctional_composites_like_the_dispatcher(monkeypatch: pytest.MonkeyPatch) -> None:
    # linalg_cholesky_ex has only a CompositeExplicitAutogradNonFunctional kernel, which the dispatcher never uses for XLA
    assert composite_key("aten::linalg_cholesky_ex", "PrivateUse1") == "CompositeExplicitAutogradNonFunctional"
    assert composite_key("aten::linalg_cholesky_ex", "XLA") is None
    assert composite_key("aten::sort", "XLA") == "CompositeExplicitAutograd"


def test_a_composite_that_calls_only_itself_is_decomposed() -> None:
    # detach's CompositeExplicitAutograd kernel re-dispatches detach: nothing else is needed from the backend
    cov = ops.coverage(ops.aten_ops(lambda a: a.detach(), torch.ones(2)), "neuron")
    assert cov["aten::detach"].status == "decomposed"


def test_neuron_never_raises_and_marks_unlisted_ops_unknown() -> None:
    cov = ops.coverage(ops.aten_ops(gp_step, _spd(), ROWS), "neuron")
    assert not cov.raises
    assert cov["aten::unique_dim"].status == "unknown" and cov["aten::mm"].status == "supported"


def test_coverage_by_name_accepts_spellings_and_rejects_unknown_ops() -> None:
    cov = ops.coverage(["unique_dim", "aten.unique_dim.default", "aten::add.Tensor"], "tpu")
    assert [r.op for r in cov] == ["aten::unique_dim", "aten::unique_dim", "aten::add.Tensor"]
    assert cov["aten::add.Tensor"].status == "supported"
    with pytest.raises(ValueError, match="unknown ATen op"):
        ops.coverage(["not_an_op_at_all"], "tpu")
    with pytest.raises(ValueError, match="OpTrace"):
        ops.coverage("aten::mm", "tpu")  # type: ignore[arg-type]


def test_switch_rejects_non_bools() -> None:
    with pytest.raises(ValueError, match="True or False"):
        ops.execution_mode.enable_cpu_fallback = 1  # type: ignore[assignment]


def test_missing_op_rule_is_in_the_profile_with_a_source() -> None:
    rule = profile("tpu").rule("missing-op")
    assert rule.kind == "missing_op" and rule.error == "NotImplementedError"
    assert rule.message.format(op="aten::unique_dim") == (
        "operator 'aten::unique_dim' is not implemented for TPU. Please file a feature request"
    )
    assert "wheel" in rule.source and "TpuMissingOpFallback" in rule.source


# ---------------------------------------------------------------- torch_xla (subprocess)
def _run_py(fresh_python: Runner, code: str, fork: bool = False) -> str:
    return fresh_python(code, timeout=600, fork=fork).stdout


def test_emulated_tpu_raises_torchtpus_error_then_falls_back_for_real(fresh_python: Runner) -> None:
    out = _run_py(
        fresh_python,
        """
        import warnings, torch, xlaport
        import torch_xla, torch_xla.debug.metrics as met
        from xlaport import ops
        t = xlaport.target("tpu")
        x = torch.tensor([[1, 2], [1, 2], [3, 4]]).to(t.device)
        try:
            torch.unique(x, dim=0)
            print("NO-RAISE")
        except NotImplementedError as e:
            print("RAISED", e)
        met.clear_all()
        ops.execution_mode.enable_cpu_fallback = True
        before = ops.fallback_counts()
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            u = torch.unique(x, dim=0)
        after = ops.fallback_counts()
        print("COUNTS", {k: v - before.get(k, 0) for k, v in after.items() if v - before.get(k, 0)})
        print("VALUES", u.cpu().tolist())
        print("WARN", [str(m.message) for m in w if issubclass(m.category, ops.TpuFallbackWarning)])
        print("FALLBACKS", met.executed_fallback_ops())
        xla = ops.support_table("xla")
        print("XLA", xla.has_kernel("aten::mm"), xla.has_kernel("aten::unique_dim"))
        # the table of the emulator is read from its dispatcher, and agrees with it
        # _unique2: TorchTPU has a kernel, so it is left alone; the dispatcher and the table agree it falls back
        line = torch._C._dispatch_dump_table("aten::_unique2").split("XLA:")[1].splitlines()[0]
        print("DUMP", "[backend fallback]" in line and not xla.has_kernel("aten::_unique2"))
        print("HOOKED", "aten::unique_dim" in ops.emulated_ops(), "aten::_unique2" in ops.emulated_ops())
        # kernels torch_xla registers but that run its CPU fallback: the table's list must still be true
        v = torch.randn(8, 4).to(t.device)
        seen = set()
        for f in (lambda: torch.nonzero(v > 0), lambda: torch.masked_select(v, v > 0), lambda: v.sum().item()):
            met.clear_all(); f(); torch_xla.sync(); seen.update(met.executed_fallback_ops())
        print("KERNEL-FALLBACKS", seen == set(ops.XLA_KERNELS_THAT_FALL_BACK), sorted(seen))
        print("XLA-NONZERO", ops.coverage(["aten::nonzero"], "xla")["aten::nonzero"].status)
    """,
        fork=True,
    )
    assert "RAISED operator 'aten::unique_dim' is not implemented for TPU. Please file a feature request" in out
    assert "VALUES [[1, 2], [3, 4]]" in out
    assert "WARN [\"operator 'aten::unique_dim' is not implemented for TPU. Falling back to CPU\"]" in out
    assert "FALLBACKS ['aten::unique_dim']" in out
    assert "COUNTS {'aten::unique_dim': 1}" in out
    assert "XLA True False" in out and "DUMP True" in out and "HOOKED True False" in out
    assert "KERNEL-FALLBACKS True" in out and "XLA-NONZERO falls back" in out


def test_fallback_counts_without_torch_xla_is_empty_and_imports_nothing(fresh_python: Runner) -> None:
    out = _run_py(
        fresh_python,
        """
        import sys
        from xlaport import ops
        print("EMPTY", ops.fallback_counts() == {}, "torch_xla" in sys.modules)
    """,
    )
    assert "EMPTY True False" in out


# ---------------------------------------------------------------- CLI
USER_FILE = """
import torch

def gp(x):
    k = x @ x.T + x.shape[0] * torch.eye(x.shape[0])
    return torch.linalg.cholesky(k).sum()

def clean(x):
    return (x @ x.T).relu().sum()

def broken(x):
    raise RuntimeError("boom in user code")

example_inputs = (torch.ones(4, 3),)
"""


@pytest.fixture
def user_file(tmp_path: Path) -> Path:
    p = tmp_path / "model.py"
    p.write_text(USER_FILE)
    return p


def test_cli_exits_1_when_an_op_would_raise(user_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ops", f"{user_file}:gp"]) == 1
    out = capsys.readouterr().out
    assert "aten::linalg_cholesky_ex" in out and "raises" in out


def test_cli_exits_0_for_clean_code_and_with_fallback_on(user_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ops", f"{user_file}:clean", "--input", "5x3", "--target", "tpu", "--target", "neuron"]) == 0
    assert main(["ops", f"{user_file}:gp", "--cpu-fallback"]) == 0
    assert "falls back" in capsys.readouterr().out


def test_cli_runs_a_whole_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = tmp_path / "script.py"
    p.write_text("import torch\nprint(torch.unique(torch.tensor([[1], [1]]), dim=0).tolist())\n")
    assert main(["ops", str(p), "--problems"]) == 1
    assert "aten::unique_dim" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["ops", "missing.py"], "no such file: missing.py"),
        (["ops", "not a spec"], "bad spec"),
        (["ops", "no_such_module_xyz:fn"], "could not import module 'no_such_module_xyz'"),
        (["ops", "{f}:nope"], "has no attribute 'nope'"),
        (["ops", "{f}:broken"], "failed while tracing: RuntimeError: boom in user code"),
        (["ops", "{f}:clean", "--input", "4xq"], "bad --input"),
        (["ops", "{f}:clean", "--input", "4:floaty"], "unknown dtype"),
    ],
)
def test_cli_errors_are_one_line_exit_2(
    argv: list[str], message: str, user_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([a.format(f=user_file) for a in argv]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1 and err.startswith("xlaport ops: error:")


def test_cli_help(fresh_python: Runner) -> None:
    out = fresh_python(module=["xlaport.cli", "ops", "--help"], timeout=120)
    assert "MODULE:CALLABLE" in out.stdout and "--cpu-fallback" in out.stdout


# ---------------------------------------------------------------- the generated page
def test_coverage_page_is_generated_from_the_tables() -> None:
    md = op_coverage.render(targets=("tpu", "neuron"))
    assert md.startswith("# Op coverage by target")
    assert tpu_ops_data()["sha256"] in md
    row = next(line for line in md.splitlines() if line.startswith("| `torch.unique(x, dim=0)`"))
    assert "`unique_dim`" in row and "✗ raises" in row
    row = next(line for line in md.splitlines() if line.startswith("| `x @ w`"))
    assert "✓ decomposed" in row


def test_tables_here_leaves_out_the_xla_table_where_torch_xla_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    """A TorchTPU environment has no torch_xla: the chapters ask for the tables they can read, never import it."""
    import importlib.util

    from xlaport.ops import tables_here

    assert tables_here() == ("tpu", "neuron", "xla")  # this environment has torch_xla
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "torch_xla" else real(name, *a))
    assert tables_here() == ("tpu", "neuron")
    assert tables_here(("tpu", "xla")) == ("tpu",)
    with pytest.raises(ValueError, match="no op-support table for target 'cuda'"):
        tables_here(("tpu", "cuda"))
