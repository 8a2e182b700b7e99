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
    for model in common.MODELS:
        title = cost.model_config(model)["name"]
        for part in ("training", "serving"):
            section = page.split(f"### {title} ({common.MODELS[model]}), {part}")[1].split("###")[0]
            for name in names:
                # chip, then its price per million tokens (the column a buyer reads first), tokens/s per chip, chips
                row = rf"^\| {re.escape(name)} \| (?:[\d.]+|no price) \| [\d,]+ \| \d+ \|"
                assert re.search(row, section, re.M), (model, part, name)


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
