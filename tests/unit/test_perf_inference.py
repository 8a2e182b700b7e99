"""Inference as servers run it: prefill, decode with a KV cache and serving, tensor-parallel, and its estimate."""

from __future__ import annotations

import json

import pytest

from xlaport.cli import main
from xlaport.perf.inference import decode_s, decoder, largest_batch, prefill_s, serving
from xlaport.perf.machine import chip

LLAMA_70B = dict(params=70e9, layers=80, hidden=8192, heads=64, kv_heads=8, vocab=128256)


def test_decode_reads_each_chips_share_of_the_weights_so_more_chips_are_faster() -> None:
    """The fault the FSDP model had: 70B decode on 8 v6e chips took 309 ms because every chip read every weight."""
    m = chip("tpu_v6e")
    d = decoder(**LLAMA_70B)
    one = decode_s(d, m, chips=8, batch=1, context=2000)
    # memory-bound: (weights + one cache) / 8 chips / bandwidth
    moved = d.params * 2 + 2000 * d.kv_elements_per_token() * 2
    assert one == pytest.approx(moved / 8 / m.hbm_bytes_per_s, rel=1e-9)
    assert 0.005 < one < 0.025  # vLLM measured 25.4 ms per token at 64 concurrent requests (the data file)
    assert decode_s(d, m, chips=16, batch=1, context=2000) < one


def test_the_cache_grows_with_context_and_batch_and_bounds_the_batch() -> None:
    m = chip("h100_sxm")
    d = decoder(**LLAMA_70B)
    assert decode_s(d, m, 8, 64, 8000) > decode_s(d, m, 8, 64, 1000) > decode_s(d, m, 8, 1, 1000)
    per_token = 2 * 80 * 8 * 128 * 2  # K and V, 80 layers, 8 KV heads of 128, bf16: 327,680 bytes
    assert d.kv_elements_per_token() * 2 == per_token
    n = largest_batch(d, m, 8, 2000)
    assert n == int((8 * m.hbm_bytes * 0.9 - d.params * 2) // (2000 * per_token))
    assert largest_batch(d, m, 1, 2000) == 0  # 140 GB of weights do not fit one 80 GB chip


def test_prefill_is_compute_bound_and_splits_over_the_chips() -> None:
    m = chip("trn2")
    d = decoder(**LLAMA_70B)
    t = prefill_s(d, m, chips=16, batch=1, input_len=10000)
    flop = 10000 * (2 * d.active + 2 * 80 * 64 * 128 * 10000)
    assert t == pytest.approx(flop / 16 / m.peak_flop_per_s, rel=1e-9)
    assert prefill_s(d, m, chips=1, batch=1, input_len=10000) == pytest.approx(16 * t, rel=1e-9)


def test_a_mixture_of_experts_multiplies_its_active_parameters_and_reads_the_experts_it_touches() -> None:
    m = chip("tpu_v7x")
    moe = decoder(480e9, 62, 6144, 96, 8, active=35e9, head_dim=128, vocab=151936)
    dense = decoder(35e9, 62, 6144, 96, 8, head_dim=128, vocab=151936)
    assert moe.moe and not dense.moe
    assert prefill_s(moe, m, 4, 8, 1024) == pytest.approx(prefill_s(dense, m, 4, 8, 1024), rel=1e-9)
    assert decode_s(moe, m, 4, 1, 1024) < decode_s(moe, m, 4, 64, 1024)  # 64 sequences touch more experts


def test_serving_is_prefill_plus_decode_steps_and_reports_what_fits() -> None:
    m = chip("tpu_v6e")
    d = decoder(**LLAMA_70B)
    s = serving(d, m, 8, 1000, 1000, 64)
    assert s.seconds == pytest.approx(s.prefill_s + 1000 * s.decode_step_s)
    assert s.output_tokens_per_s_per_chip == pytest.approx(64 * 1000 / s.seconds / 8)
    assert s.fits and not serving(d, m, 8, 1000, 1000, 10_000).fits
    assert serving(d, m, 8, 1000, 1000).concurrency == largest_batch(d, m, 8, 2000)


@pytest.mark.parametrize(
    "call, msg",
    [
        (lambda: decoder(1e9, 0, 64, 4, 4), "layers"),
        (lambda: decoder(1e9, 2, 64, 4, 4, active=2e9), "exceed"),
        (lambda: decode_s(decoder(1e9, 2, 64, 4, 4), chip("trn2"), 0), "chips"),
    ],
)
def test_bad_input_is_one_clear_error(call, msg: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match=msg):
        call()


def test_cli_serving_decode_and_prefill_give_the_calibrated_step_per_chip(capsys: pytest.CaptureFixture[str]) -> None:
    from xlaport.perf import published

    held = {r.id for r in published.runs() if r.held_out}
    for mode in ("serving", "decode", "prefill"):
        assert main(["estimate", "qwen3_8b", "--mode", mode, "--chip", "trn2", "--chip", "tpu_v6e", "--json"]) == 0
        d = json.loads(capsys.readouterr().out)
        assert d["mode"] == mode and len(d["chips"]) == 2
        for row in d["chips"]:
            floor, expected, (fast, slow) = row["floor_step_s"], row["expected_step_s"], row["interval_step_s"]
            assert 0 < floor <= fast <= expected <= slow <= 2 * fast + 1e-12, row
            assert row["fits"] is True and row["tokens_per_s_per_chip"] > 0 and row["usd_per_million_tokens"] > 0
            assert row["calibrated_on"]["runs"] and not set(row["calibrated_on"]["runs"]) & held
    assert main(["estimate", "qwen3_8b", "--mode", "serving", "--precision", "fp8", "--chip", "h100_sxm"]) == 0
    out, err = capsys.readouterr()
    assert "fp8 weights" in out and "tokens/s/chip" in out and "rests on: h100-trtllm" in err


def test_cli_inference_modes_need_a_decoder_and_say_so_in_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path
) -> None:  # type: ignore[no-untyped-def]
    p = tmp_path / "model.py"
    p.write_text("import torch\ndef build():\n    return torch.nn.Linear(4, 4)\n")
    assert main(["estimate", f"{p}:build", "--mode", "decode"]) == 2
    err = capsys.readouterr().err.strip()
    assert "decoder LM" in err and "\n" not in err
    assert main(["estimate", "qwen3_8b", "--mode", "serving", "--concurrency", "0"]) == 2
    assert "--concurrency" in capsys.readouterr().err


def test_int8_weight_only_halves_the_weights_but_keeps_the_bf16_peak() -> None:
    from xlaport.perf import estimate_inference

    kw = {"input_len": 1024, "output_len": 1024, "chip_ids": ["tpu_v6e", "h100_sxm"]}
    bf16, int8, fp8 = (estimate_inference("llama31_8b", "serving", precision=p, **kw) for p in ("bf16", "int8", "fp8"))
    for b, i, f in zip(bf16.chips, int8.chips, fp8.chips):
        # the same chips and requests served together for int8 and fp8 (one byte per weight), on no more chips than bf16
        assert (i.chips, i.concurrency) == (f.chips, f.concurrency) and i.chips <= b.chips
        assert i.row()["tokens_per_s_per_chip"] > 0
    # on the H100, whose table has an fp8 peak, fp8's floor is no slower than int8's, which multiplies in bf16
    assert fp8.chips[1].floor_s <= int8.chips[1].floor_s
    with pytest.raises(ValueError, match="precision must be one of bf16, fp8, int8"):
        estimate_inference("llama31_8b", "serving", precision="int4")
