"""xlaport.cost: every formula against hand-checked numbers, the data file's schema, the CLI's errors."""

from __future__ import annotations

import math
import re
import tomllib

import pytest

from xlaport import cost
from xlaport.cli import main
from xlaport.reference import data_text

# ---------------------------------------------------------------------------------------------
# Formulas (each expected value worked by hand in the comment)


def test_flop_per_token_training_and_inference() -> None:
    assert cost.flop_per_token(1e9) == 6e9  # 6 N
    assert cost.flop_per_token(1e9, "inference") == 2e9  # 2 N


def test_flop_per_token_attention_term() -> None:
    # L=2, H=4, Q=8, T=16: 12*2*4*8*16 = 12,288 (training); 4*2*4*8*16 = 4,096 (inference)
    kw = dict(n_layers=2, n_heads=4, head_dim=8, seq_len=16)
    assert cost.flop_per_token(1e9, **kw) == 6e9 + 12_288
    assert cost.flop_per_token(1e9, "inference", **kw) == 2e9 + 4_096


def test_flop_per_token_rejects_partial_attention_and_bad_mode() -> None:
    with pytest.raises(ValueError, match="attention term needs all"):
        cost.flop_per_token(1e9, n_layers=2)
    with pytest.raises(ValueError, match="mode"):
        cost.flop_per_token(1e9, "serving")  # type: ignore[arg-type]


def test_mfu_and_its_inverse() -> None:
    # 1,000 tok/s * 6e9 FLOP/tok = 6e12 FLOP/s over 2 chips of 1e13 FLOP/s = 0.3
    assert cost.mfu_fraction(1000, 6e9, 1e13, n_chips=2) == pytest.approx(0.3)
    assert cost.tokens_per_s(0.3, 6e9, 1e13, n_chips=2) == pytest.approx(1000)


def test_usd_per_million_tokens() -> None:
    # 1,000 tok/s = 3.6e6 tok/h; $3.60/h -> $1.00 per 1e6 tokens; half the hours idle -> $2.00
    assert cost.usd_per_million_tokens(1000, 3.6) == pytest.approx(1.0)
    assert cost.usd_per_million_tokens(1000, 3.6, utilisation=0.5) == pytest.approx(2.0)


def test_throughput_implied_by_a_price_per_million_tokens() -> None:
    # $2.70/h / ($0.0201 / 1e6 tok) = 134,328,358 tok/h = 37,313.4 tok/s
    t = cost.tokens_per_s_per_chip_for_usd_per_million_tokens(0.0201, 2.70)
    assert t == pytest.approx(37_313.43, rel=1e-6)
    assert cost.usd_per_million_tokens(t, 2.70) == pytest.approx(0.0201)


def test_usd_per_item_and_items_per_usd() -> None:
    # 0.1 s * 36 steps = 3.6 s = 0.001 h; at $3.60/h -> $0.0036 per image, x2 on two chips
    assert cost.usd_per_item(0.1, 36, 3.6) == pytest.approx(0.0036)
    assert cost.usd_per_item(0.1, 36, 3.6, n_chips=2) == pytest.approx(0.0072)
    assert cost.items_per_usd(0.1, 36, 3.6) == pytest.approx(1 / 0.0036)


def test_train_time_and_cost() -> None:
    assert cost.train_time_s(1e12, 1e6) == pytest.approx(1e6)  # seconds
    # 3.6e9 tokens at 1,000 tok/s per chip = 3.6e6 chip-seconds = 1,000 chip-hours; at $2/h = $2,000
    assert cost.train_cost_usd(3.6e9, 1000, 2.0) == pytest.approx(2000)
    assert cost.train_cost_usd(3.6e9, 1000, 2.0, utilisation=0.8) == pytest.approx(2500)


def test_decoder_params_small_case() -> None:
    # d=4, 2 heads x 2 = 4 query dims, 1 kv head x 2 = 2: attn 4*4 + 2*4*2 + 4*4 = 48; mlp 3*4*8 = 96;
    # norms 2*4 + 2*2 = 12 -> 156 per layer; embedding 10*4 = 40; untied head 40; final norm 4 -> 240
    cfg = dict(
        vocab_size=10,
        hidden_size=4,
        intermediate_size=8,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=2,
    )
    assert cost.decoder_params(**cfg) == (240, 40)
    assert cost.decoder_params(**cfg, tie_word_embeddings=True) == (200, 40)


def test_decoder_params_reproduces_qwen3_8b_card() -> None:
    cfg = cost.model_config("qwen3_8b")
    total, _ = cost.decoder_params(**cfg)
    published = cfg["published_params"]["value"]
    assert abs(total / published - 1) <= cost.relative_rounding(published)


def test_migration_one_time_and_break_even() -> None:
    m = cost.Migration(
        kernels=10,
        person_weeks_per_kernel=2,
        port_person_weeks=4,
        validation_person_weeks=4,
        usd_per_person_week=5000,
        team_size=5,
        velocity_loss=0.2,
        disruption_weeks=10,
    )
    # engineering 10*2 + 4 + 4 = 28 pw; lost velocity 5 * 0.2 * 10 = 10 pw; 38 pw * $5,000
    assert cost.one_time_usd(m) == pytest.approx(190_000)
    assert cost.break_even_months(120_000, 10_000) == pytest.approx(12)
    assert cost.break_even_months(1, 0) == math.inf
    assert cost.break_even_months(1, -5) == math.inf


def test_monthly_compute_usd_units() -> None:
    # one busy v6e-hour at 50% MFU does 0.5 * 918e12 * 3600 useful FLOPs; at $3.60/h that costs $3.60
    side = cost.Side("tpu_v6e", 3.6, mfu=0.5)
    flop = 0.5 * cost.chip("tpu_v6e").peak_bf16_flop_per_s * 3600
    assert cost.monthly_compute_usd(flop, side) == pytest.approx(3.6)
    assert cost.monthly_compute_usd(flop, cost.Side("tpu_v6e", 3.6, mfu=0.5, utilisation=0.5)) == pytest.approx(7.2)


def test_decide_and_break_even_price() -> None:
    cur = cost.Side("h100_sxm", 4.0, mfu=0.4)
    new = cost.Side("tpu_v6e", 2.0, mfu=0.4)
    flop = 1e22
    m = cost.Migration(kernels=5, usd_per_person_week=6000, ongoing_person_weeks_per_month=1)
    d = cost.decide(flop, cur, new, m, horizon_months=12)
    assert d.current_monthly_usd == pytest.approx(flop * 4.0 / (3600 * 0.4 * 989e12))
    assert d.monthly_saving_usd == pytest.approx(d.current_monthly_usd - d.proposed_monthly_usd - 6000)
    assert d.break_even_months == pytest.approx(d.one_time_usd / d.monthly_saving_usd)
    assert d.net_over_horizon_usd == pytest.approx(12 * d.monthly_saving_usd - d.one_time_usd)
    p = cost.break_even_current_usd_per_chip_hour(flop, cur, new, m, 12)
    at_p = cost.decide(flop, cost.Side("h100_sxm", p, mfu=0.4), new, m, 12)
    assert at_p.net_over_horizon_usd == pytest.approx(0, abs=1e-6 * d.current_monthly_usd)


def test_sensitivity_moves_the_right_way() -> None:
    cur = cost.Side("h100_sxm", 4.0, mfu=0.4)
    new = cost.Side("tpu_v6e", 2.0, mfu=0.4)
    rows = cost.sensitivity(1e22, cur, new, cost.Migration(kernels=5), 12, factors=(0.8, 1.25))
    by = {(r["input"], r["factor"]): r["net_over_horizon_usd"] for r in rows}
    base = by[("baseline", 1.0)]
    assert by[("proposed price", 0.8)] > base > by[("proposed price", 1.25)]  # a discount helps
    assert by[("proposed MFU", 1.25)] > base > by[("proposed MFU", 0.8)]
    assert by[("current MFU", 1.25)] < base  # a better GPU run helps staying
    assert by[("engineering cost", 1.25)] < base < by[("engineering cost", 0.8)]
    # one-time cost = 5 kernels * 2 + 4 + 4 = 18 person-weeks * $5,000 = $90,000; +25% costs $22,500 more
    assert by[("engineering cost", 1.0 * 1.25)] == pytest.approx(base - 22_500)


def test_relative_rounding() -> None:
    assert cost.relative_rounding(918e12) == pytest.approx(0.5 / 918)
    assert cost.relative_rounding(4.7) == pytest.approx(0.05 / 4.7)
    assert cost.relative_rounding(234.9e15) == pytest.approx(0.05 / 234.9)


@pytest.mark.parametrize("bad", [-1.0, 0.0, float("nan"), float("inf"), "x", None, True])
def test_bad_numbers_are_one_line_value_errors(bad: object) -> None:
    for call in (
        lambda: cost.flop_per_token(bad),  # type: ignore[arg-type]
        lambda: cost.usd_per_million_tokens(bad, 2.7),  # type: ignore[arg-type]
        lambda: cost.usd_per_item(0.1, 28, bad),  # type: ignore[arg-type]
        lambda: cost.tokens_per_s(bad, 6e9, 1e15),  # type: ignore[arg-type]
        lambda: cost.Side("tpu_v6e", bad, 0.4),
    ):  # type: ignore[arg-type]
        with pytest.raises(ValueError) as e:
            call()
        assert "\n" not in str(e.value)


def test_fractions_above_one_are_rejected() -> None:
    with pytest.raises(ValueError, match=r"write 40% as 0.4"):
        cost.tokens_per_s(40, 6e9, 1e15)
    with pytest.raises(ValueError, match="velocity_loss"):
        cost.Migration(velocity_loss=1.5)


def test_unknown_chip_and_missing_price() -> None:
    with pytest.raises(ValueError, match="unknown chip 'a100'; known: "):
        cost.chip("a100")
    with pytest.raises(ValueError, match="no published on_demand price for tpu_v7x"):
        cost.chip("tpu_v7x").usd_per_chip_hour()
    with pytest.raises(ValueError, match="unknown price term"):
        cost.chip("tpu_v6e").usd_per_chip_hour("5yr")


# ---------------------------------------------------------------------------------------------
# The data file

_DATE = re.compile(r"^\d{4}-\d{2}(-\d{2})?$")


def _raw() -> dict:
    return tomllib.loads(data_text(cost.DATA_FILE))


def _facts(raw: dict) -> list[tuple[str, dict]]:
    out = []
    for cid, c in raw["chips"].items():
        out += [(f"chips.{cid}.{k}", v) for k, v in c.items() if isinstance(v, dict)]
    out += [(f"claims.{k}", v) for k, v in raw["claims"].items()]
    for mid, m in raw["models"].items():
        out.append((f"models.{mid}", {"value": 0, "unit": "-", **m}))
        out += [(f"models.{mid}.{k}", v) for k, v in m.items() if isinstance(v, dict)]
    return out


def test_every_value_has_source_date_and_evidence() -> None:
    facts = _facts(_raw())
    assert len(facts) > 30
    for key, f in facts:
        for field in ("value", "unit", "source", "date", "evidence"):
            assert f.get(field) not in (None, ""), f"{key} lacks {field}"
        assert _DATE.match(str(f["date"])), f"{key}: date {f['date']!r} is not YYYY-MM[-DD]"
        assert f["evidence"] in {"V", "V2", "U"}, f"{key}: evidence {f['evidence']!r}"


def test_every_chip_has_peak_and_memory_in_known_units() -> None:
    for cid in cost.chip_names():
        c = cost.chip(cid)
        assert c.facts["peak_bf16_dense"].unit == "FLOP/s"
        assert 1e14 < c.peak_bf16_flop_per_s < 1e16, cid
        assert c.facts["hbm"].unit in {"GB", "GiB"}
        for term in cost.PRICE_TERMS:
            if c.has_price(term):
                assert c.price_fact(term).unit == "USD/chip-hour"


def test_the_chips_the_book_compares_are_there() -> None:
    assert {"h100_sxm", "h200", "tpu_v5e", "tpu_v5p", "tpu_v6e", "tpu_v7x", "trn2"} <= set(cost.chip_names())


def test_unverified_values_are_flagged() -> None:
    # prices only seen second-hand must not read as verified
    assert not cost.chip("tpu_v5e").price_fact().verified
    assert cost.chip("tpu_v5e").price_fact().evidence == "V2"  # a price catalogue built from Google's, not its page
    assert not cost.chip("tpu_v6e").price_fact().verified  # V2: via copies of the GA blog
    assert cost.chip("tpu_v6e").facts["peak_bf16_dense"].verified
    for k, f in cost.claims().items():
        if k.startswith("launch_"):
            assert f.evidence == "U", k


def test_loader_rejects_a_value_without_source() -> None:
    with pytest.raises(ValueError, match="lacks source"):
        cost.parse_fact("chips.x.peak", {"value": 1, "unit": "FLOP/s", "date": "2026-11", "evidence": "V"})
    with pytest.raises(ValueError, match="evidence"):
        cost.parse_fact(
            "chips.x.peak", {"value": 1, "unit": "FLOP/s", "source": "s", "date": "2026-11", "evidence": "?"}
        )


def test_reference_rows() -> None:
    rows = cost.reference_rows()
    assert len(rows) == sum(len(cost.chip(c).facts) for c in cost.chip_names())
    for r in rows:
        assert set(r) >= {"chip", "quantity", "value", "unit", "source", "date", "verified", "evidence"}
        assert r["source"] and r["verified"] == (r["evidence"] == "V")
    v6e_price = [r for r in rows if r["chip"].startswith("TPU v6e") and r["quantity"] == "usd_per_chip_hour_on_demand"]
    assert v6e_price and v6e_price[0]["value"] == 2.70 and v6e_price[0]["verified"] is False


def test_claim_rows() -> None:
    rows = {r["claim"]: r for r in cost.claim_rows()}
    assert rows["launch_flux_ms_per_step"]["value"] == 122.51 and rows["launch_flux_ms_per_step"]["verified"] is False
    assert rows["v6e_pod_bf16"]["chips"] == 256 and rows["v6e_pod_bf16"]["chip"] == "tpu_v6e"
    for r in rows.values():
        assert r["source"] and r["verified"] == (r["evidence"] == "V")
        assert r["chip"] == "" or r["chip"] in cost.chip_names()


def test_data_info_names_file_and_date() -> None:
    info = cost.data_info()
    assert info["file"].endswith("hardware.toml") and _DATE.match(info["compiled"])
    assert cost.hours_per_month() == 730.0


# ---------------------------------------------------------------------------------------------
# The CLI


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    try:
        rc = main(argv)
    except SystemExit as e:  # argparse usage errors
        rc = int(e.code or 0)
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.mark.parametrize(
    "argv",
    [
        ["cost", "tokens", "--chip", "tpu_v6e", "--params", "-8e9", "--mfu", "0.3"],
        ["cost", "tokens", "--chip", "tpu_v6e", "--params", "0", "--mfu", "0.3"],
        ["cost", "tokens", "--chip", "tpu_v6e", "--params", "nan", "--mfu", "0.3"],
        ["cost", "tokens", "--chip", "tpu_v6e", "--params", "8e9", "--mfu", "-0.3"],
        ["cost", "tokens", "--chip", "a100", "--params", "8e9", "--mfu", "0.3"],
        ["cost", "tokens", "--chip", "tpu_v7x", "--params", "8e9", "--mfu", "0.3"],  # no published price
        ["cost", "tokens", "--chip", "tpu_v6e", "--params", "8e9"],  # missing --mfu
        ["cost", "mfu", "--chip", "tpu_v6e", "--params", "8e9", "--tokens-per-s", "inf"],
        ["cost", "image", "--chip", "tpu_v6e", "--ms-per-step", "abc"],
        ["cost", "image", "--chip", "tpu_v6e", "--ms-per-step", "100", "--steps", "0"],
        ["cost", "train", "--chip", "tpu_v6e", "--params", "8e9", "--tokens", "-1", "--mfu", "0.4"],
        [
            "cost",
            "breakeven",
            "--from-chip",
            "h100_sxm",
            "--from-chips",
            "0",
            "--from-mfu",
            "0.4",
            "--to-chip",
            "tpu_v6e",
            "--to-mfu",
            "0.4",
        ],
        [
            "cost",
            "breakeven",
            "--from-chip",
            "h100_sxm",
            "--from-chips",
            "8",
            "--from-mfu",
            "0.4",
            "--to-chip",
            "tpu_v6e",
            "--to-mfu",
            "0.4",
            "--velocity-loss",
            "NaN",
        ],
    ],
)
def test_cli_errors_are_one_line_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    rc, _, err = _run(argv, capsys)
    assert rc == 2
    assert len(err.strip().splitlines()) == 1, err
    assert "error:" in err and "Traceback" not in err


def test_cli_image_matches_hand_math(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = _run(
        ["cost", "image", "--chip", "tpu_v6e", "--ms-per-step", "100", "--steps", "36", "--price", "3.6"], capsys
    )
    assert rc == 0
    assert "0.00360" in out and "277.8" in out  # $0.0036 per image, 277.8 per dollar


def test_cli_tokens_and_mfu_round_trip(capsys: pytest.CaptureFixture[str]) -> None:
    # 0.5 * 918e12 / (2 * 8e9) = 28,687.5 tokens/s per chip
    rc, out, _ = _run(
        [
            "cost",
            "tokens",
            "--chip",
            "tpu_v6e",
            "--params",
            "8e9",
            "--mfu",
            "0.5",
            "--mode",
            "inference",
            "--price",
            "3.6",
        ],
        capsys,
    )
    assert rc == 0 and "28,688" in out
    rc, out, _ = _run(
        ["cost", "mfu", "--chip", "tpu_v6e", "--params", "8e9", "--mode", "inference", "--tokens-per-s", "28687.5"],
        capsys,
    )
    assert rc == 0 and "50.0%" in out


def test_cli_breakeven_and_chips(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = _run(
        [
            "cost",
            "breakeven",
            "--from-chip",
            "h100_sxm",
            "--from-chips",
            "8",
            "--from-mfu",
            "0.4",
            "--from-price",
            "2.0",
            "--to-chip",
            "tpu_v6e",
            "--to-mfu",
            "0.1",
            "--to-price",
            "2.7",
        ],
        capsys,
    )
    assert rc == 0 and "never" in out and "stay" in out
    rc, out, _ = _run(["cost", "chips", "--sources"], capsys)
    assert rc == 0 and "tpu_v6e" in out and "2.70*" in out and "docs.cloud.google.com/tpu/docs/v6e" in out


@pytest.mark.parametrize("sub", ["chips", "tokens", "mfu", "image", "train", "breakeven"])
def test_cli_help(sub: str, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = _run(["cost", sub, "--help"], capsys)
    assert rc == 0 and "usage:" in out


# ---------------------------------------------------------------------------------------------
# Tables a chapter displays


def test_chip_table_has_a_row_per_chip_with_evidence_markers() -> None:
    lines = cost.chip_table().data.splitlines()
    assert (
        lines[0]
        == "| chip | dense BF16 TFLOP/s | HBM | USD/chip-hour on_demand | USD/chip-hour 1yr | USD/chip-hour 3yr |"
    )
    assert len(lines) == 2 + len(cost.chip_names())
    v6e = cost.chip("tpu_v6e")
    row = next(ln for ln in lines if ln.startswith(f"| {v6e.name} |"))
    assert f"{v6e.usd_per_chip_hour('1yr'):.2f} [{v6e.price_fact('1yr').evidence}]" in row
    assert f"{v6e.peak_bf16_flop_per_s / 1e12:,.0f} [" in row


def _profile() -> tuple[float, cost.Side, cost.Side, cost.Migration]:
    current = cost.Side("h100_sxm", 3.0, 0.4, 0.8)
    proposed = cost.Side("tpu_v6e", 1.5, 0.3, 0.8)
    m = cost.Migration(
        kernels=2,
        person_weeks_per_kernel=3,
        port_person_weeks=4,
        validation_person_weeks=2,
        usd_per_person_week=5000,
        team_size=3,
        velocity_loss=0.2,
        disruption_weeks=5,
    )
    return 1e21, current, proposed, m


def test_decision_table_shows_each_profile_and_its_verdict() -> None:
    flop, current, proposed, m = _profile()
    d = cost.decide(flop, current, proposed, m, 24)
    never = cost.decide(flop, current, cost.Side("tpu_v6e", 100.0, 0.3, 0.8), m, 24)
    p = cost.break_even_current_usd_per_chip_hour(flop, current, proposed, m, 24)
    lines = cost.decision_table({"A": d, "B": never}, {"A": p, "B": 1.0}, {"A": m, "B": m}).data.splitlines()
    assert lines[0] == "|  | A | B |"
    assert f"| one-time cost (USD) | {d.one_time_usd:,.0f} | {never.one_time_usd:,.0f} |" in lines
    assert f"| break-even (months) | {d.break_even_months:.1f} | never |" in lines
    assert f"| verdict | {'MIGRATE' if d.migrate else 'STAY'} | STAY |" in lines
    assert f"| staying wins below (USD per current chip-hour) | {p:.2f} | 1.00 |" in lines
    assert any(ln.startswith("| net over 24 months (USD) |") for ln in lines)
    with pytest.raises(ValueError, match="Decision"):
        cost.decision_table({})
    with pytest.raises(ValueError, match="same names"):
        cost.decision_table({"A": d}, {"B": p})


def test_sensitivity_table_has_a_row_per_sensitivity_row() -> None:
    flop, current, proposed, m = _profile()
    rows = cost.sensitivity(flop, current, proposed, m, 24)
    lines = cost.sensitivity_table(rows).data.splitlines()
    assert len(lines) == 2 + len(rows)
    assert lines[2].startswith("| baseline | ×1 |  |")
    from xlaport.text import usd

    assert usd(rows[0]["net_over_horizon_usd"]).replace("$", "\\$") in lines[2]  # escaped: dollars, not maths
    mfu = next(r for r in rows if r["input"] == "current MFU")
    assert f"| {mfu['value']:.0%} |" in lines[rows.index(mfu) + 2]  # a fraction reads as a percentage
    with pytest.raises(ValueError, match="sensitivity"):
        cost.sensitivity_table([{"input": "x"}])
