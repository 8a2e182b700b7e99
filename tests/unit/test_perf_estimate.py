"""xlaport.perf end to end: a 1B decoder's training step estimated quickly, the claims, the CLI's errors."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from xlaport import cost
from xlaport.cli import main

ONE_B = dict(
    model_type="llama",
    vocab_size=32000,
    hidden_size=2048,
    intermediate_size=5632,
    num_hidden_layers=22,
    num_attention_heads=32,
    num_key_value_heads=4,
    head_dim=64,
    tie_word_embeddings=False,
)


def test_a_1b_decoder_training_step_is_estimated_in_under_10_s_of_cpu() -> None:
    import transformers  # noqa: F401  (its import is not the estimate)

    from xlaport.perf.estimate import estimate

    cpu, wall = time.process_time(), time.perf_counter()
    est = estimate(ONE_B, mode="training", batch=1, seq_len=2048)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    assert 1.0e9 < est.trace.params < 1.3e9
    assert cpu < 10, f"estimate took {cpu:.1f} s of CPU ({wall:.1f} s wall)"
    n = est.trace.params - 32000 * 2048
    assert est.trace.flop == pytest.approx(6 * n * 2048 + 12 * 22 * 32 * 64 * 2048 * 2048, rel=0.01)
    rows = {c.machine.id: c.row() for c in est.chips}
    assert set(rows) == set(cost.chip_names())
    for r in rows.values():
        lo, hi = r["step_s"]
        assert 0 < lo <= hi and 0 < r["mfu"][0] <= r["mfu"][1] <= 1.0 + 1e-9


def test_qwen3_claim_is_52_percent_of_peak_over_flop_per_token() -> None:
    from xlaport.perf.claims import qwen3_mfu_claim

    r = qwen3_mfu_claim((4096,))[0]
    assert r["tokens_per_s_per_chip"] == pytest.approx(0.52 * 2307e12 / r["flop_per_token"])
    assert r["tokens_per_s_total"] == pytest.approx(8192 * r["tokens_per_s_per_chip"])


def test_price_claim_needs_price_over_cost_per_token() -> None:
    from xlaport.perf.claims import price_claim

    p = price_claim((2048,), (1, 32))
    assert p["needed_tokens_per_s_per_chip"] == pytest.approx(2.70 / 3600 / 2.01e-8)
    assert all(r["bound"] == "memory" for r in p["decode"])
    assert max(r["tokens_per_s"] for r in p["decode"] if r["fits"]) < p["needed_tokens_per_s_per_chip"]


@pytest.mark.parametrize(
    "argv,msg",
    [
        (["estimate", "no_such_model"], "neither MODULE:FACTORY"),
        (["estimate", "qwen3_8b", "--batch", "0"], "--batch must be"),
        (["estimate", "qwen3_8b", "--seq-len", "2.5"], "--seq-len must be"),
        (["estimate", "qwen3_8b", "--chip", "tpu_v9"], "unknown chip"),
        (["estimate", "os:nope"], "no callable"),
        (["estimate", "no_such_pkg_xyz:f"], "cannot import"),
        (["estimate", "missing.json"], "no such config file"),
        # sizes no tensor can hold: the trace's overflow, said as the options that caused it
        (["estimate", "qwen3_8b", "--seq-len", "1e9"], "--batch 1 × --seq-len 1000000000 is too large to trace"),
        (["estimate", "qwen3_8b", "--seq-len", "99999999999"], "--seq-len 99999999999 is too large to trace"),
        (["estimate", "qwen3_8b", "--batch", "99999999999"], "--batch 99999999999 × --seq-len 2048 is too large"),
        (["estimate", "qwen3_8b", "--seq-len", "inf"], "--seq-len must be a finite number"),
        (["estimate", "qwen3_8b", "--chips", "-3"], "--chips must be"),
        # factories that need arguments are refused before they are called (os.system is never run)
        (["estimate", "os:system"], "os:system: the factory needs arguments (command)"),
        (["estimate", "json:loads"], "json:loads: the factory needs arguments (s)"),
        (["estimate", "torch.nn:Linear"], "needs arguments (in_features, out_features)"),
        (["estimate", ""], "model must be"),
        (["estimate", "{tmp}/raises.py:build"], "{tmp}/raises.py:build() raised RuntimeError: no weights today"),
        (["estimate", "{tmp}/raises.py:number"], "returned int, expected an nn.Module"),
        (["estimate", "{tmp}/syntax.py:build"], "SyntaxError: invalid syntax (line 1)"),
        (["estimate", "{tmp}/import_fails.py:build"], "importing {tmp}/import_fails.py raised KeyError"),
        (["estimate", "{tmp}/list.json"], "a transformers config is a JSON object with model_type, not a list"),
        (["estimate", "{tmp}/broken.json"], "is not valid JSON"),
        (["estimate", "{tmp}/no_type.json"], "needs model_type"),
        (["estimate", "{tmp}/unknown_type.json"], "transformers cannot build a config of type 'no_such_type'"),
        # a step the meta device cannot trace: Mixtral's eager expert loop (torch.nonzero has no size on meta)
        (["estimate", "{tmp}/mixtral_eager.json"], '"experts_implementation": "grouped_mm"'),
        (["estimate", "{tmp}/raises.py:linear", "--input", "4x5"], "cannot trace one step of"),
        (["estimate", "{tmp}/raises.py:linear", "--input", "0x4"], "sizes must be positive"),
        (["estimate", "{tmp}/raises.py:linear"], "has no config.vocab_size: give its inputs with --input"),
    ],
)
def test_cli_bad_input_is_one_line_and_exit_2(
    argv: list[str], msg: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    import json

    (tmp_path / "raises.py").write_text(
        "import torch\n"
        "def build():\n    raise RuntimeError('no weights today')\n"
        "def number():\n    return 3\n"
        "def linear():\n    return torch.nn.Linear(4, 4)\n"
    )
    (tmp_path / "syntax.py").write_text("def build(:\n")
    (tmp_path / "import_fails.py").write_text("raise KeyError('at import')\n")
    (tmp_path / "list.json").write_text("[1, 2]")
    (tmp_path / "broken.json").write_text('{"model_type": "llama"')
    (tmp_path / "no_type.json").write_text('{"hidden_size": 64}')
    (tmp_path / "unknown_type.json").write_text('{"model_type": "no_such_type"}')
    mixtral = dict(model_type="mixtral", hidden_size=64, intermediate_size=128, num_hidden_layers=1, vocab_size=100)
    mixtral.update(num_attention_heads=4, num_key_value_heads=2, num_local_experts=4, num_experts_per_tok=2)
    (tmp_path / "mixtral_eager.json").write_text(json.dumps({**mixtral, "experts_implementation": "eager"}))
    assert main([a.replace("{tmp}", str(tmp_path)) for a in argv]) == 2
    err = capsys.readouterr().err.strip()
    assert msg.replace("{tmp}", str(tmp_path)) in err and "\n" not in err, err


def test_cli_prints_a_table_and_json(capsys: pytest.CaptureFixture[str], tmp_path: object) -> None:
    import json
    import pathlib

    p = pathlib.Path(str(tmp_path)) / "model.py"
    p.write_text(
        "import torch\n"
        "def build():\n"
        "    return torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.GELU(), torch.nn.Linear(256, 64))\n"
    )
    args = ["estimate", f"{p}:build", "--input", "32x64", "--chip", "tpu_v6e", "--mode", "inference"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "tpu_v6e" in out and "not calibrated" in out and "µs" in out  # inference: the band, no calibration yet
    assert main([*args, "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["trace"]["flop"] == 2 * 32 * (64 * 256 + 256 * 64)
    assert d["chips"][0]["chip"] == "tpu_v6e"


def test_doctor_break_even_takes_mfu_from_the_entry_estimate(
    tmp_path: object, capsys: pytest.CaptureFixture[str]
) -> None:
    import json
    import pathlib

    root = pathlib.Path(__file__).resolve().parents[2] / "examples" / "cuda_project"
    js = pathlib.Path(str(tmp_path)) / "report.json"
    argv = ["doctor", str(root), "--entry", f"{root / 'tinylm.py'}:TrainStep", "--input", "4x33:int64",
            "--from-chip", "h100_sxm", "--from-chips", "8", "--to-chip", "tpu_v6e", "--json", str(js)]  # fmt: skip
    assert main(argv) == 0
    printed = capsys.readouterr()
    assert "MFU from the entry's estimate" in printed.err
    # the report itself shows the band and the break-even at its fast end, beside the verdict's slow end
    assert "MFU from the entry's estimate" in printed.out and "break-even at the band's fast end" in printed.out
    c = json.loads(js.read_text())["cost"]
    band = c["mfu_band"]
    for side in ("from", "to"):
        slow, fast = band[side]["mfu"]
        assert 0 < slow <= fast <= 1
    assert f"{band['from']['mfu'][0]:.0%}" in c["current"]  # the break-even used the slow end, not an assumption
    lo, hi = c["break_even_months_band"]
    assert hi == c["break_even_months"] and lo > 0


MIXTRAL = dict(
    model_type="mixtral", hidden_size=256, intermediate_size=512, num_hidden_layers=2, num_attention_heads=4,
    num_key_value_heads=2, num_local_experts=4, num_experts_per_tok=2, vocab_size=1000, tie_word_embeddings=False,
)  # fmt: skip


def test_a_mixture_of_experts_counts_its_grouped_matmuls() -> None:
    """transformers runs Mixtral's experts through torch._grouped_mm, which torch's FLOP counter has no formula for:
    the trace counts it (2 x tokens x K x N through each token's experts), so the step's FLOPs are the active
    parameters' 6 x N x T plus attention, not the attention and the dense layers alone."""
    from xlaport.perf.estimate import estimate

    seq = 2048
    est = estimate(MIXTRAL, mode="training", batch=1, seq_len=seq, chip_ids=["tpu_v6e"])
    per_layer = 256 * (256 + 128 + 128 + 256) + 2 * 3 * 256 * 512 + 256 * 4  # attention, 2 of 4 experts, router
    active = 2 * per_layer + 256 * 1000  # and the output layer
    attention = 12 * 2 * 256 * seq * seq  # QK^T and PV, forward and backward, both layers (no causal halving)
    assert est.trace.flop == pytest.approx(6 * active * seq + attention, rel=1e-6)
    assert any(o.name == "_grouped_mm" and o.flop > 0 for o in est.trace.ops)
    assert est.trace.uncounted == {}


def test_a_contraction_without_a_formula_is_reported_not_counted_as_zero(capsys: pytest.CaptureFixture[str]) -> None:
    import torch

    from xlaport.perf.trace import is_uncounted_contraction, trace_step

    lib = torch.library.Library("xlaport_test", "FRAGMENT")
    lib.define("fancy_matmul(Tensor a, Tensor b) -> Tensor")
    lib.impl("fancy_matmul", lambda a, b: a.new_empty(a.shape[0], b.shape[1]), "Meta")

    class Fancy(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.w = torch.nn.Parameter(torch.empty(8, 4))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.ops.xlaport_test.fancy_matmul(x, self.w)

    with torch.device("meta"):
        model, x = Fancy(), torch.empty(16, 8)
    tr = trace_step(model, (x,), "inference")
    assert tr.uncounted == {"fancy_matmul": 1} and tr.flop == 0 and tr.summary()["uncounted"] == {"fancy_matmul": 1}
    assert is_uncounted_contraction("_grouped_mm") and not is_uncounted_contraction("add")


def test_a_training_estimate_gives_the_floor_the_expected_step_and_its_interval(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    import json

    from xlaport.perf import published

    p = tmp_path / "model.py"
    p.write_text(
        "import torch\ndef build():\n    return torch.nn.Sequential(torch.nn.Linear(512, 2048), torch.nn.Linear(2048, 512))\n"
    )
    assert (
        main(["estimate", f"{p}:build", "--input", "64x512", "--chip", "tpu_v6e", "--chip", "h100_sxm", "--json"]) == 0
    )
    held = {r.id for r in published.runs() if r.held_out}
    for row in json.loads(capsys.readouterr().out)["chips"]:
        floor, expected, (fast, slow) = row["floor_step_s"], row["expected_step_s"], row["interval_step_s"]
        assert 0 < floor <= fast <= expected <= slow <= 2 * fast + 1e-12, row
        assert row["fits"] is True and row["calibrated_on"]["runs"] and not set(row["calibrated_on"]["runs"]) & held
    assert main(["estimate", f"{p}:build", "--input", "64x512", "--chip", "tpu_v6e"]) == 0
    out, err = capsys.readouterr()
    assert "expected (interval)" in out and "rests on: v" in err


def test_tensor_parallelism_splits_one_sample_and_pays_its_all_reduces(capsys: pytest.CaptureFixture[str]) -> None:
    """Below one sample per chip FSDP alone cannot split the work (the eighth chip of a batch-1 step computes
    nothing); tensor/sequence parallelism splits each sample and adds four all-reduces of the activations per layer."""
    import json

    from xlaport.perf.estimate import estimate
    from xlaport.perf.roofline import collective_bytes, tensor_parallel_bytes

    fsdp = estimate(ONE_B, batch=1, seq_len=2048, chip_ids=["h100_sxm"], chips=8)
    tp = estimate(ONE_B, batch=1, seq_len=2048, chip_ids=["h100_sxm"], chips=8, tensor=8)
    a, b = fsdp.chips[0].band, tp.chips[0].band
    assert b.compute_s == pytest.approx(a.compute_s / 8)
    trace = tp.trace
    assert trace.layers == 22 and trace.hidden == 2048
    # per chip: 4 passes x 22 layers x 2,048 tokens x 2,048 hidden x 2 bytes x 2 x 7/8
    assert tensor_parallel_bytes(trace, 8, 8) == pytest.approx(4 * 22 * 2048 * 2048 * 2 * 2 * 7 / 8)
    assert b.collective_s > a.collective_s > 0
    assert b.collective_s * 450e9 == pytest.approx(collective_bytes(trace, 8) + tensor_parallel_bytes(trace, 8, 8))
    with pytest.raises(ValueError, match="tensor must divide the chips"):
        estimate(ONE_B, batch=1, seq_len=256, chip_ids=["h100_sxm"], chips=8, tensor=3)
    assert main(["estimate", "qwen3_8b", "--seq-len", "256", "--chip", "tpu_v6e", "--tensor", "4", "--json"]) == 0
    row = json.loads(capsys.readouterr().out)["chips"][0]
    assert row["chips"] % 4 == 0 and row["chips"] >= row["fewest_chips"]
