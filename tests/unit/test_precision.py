"""TorchTPU's float32 matmul precision: the profile rule, the bf16 pass arithmetic, and the emulation on XLA:CPU."""

from __future__ import annotations

import json

import pytest
import torch

from conftest import Runner
from xlaport.numerics import precision as P
from xlaport.profiles import _KINDS, profile


def test_the_tpu_profile_has_the_rule_with_its_sources() -> None:
    r = profile("tpu").rule("matmul-precision")
    assert r.kind == "matmul_precision" and r.kind in _KINDS
    assert r.value == "default" == P.default_mode("tpu")
    assert r.extra["modes"] == P.TORCH_NAMES and r.extra["passes"] == P.PASSES
    for cited in ("_internal/precision/precision.py", "_loader.py", "gpu_to_tpu.md"):
        assert cited in r.source, cited
    assert P.rule("neuron") is None and P.default_mode("cpu") is None


def test_rounding_and_splitting() -> None:
    torch.manual_seed(0)
    x = torch.randn(1000) * 100
    assert torch.equal(P.round_bf16(x), x.to(torch.bfloat16).float())
    for pieces, bound in ((1, 2.0**-8), (2, 2.0**-16), (3, 2.0**-24)):
        parts = P.split_bf16(x, pieces)
        assert all(torch.equal(p, P.round_bf16(p)) for p in parts), "every piece is exactly a bfloat16"
        rel = ((sum(parts) - x).abs() / x.abs()).max().item()
        assert rel <= bound, f"{pieces} piece(s): relative error {rel:.2e} > {bound:.2e}"
    with pytest.raises(ValueError):
        P.split_bf16(x, 4)


def test_passes_trade_accuracy_as_documented() -> None:
    """1 pass keeps 8 bits of each input, 3 passes about 16, 6 passes about float32's 24."""
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(64, 256, generator=g), torch.randn(256, 32, generator=g)
    exact = a.double() @ b.double()

    def err(y: torch.Tensor) -> float:
        return ((y.double() - exact).abs().max() / exact.abs().max()).item()

    e1, e3, e6, e32 = (err(P.emulated_matmul(a, b, m)) for m in (1, 3, 6, "highest"))
    assert torch.equal(P.emulated_matmul(a, b, "default"), P.emulated_matmul(a, b, 1))
    assert e1 > 1e-3 and e1 > 30 * e3 and e3 > e6, (e1, e3, e6)
    assert e6 < 1e-5 and e32 < 1e-5, (e6, e32)
    with pytest.raises(ValueError, match="unknown matmul precision"):
        P.emulated_matmul(a, b, "medium")
    with pytest.raises(ValueError, match="passes must be 1, 3 or 6"):
        P.emulated_matmul(a, b, 2)


def test_tolerances_follow_hugging_face() -> None:
    assert P.tolerance_for("default") == P.HF_TOLERANCES["bfloat16"] == (1e-2, 1e-2)
    assert P.tolerance_for("highest") == P.tolerance_for(None) == P.HF_TOLERANCES["float32"] == (1e-6, 1e-4)
    assert "test_modeling_common.py" in P.HF_TOLERANCE_SOURCE
    e = torch.tensor([1.0, -2.0, 0.0])
    a = e + torch.tensor([0.01, 0.0, -0.003])
    c = P.compare(a, e)
    assert c.max_abs == pytest.approx(0.01, rel=1e-6) and c.tol_needed == pytest.approx(0.005, rel=1e-6)
    assert c.passes(c.tol_needed * 1.01, c.tol_needed * 1.01) and not c.passes(c.tol_needed * 0.9, c.tol_needed * 0.9)
    assert torch.allclose(a, e, atol=c.tol_needed * 1.01, rtol=c.tol_needed * 1.01)
    assert P.needed_tolerance(e, e) == 0.0
    assert not P.compare(torch.tensor([float("nan")]), torch.tensor([1.0])).passes(1, 1)
    with pytest.raises(ValueError, match="shapes differ"):
        P.compare(e, e[:2])


def test_bad_modes_are_one_line_errors() -> None:
    with pytest.raises(ValueError, match="unknown matmul precision 'fast'"):
        P.tolerance_for("fast")
    with pytest.raises(ValueError, match="no matmul_precision rule"):
        with P.emulate(profile("neuron"), "highest"):
            pass
    with pytest.raises(ValueError, match=r"inside precision\.emulate"):
        with P.mode("high"):
            pass
    with P.emulate(profile("neuron")) as m:  # no rule: nothing to apply
        assert m is None


def test_emulation_on_xla(fresh_python: Runner) -> None:
    """On the emulated tpu: float32 matmuls, einsum and convolutions (forward and backward) round their inputs to
    bf16 at the default mode, run 3 passes at high, and stay float32 at highest; TorchTPU's
    set_float32_matmul_precision mapping works inside and is undone after."""
    code = """
        import json, torch
        import torch.nn.functional as F
        import xlaport
        from xlaport.numerics import precision as P
        t = xlaport.target("tpu")
        d = t.device
        g = torch.Generator().manual_seed(0)
        a, b = torch.randn(32, 64, generator=g), torch.randn(64, 16, generator=g)
        x, w, bias = torch.randn(2, 3, 12, generator=g), torch.randn(5, 3, 3, generator=g), torch.randn(5, generator=g)
        out = {}
        def rel(u, v):
            return ((u.double().cpu() - v.double()).abs().max() / v.double().abs().max()).item()
        for mode in ("default", "high", "highest"):
            ref = P.emulated_matmul(a, b, mode if mode != "highest" else "highest")
            with P.emulate(t, mode):
                ad, bd = a.to(d), b.to(d)
                r = {"mm": rel(ad @ bd, ref), "addmm": rel(torch.addmm(torch.zeros(16, device=d), ad, bd), ref),
                     "bmm": rel(torch.bmm(ad[None], bd[None])[0], ref),
                     "einsum": rel(torch.einsum("ik,kj->ij", ad, bd), ref),
                     "vs_fp32": rel(ad @ bd, a @ b)}
                xd, wd, bd_ = (v.to(d).requires_grad_() for v in (x, w, bias))
                y = F.conv1d(xd, wd, bd_, padding=1)
                y.square().sum().backward()
                rx, rw = (P.round_bf16(x), P.round_bf16(w)) if mode == "default" else (x, w)
                r["conv"] = rel(y, F.conv1d(rx, rw, bias, padding=1))
                w32 = w.clone().requires_grad_()
                F.conv1d(x, w32, bias, padding=1).square().sum().backward()
                r["conv_grad_vs_fp32"] = rel(wd.grad, w32.grad)
            out[mode] = r
        with P.emulate(t) as m:
            out["entered"] = [m, torch.get_float32_matmul_precision()]
            torch.set_float32_matmul_precision("highest")
            out["after_set"] = P.current_mode()
            with P.mode("high"):
                out["nested"] = P.current_mode()
            try:
                torch.set_float32_matmul_precision("fast")
            except ValueError as e:
                out["error"] = str(e)
        out["outside"] = [P.current_mode(), torch.get_float32_matmul_precision()]
        out["ops"] = list(P.emulated_ops())
        print(json.dumps(out))
    """
    res = json.loads(fresh_python(code, timeout=300, fork=True).stdout.strip().splitlines()[-1])
    for mode in ("default", "high", "highest"):
        for op in ("mm", "addmm", "bmm", "einsum"):
            assert res[mode][op] < 1e-5, (mode, op, res[mode][op])
    assert res["default"]["vs_fp32"] > 1e-3 > 1e-5 > res["highest"]["vs_fp32"]
    assert res["default"]["vs_fp32"] > 30 * res["high"]["vs_fp32"]
    assert res["default"]["conv"] < 1e-5 and res["highest"]["conv"] < 1e-5
    assert res["default"]["conv_grad_vs_fp32"] > 1e-3 > 1e-4 > res["highest"]["conv_grad_vs_fp32"]
    assert res["entered"] == ["default", "medium"]
    assert res["after_set"] == "highest" and res["nested"] == "high"
    assert "expected to be one of 'highest', 'high', or 'medium'" in res["error"]
    assert res["outside"] == [None, "highest"]
    assert {"aten::mm", "aten::addmm", "aten::bmm", "aten::einsum"} <= set(res["ops"])
    assert {"aten::convolution_backward", "aten::convolution_backward_overrideable"} & set(res["ops"])
