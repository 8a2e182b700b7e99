"""The book's plots: one size and type scale that stays legible on a phone and on a desktop, and a record in each
plot's PNG of its smallest text, so that the site's browser test can check what a reader sees.

A chapter plot is shown at most as wide as the reading column (``max-width: 100%`` in ``_static/xlaport.css``) and
never scaled up. On a 390 px phone that column is about :data:`PHONE_COLUMN_PX` CSS px wide, so a figure ``w``
inches wide with text of ``s`` points shows that text at ``s * PHONE_COLUMN_PX / (72 * w)`` CSS px, whatever its dpi.
With figures at most :data:`WIDTH_IN` inches wide and no text under :data:`MIN_FONT_PT` points, the smallest text
on a phone is ``11 * 358 / (72 * 5.5)``, about 9.9 px, above :data:`LEGIBLE_PX`; on a desktop (a 757 px column) the
figure shows at its own size and the same text is 15 px.

* :data:`RC`: the matplotlib settings behind that (every font size, the default figure size, the dpi);
* :func:`smallest_text_pt`: the smallest visible text of a figure, tick labels included;
* :func:`png`: the figure as PNG, with its smallest text in CSS px at its own size as the ``tEXt`` record
  :data:`FONT_KEY`; :func:`recorded_font_px` reads it back;
* :func:`use_book_style`: applies :data:`RC` and, inside IPython, makes every figure a cell shows a :func:`png`.
  :mod:`xlaport.notebook` calls it when imported in a kernel, so a chapter needs no set-up line.
"""

from __future__ import annotations

import base64
import io
import struct
import zlib
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = [
    "plain_log_ticks",
    "DPI",
    "FONT_KEY",
    "ALT_KEY",
    "LEGIBLE_PX",
    "MIN_FONT_PT",
    "PHONE_COLUMN_PX",
    "RC",
    "WIDTH_IN",
    "png",
    "recorded_font_px",
    "recorded_alt",
    "recorded_collisions",
    "text_collisions",
    "COLLISIONS_KEY",
    "describe",
    "smallest_text_pt",
    "use_book_style",
]

WIDTH_IN = 5.5  # the widest a chapter plot is drawn, in inches
MIN_FONT_PT = 11.0  # the smallest text a chapter plot carries, in points
LEGIBLE_PX = 9.0  # the smallest text a reader should meet, in CSS px, on a phone or a desktop
PHONE_COLUMN_PX = 358  # the reading column of a 390 x 844 phone, in CSS px
DPI = 100  # one inch of figure is 100 image pixels; at its own size one CSS px per image pixel
FONT_KEY = "xlaport-min-font-px"  # the PNG tEXt keyword holding the smallest text, in px at the image's own size
COLLISIONS_KEY = "xlaport-text-collisions"  # the PNG tEXt keyword: how many pairs of texts overlap, and the first
ALT_KEY = "xlaport-alt-b64"  # the PNG tEXt keyword holding what the plot shows (UTF-8, base64), for its alt text

RC: dict[str, Any] = {
    "figure.figsize": (WIDTH_IN, 3.4),
    "figure.dpi": DPI,
    "savefig.dpi": DPI,
    "font.size": MIN_FONT_PT,
    "axes.titlesize": MIN_FONT_PT + 1,
    "axes.labelsize": MIN_FONT_PT,
    "xtick.labelsize": MIN_FONT_PT,
    "ytick.labelsize": MIN_FONT_PT,
    "legend.fontsize": MIN_FONT_PT,
    "legend.title_fontsize": MIN_FONT_PT,
    "figure.titlesize": MIN_FONT_PT + 1,
    "figure.labelsize": MIN_FONT_PT,
}


def plain_log_ticks(axis: Any) -> None:
    """Label a log axis at 1, 2 and 5 per decade in plain numbers (20, 50, 100), minor ticks unlabelled: matplotlib's
    own labels for a range under a decade ("3×10²", "4×10²") run into each other.

    Where fewer than two of those values fall in view (a series between 810 and 950 ms), the axis takes at most
    four round values instead (850, 900, 950): matplotlib's own fallback there labels every 20 and, on a short
    axis, those labels overlap. Where 1, 2 and 5 would crowd the axis (many decades on a short one), it labels
    each power of ten, or every second or third one."""
    from matplotlib.ticker import FuncFormatter, NullFormatter

    axis.set_major_locator(_one_two_five_locator())
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    axis.set_minor_formatter(NullFormatter())


def _log_ticks(lo: float, hi: float, room: int) -> list[float]:
    """Round values for a log axis over [lo, hi] (both > 0) with at most ``room`` labels in view: 1, 2 and 5 per
    decade where they fit, else each power of ten, else every second (third, ...) one; where fewer than two of
    1, 2 and 5 fall in view, at most four round values (:func:`_sparse_ticks`)."""
    import math

    first, last = math.floor(math.log10(lo)) - 1, math.ceil(math.log10(hi)) + 1
    one_two_five = [m * 10.0**d for d in range(first, last + 1) for m in (1, 2, 5)]
    shown = sum(lo <= t <= hi for t in one_two_five)
    if shown < 2:
        return _sparse_ticks(lo, hi)
    if shown <= room:
        return one_two_five
    stride = 1
    while sum(lo <= 10.0**d <= hi for d in range(first, last + 1, stride)) > max(room, 2):
        stride += 1
    return [10.0**d for d in range(first - first % stride, last + stride, stride)]


def _sparse_ticks(lo: float, hi: float) -> list[float]:
    """At most four round values over [lo, hi], for a log axis that spans too little for 1, 2 and 5 per decade."""
    from matplotlib.ticker import MaxNLocator

    return [float(v) for v in MaxNLocator(nbins=3, steps=[1, 2, 2.5, 5, 10]).tick_values(lo, hi) if v > 0]


def _one_two_five_locator() -> Any:
    from matplotlib.ticker import Locator

    class OneTwoFive(Locator):
        def __call__(self) -> Any:
            if self.axis is None:
                return []
            lo, hi = self.axis.get_view_interval()
            return self.tick_values(lo, hi)

        def tick_values(self, vmin: float, vmax: float) -> Any:
            lo, hi = sorted((float(vmin), float(vmax)))
            if hi <= 0:
                return []
            return _log_ticks(lo if lo > 0 else hi / 1e3, hi, self._room())

        def _room(self) -> int:
            """How many labels the axis holds with a label's height (or a short label's width) of space between."""
            import matplotlib as mpl
            from matplotlib.font_manager import FontProperties

            axis = getattr(self, "axis", None)
            if axis is None or axis.axes is None:
                return 9
            box = axis.axes.bbox
            length = box.height if axis is axis.axes.yaxis else box.width
            size = mpl.rcParams["ytick.labelsize" if axis is axis.axes.yaxis else "xtick.labelsize"]
            label_px = FontProperties(size=size).get_size_in_points()
            label_px *= axis.axes.figure.dpi / 72
            return max(2, int(length // (label_px * (1.6 if axis is axis.axes.yaxis else 3.5))))

    return OneTwoFive()


def smallest_text_pt(fig: Figure) -> float:
    """The smallest font size, in points, of any text the figure shows (drawn once, so that tick labels exist)."""
    from matplotlib.figure import Figure
    from matplotlib.text import Text

    if not isinstance(fig, Figure):
        raise ValueError(f"fig must be a matplotlib Figure, got {type(fig).__name__}")
    fig.draw_without_rendering()
    sizes = [
        float(t.get_fontsize())
        for t in fig.findobj(Text)
        if t.get_visible() and t.get_text().strip() and _inside(t, fig)
    ]
    if not sizes:
        raise ValueError("the figure shows no text: give it a title or axis labels")
    return min(sizes)


def _inside(text: Any, fig: Figure) -> bool:
    """Whether a text is drawn inside the figure (tick labels beyond the axes' limits are not drawn)."""
    axes = text.axes
    if axes is not None and text in (*axes.get_xticklabels(), *axes.get_yticklabels()):
        axis = axes.xaxis if text in axes.get_xticklabels() else axes.yaxis
        return _in_view(axis, text.get_position()[0 if axis is axes.xaxis else 1])
    return True


def _in_view(axis: Any, value: float) -> bool:
    """Whether ``value`` lies within the axis' view, compared in its scale (log axes in decades)."""
    import numpy as np

    scale = axis.get_transform()
    lo, hi = sorted(float(v) for v in scale.transform(np.asarray(axis.get_view_interval(), dtype=float)))
    with np.errstate(all="ignore"):
        at = float(scale.transform(np.asarray([value], dtype=float))[0])
    if not np.isfinite(at):
        return False
    span = 1e-9 * abs(hi - lo)
    return bool(lo - span <= at <= hi + span)


def describe(fig: Figure) -> str:
    """What ``fig`` shows, in words, for its alt text: its title, and per plot its title, axes and series (from the
    figure's own titles, labels and legends). Empty when the figure names nothing."""

    def clean(text: str) -> str:
        return " ".join(text.split())

    parts = []
    sup = getattr(fig, "_suptitle", None)
    if sup is not None and sup.get_text().strip():
        parts.append(clean(sup.get_text()))
    for ax in fig.axes:
        if not ax.get_visible():
            continue
        bits = []
        title = " ".join(clean(ax.get_title(loc)) for loc in ("left", "center", "right") if ax.get_title(loc).strip())
        if title:
            bits.append(title)
        axes = [f"{name}: {clean(label)}" for name, label in (("x", ax.get_xlabel()), ("y", ax.get_ylabel())) if label]
        if axes:
            bits.append("; ".join(axes))
        legend = ax.get_legend()
        if legend is not None:
            names = [clean(t.get_text()) for t in legend.get_texts() if t.get_text().strip()]
            if names:
                bits.append("series: " + ", ".join(names[:8]) + (" and more" if len(names) > 8 else ""))
        if bits:
            parts.append(". ".join(bits))
    return ". ".join(parts)


def _tick_labels(fig: Figure) -> tuple[set[int], set[int]]:
    """The ids of every tick label the figure's axes hold, and of those drawn: visible, with the tick inside the view."""
    every, drawn = set(), set()
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            for tick in (*axis.get_major_ticks(), *axis.get_minor_ticks()):
                inside = _in_view(axis, tick.get_loc())
                for label in (tick.label1, tick.label2):
                    every.add(id(label))
                    if inside and label.get_visible():
                        drawn.add(id(label))
    return every, drawn


def text_collisions(fig: Figure) -> list[tuple[str, str]]:
    """Pairs of texts the figure draws on top of each other (a legend over an axis label, tick labels that run into
    each other): each pair's two strings. Boxes that merely touch (by a pixel) do not count."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.text import Text

    canvas = fig.canvas if isinstance(fig.canvas, FigureCanvasAgg) else FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    every_tick, drawn = _tick_labels(fig)
    boxes = []
    for t in fig.findobj(Text):
        if id(t) in every_tick and id(t) not in drawn:
            continue  # a tick label matplotlib keeps but does not draw (its tick lies outside the axis' view)
        if t.get_visible() and t.get_text().strip() and _inside(t, fig):
            box = t.get_window_extent(renderer)
            if box.width > 0 and box.height > 0:
                boxes.append((" ".join(t.get_text().split()), box))
    out = []
    for i, (first, one) in enumerate(boxes):
        for second, other in boxes[i + 1 :]:
            w = min(one.x1, other.x1) - max(one.x0, other.x0)
            h = min(one.y1, other.y1) - max(one.y0, other.y0)
            if w > 1.5 and h > 1.5:
                out.append((first, second))
    return out


def png(fig: Figure) -> bytes:
    """`fig` as a PNG at its own dpi, cropped to what it draws, with its smallest text (px) and what it shows
    (:func:`describe`) as tEXt records."""
    px = smallest_text_pt(fig) * fig.dpi / 72
    meta = {FONT_KEY: f"{px:.2f}"}
    hits = text_collisions(fig)
    first = f" {hits[0][0]!r} / {hits[0][1]!r}" if hits else ""
    meta[COLLISIONS_KEY] = base64.b64encode(f"{len(hits)}{first}".encode()).decode("ascii")
    alt = describe(fig)
    if alt:
        meta[ALT_KEY] = base64.b64encode(alt.encode("utf-8")).decode("ascii")
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=fig.dpi, bbox_inches="tight", facecolor=fig.get_facecolor(), metadata=meta)
    return buf.getvalue()


def recorded_collisions(data: bytes) -> str | None:
    """How many pairs of texts a :func:`png` found overlapping, then the first pair (``"0"`` when none), or None."""
    got = _text_record(data, COLLISIONS_KEY)
    return None if got is None else base64.b64decode(got).decode("utf-8")


def recorded_alt(data: bytes) -> str | None:
    """What a :func:`png` recorded that its plot shows, or None for any other PNG."""
    got = _text_record(data, ALT_KEY)
    return None if got is None else base64.b64decode(got).decode("utf-8")


def recorded_font_px(data: bytes) -> float | None:
    """The smallest text (px at the image's own size) a :func:`png` recorded, or None for any other PNG."""
    got = _text_record(data, FONT_KEY)
    return None if got is None else float(got)


def _text_record(data: bytes, wanted: str) -> str | None:
    if not isinstance(data, bytes | bytearray) or data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("data must be the bytes of a PNG file")
    pos = 8
    while pos + 8 <= len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        if kind == b"tEXt":
            key, _, value = body.partition(b"\0")
        elif kind == b"zTXt":
            key, _, rest = body.partition(b"\0")
            value = zlib.decompress(rest[1:])
        else:
            key, value = b"", b""
        if key.decode("latin-1") == wanted:
            return value.decode("latin-1")
        if kind == b"IEND":
            break
        pos += 12 + length
    return None


def _png_for_ipython(fig: Figure) -> str | None:
    if not fig.axes and not fig.lines:  # an empty figure shows nothing, as matplotlib-inline does
        return None
    return base64.b64encode(png(fig)).decode("ascii")


def use_book_style() -> None:
    """Apply :data:`RC`; inside IPython, show every figure as a :func:`png` (which records its smallest text)."""
    import matplotlib as mpl

    mpl.rcParams.update(cast(Any, RC))
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython comes with Jupyter
        return
    shell = get_ipython()
    if shell is None:
        return
    if "inline" in str(mpl.rcParams._get("backend")):
        # matplotlib-inline registers its own PNG printer the first time it is imported (once per kernel): let it
        # do so now, so that the printer below replaces it rather than the other way round.
        import matplotlib_inline.backend_inline  # noqa: F401

        mpl.rcParams.update(cast(Any, RC))
    from matplotlib.figure import Figure

    shell.display_formatter.formatters["image/png"].for_type(Figure, _png_for_ipython)
