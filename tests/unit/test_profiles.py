"""Target profiles are data with sources, and the compile rules say what the real targets do."""

from __future__ import annotations

import pytest

from xlaport.profiles import profile, profile_names
from xlaport.reference import target_rules


def test_every_rule_has_a_summary_and_a_source() -> None:
    for name in profile_names():
        for r in profile(name).rules:
            assert r.summary.strip(), f"{name}/{r.id}: no summary"
            assert len(r.source.strip()) > 10, f"{name}/{r.id}: no source"


def test_rule_ids_unique_per_profile() -> None:
    for name in profile_names():
        ids = [r.id for r in profile(name).rules]
        assert len(ids) == len(set(ids)), f"{name}: duplicate rule ids {ids}"


def test_tpu_compile_defaults_match_torchtpu() -> None:
    p = profile("tpu")
    assert p.compile_defaults["backend"] == "tpu"
    assert p.compile_defaults["dynamic"] is False
    reject = p.rule("compile-dynamic-true")
    assert reject.error == "NotImplementedError" and "dynamic=True" in reject.message
    assert p.amp_dtype == "bfloat16"


def test_neuron_compiles_fullgraph_and_ignores_mode() -> None:
    p = profile("neuron")
    assert p.compile_defaults == {"backend": "neuron", "fullgraph": True, "dynamic": False}
    assert p.rule("compile-mode").kind == "compile_ignore"


def test_unknown_profile_and_rule() -> None:
    with pytest.raises(ValueError, match="unknown target 'gpu'"):
        profile("gpu")
    with pytest.raises(KeyError, match="no rule"):
        profile("tpu").rule("nope")


def test_rules_page_lists_every_rule() -> None:
    page = target_rules.render()
    for name in profile_names():
        for r in profile(name).rules:
            assert f"`{r.id}`" in page


def test_every_rule_says_when_it_was_read_from_its_source() -> None:
    import datetime

    for name in profile_names():
        for r in profile(name).rules:
            checked = r.extra.get("checked")
            assert checked, f"{name} rule {r.id} has no 'checked' date"
            assert datetime.date.fromisoformat(checked) <= datetime.date.today(), (name, r.id, checked)
