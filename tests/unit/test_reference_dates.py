"""Every fact in the reference data carries the day it was last read from its source; one without a date fails.

``xlaport.reference.freshness`` collects the dates of every data file it lists; the negative tests feed it each
file with one date removed (or malformed, or in the future) and expect a one-line error naming the file and the
fact. The "What changed" page shows the date the facts were checked through the fragment the site generates
from these dates, never a date typed by hand.
"""

from __future__ import annotations

import datetime
import json
import re
from pathlib import Path

import pytest

from xlaport import api_mapping, reference
from xlaport.reference import freshness

ROOT = Path(__file__).resolve().parents[2]


def test_every_fact_in_every_listed_file_has_a_date() -> None:
    facts = freshness.dated_facts()
    files = {f.file for f in facts}
    assert files == set(freshness.FILES)
    today = datetime.date.today()
    for f in facts:
        assert datetime.date.fromisoformat(f.checked) <= today, f
    # Each file contributes every fact it holds (no file silently reduced to a header).
    counts = {file: sum(f.file == file for f in facts) for file in freshness.FILES}
    assert counts["api_mapping.toml"] == 2 * len(api_mapping.rows())
    assert counts["neuron-ops.toml"] == 2
    assert counts["torch_tpu-0.2.0-facts.json"] == len(
        json.loads(reference.data_text("torch_tpu-0.2.0-facts.json"))["facts"]
    )
    assert all(n > 0 for n in counts.values()), counts


def test_the_reference_data_directory_has_no_undated_fact_file() -> None:
    """A new data file of facts must be listed (and dated); the zoo sweep is a measured record, not facts read."""
    data = Path(reference.__file__).parent / "data"
    not_listed = {p.name for p in data.iterdir() if p.suffix in (".toml", ".json")} - set(freshness.FILES)
    assert not_listed == {"zoo-sweep.json"}, not_listed


def _drop_first(pattern: str, text: str) -> str:
    out, n = re.subn(pattern, "", text, count=1, flags=re.M)
    assert n == 1, f"nothing matched {pattern!r}"
    return out


# (file, how to remove one date from its text, the fact the error must name)
UNDATED = {
    "profiles rule": ("profiles.toml", lambda t: _drop_first(r'^checked = "[^"]*"\n', t), "cuda rule recompile-limit"),
    "kernel concept": ("kernel_concepts.toml", lambda t: _drop_first(r'^checked = "[^"]*"\n', t), "concept program_id"),
    "api mapping cell": (
        "api_mapping.toml",
        lambda t: _drop_first(r'^neuron_checked = "[^"]*"\n', t),
        "torch.cuda.is_available() (neuron column)",
    ),
    "neuron op list": ("neuron-ops.toml", lambda t: _drop_first(r'^checked = "[^"]*".*\n', t), "op list"),
    "neuron fallback": (
        "neuron-ops.toml",
        lambda t: _drop_first(r'^fallback_checked = "[^"]*".*\n', t),
        "CPU-fallback default",
    ),
    "wheel facts": (
        "torch_tpu-0.2.0-facts.json",
        lambda t: _drop_first(r'^ "checked": "[^"]*",\n', t),
        "wheel's facts",
    ),
    "wheel ops": ("torch_tpu-0.2.0-ops.json", lambda t: _drop_first(r'^\s*"checked": "[^"]*",\n', t), "wheel's facts"),
    "hardware value": (
        "hardware.toml",
        lambda t: _drop_first(r', checked = "[^"]*"', t),
        "chips.h100_sxm.peak_bf16_dense",
    ),
    "hardware claim": (
        "hardware.toml",
        lambda t: re.sub(
            r'(\[claims\.trillium_peak_vs_v5e\](?:\n[^\[\n][^\n]*)*?)\nchecked = "[^"]*"', r"\1", t, count=1
        ),
        "claims.trillium_peak_vs_v5e",
    ),
}


def _with(monkeypatch: pytest.MonkeyPatch, name: str, text: str) -> None:
    real = reference.data_text
    monkeypatch.setattr(freshness, "data_text", lambda n: text if n == name else real(n))


@pytest.mark.parametrize("case", UNDATED, ids=list(UNDATED))
def test_a_fact_without_a_date_fails(monkeypatch: pytest.MonkeyPatch, case: str) -> None:
    file, drop, fact = UNDATED[case]
    _with(monkeypatch, file, drop(reference.data_text(file)))
    with pytest.raises(ValueError) as e:
        freshness.dated_facts()
    message = str(e.value)
    assert file in message and fact in message and "\n" not in message, message


@pytest.mark.parametrize(
    ("bad", "says"),
    [("2026-12", "YYYY-MM-DD"), ("2026-02-30", "not a calendar date"), ("2999-01-01", "has not come yet")],
)
def test_a_malformed_or_future_date_fails(monkeypatch: pytest.MonkeyPatch, bad: str, says: str) -> None:
    text = reference.data_text("kernel_concepts.toml")
    _with(
        monkeypatch,
        "kernel_concepts.toml",
        re.sub(r'^checked = "[^"]*"', f'checked = "{bad}"', text, count=1, flags=re.M),
    )
    with pytest.raises(ValueError, match=says):
        freshness.dated_facts()


def test_the_api_mapping_loader_refuses_an_undated_cell(monkeypatch: pytest.MonkeyPatch) -> None:
    text = _drop_first(r'^tpu_checked = "[^"]*"\n', reference.data_text("api_mapping.toml"))
    monkeypatch.setattr(api_mapping, "_data", lambda n: text if n == "api_mapping.toml" else reference.data_text(n))
    api_mapping._load.cache_clear()
    try:
        with pytest.raises(ValueError, match="missing 'tpu_checked'"):
            api_mapping.rows()
    finally:
        api_mapping._load.cache_clear()


def test_the_fragment_shows_the_newest_date_of_the_data() -> None:
    facts = freshness.dated_facts()
    newest = max(f.checked for f in facts)
    text = freshness.render(facts)
    assert freshness.last_checked(facts) == newest
    day = datetime.date.fromisoformat(newest)
    assert f"Facts last checked: {day.day} {day:%B %Y}** ({newest})" in text
    for file in freshness.FILES:
        assert f"| `{file}` |" in text
    # An older dataset renders an older date: the date comes from the data.
    old = tuple(freshness.DatedFact(f.file, f.fact, "2026-11-29", f.source) for f in facts)
    assert "Facts last checked: 29 November 2026** (2026-11-29)" in freshness.render(old)


def test_what_changed_includes_the_generated_date_and_types_none() -> None:
    """The "What changed" pages (the page and the facts page it links, wherever the section sits) show the date the
    facts were checked through the generated fragment, and type no date of their own in that section."""
    pages = sorted((ROOT / "book").glob("what_changed*.md"))
    sections = [
        p.read_text(encoding="utf-8").split("## When these facts were checked", 1)
        for p in pages
        if "## When these facts were checked" in p.read_text(encoding="utf-8")
    ]
    assert len(sections) == 1, f"one 'When these facts were checked' section expected among {[p.name for p in pages]}"
    section = sections[0][1].split("\n## ", 1)[0]
    assert "```{include} generated/facts_checked.md" in section
    months = "January|February|March|April|May|June|July|August|September|October|November|December"
    typed = re.findall(rf"\b\d{{1,2}} (?:{months}) \d{{4}}\b", section)
    assert typed == [], f"dates typed by hand in 'When these facts were checked': {typed}"


def test_the_cost_loader_refuses_an_undated_value() -> None:
    from xlaport.cost.facts import parse_fact

    value = {"value": 1.0, "unit": "x", "source": "s", "date": "2026-11", "evidence": "V"}
    with pytest.raises(ValueError, match="needs checked"):
        parse_fact("chips.x.peak", value)
    assert parse_fact("chips.x.peak", value | {"checked": "2026-12-01"}).checked == "2026-12-01"
