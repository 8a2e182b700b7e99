"""xlaport.perf.ladder: the fixes that make a training step fit, cheapest first, on a written trace."""

from __future__ import annotations

import dataclasses

import pytest

from xlaport.perf.ladder import RUNGS, climb, first_fit, largest_micro_batch
from xlaport.perf.machine import Machine
from xlaport.perf.trace import OpCount, StepTrace

GB = 1e9


def _trace(state_gb: float = 12.0, act_gb: float = 64.0, items: int = 8) -> StepTrace:
    ops = [OpCount("aten::mm", "forward", "matmul", 1, 1e12), OpCount("aten::mm", "backward", "matmul", 2, 2e12)]
    third = state_gb * GB / 6  # weights : gradients : AdamW = 1 : 1 : 4 (bf16 weights, fp32 moments)
    return StepTrace(
        "training",
        "bfloat16",
        ops,
        params=int(third / 2),
        param_bytes=third,
        grad_bytes=third,
        optimizer_state_bytes=4 * third,
        activation_bytes=act_gb * GB,
        io_bytes=0.0,
        tokens=items * 4096,
        items=items,
    )


def _chip(hbm_gb: float) -> Machine:
    return Machine("c", "chip", peak_flop_per_s=1e15, hbm_bytes_per_s=1e12, hbm_bytes=hbm_gb * GB)


def test_a_step_that_fits_stops_at_the_first_rung() -> None:
    rungs = climb(_trace(act_gb=8), _chip(100))
    assert [r.fix for r in rungs] == list(RUNGS)
    assert first_fit(rungs).fix == "as is" and first_fit(rungs).micro_batch == 8


def test_accumulation_picks_the_largest_micro_batch_that_divides_the_batch() -> None:
    rungs = climb(
        _trace(act_gb=64), _chip(40)
    )  # 12 GB of state, 8 GB a sample, 36 GB usable: room for 3 samples, and 2 is the largest that divides 8
    assert rungs[0].fits is False
    assert rungs[1].fix == "gradient accumulation" and rungs[1].micro_batch == 2 and rungs[1].fits
    assert largest_micro_batch(_trace(act_gb=64), 36 * GB) == 2
    assert largest_micro_batch(_trace(act_gb=64), 12 * GB) is None  # the state alone fills it


def test_bf16_moments_halve_the_optimizer_state_and_fsdp_always_fits() -> None:
    t = _trace(state_gb=60, act_gb=8 * 8)
    rungs = climb(t, _chip(16))
    assert rungs[3].bytes_per_chip == pytest.approx(rungs[2].bytes_per_chip - t.optimizer_state_bytes / 2)
    assert not any(r.fits for r in rungs[:4]) and rungs[4].fits and rungs[4].chips > 1
    assert first_fit(rungs).fix == "FSDP"
    assert t.items % rungs[4].chips == 0  # a count that splits the batch of 8 evenly


def test_checkpointing_without_a_config_keeps_every_activation_and_recomputes_nothing() -> None:
    rungs = climb(_trace(), _chip(40))
    assert rungs[2].recompute_share == 0.0 and rungs[2].bytes_per_chip == rungs[1].bytes_per_chip


def test_bad_input_gets_one_clear_error() -> None:
    with pytest.raises(ValueError, match="training step"):
        climb(dataclasses.replace(_trace(), mode="inference"), _chip(40))
    with pytest.raises(ValueError, match="usable"):
        climb(_trace(), _chip(40), usable=1.5)
    with pytest.raises(ValueError, match="first_fit needs"):
        first_fit([])
