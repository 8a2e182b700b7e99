"""xlaport.text: words for numbers in glued prose."""

from __future__ import annotations

import pytest

from xlaport.text import by_ratio


def test_by_ratio_picks_the_clause_for_the_measured_side() -> None:
    words = {"above": "more", "about": "same", "below": "less"}
    assert by_ratio(1.2, **words) == "more"
    assert by_ratio(1.05, **words) == "same"  # the band's edges belong to "about"
    assert by_ratio(0.95, **words) == "same"
    assert by_ratio(1.0, **words) == "same"
    assert by_ratio(0.5, **words) == "less"
    assert by_ratio(1.2, **words, tolerance=0.3) == "same"
    assert by_ratio(1.01, **words, tolerance=0) == "more"


@pytest.mark.parametrize("ratio", [-1.0, float("nan"), "2", True, None])
def test_by_ratio_rejects_what_is_not_a_ratio(ratio: object) -> None:
    with pytest.raises(ValueError, match="ratio"):
        by_ratio(ratio, "a", "b", "c")  # type: ignore[arg-type]


@pytest.mark.parametrize("tolerance", [-0.1, 1.0, True])
def test_by_ratio_rejects_a_bad_tolerance(tolerance: object) -> None:
    with pytest.raises(ValueError, match="tolerance"):
        by_ratio(1.0, "a", "b", "c", tolerance=tolerance)  # type: ignore[arg-type]


def test_escape_dollars_keeps_prices_out_of_maths_but_not_code() -> None:
    from xlaport.text import escape_dollars

    assert escape_dollars("GPU $12.29/h, TPU $1.89/h") == r"GPU \$12.29/h, TPU \$1.89/h"
    assert escape_dollars(r"already \$3") == r"already \$3"  # not escaped twice
    assert escape_dollars("run `echo $HOME` for $5") == r"run `echo $HOME` for \$5"  # a code span shows as typed
    assert escape_dollars("``a`$b`` and $") == r"``a`$b`` and \$"
    with pytest.raises(ValueError, match="markdown text"):
        escape_dollars(12.29)  # type: ignore[arg-type]


def test_table_lines_escapes_dollars_and_pipes() -> None:
    from xlaport.text import table_lines

    text = table_lines(["chip", "$ per M tokens"], [["a|b", "$1.20"], ["`x|$y`", 2]])
    assert text.splitlines() == [
        r"| chip | \$ per M tokens |",
        "|---|---|",
        r"| a\|b | \$1.20 |",
        r"| `x\|$y` | 2 |",
    ]


def test_dollars_read_as_an_editor_prints_an_estimate() -> None:
    from xlaport.text import usd

    assert usd(3_927_120) == "$3.93 million" and usd(-1_255_161) == "-$1.26 million"
    assert usd(166_119.4) == "$166,119" and usd(0) == "$0" and usd(float("inf")) == "never"
    with pytest.raises(ValueError, match="usd"):
        usd(float("nan"))


def test_times_says_once_and_twice_in_words() -> None:
    from xlaport.text import times

    assert [times(n) for n in (0, 1, 2, 3)] == ["0 times", "once", "twice", "3 times"]
    with pytest.raises(ValueError):
        times(1.0)  # type: ignore[arg-type]


def test_figures_prints_a_quantity_without_false_precision_or_an_exponent() -> None:
    from xlaport.text import figures

    assert [figures(v) for v in (141.0, 1070.4, 18.52, 0.3, 3.0)] == ["141", "1,070", "18.5", "0.3", "3"]
    assert figures(float("nan")) == "nan"
