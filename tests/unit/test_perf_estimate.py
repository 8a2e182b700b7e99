"""xlaport.perf end to end: a 1B decoder's training step estimated quickly, the claims, the CLI's errors."""

from __future__ import annotations

import time

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
    ],
)
def test_cli_bad_input_is_one_line_and_exit_2(argv: list[str], msg: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert msg in err and "\n" not in err


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
    assert "tpu_v6e" in out and "MFU" in out
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
