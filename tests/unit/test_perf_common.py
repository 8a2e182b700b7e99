"""The generated page "Estimates for common models": every chip, training and serving, numbers that recompute."""

from __future__ import annotations

import re

import pytest

from xlaport import cost
from xlaport.perf import common


@pytest.fixture(scope="module")
def page() -> str:
    return common.render()


def test_every_model_has_a_row_on_every_chip_for_training_and_serving(page: str) -> None:
    names = [cost.chip(c).name for c in cost.chip_names()]
    train, serve = page.split("## Serving")[0], page.split("## Serving")[1].split("## A diffusion")[0]
    for model in common.MODELS:
        for name in names:
            assert f"| {model} (" in train and f"| {name} |" in train
            assert re.search(rf"\| {model} \([^)]*\) \| {re.escape(name)} \|", serve), (model, name)


def test_a_training_rows_tokens_per_chip_and_price_recompute_from_its_step() -> None:
    for r in common.training_rows():
        tokens = common.TRAIN_BATCH * common.TRAIN_SEQ
        assert r["tokens_per_s_per_chip"] == pytest.approx(tokens / r["expected_s"] / r["chips"])
        lo, hi = r["interval_s"]
        assert lo <= r["expected_s"] <= hi <= 2 * lo + 1e-9
        price = (
            cost.chip(r["chip"]).usd_per_chip_hour("on_demand") if cost.chip(r["chip"]).has_price("on_demand") else None
        )
        if price is not None:
            assert r["usd_per_million_tokens"] == pytest.approx(price / 3600 / r["tokens_per_s_per_chip"] * 1e6)
