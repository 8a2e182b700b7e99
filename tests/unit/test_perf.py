"""xlaport.perf: FLOP and byte counts against hand-derived formulas, the roofline, memory fit, decode, cost."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from xlaport import cost
from xlaport.perf.inference import decode_s, decode_sweep, decoder_from_config, largest_batch
from xlaport.perf.machine import Machine, chip
from xlaport.perf.memory import bytes_per_chip, fewest_chips
from xlaport.perf.pricing import step_cost
from xlaport.perf.roofline import band, collective_bytes, regimes
from xlaport.perf.trace import trace_step

B, IN, OUT = 8, 512, 1024


def _meta(*shape: int, grad: bool = False, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.zeros(shape, device="meta", dtype=dtype).requires_grad_(grad)


def _linear() -> nn.Linear:
    with torch.device("meta"):
        return nn.Linear(IN, OUT)


def test_linear_forward_flop_and_bytes_match_the_formula() -> None:
    tr = trace_step(_linear(), (_meta(B, IN),), "inference")
    assert tr.flop == 2 * B * IN * OUT
    # addmm reads x, W, b and writes y, 4 bytes each
    assert tr.bytes_unfused == 4 * (B * IN + IN * OUT + OUT + B * OUT)
    assert tr.params == IN * OUT + OUT and tr.param_bytes == 4 * tr.params


def test_linear_training_is_three_matmuls_when_the_input_needs_grad() -> None:
    tr = trace_step(_linear(), (_meta(B, IN, grad=True),), "training")
    assert tr.flop == 6 * B * IN * OUT  # forward, grad wrt input, grad wrt weight
    assert tr.grad_bytes == tr.param_bytes
    assert tr.optimizer_state_bytes == 2 * 4 * tr.params  # AdamW: two fp32 moments
    assert [o.phase for o in tr.ops if o.op_class == "optimizer"] == ["optimizer"]


def test_linear_training_skips_the_input_grad_when_not_needed() -> None:
    tr = trace_step(_linear(), (_meta(B, IN),), "training")
    assert tr.flop == 4 * B * IN * OUT


class _Attention(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.scale = nn.Parameter(torch.ones(()))

    def forward(self, q: torch.Tensor) -> torch.Tensor:
        return F.scaled_dot_product_attention(q * self.scale, q, q, is_causal=True)


@pytest.mark.parametrize("mode,factor", [("inference", 4), ("training", 12)])
def test_attention_flop_is_4_forward_12_training_bhs2d(mode: str, factor: int) -> None:
    b, h, s, d = 2, 4, 64, 16
    with torch.device("meta"):
        m = _Attention()
    tr = trace_step(m, (_meta(b, h, s, d, grad=True),), mode)  # type: ignore[arg-type]
    attn = sum(o.flop for o in tr.ops if o.op_class == "attention")
    # QK^T and PV: 2 * (2*b*h*s*s*d) forward; backward twice that (the causal half is still computed)
    assert attn == factor * b * h * s * s * d
    assert tr.flop == attn


def test_attention_is_one_fused_kernel_that_moves_q_k_v_and_the_output() -> None:
    b, h, s, d = 2, 4, 256, 16
    with torch.device("meta"):
        m = _Attention()
    tr = trace_step(m, (_meta(b, h, s, d, grad=True),), "training")  # type: ignore[arg-type]
    n = b * h * s * d * 4  # bytes of one (b, h, s, d) float32 tensor
    fwd = [o for o in tr.ops if o.op_class == "attention" and o.phase == "forward"]
    bwd = [o for o in tr.ops if o.op_class == "attention" and o.phase == "backward"]
    assert [o.name for o in fwd] == ["scaled_dot_product_attention"] and fwd[0].bytes == 4 * n  # q, k, v, out
    assert bwd[0].bytes == 8 * n  # q, k, v, out, dout read; dq, dk, dv written
    # kept for backward: q*scale, q, the output, and one float per row; never an s x s score matrix
    assert tr.activation_bytes == 3 * n + b * h * s * 4
    assert sum(o.bytes for o in fwd + bwd) < b * h * s * s * 4  # less than one score matrix


def _decoder_config(**over: int) -> dict[str, object]:
    cfg: dict[str, object] = dict(
        model_type="llama",
        vocab_size=1000,
        hidden_size=256,
        intermediate_size=688,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=64,
        tie_word_embeddings=False,
    )
    cfg.update(over)
    return cfg


@pytest.mark.parametrize("mode,per", [("training", 6), ("inference", 2)])
def test_decoder_step_is_6nt_plus_attention_within_one_percent(mode: str, per: int) -> None:
    from xlaport.perf.estimate import example_inputs, load_model

    cfg = _decoder_config()
    model, _ = load_model(cfg)
    b, t = 2, 128
    tr = trace_step(model, example_inputs(model, b, t), mode)  # type: ignore[arg-type]
    n = tr.params - 1000 * 256  # the input embedding is a lookup, not a matmul
    layers, heads, q = 2, 4, 64
    expected = per * n * b * t + 2 * per * layers * heads * q * t * (b * t)
    assert tr.tokens == b * t
    assert math.isclose(tr.flop, expected, rel_tol=0.01), (tr.flop, expected)


def test_decoder_params_agree_with_the_cost_formula() -> None:
    from xlaport.perf.estimate import load_model

    cfg = _decoder_config()
    model, _ = load_model(cfg)
    total, _ = cost.decoder_params(**{k: v for k, v in cfg.items() if k != "model_type"})  # type: ignore[arg-type]
    # transformers' Llama has no q/k norms; the cost formula counts them (Qwen3 has them)
    assert sum(p.numel() for p in model.parameters()) == total - 2 * 2 * 64


MACHINE = Machine("toy", "toy", peak_flop_per_s=100e12, hbm_bytes_per_s=1e12, hbm_bytes=16e9, link_bytes_per_s=100e9)


def test_roofline_names_a_matmul_compute_bound_and_a_gemv_memory_bound() -> None:
    with torch.device("meta"):
        big = nn.Linear(4096, 4096, bias=False)
    mm = regimes(trace_step(big, (_meta(4096, 4096),), "inference"), MACHINE)
    gemv = regimes(trace_step(big, (_meta(1, 4096),), "inference"), MACHINE)
    assert mm[0]["bound"] == "compute" and gemv[0]["bound"] == "memory"
    assert MACHINE.ridge == 100


def test_band_low_is_at_most_high_and_gemv_time_is_weight_bytes_over_bandwidth() -> None:
    with torch.device("meta"):
        big = nn.Linear(4096, 4096, bias=False)
    tr = trace_step(big, (_meta(1, 4096),), "inference")
    b = band(tr, MACHINE)
    assert b.low_s <= b.high_s
    assert math.isclose(b.high_s, (4096 * 4096 + 2 * 4096) * 4 / 1e12)
    assert b.low_bound == "memory"


def test_collectives_on_several_chips() -> None:
    tr = trace_step(_linear(), (_meta(B, IN),), "training")
    assert collective_bytes(tr, 1) == 0
    assert collective_bytes(tr, 4) == pytest.approx(0.75 * 3 * tr.param_bytes)
    b = band(tr, MACHINE, 4)
    assert b.collective_s == pytest.approx(collective_bytes(tr, 4) / 50e9)


def test_fewest_chips_is_the_smallest_count_that_fits() -> None:
    tr = trace_step(_linear(), (_meta(B, IN),), "training")
    tiny = Machine("t", "t", 1e12, 1e9, hbm_bytes=tr.state_bytes / 2.5)
    fit = fewest_chips(tr, tiny, usable=1.0)
    assert bytes_per_chip(tr, fit.chips) <= tiny.hbm_bytes < bytes_per_chip(tr, fit.chips - 1)
    assert fit.sample_fits


def test_decode_is_memory_bound_at_batch_one_and_bounded_by_hbm() -> None:
    shape = decoder_from_config("qwen3_8b")
    v6e = chip("tpu_v6e")
    (one,) = decode_sweep(shape, v6e, 2048, batches=(1,))
    assert one.bound == "memory"
    kv = 2 * 36 * 8 * 128 * 2  # K and V, 36 layers, 8 KV heads of 128, bf16: bytes per cached token
    assert one.seconds == pytest.approx((shape.params * 2 + 2048 * kv) / 1638e9)
    assert decode_s(shape, v6e, 1, 1, 2048) == one.seconds
    cap = largest_batch(shape, v6e, 1, 2048)
    assert shape.params * 2 + cap * 2048 * kv <= 0.9 * v6e.hbm_bytes
    assert shape.params * 2 + (cap + 1) * 2048 * kv > 0.9 * v6e.hbm_bytes


def test_step_cost_carries_the_band() -> None:
    tr = trace_step(_linear(), (_meta(B, IN),), "inference")
    b = band(tr, MACHINE)
    c = step_cost(b, 3.6, items=B, tokens=1000)
    assert c.usd_per_step == pytest.approx((b.low_s * 1e-3, b.high_s * 1e-3))
    assert c.usd_per_million_tokens == pytest.approx((b.low_s * 1e-3 / 1000 * 1e6, b.high_s * 1e-3 / 1000 * 1e6))


def test_every_chip_has_bandwidths_with_source_and_date() -> None:
    for cid in cost.chip_names():
        c = cost.chip(cid)
        for key in ("hbm_bandwidth", "chip_to_chip_bandwidth"):
            f = c.facts[key]
            assert f.source and f.date >= "2026-12-01", (cid, key)  # re-read in December 2026
        assert 400e9 <= c.hbm_bytes_per_s <= 8e12 and 300e9 <= c.link_bytes_per_s <= 2e12


def test_trace_refuses_a_model_not_on_meta() -> None:
    with pytest.raises(ValueError, match="meta"):
        trace_step(nn.Linear(2, 2), (torch.zeros(1, 2),))
