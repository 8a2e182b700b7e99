"""The book's diagrams: five schematic figures drawn with matplotlib, built offline.

Each public function returns a :class:`matplotlib.figure.Figure` whose suptitle can serve as alt text; a chapter
shows it by ending a cell with the call, without ``;`` (the figure is not left registered with pyplot, so it is
shown once, as the cell's result), and the site build writes the home page's flowchart with :func:`save`. matplotlib only: importing this module never
imports torch.

* :func:`lazy_vs_eager`: eager (CUDA) against lazy (XLA) execution on a timeline, schematic or scaled to
  measured times;
* :func:`fallback_chain`: the dispatcher's path for an op without a kernel on the ``tpu`` device;
* :func:`schedule_views`: ``sigmas[i]`` views at a new storage offset every denoising step;
* :func:`kv_cache`: the preallocated static KV cache and its mask, against a cache grown with ``torch.cat``;
* :func:`migration_flowchart`: the book's decision path, from ``xlaport doctor`` to go / no-go.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import matplotlib as mpl
from matplotlib.axes import Axes
from matplotlib.backend_bases import RendererBase
from matplotlib.figure import Figure
from matplotlib.font_manager import FontProperties
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch, Polygon, Rectangle
from matplotlib.text import Text

__all__ = [
    "PALETTE",
    "fallback_chain",
    "kv_cache",
    "lazy_vs_eager",
    "migration_flowchart",
    "save",
    "schedule_views",
]

# One look for every diagram. Okabe-Ito colours (safe for the common colour-vision deficiencies), each used for one
# meaning across the figures; boxes are filled with a light tint and edged with the full colour, text stays dark.
PALETTE: dict[str, str] = {
    "host": "#0072B2",  # blue: the host, Python, data the program reads
    "device": "#009E73",  # bluish green: runs on the device, generated tokens, go
    "compile": "#E69F00",  # orange: a compile, a new program
    "fallback": "#CC79A7",  # reddish purple: a host round trip
    "error": "#D55E00",  # vermillion: an error, a recompile per value, no-go
    "view": "#56B4E9",  # sky blue: views; the flowchart's actions
    "neutral": "#8C8C8C",  # grey: masked, empty, uncompiled
}
INK = "#1A1A1A"
MUTED = "#4D4D4D"
LINK = "#00507F"  # chapter names: a dark blue that keeps contrast on white and on every tint
BODY, SMALL, HEAD, TITLE = 10.0, 9.0, 10.5, 12.0  # points at the figure's native size; nothing below 9
MARGIN = 0.2  # inches
SANS, MONO = "DejaVu Sans", "DejaVu Sans Mono"  # shipped with matplotlib: the same metrics everywhere


def _tint(role: str, amount: float = 0.22) -> tuple[float, float, float]:
    r, g, b = mpl.colors.to_rgb(PALETTE[role])
    return (1 - amount + amount * r, 1 - amount + amount * g, 1 - amount + amount * b)


@dataclass(frozen=True)
class _Line:
    """One line of text in a box: prose or code, with its size and weight."""

    text: str
    size: float = BODY
    mono: bool = False
    weight: str = "normal"
    color: str = INK
    style: str = "normal"


def _code(text: str, size: float = BODY, **kw: str) -> _Line:
    return _Line(text, size, True, **kw)


def _note(text: str, size: float = SMALL) -> _Line:
    return _Line(text, size, color=MUTED)


def _chapter(text: str, size: float = BODY) -> _Line:
    return _Line(text, size, weight="bold", color=LINK)


LineSpec = str | _Line
Lines = Sequence[LineSpec | tuple[LineSpec, ...]]  # a tuple: one line of runs, prose and code


class _Pen:
    """Draws on one axes that fills the figure, in inches from its bottom-left corner."""

    def __init__(self, width: float, height: float, title: str, *, title_size: float = TITLE) -> None:
        import matplotlib.pyplot as plt

        # Created through pyplot so that a notebook's inline backend is active and renders the returned figure,
        # then closed at once so pyplot does not show it a second time at the end of the cell.
        self.fig: Figure = plt.figure(figsize=(width, height), facecolor="white")
        plt.close(self.fig)
        self.ax: Axes = self.fig.add_axes((0, 0, 1, 1))
        self.ax.set_xlim(0, width)
        self.ax.set_ylim(0, height)
        self.ax.set_axis_off()
        self.width, self.height = width, height
        self.title = self.fig.suptitle(
            title,
            x=MARGIN / width,
            y=1 - MARGIN / height,
            ha="left",
            va="top",
            fontsize=title_size,
            fontweight="bold",
            color=INK,
            fontfamily=SANS,
            linespacing=1.3,
        )

    # --- text -----------------------------------------------------------------------------------------------
    def measure(self, line: LineSpec) -> tuple[float, float]:
        """Width and height of one line of text, in inches."""
        return _measure(line)

    def text(self, x: float, y: float, line: LineSpec, *, ha: str = "center", va: str = "center") -> Text:
        spec = _as_line(line)
        return self.ax.text(
            x,
            y,
            spec.text,
            ha=ha,
            va=va,
            fontsize=spec.size,
            fontfamily=MONO if spec.mono else SANS,
            fontweight=spec.weight,
            fontstyle=spec.style,
            color=spec.color,
            zorder=5,
        )

    def stack(self, cx: float, cy: float, lines: Lines) -> float:
        """Lines centred as a block on (cx, cy); a tuple is one line of runs (prose and code). Returns its height."""
        heights = [_line_height(line) for line in lines]
        top = cy + sum(heights) / 2
        for line, h in zip(lines, heights, strict=True):
            if isinstance(line, tuple):
                self.rich(cx, top - h / 2, line, ha="center")
            else:
                self.text(cx, top - h / 2, line)
            top -= h
        return sum(heights)

    def block_size(self, lines: Sequence[LineSpec]) -> tuple[float, float]:
        return max(self.measure(s)[0] for s in lines), sum(_line_height(s) for s in lines)

    def rich(self, x: float, y: float, parts: Sequence[LineSpec], *, ha: str = "left") -> float:
        """Runs of prose, code and bold on one line, as ONE text object; returns the x where the line ends.

        Code and bold runs are mathtext (``\\mathtt``, ``\\mathbf``) inside the one string, so the runs cannot drift
        apart or overlap at any dpi (separately placed runs did, at the 72 dpi of SVG and Colab's inline plots).
        """
        specs = [_as_line(p) for p in parts]
        first = specs[0]
        text = "".join(_math_run(sp) for sp in specs)
        self.ax.text(x, y, text, ha=ha, va="center", fontsize=first.size, fontfamily=SANS, color=first.color, zorder=5)
        width = _measure_math(text, first.size)
        return x + (width if ha == "left" else width / 2 if ha == "center" else 0.0)

    # --- shapes ---------------------------------------------------------------------------------------------
    def box(
        self,
        cx: float,
        cy: float,
        w: float,
        h: float,
        role: str | None,
        lines: Lines = (),
        *,
        hatch: str | None = None,
        rounded: bool = True,
        lw: float = 1.2,
        fill: str | tuple[float, float, float] | None = None,
        edge: str | None = None,
        dashed: bool = False,
    ) -> None:
        face = fill if fill is not None else (_tint(role) if role else "white")
        color = edge if edge is not None else (PALETTE[role] if role else INK)
        style = f"round,pad=0,rounding_size={min(0.08, h / 4)}" if rounded else "square,pad=0"
        patch = FancyBboxPatch(
            (cx - w / 2, cy - h / 2),
            w,
            h,
            boxstyle=style,
            facecolor=face,
            edgecolor=color,
            linewidth=lw,
            hatch=hatch,
            linestyle="--" if dashed else "-",
            zorder=2,
        )
        if hatch and hasattr(patch, "set_hatch_linewidth"):  # matplotlib >= 3.10
            patch.set_hatch_linewidth(0.6)
        self.ax.add_patch(patch)
        if lines:
            self.stack(cx, cy, lines)

    def diamond(self, cx: float, cy: float, w: float, h: float, role: str | None, lines: Lines) -> None:
        face = _tint(role, 0.14) if role else "white"
        pts = [(cx, cy + h / 2), (cx + w / 2, cy), (cx, cy - h / 2), (cx - w / 2, cy)]
        self.ax.add_patch(
            Polygon(pts, closed=True, facecolor=face, edgecolor=PALETTE[role] if role else INK, lw=1.2, zorder=2)
        )
        self.stack(cx, cy, lines)

    def arrow(self, points: Sequence[tuple[float, float]], *, color: str = INK, lw: float = 1.2) -> None:
        """A polyline through `points` with an arrowhead at the last one."""
        if len(points) > 2:
            xs, ys = zip(*points[:-1], strict=True)
            self.ax.plot(xs, ys, color=color, lw=lw, solid_capstyle="butt", zorder=1)
        self.ax.add_patch(
            FancyArrowPatch(
                points[-2],
                points[-1],
                arrowstyle="-|>",
                mutation_scale=11,
                color=color,
                lw=lw,
                shrinkA=0,
                shrinkB=0,
                zorder=3,
            )
        )

    def fit_height(self, bottom: float) -> None:
        """Crop the figure's bottom to `bottom` (inches, as drawn) plus the margin; the top stays where it is."""
        cut = bottom - MARGIN
        self.height -= cut
        self.fig.set_size_inches(self.width, self.height)
        self.ax.set_ylim(cut, cut + self.height)
        self.title.set_y(1 - MARGIN / self.height)

    def link(self, a: tuple[float, float], b: tuple[float, float]) -> None:
        """A dotted connector without a head: 'explained in'."""
        self.ax.plot([a[0], b[0]], [a[1], b[1]], color=MUTED, lw=1.0, ls=(0, (1, 2)), zorder=1)

    def hline(self, y: float, x0: float, x1: float, **kw: object) -> None:
        self.ax.plot([x0, x1], [y, y], **{"color": "#C8C8C8", "lw": 0.8, **kw})  # type: ignore[arg-type]

    def vline(self, x: float, y0: float, y1: float, **kw: object) -> None:
        self.ax.plot([x, x], [y0, y1], **{"color": INK, "lw": 1.0, **kw})  # type: ignore[arg-type]


def _as_line(line: LineSpec) -> _Line:
    return line if isinstance(line, _Line) else _Line(line)


def _line_height(line: LineSpec | tuple[LineSpec, ...]) -> float:
    sizes = [_as_line(p).size for p in (line if isinstance(line, tuple) else (line,))]
    return 1.38 * max(sizes) / 72


@functools.cache
def _renderer() -> RendererBase:
    from matplotlib.backends.backend_agg import RendererAgg

    return RendererAgg(100, 100, 100)


_MATH_ESCAPES = str.maketrans(
    {
        "\\": r"\backslash ",
        "_": r"\_",
        "{": r"\{",
        "}": r"\}",
        "#": r"\#",
        "%": r"\%",
        "&": r"\&",
        "$": r"\$",
        " ": r"\ ",
        "'": r"\prime ",
        "^": r"\^{}",
        "~": r"\sim ",
    }
    # Operators and punctuation as ordinary symbols, so mathtext adds no space around them ("x.y", "==").
    | {c: "{" + c + "}" for c in ".:=,;+-<>*/|!"}
)


def _math_run(spec: _Line) -> str:
    """One run of a mixed line: prose as it is, code as ``$\\mathtt{...}$``, bold as ``$\\mathbf{...}$``."""
    if not spec.mono and spec.weight == "normal":
        return spec.text.replace("$", r"\$")
    if spec.mono:
        return f"$\\mathtt{{{spec.text.translate(_MATH_ESCAPES)}}}$"
    body = spec.text.rstrip(" :,.;")  # trailing punctuation in the prose font, as it would be set in bold
    return f"$\\mathbf{{{body.translate(_MATH_ESCAPES)}}}$" + spec.text[len(body) :]


def _measure_math(text: str, size: float) -> float:
    """Width in inches of a line that may hold mathtext runs (measured with Agg at 100 dpi)."""
    prop = FontProperties(family=SANS, size=size)
    w, _, _ = _renderer().get_text_width_height_descent(text, prop, ismath="$" in text)
    return w / 100


def _measure(line: LineSpec) -> tuple[float, float]:
    """Width and height of one line of text, in inches (measured with Agg at 100 dpi)."""
    spec = _as_line(line)
    prop = FontProperties(family=MONO if spec.mono else SANS, size=spec.size, weight=spec.weight)
    w, h, _ = _renderer().get_text_width_height_descent(spec.text, prop, ismath=False)
    return w / 100, h / 100


# --- argument checks: one-line ValueErrors --------------------------------------------------------------------


def _whole(name: str, value: object, low: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be a whole number, got {value!r}")
    if value < low:
        raise ValueError(f"{name} must be at least {low}, got {value}")
    return value


def _millis(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{name} must be a number of milliseconds, got {value!r}")
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a positive, finite number of milliseconds, got {value!r}")
    return float(value)


def _ms(value: float) -> str:
    if value >= 100:
        return f"{value:,.0f} ms"
    if value >= 1:
        return f"{value:.1f} ms"
    return f"{value:.2f} ms"


# --- 1. eager against lazy --------------------------------------------------------------------------------------


def lazy_vs_eager(
    trace_ms: float | None = None, compile_ms: float | None = None, execute_ms: float | None = None
) -> Figure:
    """Eager (CUDA) and lazy (XLA) execution of a training step, as two timelines.

    Eager: the host issues op after op and each kernel starts right away. Lazy (TorchTPU's compiled path,
    torch_xla): the host records the ops into a graph without running them; at the sync point the graph is
    compiled (the first time) and executed; a later step with the same shapes hits the cache and only executes.

    Without arguments the lazy lane is schematic. Given all three measured times in milliseconds (``trace_ms``:
    recording one step, ``compile_ms``: compiling its graph, ``execute_ms``: running the compiled program), its
    boxes are drawn to scale with those numbers as labels; a compile that dwarfs the rest is drawn shortened, with
    a break mark, and a scale bar gives the scale of the other boxes.
    """
    given = [v is not None for v in (trace_ms, compile_ms, execute_ms)]
    if any(given) and not all(given):
        raise ValueError("give trace_ms, compile_ms and execute_ms together (measured milliseconds) or none of them")
    measured = None
    if all(given):
        measured = (
            _millis("trace_ms", trace_ms),
            _millis("compile_ms", compile_ms),
            _millis("execute_ms", execute_ms),
        )

    W = 9.0
    x0, x1 = 1.75, W - MARGIN  # the timeline
    row_h, gap = 0.44, 0.5
    lane = _lazy_layout(measured, x0, x1 - x0 - gap, gap)
    spans = lane.spans
    if measured:
        t, c, e = measured
        labels = {"rec1": ["record", _ms(t)], "comp": ["compile", _ms(c)], "ex1": ["run", _ms(e)]}
        if lane.broken:
            labels["comp"] = ["compile, first time", _ms(c)]
        labels |= {"rec2": ["record", _ms(t)], "ex2": ["run", _ms(e)]}
    else:
        labels = {"rec1": ["record ops", "into a graph"], "comp": ["compile", "(first time only)"], "ex1": ["run"]}
        labels |= {"rec2": ["record the", "same graph"], "ex2": ["run"]}
    room = {k: b - a - 0.12 for k, (a, b) in spans.items()}
    fits = {k: (k == "comp" and lane.broken) or max(_measure(s)[0] for s in labels[k]) <= room[k] for k in spans}
    overflow = not all(fits.values())
    H = 5.9 + (0.28 if overflow else 0.0)
    pen = _Pen(W, H, "Eager runs each op as Python reaches it; lazy records a graph,\ncompiles it once and reruns it")
    label_x = MARGIN

    # Eager lane --------------------------------------------------------------------------------------------------
    top = H - 1.05
    heading = "Eager (CUDA): each kernel starts as soon as the host issues its op"
    pen.text(label_x, top, _Line(heading, HEAD, weight="bold"), ha="left")
    if measured:
        pen.text(x1, top, _note("schematic"), ha="right")
    host_y, dev_y = top - 0.62, top - 1.22
    pen.text(label_x, host_y, "host (Python)", ha="left")
    pen.text(label_x, dev_y, "GPU", ha="left")
    ops = ["conv", "relu", "linear", "loss", "backward", "opt.step"]
    pitch = (x1 - x0 - 0.3) / len(ops)
    w_op, lag = pitch - 0.3, 0.3
    for i, name in enumerate(ops):
        left = x0 + i * pitch
        pen.box(left + w_op / 2, host_y, w_op, row_h, "host", [_code(name, SMALL)])
        pen.box(left + lag + w_op / 2, dev_y, w_op, row_h, "device", [_code(name, SMALL)])
        pen.arrow([(left + w_op / 2, host_y - row_h / 2), (left + lag + w_op / 2, dev_y + row_h / 2)], lw=0.9)
    _time_axis(pen, x0, x1, dev_y - 0.48)
    pen.hline(dev_y - 0.78, MARGIN, W - MARGIN)

    # Lazy lane ---------------------------------------------------------------------------------------------------
    top = dev_y - 1.08
    heading = "Lazy (XLA: TorchTPU's compiled path, torch_xla): record, then compile and run at a sync"
    pen.text(label_x, top, _Line(heading, HEAD, weight="bold"), ha="left")
    steps_y = top - 0.36
    host_y, dev_y = steps_y - 0.5, steps_y - 1.1
    pen.text(label_x, host_y, "host (Python)", ha="left")
    pen.text(label_x, dev_y, "device", ha="left")
    rows = {"rec1": ("host", host_y), "comp": ("compile", dev_y), "ex1": ("device", dev_y)}
    rows |= {"rec2": ("host", host_y), "ex2": ("device", dev_y)}
    over_y, over_end = dev_y - row_h / 2 - 0.47, x0 - 1.0
    for name, (a, b) in spans.items():
        role, y = rows[name]
        if name == "comp" and lane.broken:
            _broken_box(pen, (a, b), y, row_h, labels[name])
            continue
        pen.box((a + b) / 2, y, b - a, row_h, role, labels[name] if fits[name] else [], dashed=role == "host")
        if not fits[name]:  # too narrow for its label: the label goes on a row of its own under the lane
            text = _Line(" ".join(labels[name]), SMALL)
            w = _measure(text)[0]
            x = min(max(a, over_end + 0.2), x1 - w)
            pen.vline(a + 0.03, over_y + 0.1, y - row_h / 2, color=MUTED, lw=0.7)
            pen.text(x, over_y, text, ha="left")
            over_end = x + w
    rec1, ex1, rec2 = spans["rec1"], spans["ex1"], spans["rec2"]
    pen.text((rec1[0] + ex1[1]) / 2, steps_y, _note("first step"))
    pen.text(x1, steps_y, _note("later step, same shapes: cache hit"), ha="right")
    pen.text((ex1[1] + rec2[0]) / 2, (host_y + dev_y) / 2, _Line("⋯", BODY, color=MUTED))
    for x in (rec1[1], rec2[1]):
        pen.vline(x, dev_y - row_h / 2 - 0.08, host_y + row_h / 2 + 0.08, ls=(0, (3, 2)), lw=1.1)
        pen.text(x - 0.04, dev_y - row_h / 2 - 0.2, _Line("sync", SMALL, weight="bold"), ha="right")
    axis_y = dev_y - (0.88 if overflow else 0.6)
    _time_axis(pen, x0, x1, axis_y)
    note = "sync: the step's end, .item(), or printing a value"
    if lane.broken:
        note += "; compile box shortened"
    pen.text(label_x, axis_y - 0.3, _note(note), ha="left")
    if lane.scale is not None:
        _scale_bar(pen, lane.scale, x1, axis_y - 0.3)
    return pen.fig


@dataclass(frozen=True)
class _LazyLane:
    spans: dict[str, tuple[float, float]]  # rec1, comp, ex1, rec2, ex2: left and right, inches
    broken: bool  # the compile box is drawn shortened
    scale: float | None  # inches per millisecond of the boxes drawn to scale; None when schematic


def _lazy_layout(measured: tuple[float, float, float] | None, x0: float, avail: float, gap: float) -> _LazyLane:
    """Where the lazy lane's boxes go: record, compile, run; the gap; record, run.

    Schematic without measurements. Measured: widths proportional to the times (at least 0.1 inch each), filling
    `avail`; a compile over 45% of the lane is drawn 2.3 inches wide instead, with a break mark.
    """
    names = ["rec1", "comp", "ex1", "rec2", "ex2"]
    broken, scale = False, None
    if measured is None:
        widths = dict(zip(names, [1.45, 1.75, 0.85, 1.45, 0.85], strict=True))
    else:
        t, c, e = measured
        ms = dict(zip(names, [t, c, e, t, e], strict=True))
        broken = c / (2 * t + c + 2 * e) > 0.45
        fixed = 2.3 if broken else 0.0
        free = [k for k in names if not (k == "comp" and broken)]
        floor, small = 0.1, set[str]()
        scale = 0.0
        for _ in names:  # boxes below the floor get the floor; the others share what is left, to scale
            scale = (avail - fixed - floor * len(small)) / sum(ms[k] for k in free if k not in small)
            grown = small | {k for k in free if ms[k] * scale < floor}
            if grown == small:
                break
            small = grown
        widths = {k: floor if k in small else ms[k] * scale for k in free}
        if broken:
            widths["comp"] = fixed
    x = x0 + (avail - sum(widths.values())) / 2
    spans = {}
    for k in names:
        spans[k] = (x, x + widths[k])
        x += widths[k] + (gap if k == "ex1" else 0.0)
    return _LazyLane(spans, broken, scale)


def _time_axis(pen: _Pen, x0: float, x1: float, y: float) -> None:
    pen.arrow([(x0, y), (x1, y)], color=MUTED, lw=0.9)
    pen.text(MARGIN, y, _note("time"), ha="left")


def _broken_box(pen: _Pen, span: tuple[float, float], y: float, h: float, lines: list[str]) -> None:
    """A compile box too long to draw to scale: a box with a break mark near its right end."""
    w = span[1] - span[0]
    pen.box((span[0] + span[1]) / 2, y, w, h, "compile")
    cut, slant, gap = span[0] + 0.83 * w, 0.07, 0.07
    band = [
        (cut - slant, y - h / 2 - 0.04),
        (cut + slant, y + h / 2 + 0.04),
        (cut + slant + gap, y + h / 2 + 0.04),
        (cut - slant + gap, y - h / 2 - 0.04),
    ]
    pen.ax.add_patch(Polygon(band, closed=True, facecolor="white", edgecolor="none", zorder=3))
    for dx in (0.0, gap):
        pen.ax.plot(
            [band[0][0] + dx, band[1][0] + dx], [band[0][1], band[1][1]], color=PALETTE["compile"], lw=1.2, zorder=4
        )
    pen.stack((span[0] + cut - slant) / 2, y, lines)


def _scale_bar(pen: _Pen, scale: float, right: float, y: float) -> None:
    """A bar of a round number of milliseconds, 0.4 to 1.2 inches long, right-aligned at `right`."""
    target = 0.8 / scale
    base = 10 ** math.floor(math.log10(target))
    length = min((m * base for m in (1, 2, 5, 10)), key=lambda v: abs(math.log(v * scale / 0.8)))
    w = length * scale
    pen.ax.plot([right - w, right], [y, y], color=INK, lw=1.4)
    for x in (right - w, right):
        pen.ax.plot([x, x], [y - 0.05, y + 0.05], color=INK, lw=1.0)
    pen.text(right - w - 0.08, y, _Line(f"{length:g} ms", SMALL), ha="right")


# --- 2. the dispatcher's fallback chain --------------------------------------------------------------------------


def fallback_chain(op: str = "aten::linalg_cholesky_ex") -> Figure:
    """The dispatcher's path for one call of `op` on the ``tpu`` device, as a flowchart.

    A kernel on the backend lowers the op into the XLA graph; without one, a switched-on CPU fallback copies the
    inputs to the host, runs the CPU kernel and copies the results back (a graph cut); otherwise the call raises
    ``NotImplementedError`` (TorchTPU's default).
    """
    if not isinstance(op, str) or not op.strip() or "\n" in op:
        raise ValueError(f"op must be one op name on one line, e.g. 'aten::linalg_cholesky_ex', got {op!r}")
    op = op.strip()
    W, H = 7.6, 6.9
    pen = _Pen(W, H, f"What the dispatcher does with {op}\non a tpu tensor")
    op_w = pen.measure(_code(op))[0]
    if op_w > W - 2 * MARGIN - 0.4:
        raise ValueError(f"op name too long to draw ({len(op)} characters): {op[:40]}...")
    lx, rx = 1.95, 6.0  # the decision column and the outcome column
    dw, dh, bw = 3.1, 1.3, 2.8

    start_y = H - 1.25
    w_start = max(3.5, op_w + 0.4)
    pen.box(
        lx + max(0.0, (w_start - 3.5) / 2),
        start_y,
        w_start,
        0.7,
        None,
        ["a call on a tpu tensor reaches", _code(op)],
        fill="#F2F2F2",
        edge=MUTED,
    )
    d1 = start_y - 1.35
    pen.arrow([(lx, start_y - 0.35), (lx, d1 + dh / 2)])
    pen.diamond(lx, d1, dw, dh, None, ["does the backend", "have a kernel for it?"])
    pen.box(rx, d1, bw, 1.05, "device", ["lowered into the XLA graph:", "stays on the device,", "one program per step"])
    pen.arrow([(lx + dw / 2, d1), (rx - bw / 2, d1)])
    mid = (lx + dw / 2 + rx - bw / 2) / 2
    pen.text(mid, d1 + 0.17, _Line("yes", weight="bold"))

    d2 = d1 - 1.95
    pen.arrow([(lx, d1 - dh / 2), (lx, d2 + dh / 2)])
    pen.text(lx + 0.12, (d1 - dh / 2 + d2 + dh / 2) / 2, _Line("no", weight="bold"), ha="left")
    pen.diamond(lx, d2, dw, dh, None, ["is CPU fallback", "switched on?"])
    pen.box(
        rx,
        d2,
        bw,
        1.45,
        "fallback",
        [
            "copy inputs to the host,",
            "run the CPU kernel,",
            "copy the results back",
            _note("graph cut: extra programs"),
            _note("and host transfers"),
        ],
    )
    pen.arrow([(lx + dw / 2, d2), (rx - bw / 2, d2)])
    pen.text(mid, d2 + 0.17, _Line("yes", weight="bold"))
    pen.stack(mid, d2 - 0.3, [_note("TorchNeuron's"), _note("default")])

    err_y = d2 - 1.75
    pen.arrow([(lx, d2 - dh / 2), (lx, err_y + 0.35)])
    ny = (d2 - dh / 2 + err_y + 0.35) / 2
    pen.text(lx + 0.12, ny, _Line("no", weight="bold"), ha="left")
    pen.text(lx + 0.45, ny, _note("(TorchTPU's default)"), ha="left")
    pen.box(lx, err_y, 3.0, 0.7, "error", [_code("NotImplementedError", weight="bold"), _note("the step stops here")])
    return pen.fig


# --- 3. schedule views --------------------------------------------------------------------------------------------


def schedule_views(n_steps: int = 6, limit: int = 8) -> Figure:
    """One schedule buffer ``sigmas`` and the view ``sigmas[i]`` each denoising step hands the compiled model.

    Each view points at storage offset ``i`` of the same buffer. TorchTPU guards every input's storage offset,
    so each step compiles a new graph until Dynamo's recompile limit (`limit`); the figure lists the fixes.
    Long loops are drawn with their middle steps elided.
    """
    n = _whole("n_steps", n_steps)
    limit = _whole("limit", limit)
    W, H = 9.0, 5.3
    cells = _elide(n + 1, keep={0, 1, limit - 1, limit, n - 1, n}, max_cells=8)
    title = "Each denoising step hands the compiled model sigmas[i], a view at a\nnew storage offset: on TorchTPU, a new graph per step"
    pen = _Pen(W, H, title)
    left, ell = 1.85, 0.45  # where the columns start; the width of an elided run's column
    n_ell = cells.count(None)
    pitch = min(0.95, (W - MARGIN - left - ell * n_ell) / (len(cells) - n_ell))
    cw = pitch - 0.1
    xs: list[float] = []  # column centres
    x = left
    for i in cells:
        step = ell if i is None else pitch
        xs.append(x + step / 2)
        x += step

    strip_y, view_y = H - 1.5, H - 2.35
    off_y, graph_y = view_y - 0.46, view_y - 0.92
    pen.text(MARGIN, strip_y + 0.12, _code("sigmas", weight="bold"), ha="left")
    pen.text(MARGIN, strip_y - 0.12, _note(f"one buffer, {n + 1} values"), ha="left")
    pen.text(MARGIN, view_y, "view passed in", ha="left")
    pen.text(MARGIN, off_y, "storage offset", ha="left")
    pen.text(MARGIN, graph_y + 0.1, "TorchTPU:", ha="left")
    pen.text(MARGIN, graph_y - 0.12, _note("Dynamo graphs"), ha="left")
    for cx, i in zip(xs, cells, strict=True):
        if i is None:
            for y in (strip_y, view_y, graph_y):
                pen.text(cx, y, _Line("⋯", HEAD, color=MUTED))
            continue
        pen.box(cx, strip_y, pitch, 0.5, "host", [f"σ{_sub(i)}"], rounded=False, lw=1.0)
        pen.text(cx, strip_y + 0.4, _note(str(i)))
        if i == n:
            continue
        pen.box(cx, view_y, cw, 0.42, "view", [_code(f"sigmas[{i}]", SMALL)])
        pen.arrow([(cx, view_y + 0.21), (cx, strip_y - 0.25)], lw=1.0)
        pen.text(cx, off_y, _Line(f"offset {i}", SMALL))
        if i < limit:
            pen.box(cx, graph_y, cw, 0.34, "compile", [_Line(f"graph {i + 1}", SMALL)])
        else:
            pen.box(cx, graph_y, cw, 0.34, "neutral", [_Line("uncompiled", SMALL)])
    if n > limit:  # the limit falls inside the drawn steps
        k = cells.index(limit)
        x = xs[k] - pitch / 2 - (ell / 2 if cells[k - 1] is None else 0.0)
        pen.vline(x, graph_y - 0.3, view_y + 0.3, ls=(0, (2, 2)), color=PALETTE["error"], lw=1.3)
        pen.text(x + 0.06, graph_y - 0.4, _Line(f"recompile limit ({limit})", SMALL, color=INK), ha="left")

    y = graph_y - 0.9
    lines_y = [y, y - 0.3, y - 0.6, y - 0.9]
    pen.rich(
        MARGIN,
        lines_y[0],
        [
            _Line("Why: ", weight="bold"),
            "TorchTPU guards each input's storage offset (",
            _code("x.storage_offset() == i"),
            "), so each step",
        ],
    )
    pen.rich(
        MARGIN,
        lines_y[1],
        [
            "is a new graph until Dynamo's recompile limit (",
            _code(f"recompile_limit = {limit}"),
            "); later steps run uncompiled.",
        ],
    )
    pen.rich(
        MARGIN,
        lines_y[2],
        [
            _Line("Fixes: ", weight="bold"),
            "host floats (",
            _code("sigmas.tolist()"),
            "), ",
            _code("sigmas[i].clone()"),
            " (a fresh tensor at offset 0),",
        ],
    )
    pen.rich(MARGIN, lines_y[3], ["or the whole buffer plus one index tensor (the same offset every step)."])
    return pen.fig


_SUBSCRIPTS = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")


def _sub(i: int) -> str:
    return str(i).translate(_SUBSCRIPTS)


def _elide(count: int, keep: set[int], max_cells: int) -> list[int | None]:
    """Indices 0..count-1 to draw, with None where a run of indices is left out (only when over max_cells)."""
    if count <= max_cells:
        return list(range(count))
    shown = sorted(i for i in keep if 0 <= i < count)
    out: list[int | None] = []
    for i in shown:
        if out and out[-1] is not None and i - out[-1] > 1:
            out.append(None)
        out.append(i)
    return out


# --- 4. KV cache ----------------------------------------------------------------------------------------------------


def kv_cache(max_len: int = 16, prompt_len: int = 5, bucket: int = 8, generated: int = 2) -> Figure:
    """The preallocated static KV cache of one decode step, against a cache grown with ``torch.cat``.

    Static: ``max_len`` slots allocated once. Prefill writes the prompt padded to its ``bucket`` (slots
    ``prompt_len..bucket-1`` hold padding); each decode step writes its token's keys and values in place at
    position ``pos`` (from ``prompt_len`` on, over the padding) and attends to slots ``0..pos`` through a mask, so
    every step has the same shapes. ``generated`` counts the tokens written so far, the current one included.
    Growing: each step concatenates one slot, so the cache's shape, and the program, changes every token.
    """
    max_len = _whole("max_len", max_len)
    prompt_len = _whole("prompt_len", prompt_len)
    bucket = _whole("bucket", bucket)
    generated = _whole("generated", generated)
    if not prompt_len <= bucket <= max_len:
        raise ValueError(f"need 1 <= prompt_len <= bucket <= max_len, got {prompt_len}, {bucket}, {max_len}")
    if bucket + generated > max_len:
        raise ValueError(f"bucket + generated ({bucket} + {generated}) must be at most max_len ({max_len})")

    pos = prompt_len + generated - 1
    kind = ["prompt"] * prompt_len + ["generated"] * generated
    kind += ["padding"] * max(0, bucket - len(kind)) + ["empty"] * (max_len - max(bucket, len(kind)))
    cols = _compress_runs(kind, keep={pos, bucket - 1, bucket}, max_cells=22)

    # Growing cache: one row per length, prefill first; past four rows, the first three, a gap, and the last.
    lengths = [prompt_len + j for j in range(generated + 1)]
    shown: list[int | None] = [*lengths] if len(lengths) <= 4 else [*lengths[:3], None, lengths[-1]]
    H = 5.05 + 0.46 * (len(shown) - 1) - (0.2 if None in shown else 0.0)
    W = 9.0
    pen = _Pen(
        W,
        H,
        "A static KV cache keeps one shape for every decode step;\na growing one makes a new shape, and a new program, per token",
    )
    left = 1.75
    squeeze = 0 if prompt_len + generated > 16 else prompt_len + generated  # elide long rows, all alike

    def grow_kinds(length: int) -> list[str]:
        step = length - prompt_len
        return ["prompt"] * prompt_len + ["generated"] * max(0, step - 1) + ["new"] * (step > 0)

    grow_cols = _compress_runs(grow_kinds(prompt_len + generated), keep=set(), max_cells=squeeze)
    pitch = min(0.5, (W - MARGIN - left) / len(cols), (W - MARGIN - left - 1.9) / len(grow_cols))
    cw = pitch

    top = H - 1.05
    pen.text(
        MARGIN,
        top,
        _Line(f"Static cache: {max_len} slots allocated once, written in place", HEAD, weight="bold"),
        ha="left",
    )
    idx_y, cache_y, mask_y = top - 0.72, top - 1.05, top - 1.6
    pen.text(MARGIN, idx_y, _note("slot"), ha="left")
    pen.text(MARGIN, cache_y, "keys / values", ha="left")
    pen.text(MARGIN, mask_y, "attention mask", ha="left")
    style = {
        "prompt": ("host", None),
        "generated": ("device", None),
        "padding": ("neutral", "////"),
        "empty": (None, None),
    }
    for k, i in enumerate(cols):
        cx = left + k * pitch + pitch / 2
        if i is None:
            pen.text(cx, cache_y, _Line("⋯", HEAD, color=MUTED))
            pen.text(cx, mask_y, _Line("⋯", HEAD, color=MUTED))
            continue
        role, hatch = style[kind[i]]
        if role is None:
            pen.box(cx, cache_y, cw, 0.42, None, rounded=False, lw=0.8, edge=PALETTE["neutral"])
        else:
            pen.box(cx, cache_y, cw, 0.42, role, rounded=False, lw=0.8, hatch=hatch, fill="white" if hatch else None)
        pen.text(cx, idx_y, _Line(str(i), SMALL, color=MUTED))
        seen = i <= pos
        pen.box(
            cx,
            mask_y,
            cw,
            0.36,
            "host" if seen else None,
            [_Line("1" if seen else "0", SMALL, weight="bold" if seen else "normal", color=INK if seen else MUTED)],
            rounded=False,
            lw=0.8,
            fill=_tint("host", 0.35) if seen else "#F0F0F0",
            edge=MUTED,
        )
    # The current position: the slot this decode step writes, and the last one it attends to.
    kpos = cols.index(pos)
    px = left + kpos * pitch + pitch / 2
    pen.ax.add_patch(Rectangle((px - cw / 2, cache_y - 0.21), cw, 0.42, fill=False, edgecolor=INK, lw=2.0, zorder=4))
    pen.arrow([(px, idx_y + 0.4), (px, idx_y + 0.13)], lw=1.1)
    pen.text(px + 0.08, idx_y + 0.33, _Line(f"pos = {pos}: this step writes here", SMALL, weight="bold"), ha="left")
    # The prompt's bucket, under the mask.
    kb = cols.index(bucket - 1)
    bx0, bx1 = left, left + (kb + 1) * pitch
    by = mask_y - 0.33
    pen.ax.plot([bx0, bx0, bx1, bx1], [by + 0.07, by, by, by + 0.07], color=INK, lw=1.0)
    pen.text((bx0 + bx1) / 2, by - 0.17, _Line(f"prompt bucket: {bucket} slots, prefilled once", SMALL))

    legend_y = by - 0.55
    x = MARGIN
    for role, hatch, label in [
        ("host", None, "prompt token"),
        ("device", None, "generated, written in place"),
        ("neutral", "////", "bucket padding (masked)"),
        (None, None, "empty (masked)"),
    ]:
        pen.box(
            x + 0.14,
            legend_y,
            0.28,
            0.24,
            role,
            rounded=False,
            lw=0.8,
            hatch=hatch,
            fill="white" if (hatch or role is None) else None,
            edge=PALETTE["neutral"] if role is None else None,
        )
        x = pen.rich(x + 0.36, legend_y, [_Line(label, SMALL)]) + 0.3
    pen.hline(legend_y - 0.32, MARGIN, W - MARGIN)

    # Growing cache -------------------------------------------------------------------------------------------------
    top = legend_y - 0.62
    pen.text(
        MARGIN, top, _Line("Growing cache (torch.cat): the shape changes every token", HEAD, weight="bold"), ha="left"
    )
    key = _Line("slot appended this step", SMALL)
    kx = W - MARGIN - _measure(key)[0]
    pen.text(kx, top, key, ha="left")
    pen.box(kx - 0.24, top, 0.28, 0.24, "error", rounded=False, lw=0.8)
    y = top - 0.5
    text_x = left + len(grow_cols) * pitch + 0.3
    for length in shown:
        if length is None:
            pen.text(MARGIN + 0.3, y + 0.2, _Line("⋮", HEAD, color=MUTED))
            y -= 0.26
            continue
        step = length - prompt_len
        pen.text(MARGIN, y, "prefill" if step == 0 else f"decode {step}", ha="left")
        kinds = grow_kinds(length)
        for k, i in enumerate(_compress_runs(kinds, keep=set(), max_cells=squeeze)):
            cx = left + k * pitch + pitch / 2
            if i is None:
                pen.text(cx, y, _Line("⋯", HEAD, color=MUTED))
                continue
            role = {"prompt": "host", "generated": "device", "new": "error"}[kinds[i]]
            pen.box(cx, y, cw, 0.34, role, rounded=False, lw=0.8)
        pen.text(text_x, y, _Line(f"length {length}: program {step + 1}", SMALL), ha="left")
        y -= 0.46
    return pen.fig


def _compress_runs(kinds: Sequence[str], keep: set[int], max_cells: int) -> list[int | None]:
    """Slot indices to draw: every slot, or, past max_cells, each run's ends (and `keep`) with None for the rest."""
    if len(kinds) <= max_cells:
        return list(range(len(kinds)))
    chosen = set(keep)
    start = 0
    for i in range(1, len(kinds) + 1):
        if i == len(kinds) or kinds[i] != kinds[start]:
            chosen.update({start, start + 1, i - 1} if i - start > 5 else set(range(start, i)))
            start = i
    return _elide(len(kinds), chosen, max_cells=0)


# --- 5. the migration flowchart -------------------------------------------------------------------------------------


def migration_flowchart() -> Figure:
    """The book's decision path for a migration, as a tall flowchart that stays readable at phone width.

    ``xlaport doctor`` first; then ops that raise, recompiles after warm-up, custom kernels and numerics, each with
    the chapter that fixes it; then whether the move pays within your horizon: go or no-go.
    """
    big, small = 11.0, 10.0  # larger than the other figures': the page shows it narrow on a phone

    def line(text: str) -> _Line:
        return _Line(text, big)

    def chapter(text: str) -> _Line:
        return _chapter(text, big)

    steps: list[tuple[list[LineSpec], list[LineSpec]]] = [
        (
            [line("ops that raise"), line("on the target?")],
            [line("rewrite them with"), line("ops it has"), chapter("Op fallbacks")],
        ),
        (
            [line("recompiles after"), line("warm-up?")],
            [
                line("buckets, static"),
                line("shapes, host floats"),
                chapter("Recompile storms"),
                chapter("SD3 view offsets"),
            ],
        ),
        (
            [line("custom CUDA or"), line("Triton kernels?")],
            [line("rewrite in Pallas"), line("or NKI, or drop them"), chapter("Custom kernels")],
        ),
    ]
    side_lines = [s for _, action in steps for s in action] + [chapter("Audit your own code")]
    sw = max(_measure(s)[0] for s in side_lines) + 0.3  # the side column's boxes
    lx, dw, dh = 1.45, 2.6, 1.05  # the main column and its diamonds
    rx = lx + dw / 2 + 0.5 + sw / 2
    W = rx + sw / 2 + MARGIN
    gap = 0.42
    pen = _Pen(W, 13.0, "Porting to TPU or Trainium:\nwhat to check, in order", title_size=13.0)

    y = pen.height - 1.0
    pen.text(MARGIN, y, _note("In bold blue: the chapter for each step.", small), ha="left")
    y -= 0.7
    doctor: Lines = [(line("run "), _code("xlaport doctor", big)), line("on your code")]
    pen.box(lx, y, dw, 0.66, None, doctor, fill="#F2F2F2", edge=MUTED)
    pen.box(rx, y, sw, 0.52, None, [chapter("Audit your own code")], fill="white", edge="#BBBBBB", dashed=True)
    pen.link((lx + dw / 2, y), (rx - sw / 2, y))
    prev_bottom = y - 0.33

    for question, action in steps:
        cy = prev_bottom - gap - dh / 2
        pen.arrow([(lx, prev_bottom), (lx, cy + dh / 2)])
        pen.diamond(lx, cy, dw, dh, None, question)
        bh = pen.block_size(action)[1] + 0.2
        pen.box(rx, cy, sw, bh, "view", action)
        pen.arrow([(lx + dw / 2, cy), (rx - sw / 2, cy)])
        pen.text((lx + dw / 2 + rx - sw / 2) / 2, cy + 0.15, _Line("yes", small, weight="bold"))
        join = cy - dh / 2 - gap / 2 - 0.05  # back into the main line, below the diamond
        pen.arrow([(rx, cy - bh / 2), (rx, join), (lx + 0.02, join)], color=MUTED, lw=0.9)
        pen.text(lx - 0.1, cy - dh / 2 - 0.15, _Line("no", small, weight="bold"), ha="right")
        prev_bottom = cy - dh / 2

    numerics = [line("check numerics under"), line("autocast + compile"), chapter("Attention numerics")]
    bh = pen.block_size(numerics)[1] + 0.2
    cy = prev_bottom - gap - bh / 2
    pen.arrow([(lx, prev_bottom), (lx, cy + bh / 2)])
    pen.box(lx, cy, dw, bh, "view", numerics)
    prev_bottom = cy - bh / 2

    pw, ph = 2.85, 1.85
    cy = prev_bottom - gap - ph / 2
    pen.arrow([(lx, prev_bottom), (lx, cy + ph / 2)])
    question = [line("does the move pay"), line("within your horizon,"), line("migration cost"), line("included?")]
    pen.diamond(lx, cy, pw, ph, None, question)
    px = lx + pw / 2 + 0.25
    pw2 = rx + sw / 2 - px
    pen.box(px + pw2 / 2, cy, pw2, 0.52, None, [chapter("Pricing math")], fill="white", edge="#BBBBBB", dashed=True)
    pen.link((lx + pw / 2, cy), (px, cy))

    go_y = cy - ph / 2 - gap - 0.32
    pen.arrow([(lx, cy - ph / 2), (lx, go_y + 0.32)])
    pen.text(lx + 0.1, cy - ph / 2 - 0.18, _Line("yes", small, weight="bold"), ha="left")
    pen.box(lx, go_y, 1.6, 0.64, "device", [_Line("go", 12, weight="bold")], lw=1.8)
    pen.box(rx, go_y, 1.6, 0.64, "error", [_Line("no-go", 12, weight="bold")], lw=1.8)
    pen.arrow([(lx + pw / 4, cy - ph / 4), (rx, cy - ph / 4), (rx, go_y + 0.32)])
    pen.text(rx + 0.1, (cy - ph / 4 + go_y + 0.32) / 2, _Line("no", small, weight="bold"), ha="left")
    pen.fit_height(go_y - 0.32)
    return pen.fig


# --- saving ---------------------------------------------------------------------------------------------------------


def save(fig: Figure, path: str | Path) -> Path:
    """Write `fig` as SVG to `path` (parents created), reproducibly: no date, fixed ids; then close the figure."""
    if not isinstance(fig, Figure):
        raise ValueError(f"fig must be a matplotlib Figure, got {type(fig).__name__}")
    out = Path(path)
    if out.suffix.lower() != ".svg":
        raise ValueError(f"save writes SVG: give a path ending in .svg, got {out.name!r}")
    out.parent.mkdir(parents=True, exist_ok=True)
    with mpl.rc_context({"svg.hashsalt": "xlaport", "svg.fonttype": "path"}):
        fig.savefig(out, format="svg", metadata={"Date": None}, facecolor="white")
    import matplotlib.pyplot as plt

    plt.close(fig)
    return out
