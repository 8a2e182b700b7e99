"""xlaport.kernels: the Pallas bridge (forward, backward, fake tensors, torch.compile, bad input), the race
check, the Triton interpreter run, the fusion count, and the Triton -> Pallas -> NKI concept table."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest
import torch

from conftest import Runner
from xlaport.reference import PAGES, render
from xlaport.reference import kernel_concepts as kc

ROOT = Path(__file__).resolve().parents[2]
SIZES = dict(rows=20, dim=96, m=24, k=136, n=40)  # none a multiple of the (8, 128) tile


# ------------------------------------------------------------------------------------------ concept data
def test_every_concept_and_figure_has_a_public_source() -> None:
    rows = kc.concepts()
    assert len(rows) >= 8
    assert len({c.id for c in rows}) == len(rows)
    for c in rows:
        assert c.triton and c.pallas and c.nki and c.note, c.id
        assert c.sources, f"{c.id} has no source"
        assert any(s.startswith("https://") for s in c.sources), f"{c.id}: no public link among {c.sources}"
    for f in kc.figures():
        assert f.value > 0 and f.source.startswith("https://"), f.id


def test_lookup_finds_triton_constructs_and_rejects_empty_queries() -> None:
    assert [c.id for c in kc.lookup("tl.dot")] == ["dot"]
    assert "masked_load" in [c.id for c in kc.lookup("TL.LOAD")]
    assert kc.lookup("no_such_construct") == []
    with pytest.raises(ValueError, match="look up"):
        kc.lookup("  ")
    with pytest.raises(ValueError, match="unknown figure"):
        kc.figure("nope")


def test_concept_page_renders_every_row_with_its_sources() -> None:
    assert "kernel_concepts" in PAGES
    page = render("kernel_concepts")
    assert page.splitlines()[0].startswith("# ")
    for c in kc.concepts():
        assert f"(`{c.id}`)" in page
        for s in c.sources:
            if s.startswith("https://"):
                assert f"<{s}>" in page
    for f in kc.figures():
        assert f"{f.value:g}" in page


# ------------------------------------------------------------------------------------------ the bridge
def _ref_rmsnorm(x: torch.Tensor, w: torch.Tensor, dy: torch.Tensor, eps: float) -> tuple[torch.Tensor, ...]:
    xr, wr = x.clone().requires_grad_(), w.clone().requires_grad_()
    y = torch.nn.functional.rms_norm(xr, (x.shape[-1],), wr, eps)
    y.backward(dy)
    return y.detach(), xr.grad, wr.grad  # type: ignore[return-value]


@pytest.mark.parametrize("shape", [(20, 96), (3, 5, 130)])
def test_rmsnorm_forward_and_backward_match_pytorch(shape: tuple[int, ...]) -> None:
    from xlaport.kernels import rmsnorm

    g = torch.Generator().manual_seed(1)
    x, w, dy = torch.randn(*shape, generator=g), torch.randn(shape[-1], generator=g), torch.randn(*shape, generator=g)
    ref_y, ref_dx, ref_dw = _ref_rmsnorm(x, w, dy, 1e-5)
    xp, wp = x.clone().requires_grad_(), w.clone().requires_grad_()
    y = rmsnorm(xp, wp, 1e-5)
    y.backward(dy)
    assert y.shape == x.shape
    assert (y - ref_y).abs().max() < 1e-5
    assert (xp.grad - ref_dx).abs().max() < 1e-4  # type: ignore[operator]
    assert (wp.grad - ref_dw).abs().max() < 1e-4  # type: ignore[operator]


def test_matmul_forward_and_backward_match_pytorch() -> None:
    from xlaport.kernels import matmul_bias_relu

    g = torch.Generator().manual_seed(2)
    a, b, bias = torch.randn(24, 136, generator=g), torch.randn(136, 40, generator=g), torch.randn(40, generator=g)
    dc = torch.randn(24, 40, generator=g)
    ours = [t.clone().requires_grad_() for t in (a, b, bias)]
    ref = [t.clone().requires_grad_() for t in (a, b, bias)]
    c, cr = matmul_bias_relu(*ours), torch.relu(ref[0] @ ref[1] + ref[2])
    c.backward(dc)
    cr.backward(dc)
    assert (c - cr).abs().max() < 1e-4
    for p, r in zip(ours, ref):
        assert (p.grad - r.grad).abs().max() < 1e-4  # type: ignore[operator]


def test_opcheck_schema_fake_tensor_and_autograd_registration() -> None:
    from xlaport.kernels import ops

    ops.rmsnorm(torch.ones(2, 8), torch.ones(8))  # registers the eps=1e-6 ops
    result = torch.library.opcheck(ops._rmsnorm_ops(1e-6), (torch.randn(8, 32), torch.randn(32)))
    assert set(result.values()) == {"SUCCESS"}, result


def test_fake_tensors_never_run_the_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    from torch._subclasses.fake_tensor import FakeTensorMode

    from xlaport.kernels import bridge, rmsnorm

    rmsnorm(torch.ones(2, 16), torch.ones(16))  # register outside the fake mode

    def refuse(*_a: object) -> None:
        raise AssertionError("the kernel ran on fake tensors")

    monkeypatch.setattr(bridge, "to_jax", refuse)
    with FakeTensorMode():
        y = rmsnorm(torch.empty(7, 16), torch.empty(16))
    assert tuple(y.shape) == (7, 16) and y.dtype == torch.float32


def test_torch_compile_traces_a_model_through_the_op_without_graph_breaks() -> None:
    from xlaport.kernels import RMSNorm

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), RMSNorm(16), torch.nn.Linear(16, 2))
    eager_out = model(torch.ones(3, 8))
    compiled = torch.compile(model, backend="aot_eager", fullgraph=True)
    out = compiled(torch.ones(3, 8))
    out.sum().backward()
    assert torch.allclose(out, eager_out, atol=1e-6)
    assert model[1].weight.grad is not None and torch.isfinite(model[1].weight.grad).all()


@pytest.mark.parametrize(
    ("x", "w", "eps", "match"),
    [
        (torch.ones(4, 8), torch.ones(9), 1e-6, "last dimension"),
        (torch.ones(4, 8), torch.ones(8, 1), 1e-6, "1-D"),
        (torch.ones(4, 8, dtype=torch.float64), torch.ones(8, dtype=torch.float64), 1e-6, "float32 or bfloat16"),
        (torch.ones(4, 8), torch.ones(8, dtype=torch.bfloat16), 1e-6, "share a dtype"),
        (torch.ones(0, 8), torch.ones(8), 1e-6, "empty"),
        (torch.ones(4, 8), torch.ones(8), 0.0, "eps"),
        ([[1.0]], torch.ones(1), 1e-6, "torch.Tensor"),
    ],
)
def test_bad_rmsnorm_input_is_a_one_line_value_error(x: object, w: object, eps: float, match: str) -> None:
    from xlaport.kernels import rmsnorm

    with pytest.raises(ValueError, match=match) as e:
        rmsnorm(x, w, eps)  # type: ignore[arg-type]
    assert "\n" not in str(e.value)


def test_bad_matmul_shapes_and_bad_op_names_are_one_line_value_errors() -> None:
    from xlaport.kernels import RMSNorm, matmul_bias_relu, pallas_op

    with pytest.raises(ValueError, match="do not chain") as e:
        matmul_bias_relu(torch.ones(4, 8), torch.ones(9, 3), torch.ones(3))
    assert "\n" not in str(e.value)
    with pytest.raises(ValueError, match="namespace::name"):
        pallas_op("no_namespace", lambda x: x, fake=lambda x: x, num_inputs=1)
    with pytest.raises(ValueError, match="dim"):
        RMSNorm(0)


def test_bfloat16_goes_through_the_bridge_bit_for_bit() -> None:
    from xlaport.kernels.bridge import to_jax, to_torch

    x = torch.randn(5, 7).to(torch.bfloat16)
    back = to_torch(to_jax(x), torch.device("cpu"))
    assert back.dtype == torch.bfloat16 and torch.equal(back, x)


def test_race_detector_flags_a_parallel_reduction_axis_only() -> None:
    from xlaport.kernels import Sizes, race_report

    r = race_report(0, Sizes(**SIZES), cores=2)
    assert not r["rmsnorm_bwd/arbitrary"]["races"] and r["rmsnorm_bwd/arbitrary"]["dw_error"] < 1e-4
    assert not r["matmul/arbitrary"]["races"]
    assert r["rmsnorm_bwd/parallel"]["races"] and r["rmsnorm_bwd/parallel"]["messages"]


def test_kernel_ops_import_no_libtpu_and_open_no_socket(fresh_python: Runner) -> None:
    """In a fresh interpreter: the bridge runs a kernel with JAX on CPU only, without libtpu or the network."""
    code = textwrap.dedent(
        """
        import os, socket, sys
        def no_network(*a, **k):
            raise AssertionError("network access attempted")
        socket.socket.connect = no_network
        socket.create_connection = no_network
        import torch
        from xlaport.kernels import rmsnorm
        y = rmsnorm(torch.ones(3, 8), torch.ones(8))
        assert torch.allclose(y, torch.ones(3, 8), atol=1e-5)
        import jax
        bad = sorted(m for m in sys.modules if m.split(".")[0] in ("libtpu", "torch_tpu"))
        print(json.dumps({"bad": bad, "platforms": os.environ.get("JAX_PLATFORMS"),
                          "backend": jax.default_backend()}) if (json := __import__("json")) else "")
        """
    )
    out = fresh_python(code, unset=("JAX_PLATFORMS",))
    info = json.loads(out.stdout.strip().splitlines()[-1])
    assert info == {"bad": [], "platforms": "cpu", "backend": "cpu"}, info


def test_triton_kernels_match_pytorch_in_the_interpreter(fresh_python: Runner) -> None:
    """The Triton versions in Triton's interpreter (its own fresh process), within float32 rounding."""
    from xlaport.kernels import Sizes, triton_report

    rep = triton_report(0, Sizes(**SIZES))
    assert rep["interpreted"] is True
    for name, err in rep["errors"].items():
        assert err < 1e-4, (name, err)


def test_importing_triton_kernels_after_triton_refuses_in_one_line(fresh_python: Runner) -> None:
    out = fresh_python(
        "import triton\ntry:\n    import xlaport.kernels.triton_kernels\nexcept RuntimeError as e:\n    print('refused:', e)",
        unset=("TRITON_INTERPRET",),
        check=False,
    )
    if "refused:" not in out.stdout:
        pytest.skip("a CUDA GPU is present: the kernels run for real, no interpreter needed")
    assert "TRITON_INTERPRET=1" in out.stdout


# ------------------------------------------------------------------------------------------ measurements
def test_count_fusions_reads_hlo_text() -> None:
    from xlaport.kernels.fusion import count_fusions

    hlo = textwrap.dedent(
        """
        ENTRY %main (p0: f32[4]) -> f32[4] {
          %p0 = f32[4]{0} parameter(0)
          %fusion = f32[4]{0} fusion(%p0), kind=kLoop, calls=%fused_computation
          ROOT %fusion.1 = f32[4]{0} fusion(%fusion), kind=kInput, calls=%fused_computation.1
        }
        """
    )
    assert count_fusions(hlo) == {"fusions": 2, "ops": 3}


@pytest.mark.subprocess
def test_xla_fuses_plain_pytorch_rmsnorm() -> None:
    from xlaport.kernels import xla_fusions

    f = xla_fusions(rows=16, dim=40)
    assert f["forward"]["fusions"] >= 1 and f["backward"]["fusions"] >= 1, f
    assert f["forward"]["ops"] > f["forward"]["fusions"], f
    with pytest.raises(ValueError, match="whole number"):
        xla_fusions(rows=2.5)


def test_lines_of_code_skip_comments_docstrings_and_blank_lines() -> None:
    from xlaport.kernels import lines_of_code
    from xlaport.kernels.report import _code_lines

    src = 'def f(x):\n    """doc\n    more"""\n\n    # comment\n    y = x  # trailing\n    return y\n\ndef g():\n    pass\n'
    assert _code_lines(src, ("f",)) == 3
    with pytest.raises(ValueError, match="no top-level"):
        _code_lines(src, ("h",))
    loc = lines_of_code()
    assert set(loc["rmsnorm forward"]) == {"Triton", "Pallas", "NKI"}
    assert all(v > 5 for row in loc.values() for v in row.values())


def test_the_chapters_kernel_tabs_are_the_package_kernels() -> None:
    """The tab set in the chapter shows the code the package runs (no drift between page and package)."""
    from xlaport.kernels.nki_kernels import RMSNORM_SOURCE

    nb = json.loads((ROOT / "notebooks" / "custom_kernels.ipynb").read_text(encoding="utf-8"))
    text = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    tabs = re.search(r"::::\{tab-set\}\n:sync-group: backend\n(.*?)\n::::", text, re.S)
    assert tabs, "the chapter lost its synced tab set"
    blocks = re.findall(r"```python\n(.*?)```", tabs.group(1), re.S)
    assert len(blocks) == 3
    kdir = ROOT / "src" / "xlaport" / "kernels"
    sources = [(kdir / "triton_kernels.py").read_text(), (kdir / "pallas_kernels.py").read_text(), RMSNORM_SOURCE]

    def plain(text: str) -> str:  # the page hides type-checker comments
        return re.sub(r"  # type: ignore\[[\w-]+\]", "", text)

    for block, source in zip(blocks, sources):
        for function in plain(block).strip().split("\n\n\n"):
            assert function.strip() in plain(source), function[:80]
    assert ":sync: cuda" in tabs.group(1) and ":sync: tpu" in tabs.group(1) and ":sync: neuron" in tabs.group(1)


def test_report_tables_render_each_result_and_reject_bad_input() -> None:
    from xlaport.kernels import describe_race, errors_table, losses_table, races_table

    t = errors_table({"rmsnorm_y": 1.5e-7, "matmul": 3e-5}).data.splitlines()
    assert t[0] == "| result | max \\|error\\| vs PyTorch |"
    assert t[2:] == ["| rmsnorm_y | 1.50e-07 |", "| matmul | 3.00e-05 |"]
    races = {
        "rmsnorm_bwd/parallel": {"races": True, "dw_error": float("nan"), "messages": ["a", "b"]},
        "matmul/arbitrary": {"races": False, "error": 2e-6, "messages": []},
    }
    r = races_table(races).data.splitlines()
    assert r[2:] == [
        "| rmsnorm_bwd/parallel | yes | no result (the cores raced) | 2 |",
        "| matmul/arbitrary | no | 2.00e-06 | 0 |",
    ]
    said = describe_race(
        [
            "RACE DETECTED",
            "  write of ('any', 105, 0, 0)[(slice(0, 1, 1), slice(0, 128, 1))] from 0, 1, pallas_call",
            "  write of ('any', 105, 0, 0)[(slice(0, 1, 1), slice(0, 128, 1))] from 0, 0, pallas_call",
        ]
    )
    assert "core 1 of device 0 and core 0 of device 0" in said and "row 0, columns 0 to 127" in said, said
    assert describe_race(["nothing"]) == "no race reported"
    losses = losses_table({"plain": [2.0, 1.5], "ported": [2.0, 1.25]}).data.splitlines()
    assert losses[0] == "| model | step 1 | step 2 |"
    assert losses[3] == "| ported | 2 | 1.25 |"
    for call, match in (
        (lambda: errors_table({}), "errors_table"),
        (lambda: races_table({"x": {"races": True}}), "lacks"),
        (lambda: losses_table({"a": [1.0], "b": [1.0, 2.0]}), "same"),
    ):
        with pytest.raises(ValueError, match=match):
            call()
