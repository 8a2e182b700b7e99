"""Tensors as rows of cells, a data figure each (matplotlib's ``broken_barh`` and ``annotate``).

* :func:`schedule_views`: ``sigmas[i]`` views at a new storage offset every denoising step;
* :func:`kv_cache`: the preallocated static KV cache and its mask, against a cache grown with ``torch.cat``.
"""

from __future__ import annotations

import itertools

from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from .style import INK, MUTED, PALETTE, SIZE, figure, tint, whole

CELL = 10.0  # text in a cell: 9 pt or more on a phone at 7 in wide
_SUBSCRIPTS = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")


def _rows(ax: Axes, labels: list[str]) -> None:
    """Row labels top to bottom as the y axis; no frame."""
    ax.set_yticks(range(len(labels)), labels[::-1], fontsize=SIZE)
    ax.set_ylim(-0.6, len(labels) - 0.4)
    ax.tick_params(axis="y", length=0)
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)


def _cell(ax: Axes, x: float, y: float, role: str | None, text: str = "", **kw: object) -> None:
    face = tint(role) if role else "white"
    edge = PALETTE[role] if role else PALETTE["neutral"]
    ax.broken_barh([(x - 0.45, 0.9)], (y - 0.3, 0.6), facecolors=face, edgecolors=edge, linewidth=1.0, **kw)  # type: ignore[arg-type]
    if text:
        ax.text(x, y, text, ha="center", va="center", fontsize=CELL, color=INK)


def _columns(count: int, keep: set[int], most: int) -> list[int | None]:
    """Indices 0..count-1 to draw, with None where a run is left out (only past `most` columns)."""
    if count <= most:
        return list(range(count))
    out: list[int | None] = []
    for i in sorted(k for k in keep if 0 <= k < count):
        if out and out[-1] is not None and i - out[-1] > 1:
            out.append(None)
        out.append(i)
    return out


def schedule_views(n_steps: int = 6, limit: int = 8) -> Figure:
    """One schedule buffer ``sigmas`` and the view ``sigmas[i]`` each denoising step hands the compiled model.

    Each view points at storage offset ``i`` of the same buffer. TorchTPU guards every input's storage offset,
    so each step compiles a new graph until Dynamo's recompile limit (`limit`); later steps get no graph. Long
    loops are drawn with their middle steps left out.
    """
    n = whole("n_steps", n_steps)
    limit = whole("limit", limit)
    cols = _columns(n + 1, {0, 1, limit - 1, limit, n - 1, n}, most=7)
    fig = figure(
        7.0, 3.6, "Each step's sigmas[i] is a view at a new storage offset:\non TorchTPU, a new graph per step"
    )
    ax = fig.subplots()
    fig.set_layout_engine("constrained")
    _rows(ax, [f"sigmas: {n + 1} values", "sigmas[i]: offset", "TorchTPU graph"])
    xs = [0.0]  # column centres: a left-out run takes half a column
    for a, b in itertools.pairwise(cols):
        xs.append(xs[-1] + (0.75 if a is None or b is None else 1.0))
    for x, i in zip(xs, cols):
        if i is None:
            for y in (0, 1, 2):
                ax.text(x, y, "⋯", ha="center", va="center", fontsize=SIZE + 2, color=MUTED)
            continue
        _cell(ax, x, 2, "host", f"σ{str(i).translate(_SUBSCRIPTS)}")
        if i == n:  # the last value is read by no step
            continue
        _cell(ax, x, 1, "view", f"offset {i}")
        ax.annotate("", xy=(x, 1.7), xytext=(x, 1.3), arrowprops={"arrowstyle": "-|>", "color": INK, "lw": 1.0})
        _cell(ax, x, 0, "compile" if i < limit else "neutral", f"graph {i + 1}" if i < limit else "no graph")
    if n > limit:  # the recompile limit falls inside the loop
        k = cols.index(limit)
        edge = xs[k] - (0.5 if cols[k - 1] is not None else 0.375)
        ax.axvline(edge, ymax=0.45, color=PALETTE["error"], linestyle="--", linewidth=1.4)
        ax.text(edge + 0.08, -0.5, f"recompile limit ({limit})", fontsize=SIZE, color=INK, va="center")
    ax.set_xlim(-0.55, xs[-1] + 0.55)
    ax.set_xticks([])
    ax.set_xlabel("fix: sigmas.tolist() (host floats) or sigmas[i].clone() (offset 0)", fontsize=SIZE, loc="left")
    return fig


def kv_cache(max_len: int = 16, prompt_len: int = 5, bucket: int = 8, generated: int = 2) -> Figure:
    """The preallocated static KV cache of one decode step, against a cache grown with ``torch.cat``.

    Static: ``max_len`` slots allocated once. Prefill writes the prompt padded to its ``bucket`` (slots
    ``prompt_len..bucket-1`` hold padding); each decode step writes its token's keys and values in place at
    position ``pos`` (from ``prompt_len`` on, over the padding) and attends to slots ``0..pos`` through a mask, so
    every step has the same shapes. ``generated`` counts the tokens written so far, the current one included.
    Growing: each step concatenates one slot, so the cache's shape, and the program, changes every token.
    """
    max_len = whole("max_len", max_len)
    prompt_len = whole("prompt_len", prompt_len)
    bucket = whole("bucket", bucket)
    generated = whole("generated", generated)
    if not prompt_len <= bucket <= max_len:
        raise ValueError(f"need 1 <= prompt_len <= bucket <= max_len, got {prompt_len}, {bucket}, {max_len}")
    if bucket + generated > max_len:
        raise ValueError(f"bucket + generated ({bucket} + {generated}) must be at most max_len ({max_len})")
    pos = prompt_len + generated - 1
    lengths = [prompt_len + j for j in range(generated + 1)]
    shown: list[int | None] = [*lengths] if len(lengths) <= 4 else [*lengths[:3], None, lengths[-1]]

    fig = figure(
        7.0, 4.6 + 0.3 * len(shown), "A static KV cache keeps one shape for every decode step;\na growing one makes a new program per token"
    )  # fmt: skip
    static, growing = fig.subplots(2, 1, height_ratios=(2.2, 0.6 + 0.5 * len(shown)), sharex=True)
    fig.set_layout_engine("constrained")

    _rows(static, ["keys / values", "attention mask"])
    static.set_title(
        f"Static cache: {max_len} slots allocated once, written in place", loc="left", fontsize=SIZE, fontweight="bold"
    )
    runs: list[tuple[int, int, str | None, str | None]] = [
        (0, prompt_len, "host", None),
        (prompt_len, generated, "device", None),
    ]
    runs += [
        (pos + 1, max(0, bucket - pos - 1), "neutral", "////"),
        (max(bucket, pos + 1), max_len - max(bucket, pos + 1), None, None),
    ]
    for start, width, role, hatch in runs:
        if width > 0:
            static.broken_barh(
                [(start, width)], (0.7, 0.6), facecolors=tint(role) if role and not hatch else "white",
                edgecolors=PALETTE[role or "neutral"], linewidth=1.0, hatch=hatch,
            )  # fmt: skip
    static.broken_barh([(0, pos + 1)], (-0.3, 0.6), facecolors=tint("host", 0.45), edgecolors=MUTED, linewidth=1.0)
    static.broken_barh(
        [(pos + 1, max_len - pos - 1)], (-0.3, 0.6), facecolors="#F0F0F0", edgecolors=MUTED, linewidth=1.0
    )
    static.text((pos + 1) / 2, 0, "1: attended", ha="center", va="center", fontsize=SIZE)
    if max_len - pos - 1 >= 0.25 * max_len:
        static.text((pos + 1 + max_len) / 2, 0, "0: masked", ha="center", va="center", fontsize=SIZE, color=MUTED)
    static.add_patch(_outline(pos, 0.7, 0.6))
    static.annotate(
        f"pos = {pos}: this step writes here", xy=(pos + 0.5, 1.3), xytext=(pos + 0.5, 1.75), fontsize=SIZE,
        fontweight="bold", ha="left" if pos < 0.6 * max_len else "right",
        arrowprops={"arrowstyle": "-|>", "color": INK, "lw": 1.1},
    )  # fmt: skip
    static.annotate(
        f"  prompt bucket: {bucket} slots", xy=(0, -0.45), xytext=(bucket, -0.45), fontsize=SIZE, va="center",
        arrowprops={"arrowstyle": "|-|", "color": INK, "lw": 1.0, "shrinkA": 0, "shrinkB": 0, "mutation_scale": 4},
    )  # fmt: skip
    static.set_ylim(-0.75, 2.1)
    fig.legend(
        handles=[
            Patch(facecolor=tint("host"), edgecolor=PALETTE["host"], label="prompt"),
            Patch(facecolor=tint("device"), edgecolor=PALETTE["device"], label="generated"),
            Patch(facecolor=tint("error"), edgecolor=PALETTE["error"], label="appended this step"),
            Patch(facecolor="white", edgecolor=PALETTE["neutral"], hatch="////", label="bucket padding (masked)"),
            Patch(facecolor="white", edgecolor=PALETTE["neutral"], label="empty (masked)"),
        ],
        loc="outside lower center", ncols=3, fontsize=SIZE, frameon=False,
    )  # fmt: skip

    labels = ["prefill" if n == prompt_len else "⋮" if n is None else f"decode {n - prompt_len}" for n in shown]
    _rows(growing, labels)
    growing.set_title(
        "Growing cache (torch.cat): the shape changes every token", loc="left", fontsize=SIZE, fontweight="bold"
    )
    for row, n in enumerate(shown):
        y = len(shown) - 1 - row
        if n is None:
            continue
        step = n - prompt_len
        parts = [(0, prompt_len, "host"), (prompt_len, max(0, step - 1), "device"), (n - 1, 1 if step else 0, "error")]
        for start, width, role in parts:
            if width:
                growing.broken_barh(
                    [(start, width)], (y - 0.3, 0.6), facecolors=tint(role), edgecolors=PALETTE[role], linewidth=1.0
                )
        growing.text(n + 0.3, y, f"length {n}: program {step + 1}", va="center", fontsize=SIZE)
    growing.set_xlim(0, max_len)
    growing.set_xlabel("slot", fontsize=SIZE)
    growing.tick_params(axis="x", labelsize=SIZE)
    growing.xaxis.get_major_locator().set_params(integer=True)
    return fig


def _outline(x: float, y: float, h: float) -> Patch:
    from matplotlib.patches import Rectangle

    return Rectangle((x, y), 1, h, fill=False, edgecolor=INK, linewidth=2.0, zorder=4)
