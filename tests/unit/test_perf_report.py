"""xlaport.perf.report: the estimate's results as table rows, from real results where they are cheap to make."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from torch import nn

from xlaport import perf
from xlaport.perf.inference import decode_sweep, decoder_from_config
from xlaport.perf.machine import chip
from xlaport.perf.report import PUBLISHED_UNITS
from xlaport.perf.roofline import regimes
from xlaport.perf.trace import trace_step


def _gemm_step() -> perf.StepTrace:
    with torch.device("meta"):
        lin = nn.Linear(1024, 1024, bias=False)
    return trace_step(lin, (torch.zeros(512, 1024, device="meta"),), "inference")


def test_regimes_table_formats_every_op_class_and_shares_sum_to_the_whole() -> None:
    rows = regimes(_gemm_step(), chip("tpu_v6e"))
    table = perf.regimes_table(rows)
    assert [r["op class"] for r in table] == [r["op_class"] for r in rows]
    assert list(table[0]) == ["op class", "calls", "FLOP/B", "bound", "ms unfused", "share"]
    mm = next(r for r in table if r["op class"] == "matmul")
    # 2*512*1024*1024 FLOPs over (512*1024 + 1024*1024 + 512*1024) * 4 bytes = 128 FLOP per byte
    assert mm["FLOP/B"] == "128" and mm["calls"] == "1"  # whole from 100 up
    if len(table) == 1:
        assert mm["share"] == "100%"


def test_step_summary_says_parameters_calls_flops_and_bytes() -> None:
    step = _gemm_step()
    first, second = perf.step_summary(step, trace_s=1.5).splitlines()
    # 1,048,576 parameters, one matmul of 2*512*1024*1024 FLOPs (0.001 TFLOP)
    assert first == "0.00 B parameters, 1 op calls, 0 TFLOP per step, traced in 1.5 s"
    assert second == (
        f"bytes per step: {step.bytes_fused / 1e9:.0f} GB at least (fused), {step.bytes_unfused / 1e9:.0f} GB unfused"
    )
    assert perf.step_summary(step) == "0.00 B parameters, 1 op calls, 0 TFLOP per step\n" + second


def test_decode_table_follows_the_sweep() -> None:
    sweep = decode_sweep(decoder_from_config("qwen3_8b"), chip("tpu_v6e"), 2048, batches=(1, 4096))
    table = perf.decode_table(sweep, "one v6e")
    assert [r["batch"] for r in table] == ["1", "4,096"]
    assert table[0]["bound"] == "memory" and table[0]["fits one v6e"] == "yes"
    assert table[1]["fits one v6e"] == "no"  # 4,096 sequences of 2,048 cached tokens overflow 32 GB
    assert table[0]["tokens/s"] == f"{sweep[0].tokens_per_s:,.0f}"


def test_estimate_validation_and_claim_tables() -> None:
    row = {
        "chip": "tpu_v6e",
        "chips": 2,
        "step_s": [0.1234, 0.5],
        "low_bound": "compute",
        "mfu": [0.4, 0.1],
        "expected_step_s": 0.3,
    }
    est = SimpleNamespace(
        chips=[
            SimpleNamespace(row=lambda: row),
            SimpleNamespace(row=lambda: {**row, "chips": 1, "usd_per_million_tokens": [0.01, 0.2]}),
        ]
    )
    table = perf.estimate_table(est)
    assert table[0] == {
        "chip": "tpu_v6e",
        "chips": "2",
        "expected (ms)": "300",
        "band (ms)": "123–500",
        "bound": "compute",
        "MFU": "40%–10%",
        "$ per M tokens": "no price",
    }
    assert table[1]["$ per M tokens"] == "0.010–0.200"
    # the error column recomputes from the two times shown, whatever the record's own (median of rounds) error says
    val = perf.validation_table(
        [{"case": "gemv", "bound": "memory", "predicted_s": 0.002, "measured_s": 0.0025, "error": -0.1}]
    )
    assert val == [{"case": "gemv", "bound": "memory", "predicted": "2.00 ms", "measured": "2.50 ms", "error": "-20%"}]
    qwen = perf.qwen_table(perf.qwen3_mfu_claim((2048,)))
    assert list(qwen[0]) == ["sequence", "GFLOP per token", "tokens/s per chip", "M tokens/s in all"]
    assert qwen[0]["sequence"] == "2,048"
    price = perf.price_table([{"batch": 8, "tokens_per_s": 1234.5, "fits": False, "ratio_needed": 3.25}])
    assert price == [{"decode batch": "8", "tokens/s per chip": "1,234", "fits": "no", "short of the price": "3.2x"}]
    flux = {
        "height": 1024,
        "width": 1024,
        "batch": 1,
        "flop": 2.5e13,
        "floor_s": 0.0271,
        "floor_bound": "compute",
        "implied_mfu": 0.55,
        "consistent": True,
    }
    rows = perf.flux_table([flux, {**flux, "batch": 2, "implied_mfu": 1.1, "consistent": False}], 50.0)
    assert rows[0] == {
        "image": "1024x1024",
        "batch": "1",
        "TFLOP": "25.0",
        "v6e floor": "27.1 ms (compute)",
        "MFU 50 ms means": "55%",
    }
    assert rows[1]["MFU 50 ms means"] == "110%: faster than the chip can go"


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: perf.regimes_table([]), "at least one row"),
        (lambda: perf.regimes_table([{"op_class": "matmul"}]), "lacks 'calls'"),
        (lambda: perf.estimate_table([1, 2]), "takes an Estimate"),
        (lambda: perf.decode_table([{"batch": 1}]), "DecodeStep"),
        (lambda: perf.validation_table("gemv"), "at least one row"),
        (lambda: perf.validation_table([3]), "must be a dict"),
        (lambda: perf.flux_table([{}], 0), "claimed_ms"),
        (lambda: perf.qwen_table([{"seq_len": 1}]), "lacks"),
        (lambda: perf.price_table([]), "at least one row"),
        (lambda: perf.step_summary(3), "StepTrace"),
    ],
)
def test_bad_input_gets_a_one_line_error(call, message: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match=message):
        call()


def test_validation_record_reads_the_committed_record_and_refuses_a_broken_one(tmp_path: Path) -> None:
    committed = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "perf_cpu_validation.json"
    record = perf.validation_record(committed)
    assert record is not None and len(perf.validation_table(record["summary"])) == len(record["summary"]) >= 5
    assert perf.validation_record(tmp_path / "absent.json") is None
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(ValueError, match="is not JSON"):
        perf.validation_record(tmp_path / "bad.json")
    (tmp_path / "empty.json").write_text("{}")
    with pytest.raises(ValueError, match="no 'summary'"):
        perf.validation_record(tmp_path / "empty.json")


def test_published_table_shows_each_runs_unit_and_an_error_that_recomputes() -> None:
    from xlaport.perf import calibrate

    rows = calibrate.evaluate(calibrate.fit())
    for kind in ("training", "serving", "decode", "prefill"):
        mine = [p for p in rows if p.kind == kind]
        table = perf.published_table(rows, kind)
        assert len(table) == len(mine)
        for p, t in zip(mine, table, strict=True):
            run = t[f"{kind} run ({PUBLISHED_UNITS[kind]})"]
            assert run.startswith(p.run_id) and run.endswith("held out") == p.held_out
            exp = float(t["expected (interval)"].split(" (")[0].replace(",", "").removesuffix(" s"))
            meas = float(t["measured"].replace(",", "").removesuffix(" s"))
            # training and serving are rates (error = measured / expected - 1), decode and prefill times
            err = meas / exp - 1 if kind in ("training", "serving") else exp / meas - 1
            assert abs(err - float(t["error"].rstrip("%")) / 100) < 0.02, (t, err)
    with pytest.raises(ValueError, match="no run of kind"):
        perf.published_table(rows, "nothing")
