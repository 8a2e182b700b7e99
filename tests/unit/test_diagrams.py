"""xlaport.diagrams: each figure carries the texts that make its point, stays legible at the size the site shows it,
renders to the same SVG bytes every time, and builds offline without torch."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from pathlib import Path

import matplotlib
import numpy as np
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.text import Text

from xlaport import diagrams

matplotlib.use("Agg")
ROOT = Path(__file__).resolve().parents[2]


def texts(fig: Figure) -> list[Text]:
    """Every text a reader sees, tick labels included (the figure is drawn once so that ticks exist)."""
    FigureCanvasAgg(fig).draw()
    return [t for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()]


def shown(fig: Figure) -> list[str]:
    return [t.get_text() for t in texts(fig)]


CALLS: dict[str, Callable[[], Figure]] = {
    "lazy_vs_eager()": lambda: diagrams.lazy_vs_eager(),
    "lazy_vs_eager(measured)": lambda: diagrams.lazy_vs_eager(trace_ms=7.9, compile_ms=1057, execute_ms=8.0),
    "lazy_vs_eager(tiny run)": lambda: diagrams.lazy_vs_eager(trace_ms=50, compile_ms=30, execute_ms=0.4),
    "fallback_chain()": lambda: diagrams.fallback_chain(),
    "schedule_views()": lambda: diagrams.schedule_views(),
    "schedule_views(20 steps)": lambda: diagrams.schedule_views(n_steps=20, limit=8),
    "kv_cache()": lambda: diagrams.kv_cache(),
    "kv_cache(long)": lambda: diagrams.kv_cache(max_len=128, prompt_len=40, bucket=64, generated=9),
    "migration_flowchart()": lambda: diagrams.migration_flowchart(),
}
PHONE_PX = 620  # a chapter's plot on a phone is shown 620 CSS px wide (_static/xlaport.css), from 100 dpi
PHONE_COLUMN_PX = 340  # the home page's figure fills the text column of a phone


@pytest.mark.parametrize("call", list(CALLS))
def test_each_figure_is_legible_on_a_phone(call: str) -> None:
    fig = CALLS[call]()
    width = fig.get_size_inches()[0]
    if call == "migration_flowchart()":  # an SVG at 72 pt per inch, scaled to the column: its points shrink by
        shrink = PHONE_COLUMN_PX / (96 * width)  # the column's px over the SVG's (96 px per inch)
    else:  # a PNG at 100 px per inch shown PHONE_PX wide: a point is 100/72 px, a CSS px is 3/4 pt
        shrink = PHONE_PX / (100 * width) * 100 / 72 * 0.75
    on_phone = {t.get_text(): round(t.get_fontsize() * shrink, 1) for t in texts(fig)}
    assert {k: v for k, v in on_phone.items() if v < 8.5} == {}, f"{call} shows text under 8.5 pt on a phone"
    assert all(t.get_fontsize() >= 10 for t in texts(fig)), f"{call} has text under 10 pt at its own size"
    assert len(fig.get_suptitle().split()) >= 5, f"{call} has no title that says what it shows"


def test_figures_are_not_left_open_in_pyplot() -> None:
    import matplotlib.pyplot as plt

    before = plt.get_fignums()
    diagrams.kv_cache()
    diagrams.migration_flowchart()
    assert plt.get_fignums() == before, "a notebook would show the figure twice (returned, and by pyplot)"


# --- what each figure says ----------------------------------------------------------------------------------------


def test_lazy_vs_eager_schematic_has_both_lanes_and_no_numbers() -> None:
    fig = diagrams.lazy_vs_eager()
    joined = " ".join(shown(fig))
    assert "Eager (CUDA)" in joined and "Lazy (XLA)" in joined
    assert {"compile", "sync", "host (Python)", "GPU", "device"} <= set(shown(fig))
    assert "cache hit" in joined and "backward" in joined
    assert not re.search(r"\d ms", joined), "the schematic version shows measured-looking numbers"


def test_lazy_vs_eager_labels_the_measured_times() -> None:
    fig = diagrams.lazy_vs_eager(trace_ms=7.9, compile_ms=1057.0, execute_ms=8.0)
    lines = shown(fig)
    assert "record 7.9 ms + compile 1,057 ms + run 8.0 ms = 1,073 ms" in lines
    assert "a cached step, record and run: 8.0 ms" in lines  # the cached step's own time, not the first's recording
    assert "milliseconds" in lines and "time (schematic)" in lines  # the eager lane is not measured, and says so
    # The lazy bars are drawn to scale: the compile bar is 1057 / 7.9 times the record bar.
    widths = [float(np.ptp(c.get_paths()[0].vertices[:, 0])) for c in fig.axes[1].collections]
    assert max(widths) / min(widths) == pytest.approx(1057 / 7.9, rel=1e-3)


def test_fallback_chain_names_the_op_and_both_outcomes() -> None:
    lines = shown(diagrams.fallback_chain())
    joined = " ".join(lines)
    assert "aten::linalg_cholesky_ex" in joined and "NotImplementedError" in joined
    assert "CPU kernel" in joined and "XLA" in joined and "graph cut" in joined
    assert lines.count("yes") == 2 and lines.count("no") == 2
    assert "TorchTPU's default" in lines and "TorchNeuron's default" in lines
    assert "aten::unique_dim" in " ".join(shown(diagrams.fallback_chain("aten::unique_dim")))


def test_schedule_views_draws_one_view_per_step_at_its_offset() -> None:
    lines = shown(diagrams.schedule_views(n_steps=4))
    assert sorted(s for s in lines if s.startswith("offset ")) == [f"offset {i}" for i in range(4)]
    assert [s for s in lines if re.fullmatch(r"σ[₀-₉]+", s)] == ["σ₀", "σ₁", "σ₂", "σ₃", "σ₄"]  # n_steps + 1 values
    assert "sigmas: 5 values" in lines
    joined = " ".join(lines)
    assert "storage offset" in joined and "sigmas.tolist()" in joined and "sigmas[i].clone()" in joined


def test_schedule_views_marks_the_recompile_limit() -> None:
    lines = shown(diagrams.schedule_views(n_steps=5, limit=3))
    assert [s for s in lines if s.startswith("graph ")] == ["graph 1", "graph 2", "graph 3"]
    assert lines.count("no graph") == 2 and "recompile limit (3)" in lines
    assert not any("recompile limit" in s for s in shown(diagrams.schedule_views(n_steps=5, limit=8)))


def test_schedule_views_leaves_out_the_middle_of_a_long_loop() -> None:
    lines = shown(diagrams.schedule_views(n_steps=28, limit=8))
    assert {"offset 0", "offset 7", "offset 8", "offset 27", "⋯"} <= set(lines)
    assert "offset 15" not in lines and "sigmas: 29 values" in lines


def test_kv_cache_marks_the_position_the_mask_and_the_growing_programs() -> None:
    lines = shown(diagrams.kv_cache(max_len=16, prompt_len=5, bucket=8, generated=2))
    assert "pos = 6: this step writes here" in lines and "1: attended" in lines and "0: masked" in lines
    assert "bucket padding (masked)" in lines and "empty (masked)" in lines
    assert any(s.strip() == "prompt bucket: 8 slots" for s in lines)
    assert "Static cache: 16 slots allocated once, written in place" in lines
    assert [s for s in lines if s.startswith("length ")] == [
        "length 5: program 1",
        "length 6: program 2",
        "length 7: program 3",
    ]


def test_kv_cache_shows_the_first_and_last_of_many_programs() -> None:
    lines = shown(diagrams.kv_cache(max_len=128, prompt_len=40, bucket=64, generated=9))
    programs = [s for s in lines if s.startswith("length ")]
    assert programs[0] == "length 40: program 1" and programs[-1] == "length 49: program 10" and len(programs) == 4
    assert "⋮" in lines and "pos = 48: this step writes here" in lines


def chapter_titles() -> set[str]:
    """The part before ':' of each chapter's title (its first markdown line)."""
    out = set()
    for path in (ROOT / "notebooks").glob("*.ipynb"):
        first = json.loads(path.read_text(encoding="utf-8"))["cells"][0]["source"]
        title = "".join(first).splitlines()[0].removeprefix("# ")
        out.add(title.split(":")[0].strip())
    return out


def test_migration_flowchart_names_each_chapter_by_its_title() -> None:
    lines = shown(diagrams.migration_flowchart())
    named = {
        "Audit your own code",
        "Op fallbacks",
        "Recompile storms",
        "SD3 view offsets",
        "Custom kernels",
        "Attention numerics",
        "Pricing math",
    }
    found = {part for s in lines for part in s.split("\n")}
    assert named <= found, named - found
    assert named <= chapter_titles(), f"renamed chapters: {named - chapter_titles()}"
    assert "run xlaport doctor\non your code" in lines and {"go", "no-go"} <= set(lines)
    assert lines.count("yes") == 4 and lines.count("no") == 4


# --- bad input: one-line ValueErrors ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: diagrams.lazy_vs_eager(compile_ms=100), "together"),
        (lambda: diagrams.lazy_vs_eager(trace_ms=1, compile_ms=-5, execute_ms=1), "compile_ms must be a positive"),
        (lambda: diagrams.lazy_vs_eager(trace_ms=float("nan"), compile_ms=5, execute_ms=1), "trace_ms"),
        (lambda: diagrams.lazy_vs_eager(trace_ms=1, compile_ms=5, execute_ms="3"), "execute_ms must be a number"),
        (lambda: diagrams.lazy_vs_eager(trace_ms=True, compile_ms=5, execute_ms=1), "trace_ms"),
        (lambda: diagrams.fallback_chain(""), "op must be"),
        (lambda: diagrams.fallback_chain("aten::a\naten::b"), "one line"),
        (lambda: diagrams.fallback_chain(3), "op must be"),  # type: ignore[arg-type]
        (lambda: diagrams.fallback_chain("aten::" + "x" * 120), "too long"),
        (lambda: diagrams.schedule_views(n_steps=0), "n_steps must be at least 1"),
        (lambda: diagrams.schedule_views(n_steps=2.5), "n_steps must be a whole number"),  # type: ignore[arg-type]
        (lambda: diagrams.schedule_views(limit=0), "limit must be at least 1"),
        (lambda: diagrams.schedule_views(limit=True), "limit must be a whole number"),
        (lambda: diagrams.kv_cache(prompt_len=9, bucket=8), "prompt_len <= bucket"),
        (lambda: diagrams.kv_cache(max_len=8, bucket=16), "bucket <= max_len"),
        (lambda: diagrams.kv_cache(max_len=10, bucket=8, generated=3), "bucket \\+ generated"),
        (lambda: diagrams.kv_cache(generated=0), "generated must be at least 1"),
        (lambda: diagrams.kv_cache(max_len="16"), "max_len must be a whole number"),  # type: ignore[arg-type]
        (lambda: diagrams.save(diagrams.kv_cache(), "chain.png"), "SVG"),
        (lambda: diagrams.save("not a figure", "x.svg"), "Figure"),  # type: ignore[arg-type]
    ],
)
def test_bad_input_raises_a_one_line_value_error(call: Callable[[], object], match: str) -> None:
    with pytest.raises(ValueError, match=match) as err:
        call()
    assert "\n" not in str(err.value)


# --- saving -----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("call", ["lazy_vs_eager(measured)", "fallback_chain()", "kv_cache()", "migration_flowchart()"])
def test_save_writes_the_same_svg_twice_without_paths_or_dates(call: str, tmp_path: Path) -> None:
    first = diagrams.save(CALLS[call](), tmp_path / "a" / "figures" / "figure.svg")
    second = diagrams.save(CALLS[call](), tmp_path / "b" / "figure.svg")
    svg = first.read_text(encoding="utf-8")
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg
    assert first.read_bytes() == second.read_bytes(), "two builds of the same figure differ"
    assert "<dc:date>" not in svg and not re.search(r"\b20\d\d-\d\d-\d\d", svg)
    for path in {str(tmp_path), str(ROOT), os.path.expanduser("~"), "/tmp/", "/home/"}:
        assert path not in svg, f"machine path {path} in the SVG"


def test_import_and_drawing_leave_torch_unloaded(fresh_python, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    out = fresh_python(
        f"""
        import sys
        from xlaport import diagrams as d
        figs = [d.lazy_vs_eager(), d.lazy_vs_eager(trace_ms=8, compile_ms=1000, execute_ms=8), d.fallback_chain(),
                d.schedule_views(), d.kv_cache(), d.migration_flowchart()]
        d.save(figs[-1], {str(tmp_path / "m.svg")!r})
        loaded = sorted(m for m in sys.modules if m == "torch" or m.startswith(("torch.", "torch_xla")))
        print("torch modules:", loaded)
        """
    )
    assert "torch modules: []" in out.stdout, out.stdout
    assert (tmp_path / "m.svg").exists()


# --- grouped bars (custom_kernels' lines-of-code chart) and the book's plot record ----------------------------------

LOC = {
    "rmsnorm forward": {"Triton": 15, "Pallas": 23, "NKI": 23},
    "rmsnorm backward": {"Triton": 30, "Pallas": 33},
    "matmul + bias + ReLU": {"Triton": 28, "Pallas": 46},
}
LOC_COLORS = {"Triton": "#76b900", "Pallas": "#4285f4", "NKI": "#ff9900"}


def test_grouped_bars_legend_covers_no_bar_and_no_label() -> None:
    from matplotlib.patches import Rectangle

    fig = diagrams.grouped_bars(LOC, "The same kernels in three languages", "lines of code", LOC_COLORS)
    FigureCanvasAgg(fig).draw()
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    ax = fig.axes[0]
    legend = ax.get_legend() or fig.legends[0]
    box = legend.get_window_extent(renderer)
    bars = [p for p in ax.patches if isinstance(p, Rectangle) and p.get_width() > 0]
    labels = [t for t in ax.texts if t.get_text().strip()]
    assert len(bars) == 7 and sorted(t.get_text() for t in labels) == sorted(
        str(v) for group in LOC.values() for v in group.values()
    )
    covered = [p.get_width() for p in bars if box.overlaps(p.get_window_extent(renderer))]
    covered += [t.get_text() for t in labels if box.overlaps(t.get_window_extent(renderer))]
    assert covered == [], f"the legend covers bars or labels: {covered}"
    # every label sits inside the axes, after its bar
    inner = ax.get_window_extent(renderer)
    assert all(inner.contains(*t.get_window_extent(renderer).p1) for t in labels)


def test_grouped_bars_a_legend_inside_the_axes_would_be_caught() -> None:
    """The overlap check above can fail: a legend moved onto the longest bar is seen."""
    fig = diagrams.grouped_bars(LOC, "The same kernels in three languages", "lines of code", LOC_COLORS)
    ax = fig.axes[0]
    ax.legend(loc="lower right")
    FigureCanvasAgg(fig).draw()
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    box = ax.get_legend().get_window_extent(renderer)
    assert any(box.overlaps(p.get_window_extent(renderer)) for p in ax.patches)


def test_grouped_bars_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="without a colour"):
        diagrams.grouped_bars({"a": {"CUDA": 3}}, "title words here", "x", LOC_COLORS)
    with pytest.raises(ValueError, match="must map"):
        diagrams.grouped_bars({}, "title words here", "x", LOC_COLORS)


def test_book_plots_fit_a_phone_column_legibly() -> None:
    from xlaport import plots

    assert plots.MIN_FONT_PT * plots.PHONE_COLUMN_PX / (72 * plots.WIDTH_IN) >= plots.LEGIBLE_PX
    fig = diagrams.grouped_bars(LOC, "The same kernels in three languages", "lines of code", LOC_COLORS)
    assert fig.get_size_inches()[0] <= plots.WIDTH_IN
    assert plots.smallest_text_pt(fig) >= plots.MIN_FONT_PT


def test_png_records_the_smallest_text() -> None:
    import matplotlib.pyplot as plt

    from xlaport import plots

    fig, ax = plt.subplots(figsize=(4, 3), dpi=100)
    plt.close(fig)
    ax.plot([0, 1], [0, 1])
    ax.set_title("a title at 14 pt", fontsize=14)
    ax.tick_params(labelsize=9)
    ax.text(0.5, 0.5, "a note at 7 pt", fontsize=7)
    data = plots.png(fig)
    assert plots.recorded_font_px(data) == pytest.approx(7 * 100 / 72, abs=0.01)
    assert plots.recorded_font_px(_plain_png()) is None
    with pytest.raises(ValueError, match="PNG"):
        plots.recorded_font_px(b"GIF89a")


def _plain_png() -> bytes:
    import io

    fig = Figure(figsize=(1, 1))
    fig.add_subplot().plot([0, 1])
    buf = io.BytesIO()
    FigureCanvasAgg(fig).print_png(buf)
    return buf.getvalue()


def test_a_plots_png_records_what_it_shows_for_its_alt_text() -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from xlaport.plots import describe, png, recorded_alt

    fig, ax = plt.subplots()
    ax.plot([1, 2], [3, 4], label="TPU v6e")
    ax.plot([1, 2], [4, 5], label="H100 ×8")
    ax.set_title("Cost per month\nagainst utilisation")
    ax.set_xlabel("utilisation (%)")
    ax.set_ylabel("USD per month")
    ax.legend()
    said = describe(fig)
    assert said == "Cost per month against utilisation. x: utilisation (%); y: USD per month. series: TPU v6e, H100 ×8"
    assert recorded_alt(png(fig)) == said  # survives the PNG, non-ASCII included
    plt.close(fig)
    bare, _ = plt.subplots()
    assert describe(bare) == "" and recorded_alt(png(bare)) is None  # nothing named: no record, the site falls back
    plt.close(bare)


def test_texts_drawn_over_each_other_are_found_and_recorded() -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from xlaport.plots import png, recorded_collisions, text_collisions

    fig, ax = plt.subplots(figsize=(5.5, 1.2))  # a short plot whose legend sits where the x label is
    for k in range(6):
        ax.plot([0, 1], [k, k + 1], label=f"a rather long series name number {k}")
    ax.set_xlabel("utilisation\n(fraction of paid chip-hours doing work)")
    ax.legend(loc="upper left", bbox_to_anchor=(0, -0.3))
    hits = text_collisions(fig)
    assert hits and any("utilisation" in a or "utilisation" in b for a, b in hits), hits
    assert recorded_collisions(png(fig)).startswith(f"{len(hits)} ")
    plt.close(fig)
    good, ax = plt.subplots()
    ax.plot([0, 1], [0, 1], label="one")
    ax.set_xlabel("x")
    ax.legend()
    assert text_collisions(good) == [] and recorded_collisions(png(good)) == "0"
    plt.close(good)


@pytest.mark.parametrize(
    ("lo", "hi", "height_in"),
    [
        (810, 950, 1.0),
        (810, 950, 3.6),
        (700, 990, 1.4),
        (550, 1150, 1.4),
        (3, 2500, 1.4),
        (0.5, 5000, 1.4),
        (1e-3, 1e9, 3.6),
    ],
)
def test_plain_log_ticks_label_two_or_more_round_values_that_never_overlap(
    lo: float, hi: float, height_in: float
) -> None:
    """Under a decade matplotlib's LogLocator falls back to a tick every 20 (800, 820, ... 960), whose labels overlap
    on a short axis; over many decades 1, 2 and 5 per decade crowd one another. Neither may happen."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from xlaport.plots import plain_log_ticks, text_collisions

    fig, ax = plt.subplots(figsize=(5.5, height_in + 0.8))
    fig.subplots_adjust(bottom=0.4 / (height_in + 0.8), top=1 - 0.4 / (height_in + 0.8))
    ax.plot([0, 1, 2], [lo, (lo + hi) / 2, hi])
    ax.set_yscale("log")
    plain_log_ticks(ax.yaxis)
    fig.draw_without_rendering()
    y0, y1 = ax.get_ylim()
    shown = [t.get_text() for t in ax.get_yticklabels() if y0 <= t.get_position()[1] <= y1]
    assert len(shown) >= 2, shown
    assert text_collisions(fig) == [], shown
    assert all(float(s) > 0 for s in shown), shown
    plt.close(fig)
