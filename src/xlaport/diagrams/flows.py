"""The book's two flowcharts, declared with schemdraw's flow elements (schemdraw lays out the boxes and arrows).

* :func:`fallback_chain`: the dispatcher's path for an op without a kernel on the ``tpu`` device;
* :func:`migration_flowchart`: the book's decision path, from ``xlaport doctor`` to go / no-go.
"""

from __future__ import annotations

from matplotlib.figure import Figure

from .style import FONT, INK, LINK, MUTED, PALETTE, SIZE, flow_figure, tint

MAX_OP = 48  # characters of an op name that fit the start box


def _drawing(size: float = SIZE):  # type: ignore[no-untyped-def]
    import schemdraw

    d = schemdraw.Drawing(canvas="matplotlib", show=False)
    d.config(unit=1.0, fontsize=size, font=FONT, lw=1.2, color=INK)
    return d


def fallback_chain(op: str = "aten::linalg_cholesky_ex") -> Figure:
    """The dispatcher's path for one call of `op` on the ``tpu`` device, as a flowchart.

    A kernel on the backend lowers the op into the XLA graph; without one, a switched-on CPU fallback copies the
    inputs to the host, runs the CPU kernel and copies the results back (a graph cut, TorchNeuron's default);
    otherwise the call raises ``NotImplementedError`` (TorchTPU's default).
    """
    if not isinstance(op, str) or not op.strip() or "\n" in op:
        raise ValueError(f"op must be one op name on one line, e.g. 'aten::linalg_cholesky_ex', got {op!r}")
    op = op.strip()
    if len(op) > MAX_OP:
        raise ValueError(f"op name too long to draw ({len(op)} characters, at most {MAX_OP}): {op[:40]}...")
    from schemdraw import flow

    with _drawing() as d:
        start = flow.Box(w=6.4, h=1.4).label(f"a call on a tpu tensor reaches\n{op}", color=INK)
        start.fill("#F2F2F2").color(MUTED)
        flow.Arrow().down(0.9).at(start.S)
        kernel = flow.Decision(w=5.4, h=2.4, E="yes", S="no", fontsize=SIZE).label("does the backend\nhave a kernel?")
        flow.Arrow().right(1.3).at(kernel.E)
        lowered = (
            flow.Box(w=5.0, h=1.9).anchor("W").label("lowered into the XLA\ngraph: stays on the\ndevice", color=INK)
        )
        lowered.fill(tint("device")).color(PALETTE["device"])
        flow.Arrow().down(0.9).at(kernel.S)
        fallback = flow.Decision(w=5.4, h=2.4, E="yes", S="no", fontsize=SIZE).label("is CPU fallback\nswitched on?")
        flow.Arrow().right(1.3).at(fallback.E)
        cut = "copy inputs to the host,\nrun the CPU kernel,\ncopy results back:\na graph cut"
        host = flow.Box(w=5.0, h=2.9).anchor("W").label(cut, color=INK, ofst=(0, 0.3))
        host.label("TorchNeuron's default", color=MUTED, ofst=(0, -1.0)).fill(tint("fallback")).color(
            PALETTE["fallback"]
        )
        flow.Arrow().down(0.9).at(fallback.S)
        error = flow.Box(w=5.4, h=1.9).label("NotImplementedError:\nthe step stops here", color=INK, ofst=(0, 0.25))
        error.label("TorchTPU's default", color=MUTED, ofst=(0, -0.6)).fill(tint("error")).color(PALETTE["error"])
    return flow_figure(d, f"What the dispatcher does with {op}")


# The steps of a port: a question, what to do when the answer is yes, and the chapters that show how.
PORT_STEPS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("ops that raise\non the target?", "rewrite them with\nops it has", ("Op fallbacks",)),
    ("recompiles after\nwarm-up?", "buckets, static\nshapes, host floats", ("Recompile storms", "SD3 view offsets")),
    ("custom CUDA or\nTriton kernels?", "rewrite in Pallas\nor NKI, or drop", ("Custom kernels",)),
)


def migration_flowchart() -> Figure:
    """The book's decision path for a migration, as a tall, narrow flowchart that stays readable at phone width.

    ``xlaport doctor`` first (Audit your own code); then ops that raise, recompiles after warm-up and custom
    kernels, each with what to do and the chapter that shows it; numerics; then whether the move pays within your
    horizon (Pricing math): go or no-go. Chapter names are in blue.
    """
    from schemdraw import flow

    size = 12.0  # the home page shows this figure narrow on a phone
    dw, dh, sw, run = 4.2, 2.4, 3.8, 0.6  # diamond, side box, arrow lengths (units of 0.5 in)
    with _drawing(size) as d:
        box = flow.RoundBox(w=dw, h=1.9).label("run xlaport doctor\non your code", ofst=(0, 0.3), color=INK)
        box.label("Audit your own code", ofst=(0, -0.5), color=LINK).fill("#F2F2F2").color(MUTED)
        gap = run
        for question, action, chapters in PORT_STEPS:
            flow.Arrow().down(gap).at(box.S)
            ask = flow.Decision(w=dw, h=dh, E="yes", S="no", fontsize=size).label(question)
            flow.Arrow().right(run + 0.3).at(ask.E)
            n = len(chapters)
            side = flow.Box(w=sw, h=1.6 + 0.5 * n).anchor("W").label(action, ofst=(0, 0.1 + 0.2 * n), color=INK)
            side.label("\n".join(chapters), ofst=(0, -0.3 * n), color=LINK)
            side.fill(tint("view")).color(PALETTE["view"])
            flow.Wire("|-", arrow="->").at(side.S).to((ask.S.x, ask.S.y - run)).color(MUTED)
            box, gap = ask, 2 * run
        flow.Arrow().down(gap).at(box.S)
        numerics = flow.Box(w=dw, h=2.0).label("check numerics under\nautocast + compile", ofst=(0, 0.3), color=INK)
        numerics.label("Attention numerics", ofst=(0, -0.6), color=LINK).fill(tint("view")).color(PALETTE["view"])
        flow.Arrow().down(run).at(numerics.S)
        pays = flow.Decision(w=dw + 0.8, h=dh + 0.8, S="yes", E="no", fontsize=size)
        pays.label("does the move pay\nwithin your horizon?", ofst=(0, 0.25)).label(
            "Pricing math", ofst=(0, -0.6), color=LINK
        )
        flow.Arrow().down(run).at(pays.S)
        flow.RoundBox(w=3.0, h=1.3).label("go", color=INK).fill(tint("device", 0.4)).color(PALETTE["device"])
        flow.Wire("-|", arrow="->").at(pays.E).to((ask.E.x + run + 0.3 + sw / 2, pays.S.y - run))
        flow.RoundBox(w=3.0, h=1.3).label("no-go", color=INK).fill(tint("error", 0.4)).color(PALETTE["error"])
    return flow_figure(d, "Porting to TPU or Trainium:\nwhat to check, in order")
