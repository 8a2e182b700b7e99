"""The curriculum pages the site's extension generates (_ext/xlaport_site/curriculum.py): measured session durations
and the decision brief's break-even band."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from xlaport_site import curriculum as cp

ROOT = Path(__file__).resolve().parents[2]


def test_every_session_page_exists_and_is_linked() -> None:
    md = cp.sessions_md({})
    for s in cp.SESSIONS:
        for page in s.pages:
            assert cp.page_words(page) > 0
            assert f"{{doc}}`/{page}`" in md
    assert "not yet run" in md  # no timings: said so, never a made-up number


def test_every_chapter_is_in_one_session() -> None:
    chapters = sorted(f"notebooks/{p.stem}" for p in (ROOT / "notebooks").glob("*.ipynb"))
    placed = sorted(page for s in cp.SESSIONS for page in s.pages if page.startswith("notebooks/"))
    assert placed == chapters, f"in no session: {sorted(set(chapters) - set(placed))}; twice or gone: {placed}"


def test_prerequisites_come_earlier() -> None:
    for i, s in enumerate(cp.SESSIONS, 1):
        assert all(0 < p < i for p in s.prerequisites), f"session {i} needs a later session"


def test_durations_follow_the_measured_inputs(tmp_path: Path) -> None:
    timings = {"01_first_steps": 600.0}
    md = cp.sessions_md(timings, venv=tmp_path)
    row = next(line for line in md.splitlines() if line.startswith("| 1."))
    parts = next(line for line in md.splitlines() if line.startswith("| 1 |"))
    s = cp.SESSIONS[0]
    words = sum(cp.page_words(p) for p in s.pages)
    ex = sum(m for p in s.pages for *_, m in cp.exercise_minutes(p))
    work = 10 + -(-words // cp.WORDS_PER_MINUTE) + ex + cp.JUPYTERLAB_SETUP_MINUTES  # no venv here: no install
    discussion = -(-work * cp.DISCUSSION_SHARE // (1 - cp.DISCUSSION_SHARE))
    assert row.split(" | ")[1] == f"{int(work + discussion)}", row  # the session's total, right after the session
    cells = [int(c) for c in parts.strip("| ").split(" | ")]
    assert cells[2] == 10 and cells[1] == sum(cells[2:]) == int(work + discussion), parts  # the parts add up
    assert all(len(line.split(" | ")) <= 7 for line in md.splitlines() if line.startswith("| ")), "a table too wide"
    (tmp_path / "t.json").write_text(json.dumps({"x": {"budget_s": 1, "seconds": 2.5}}))
    assert cp.load_timings(tmp_path / "t.json") == {"x": 2.5}
    assert cp.load_timings(tmp_path / "missing.json") == {}


def test_unknown_page_is_one_line_error() -> None:
    with pytest.raises(ValueError, match="does not exist"):
        cp.page_words("book/no_such_page")


def test_decision_band_spans_the_unverified_price_and_agrees_with_its_break_even_price() -> None:
    md = cp.decision_md()
    head = next(line for line in md.splitlines() if line.startswith("| profile | break-even"))
    prices = [float(x) for x in re.findall(r"months at \\\$(\d+\.\d\d)", head)]
    assert len(prices) == 3 and prices == sorted(prices)
    rows = [line for line in md.splitlines() if line.startswith("| ") and "/hour |" in line]
    assert len(rows) == len(cp.PROFILES)
    for row in rows:
        cells = [c.strip() for c in row.split("|")[1:-1]]
        p_star = float(re.sub(r"[^\d.]", "", cells[1].split("/")[0]))
        months = [float(x) if x != "never" else float("inf") for x in cells[2:]]
        # a dearer GPU makes the move pay back sooner (or not later)
        assert months == sorted(months, reverse=True), row
        # the break-even price is where the months cross the horizon: above it the move pays back in time
        for price, m in zip(prices, months, strict=True):
            assert (m <= cp.HORIZON_MONTHS) == (price > p_star), (row, price, m)
    assert "Trainium2" in md and re.search(r"\\\$\d+\.\d\d against", md)
    # every assumption the profiles make is on the page, for each profile
    table = md.split("| assumption |")[1].split("\n\n")[0]
    assert table.count("\n| ") == len(cp.ASSUMPTIONS) and all(n in md for n in cp.PROFILES)


def test_generated_prices_are_dollars_not_maths() -> None:
    """MyST's dollarmath reads two unescaped $ in a line as a formula: every $ in the generated markdown is escaped
    (code spans aside)."""
    for md in (cp.decision_md(), cp.sessions_md({})):
        prose = re.sub(r"`[^`]*`", "", md)
        assert not re.search(r"(?<!\\)\$", prose), [ln for ln in prose.splitlines() if re.search(r"(?<!\\)\$", ln)]
    assert re.search(r"\\\$\d+\.\d\d/chip-hour in the data file", cp.decision_md())  # escaped, still there


def test_the_capstone_session_counts_its_pair_work() -> None:
    """The facilitator notes give the capstone session a pair exercise (the doctor on the pair's own code); the
    session's exercise minutes count its allowance instead of 0."""
    md = cp.sessions_md({"capstone": 60.0})
    i = next(n for n, s in enumerate(cp.SESSIONS, 1) if cp.OWN_CODE_PAGE in s.pages)
    parts = next(line for line in md.splitlines() if line.startswith(f"| {i} |"))
    cells = [int(c) for c in parts.strip("| ").split(" | ")]
    assert cells[4] >= cp.OWN_CODE_MINUTES and f"{cp.OWN_CODE_MINUTES} minutes allowed for each pair" in md
