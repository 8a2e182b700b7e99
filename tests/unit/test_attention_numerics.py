"""xlaport.attention_numerics: each reproduction breaks before its fix and not after (CPU eager), the
TorchTPU SDPA rule follows the profile, and bad input gets one-line errors."""

from __future__ import annotations

import pytest
import torch

from xlaport.numerics import attention as an


def test_plan_covers_every_variant() -> None:
    rows = an.plan()
    for case in an.CASES.values():
        assert {v for c, v, _ in rows if c == case.name} == set(case.variants)


@pytest.mark.parametrize(
    ("case", "dtype"),
    [
        ("fp16_logits", "float16"),
        ("f32min_mask", "bfloat16"),
        ("fully_masked_rows", "bfloat16"),
        ("fully_masked_rows", "float32"),
    ],
)
def test_broken_attention_is_nonfinite_and_fixes_are_finite(case: str, dtype: str) -> None:
    broken = an.run_case(case, "broken", dtype, "cpu")
    assert not (broken.forward_finite and broken.backward_finite), broken
    for variant in an.CASES[case].variants[1:]:
        fixed = an.run_case(case, variant, dtype, "cpu")
        assert fixed.forward_finite and fixed.backward_finite, fixed


def test_fully_masked_rows_hide_in_forward() -> None:
    o = an.run_case("fully_masked_rows", "broken", "float32", "cpu")
    assert o.forward_finite and not o.backward_finite and o.cell == "NaN/inf bwd"


def test_bf16_logits_do_not_overflow() -> None:
    o = an.run_case("fp16_logits", "broken", "bfloat16", "cpu")
    assert o.forward_finite and o.backward_finite


def test_island_eager_is_finite() -> None:
    o = an.run_case("autocast_outside_compile", "broken", "float16", "cpu")
    assert o.forward_finite and o.backward_finite


def test_safe_softmax_zero_rows_and_finite_grad() -> None:
    scores = torch.randn(2, 3, requires_grad=True)
    keep = torch.tensor([[True, False, True], [False, False, False]])
    p = an.safe_softmax(scores, keep)
    assert torch.equal(p[1], torch.zeros(3)) and torch.allclose(p[0].sum(), torch.tensor(1.0)) and p[0, 1] == 0
    p.square().sum().backward()
    assert torch.isfinite(scores.grad).all()
    with pytest.raises(ValueError, match="broadcast"):
        an.safe_softmax(torch.randn(2, 3), torch.ones(2, 4, dtype=torch.bool))


def test_tpu_sdpa_paths_follow_the_documented_rule() -> None:
    assert an.tpu_sdpa_backend((2, 8, 128, 64), "bfloat16") == "flash"
    assert an.tpu_sdpa_backend((2, 8, 128, 256), "float32") == "flash"
    assert an.tpu_sdpa_backend((2, 8, 128, 192), "bfloat16") == "math"  # not < 128, not a multiple of 128
    assert an.tpu_sdpa_backend((2, 8, 128, 64), "float16") == "math"
    assert an.tpu_sdpa_backend((2, 8, 128, 64), "float16", dropout_p=0.1) == "none"
    assert an.tpu_sdpa_backend((2, 8, 128, 64), "bfloat16", dropout_p=0.1) == "flash"
    assert an.tpu_sdpa_backend((128, 64), "bfloat16") == "math"  # rank < 4
    assert an.tpu_sdpa_backend((2, 8, 128, 64), "bfloat16", static_shapes=False) == "math"
    assert an.tpu_sdpa_backend((2, 8, 128, 64), "bfloat16", mask_requires_grad=True) == "math"


def test_bad_input_gives_one_line_errors(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(ValueError, match="unknown case"):
        an.run_case("nope", "broken", "float16", "cpu")
    with pytest.raises(ValueError, match="no variant"):
        an.run_case("fp16_logits", "nope", "float16", "cpu")
    with pytest.raises(ValueError, match="dtype"):
        an.run_case("fp16_logits", "broken", "int8", "cpu")
    with pytest.raises(ValueError, match="dropout_p"):
        an.tpu_sdpa_backend((2, 8, 128, 64), "bfloat16", dropout_p=1.0)
    with pytest.raises(ValueError, match="query_shape"):
        an.tpu_sdpa_backend((2, -1), "bfloat16")
    with pytest.raises(ValueError, match="unknown case"):
        an.table(case="nope")


def test_cli_subcommand(capsys: pytest.CaptureFixture[str]) -> None:
    from xlaport.cli import main

    assert main(["attention-check", "--case", "fully_masked_rows", "--backends", ""]) == 0
    out = capsys.readouterr().out
    assert "fully_masked_rows" in out and "NaN/inf bwd" in out and "ok" in out
    assert main(["attention-check", "--case", "nope"]) == 2
    assert "unknown case" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["attention-check", "--help"])
