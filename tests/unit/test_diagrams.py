"""xlaport.diagrams: each figure says what it is meant to say, reads cleanly, and builds offline without torch."""

from __future__ import annotations

import itertools
import json
import os
import re
from collections.abc import Callable
from pathlib import Path

import matplotlib
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.text import Text

from xlaport import diagrams

matplotlib.use("Agg")
ROOT = Path(__file__).resolve().parents[2]


def shown(text: str) -> str:
    """What a reader sees of a text: mixed lines hold code and bold runs as mathtext (``$\\mathtt{x\\_y}$``)."""
    text = re.sub(r"\$\\math(?:tt|bf)\{(.*?)\}\$", lambda m: m[1], text)
    text = text.replace("\\ ", " ").replace("\\prime ", "'")
    text = re.sub(r"\\([_{}#%&$])", r"\1", text)
    return re.sub(r"\{(.)\}", r"\1", text)


def texts(fig: Figure) -> list[str]:
    return [shown(t.get_text()) for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()]


def layout_problems(fig: Figure) -> list[str]:
    """Text smaller than 9 pt, text outside the figure, and pairs of texts that overlap, as drawn by Agg."""
    renderer = FigureCanvasAgg(fig).get_renderer()
    fig.draw(renderer)
    width, height = fig.bbox.width, fig.bbox.height
    problems, boxes = [], []
    for t in fig.findobj(Text):
        if not t.get_visible() or not t.get_text().strip():
            continue
        if t.get_fontsize() < 9:
            problems.append(f"{t.get_text()!r} is {t.get_fontsize()} pt")
        bb = t.get_window_extent(renderer)
        if bb.x0 < 0 or bb.y0 < 0 or bb.x1 > width or bb.y1 > height:
            problems.append(f"{t.get_text()!r} runs outside the figure")
        boxes.append((t.get_text(), bb))
    for (a, ba), (b, bb) in itertools.combinations(boxes, 2):
        dx = min(ba.x1, bb.x1) - max(ba.x0, bb.x0)
        dy = min(ba.y1, bb.y1) - max(ba.y0, bb.y0)
        if dx > 0.5 and dy > 0.5:
            problems.append(f"{a!r} overlaps {b!r}")
    return problems


CALLS: dict[str, Callable[[], Figure]] = {
    "lazy_vs_eager()": lambda: diagrams.lazy_vs_eager(),
    "lazy_vs_eager(measured)": lambda: diagrams.lazy_vs_eager(trace_ms=7.9, compile_ms=1057, execute_ms=8.0),
    "lazy_vs_eager(tiny run)": lambda: diagrams.lazy_vs_eager(trace_ms=50, compile_ms=30, execute_ms=0.4),
    "fallback_chain()": lambda: diagrams.fallback_chain(),
    "fallback_chain(unique_dim)": lambda: diagrams.fallback_chain("aten::unique_dim"),
    "schedule_views()": lambda: diagrams.schedule_views(),
    "schedule_views(20 steps)": lambda: diagrams.schedule_views(n_steps=20, limit=8),
    "schedule_views(1 step)": lambda: diagrams.schedule_views(n_steps=1, limit=1),
    "kv_cache()": lambda: diagrams.kv_cache(),
    "kv_cache(chapter sizes)": lambda: diagrams.kv_cache(max_len=32, prompt_len=4, bucket=8, generated=2),
    "kv_cache(long)": lambda: diagrams.kv_cache(max_len=128, prompt_len=40, bucket=64, generated=9),
    "migration_flowchart()": lambda: diagrams.migration_flowchart(),
}


@pytest.mark.parametrize("call", list(CALLS))
def test_each_figure_reads_cleanly(call: str) -> None:
    fig = CALLS[call]()
    assert isinstance(fig, Figure)
    assert fig.get_size_inches()[0] <= 9.0, f"{call} is wider than 9 in"
    assert len(fig.get_suptitle().split()) >= 5, f"{call} has no title that can serve as alt text"
    assert layout_problems(fig) == [], call


def test_figures_are_not_left_open_in_pyplot() -> None:
    import matplotlib.pyplot as plt

    before = plt.get_fignums()
    diagrams.kv_cache()
    assert plt.get_fignums() == before, "a notebook would show the figure twice (returned, and by pyplot)"


# --- what each figure says ----------------------------------------------------------------------------------------


def test_lazy_vs_eager_schematic_has_both_lanes_and_no_numbers() -> None:
    shown = texts(diagrams.lazy_vs_eager())
    joined = " ".join(shown)
    assert "Eager (CUDA)" in joined and "Lazy (XLA" in joined
    assert any("compile" in s for s in shown) and "sync" in shown
    assert "cache hit" in joined
    assert not re.search(r"\d ms", joined), "the schematic version shows measured-looking numbers"


def test_lazy_vs_eager_labels_the_measured_times() -> None:
    shown = texts(diagrams.lazy_vs_eager(trace_ms=7.9, compile_ms=1057.0, execute_ms=8.0))
    for label in ("7.9 ms", "1,057 ms", "8.0 ms"):
        assert label in shown, f"{label} missing from {shown}"
    assert "schematic" in shown  # the eager lane is not measured, and says so
    assert any("compile box shortened" in s for s in shown), "a compile 130x a run must be drawn shortened"


def test_lazy_vs_eager_draws_a_short_compile_to_scale() -> None:
    shown = texts(diagrams.lazy_vs_eager(trace_ms=10, compile_ms=12, execute_ms=5))
    assert "12.0 ms" in shown and "10.0 ms" in shown and "5.0 ms" in shown
    assert not any("shortened" in s for s in shown)


def test_fallback_chain_names_the_op_and_both_outcomes() -> None:
    shown = texts(diagrams.fallback_chain())
    joined = " ".join(shown)
    assert "aten::linalg_cholesky_ex" in shown and "NotImplementedError" in shown
    assert "CPU fallback" in joined and "XLA graph" in joined and "graph cut" in joined
    assert shown.count("yes") == 2 and shown.count("no") == 2
    assert "TorchTPU's default" in joined and "TorchNeuron's" in joined
    assert "aten::unique_dim" in texts(diagrams.fallback_chain("aten::unique_dim"))


def test_schedule_views_draws_one_view_per_step_at_its_offset() -> None:
    shown = texts(diagrams.schedule_views(n_steps=4))
    views = sorted(s for s in shown if re.fullmatch(r"sigmas\[\d+\]", s))
    offsets = sorted(s for s in shown if s.startswith("offset "))
    assert views == [f"sigmas[{i}]" for i in range(4)]
    assert offsets == [f"offset {i}" for i in range(4)]
    assert [s for s in shown if re.fullmatch(r"σ[₀-₉]+", s)] == ["σ₀", "σ₁", "σ₂", "σ₃", "σ₄"]  # n_steps + 1 cells
    joined = " ".join(shown)
    assert "storage_offset" in joined and "sigmas.tolist()" in joined and "sigmas[i].clone()" in joined
    assert "recompile_limit = 8" in joined


def test_schedule_views_marks_the_recompile_limit() -> None:
    shown = texts(diagrams.schedule_views(n_steps=5, limit=3))
    assert [s for s in shown if s.startswith("graph ")] == ["graph 1", "graph 2", "graph 3"]
    assert shown.count("uncompiled") == 2
    assert "recompile limit (3)" in shown
    assert "recompile limit (8)" not in texts(diagrams.schedule_views(n_steps=5, limit=8))


def test_schedule_views_elides_a_long_loop() -> None:
    shown = texts(diagrams.schedule_views(n_steps=28, limit=8))
    assert {"sigmas[0]", "sigmas[7]", "sigmas[8]", "sigmas[27]"} <= set(shown)
    assert "sigmas[15]" not in shown and "⋯" in shown
    assert "one buffer, 29 values" in shown


def test_kv_cache_marks_masked_slots_and_the_growing_programs() -> None:
    fig = diagrams.kv_cache(max_len=16, prompt_len=5, bucket=8, generated=2)
    shown = texts(fig)
    assert "bucket padding (masked)" in shown and "empty (masked)" in shown
    # The mask row: slots 0..pos = 6 attended ("1"), the other 9 masked ("0"); each digit also labels its slot once.
    assert (shown.count("1") - 1, shown.count("0") - 1) == (7, 9)
    assert "pos = 6: this step writes here" in shown
    assert [s for s in shown if s.startswith("length ")] == [
        "length 5: program 1",
        "length 6: program 2",
        "length 7: program 3",
    ]
    assert "prompt bucket: 8 slots, prefilled once" in shown


def test_kv_cache_elides_a_long_cache() -> None:
    shown = texts(diagrams.kv_cache(max_len=32, prompt_len=4, bucket=8, generated=2))
    assert "31" in shown and "20" not in shown and "⋯" in shown
    assert "Static cache: 32 slots allocated once, written in place" in shown


def chapter_titles() -> set[str]:
    """The part before ':' of each chapter's title (its first markdown line)."""
    out = set()
    for path in (ROOT / "notebooks").glob("*.ipynb"):
        first = json.loads(path.read_text(encoding="utf-8"))["cells"][0]["source"]
        title = "".join(first).splitlines()[0].removeprefix("# ")
        out.add(title.split(":")[0].strip())
    return out


def test_migration_flowchart_names_each_chapter_by_its_title() -> None:
    shown = texts(diagrams.migration_flowchart())
    named = {
        "Audit your own code",
        "Op fallbacks",
        "Recompile storms",
        "SD3 view offsets",
        "Custom kernels",
        "Attention numerics",
        "Pricing math",
    }
    assert named <= set(shown), named - set(shown)
    assert named <= chapter_titles(), f"renamed chapters: {named - chapter_titles()}"
    assert "run xlaport doctor" in shown and "go" in shown and "no-go" in shown


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
        (lambda: diagrams.fallback_chain(3), "op must be"),
        (lambda: diagrams.fallback_chain("aten::" + "x" * 120), "too long"),
        (lambda: diagrams.schedule_views(n_steps=0), "n_steps must be at least 1"),
        (lambda: diagrams.schedule_views(n_steps=2.5), "n_steps must be a whole number"),
        (lambda: diagrams.schedule_views(limit=0), "limit must be at least 1"),
        (lambda: diagrams.schedule_views(limit=True), "limit must be a whole number"),
        (lambda: diagrams.kv_cache(prompt_len=9, bucket=8), "prompt_len <= bucket"),
        (lambda: diagrams.kv_cache(max_len=8, bucket=16), "bucket <= max_len"),
        (lambda: diagrams.kv_cache(max_len=10, bucket=8, generated=3), "bucket \\+ generated"),
        (lambda: diagrams.kv_cache(generated=0), "generated must be at least 1"),
        (lambda: diagrams.kv_cache(max_len="16"), "max_len must be a whole number"),
    ],
)
def test_bad_input_raises_a_one_line_value_error(call: Callable[[], object], match: str) -> None:
    with pytest.raises(ValueError, match=match) as err:
        call()
    assert "\n" not in str(err.value)


def test_save_rejects_what_it_cannot_write(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="SVG"):
        diagrams.save(diagrams.fallback_chain(), tmp_path / "chain.png")
    with pytest.raises(ValueError, match="Figure"):
        diagrams.save("not a figure", tmp_path / "x.svg")  # type: ignore[arg-type]


# --- saving -----------------------------------------------------------------------------------------------------------


def test_save_writes_a_reproducible_svg_without_paths_or_dates(tmp_path: Path) -> None:
    first = diagrams.save(diagrams.migration_flowchart(), tmp_path / "a" / "figures" / "migration.svg")
    second = diagrams.save(diagrams.migration_flowchart(), tmp_path / "b" / "migration.svg")
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
        import xlaport.diagrams as d
        from xlaport import diagrams
        figs = [d.lazy_vs_eager(), d.lazy_vs_eager(trace_ms=8, compile_ms=1000, execute_ms=8), d.fallback_chain(),
                d.schedule_views(), d.kv_cache(), d.migration_flowchart()]
        d.save(figs[-1], {str(tmp_path / "m.svg")!r})
        loaded = sorted(m for m in sys.modules if m == "torch" or m.startswith(("torch.", "torch_xla")))
        print("torch modules:", loaded)
        """
    )
    assert "torch modules: []" in out.stdout, out.stdout
    assert (tmp_path / "m.svg").exists()
