"""Grouped horizontal bars with each bar's value written after it and the legend above the plot, clear of every bar
and label (a legend inside the axes covers the longest bar of whichever group it lands on)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from matplotlib.figure import Figure

from ..plots import MIN_FONT_PT, RC, WIDTH_IN


def grouped_bars(
    values: Mapping[str, Mapping[str, float]],
    title: str,
    xlabel: str,
    colors: Mapping[str, str],
) -> Figure:
    """One group of bars per key of `values` (a bar per series in `colors`, in its order), the value after each bar.

    Drawn at the book's plot width with its type scale (:mod:`xlaport.plots`); the legend sits in a row between the
    title and the axes. Returned, not left registered with pyplot.
    """
    import matplotlib as mpl
    import matplotlib.pyplot as plt

    if not values or not all(isinstance(v, Mapping) for v in values.values()):
        raise ValueError("values must map each group's name to {series: value}")
    series = list(colors)
    unknown = {s for v in values.values() for s in v} - set(series)
    if unknown:
        raise ValueError(f"values name series without a colour: {sorted(unknown)}")
    n = len(series)
    height = 0.8 / n
    with mpl.rc_context(cast(Any, RC)):
        fig = plt.figure(figsize=(WIDTH_IN, 1.4 + 0.25 * n * len(values)), layout="constrained", facecolor="white")
        plt.close(fig)
        ax = fig.subplots()
        top = max(float(x) for v in values.values() for x in v.values())
        for j, name in enumerate(series):
            ys = [i + (j - (n - 1) / 2) * height for i, v in enumerate(values.values()) if name in v]
            xs = [float(v[name]) for v in values.values() if name in v]
            bars = ax.barh(ys, xs, height=height * 0.92, color=colors[name], label=name)
            ax.bar_label(bars, labels=[f"{x:g}" for x in xs], padding=3, fontsize=MIN_FONT_PT)
        ax.set_yticks(range(len(values)), list(values))
        ax.invert_yaxis()
        ax.set_xlim(0, top * 1.15)  # room for the longest bar's label
        ax.set_xlabel(xlabel)
        ax.spines[["top", "right"]].set_visible(False)
        fig.suptitle(title, x=0.02, ha="left", fontweight="bold")
        ax.legend(loc="lower left", bbox_to_anchor=(0, 1.02), ncols=n, frameon=False, borderaxespad=0)
    return fig
