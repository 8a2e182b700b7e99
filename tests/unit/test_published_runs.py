"""The published runs the estimate is checked against: sourced, measured, and a held-out third drawn before any fit."""

from __future__ import annotations

import re

import pytest

from xlaport.perf import published


def test_enough_runs_of_every_kind_on_enough_chips_and_stacks() -> None:
    rs = published.runs()
    assert len(rs) >= 20
    assert {r.kind for r in rs} >= {"training", "serving"} and any(r.inference for r in rs)
    assert len({r.chip for r in rs}) >= 4
    # at least two software stacks per vendor
    vendor = {"tpu": "Google", "trn": "AWS", "h10": "NVIDIA", "h20": "NVIDIA"}
    stacks: dict[str, set[str]] = {}
    for r in rs:
        stacks.setdefault(vendor[r.chip[:3]], set()).add(r.stack)
    assert all(len(s) >= 2 for s in stacks.values()), stacks


def test_every_number_comes_with_its_source_and_the_quote_that_holds_it() -> None:
    for r in published.runs():
        src = r.source
        assert (src.get("url") or (src.get("repo") and src.get("path"))) and src["date_read"] == "2026-12-02", r.id
        quote = re.sub(r"(?<=\d),(?=\d{3}\b)", "", str(src["quote"])).replace(",", " ")  # 4,205 -> 4205
        published_values = [v for k, v in r.measured.items() if not k.startswith("derived")]
        assert any(re.search(rf"(?<![\d.]){re.escape(f'{v:g}')}", quote) for v in published_values), (
            r.id,
            published_values,
            quote[:200],
        )


def test_the_held_out_third_is_the_draw_written_down_before_any_fit() -> None:
    rs = published.runs()
    groups = {
        "training": [r.id for r in rs if r.kind == "training"],
        "inference": [r.id for r in rs if r.inference],
    }
    assert published.held_out_draw(groups) == {r.id for r in rs if r.held_out}
    assert sum(r.held_out for r in rs) == round(len(groups["training"]) / 3) + round(len(groups["inference"]) / 3)


def test_a_bad_row_is_one_line_naming_it() -> None:
    good = {
        "id": "x", "kind": "training", "model": "m", "chip": "tpu_v6e", "precision": "bf16", "held_out": False,
        "measured": {"step_time_s": 1.0}, "source": {"url": "u", "date_read": "2026-12-02", "quote": "1.0"},
    }  # fmt: skip
    chips = {"tpu_v6e"}
    assert published._parse(good, chips).id == "x"
    for change, msg in [
        ({"kind": "pretraining"}, "kind 'pretraining'"),
        ({"chip": "tpu_v9"}, "chip 'tpu_v9'"),
        ({"measured": {"step_time_s": -1.0}}, "positive finite"),
        ({"source": {"url": "u"}}, "date_read"),
        ({"chips": 0}, "chips must be"),
    ]:
        with pytest.raises(ValueError, match=re.escape(msg)) as e:
            published._parse({**good, **change}, chips)
        assert "\n" not in str(e.value) and "run 'x'" in str(e.value)
    with pytest.raises(ValueError, match="no published run 'nope'"):
        published.run("nope")
