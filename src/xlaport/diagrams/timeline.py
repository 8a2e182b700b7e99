"""Eager against lazy execution on a timeline: a data figure (matplotlib's ``broken_barh``), measured when given."""

from __future__ import annotations

from matplotlib.axes import Axes
from matplotlib.figure import Figure

from .style import INK, MUTED, PALETTE, SIZE, figure, millis, ms, tint

EAGER_OPS = ("conv", "relu", "linear", "loss", "backward", "step")


def _lane(ax: Axes, rows: list[str], heading: str) -> None:
    ax.set_yticks(range(len(rows)), rows[::-1], fontsize=SIZE)
    ax.set_ylim(-0.6, len(rows) - 0.4)
    ax.set_title(heading, loc="left", fontsize=SIZE, fontweight="bold", color=INK)
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)
    ax.tick_params(axis="y", length=0)


def _bars(ax: Axes, y: float, spans: list[tuple[float, float, str, str]], *, dashed: bool = False) -> None:
    """Boxes on row `y`: (start, width, role, label) each, the label inside."""
    for start, width, role, label in spans:
        ax.broken_barh(
            [(start, width)], (y - 0.32, 0.64), facecolors=tint(role), edgecolors=PALETTE[role], linewidth=1.2,
            linestyle="--" if dashed else "-",
        )  # fmt: skip
        if label:
            ax.text(start + width / 2, y, label, ha="center", va="center", fontsize=SIZE, color=INK)


def lazy_vs_eager(
    trace_ms: float | None = None, compile_ms: float | None = None, execute_ms: float | None = None
) -> Figure:
    """Eager (CUDA) and lazy (XLA) execution of a training step, as two timelines.

    Eager: the host issues op after op and each kernel starts right away. Lazy (TorchTPU's compiled path,
    torch_xla): the host records the ops into a graph; at the sync point the graph is compiled (the first time)
    and run; a later step with the same shapes hits the cache and only runs.

    Without arguments the lazy lane is schematic. Given all three measured times in milliseconds (``trace_ms``:
    recording the first step, ``compile_ms``: compiling its graph, ``execute_ms``: a cached step, its recording and
    run together, which one timing cannot split), it is a bar per step on a time axis in milliseconds, each part
    labelled with its time.
    """
    given = [v is not None for v in (trace_ms, compile_ms, execute_ms)]
    if any(given) and not all(given):
        raise ValueError("give trace_ms, compile_ms and execute_ms together (measured milliseconds) or none of them")
    fig = figure(
        7.0, 5.0, "Eager runs each op as Python reaches it;\nlazy records a graph, compiles it once, reruns it"
    )
    eager, lazy = fig.subplots(2, 1, height_ratios=(1, 1.15))
    fig.set_layout_engine("constrained")

    _lane(eager, ["host (Python)", "GPU"], "Eager (CUDA): each kernel starts as its op is issued")
    _bars(eager, 1, [(i, 0.9, "host", op) for i, op in enumerate(EAGER_OPS)])
    _bars(eager, 0, [(i + 0.25, 0.9, "device", "") for i in range(len(EAGER_OPS))])
    eager.set_xlim(-0.1, len(EAGER_OPS) + 0.2)
    eager.set_xticks([])
    eager.set_xlabel("time (schematic)", fontsize=SIZE, color=MUTED, loc="right")

    if not all(given):
        _lane(lazy, ["host (Python)", "device"], "Lazy (XLA): record, then compile and run at a sync")
        _bars(lazy, 1, [(0, 2.4, "host", "record ops"), (6.6, 2.4, "host", "record")], dashed=True)
        _bars(lazy, 0, [(2.4, 2.6, "compile", "compile"), (5.0, 1.0, "device", "run"), (9.0, 1.0, "device", "run")])
        for x in (2.4, 9.0):
            lazy.plot([x, x], [-0.45, 1.4], color=INK, linestyle=":", linewidth=1.2)
            lazy.text(x + 0.08, 0.5, "sync", fontsize=SIZE, fontweight="bold", va="center")
        lazy.text(0, 1.55, "first step: compiles", fontsize=SIZE, color=MUTED)
        lazy.text(6.6, 1.55, "later step: cache hit", fontsize=SIZE, color=MUTED)
        lazy.set_ylim(-0.6, 2.0)
        lazy.set_xlim(-0.1, 10.2)
        lazy.set_xticks([])
        lazy.set_xlabel("time (schematic)", fontsize=SIZE, color=MUTED, loc="right")
        return fig

    t, c, e = millis("trace_ms", trace_ms), millis("compile_ms", compile_ms), millis("execute_ms", execute_ms)
    _lane(lazy, ["first step", "later step"], "Lazy (XLA), measured: record, compile (first step only), run")
    first, later = [(0.0, t, "host"), (t, c, "compile"), (t + c, e, "device")], [(0.0, e, "device")]
    total = t + c + e
    for y, parts in ((1, first), (0, later)):
        _bars(
            lazy, y, [(a, w, role, "compile" if role == "compile" and w > 0.25 * total else "") for a, w, role in parts]
        )
    lazy.text(0, 1.45, f"record {ms(t)} + compile {ms(c)} + run {ms(e)} = {ms(total)}", fontsize=SIZE)
    lazy.text(0, 0.45, f"a cached step, record and run: {ms(e)}", fontsize=SIZE)
    lazy.set_ylim(-0.6, 1.95)
    lazy.set_xlim(0, total * 1.02)
    lazy.set_xlabel("milliseconds", fontsize=SIZE)
    lazy.xaxis.set_major_formatter("{x:,g}")
    lazy.tick_params(axis="x", labelsize=SIZE)
    fig.legend(
        handles=[_patch("host", "record (host)"), _patch("compile", "compile"), _patch("device", "run (device)")],
        loc="outside lower center", fontsize=SIZE, frameon=False, ncols=3,
    )  # fmt: skip
    return fig


def _patch(role: str, label: str):  # type: ignore[no-untyped-def]
    from matplotlib.patches import Patch

    return Patch(facecolor=tint(role), edgecolor=PALETTE[role], label=label)
