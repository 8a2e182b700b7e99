"""One look for every diagram, the figure every diagram is drawn on, argument checks and the reproducible SVG."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

import matplotlib as mpl
from matplotlib.figure import Figure

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes
    from schemdraw import Drawing

# Okabe-Ito colours (safe for the common colour-vision deficiencies), each used for one meaning across the figures.
PALETTE: dict[str, str] = {
    "host": "#0072B2",  # blue: the host, Python, data the program reads
    "device": "#009E73",  # bluish green: runs on the device, generated tokens, go
    "compile": "#E69F00",  # orange: a compile, a new program
    "fallback": "#CC79A7",  # reddish purple: a host round trip
    "error": "#D55E00",  # vermillion: an error, a recompile per value, no-go
    "view": "#56B4E9",  # sky blue: views; the flowchart's actions
    "neutral": "#8C8C8C",  # grey: masked, empty, uncompiled
}
INK, MUTED, LINK = "#1A1A1A", "#4D4D4D", "#00507F"  # LINK: chapter names, dark blue on white and on every tint
FONT = "DejaVu Sans"  # shipped with matplotlib: the same metrics and the same SVG everywhere
SIZE, TITLE = 11.0, 12.0  # points at the figure's native width (at most 7 in: a phone shows 620 px of it)


def tint(role: str, amount: float = 0.25) -> str:
    """A light fill of a role's colour, for boxes whose text stays dark."""
    r, g, b = mpl.colors.to_rgb(PALETTE[role])
    return mpl.colors.to_hex((1 - amount + amount * r, 1 - amount + amount * g, 1 - amount + amount * b))


def figure(width: float, height: float, title: str, *, constrained: bool = False) -> Figure:
    """A white figure of `width` × `height` inches with a bold one-line title, not left registered with pyplot.

    Created through pyplot so that a notebook's inline backend renders it as the cell's result, then closed at once
    so that pyplot does not show it a second time.
    """
    import matplotlib.pyplot as plt

    fig = plt.figure(figsize=(width, height), facecolor="white", layout="constrained" if constrained else None)
    plt.close(fig)
    fig.suptitle(title, x=0.02, ha="left", fontsize=TITLE, fontweight="bold", color=INK, fontfamily=FONT)
    return fig


def flow_figure(drawing: Drawing, title: str, *, inches_per_unit: float = 0.5, margin: float = 0.15) -> Figure:
    """A schemdraw drawing on a matplotlib figure sized to it (one drawing unit = `inches_per_unit`), title above."""
    bbox = drawing.get_bbox()
    w = (bbox.xmax - bbox.xmin) * inches_per_unit + 2 * margin
    h = (bbox.ymax - bbox.ymin) * inches_per_unit + 2 * margin
    band = 0.2 + 0.25 * (title.count("\n") + 1)  # the title's height
    fig = figure(w, h + band, title)
    fig.texts[-1].set_y(1 - 0.1 / (h + band))
    fig.texts[-1].set_verticalalignment("top")
    ax: Axes = fig.add_axes((0, 0, 1, h / (h + band)))
    pad = margin / inches_per_unit
    ax.set_xlim(bbox.xmin - pad, bbox.xmax + pad)
    ax.set_ylim(bbox.ymin - pad, bbox.ymax + pad)
    ax.set_axis_off()
    drawing.draw(canvas=ax, show=False)
    return fig


# --- argument checks: one-line ValueErrors --------------------------------------------------------------------


def whole(name: str, value: object, low: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be a whole number, got {value!r}")
    if value < low:
        raise ValueError(f"{name} must be at least {low}, got {value}")
    return value


def millis(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{name} must be a number of milliseconds, got {value!r}")
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a positive, finite number of milliseconds, got {value!r}")
    return float(value)


def ms(value: float) -> str:
    if value >= 100:
        return f"{value:,.0f} ms"
    if value >= 1:
        return f"{value:.1f} ms"
    return f"{value:.2f} ms"


# --- saving ---------------------------------------------------------------------------------------------------


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
