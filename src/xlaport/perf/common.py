"""Estimates for common models: the expected step, tokens per second per chip and cost per million tokens of a dense
8B and 70B, a mixture of experts and a diffusion transformer on every chip, training and serving.

The book's generated page "Estimates for common models" is these rows, computed when the site is built. Training:
``TRAIN_BATCH`` sequences of ``TRAIN_SEQ`` tokens per step (a million tokens, so the batch splits over every chip the
step needs), full activation checkpointing, AdamW, on the fewest chips that hold it; serving: requests of
``SERVE_IN`` tokens in and ``SERVE_OUT`` out, as many at once as the caches fit, bf16 weights, on the fewest chips (a
power of two) that hold the weights. The diffusion transformer (FLUX.1 [dev]'s) is one 1024 x 1024 image at
FluxPipeline's 28 denoising steps on one chip: traced, not calibrated (no published run of it), so the floor only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = [
    "MODELS",
    "TRAIN_BATCH",
    "TRAIN_SEQ",
    "SERVE_IN",
    "SERVE_OUT",
    "training_rows",
    "serving_rows",
    "dit_rows",
    "render",
]

MODELS = {"llama31_8b": "dense 8B", "llama31_70b": "dense 70B", "mixtral_8x7b": "mixture of experts"}
TRAIN_BATCH, TRAIN_SEQ = 256, 4096
SERVE_IN, SERVE_OUT = 1024, 1024

Progress = Callable[[str], None]


def _quiet(_: str) -> None:
    pass


def training_rows(progress: Progress = _quiet) -> list[dict[str, Any]]:
    """Per model and chip: chips, expected step (s) and interval, tokens/s per chip and $ per million tokens at it."""
    from .estimate import estimate

    out = []
    for name, kind in MODELS.items():
        progress(f"training {name}")
        est = estimate(name, mode="training", batch=TRAIN_BATCH, seq_len=TRAIN_SEQ)
        tokens = est.trace.tokens
        for c in est.chips:
            e = c.expected
            if e is None:
                continue
            tps = tokens / e.expected_s / c.chips
            price = c.machine.usd_per_hour
            out.append(
                {
                    "model": name,
                    "kind": kind,
                    "chip": c.machine.id,
                    "chips": c.chips,
                    "expected_s": e.expected_s,
                    "interval_s": e.interval_s,
                    "tokens_per_s_per_chip": tps,
                    "usd_per_million_tokens": None if price is None else price / 3600 / tps * 1e6,
                    "level": e.level,
                }
            )
    return out


def serving_rows(progress: Progress = _quiet) -> list[dict[str, Any]]:
    """Per model and chip: chips, requests at once, expected time per output token of the batch, output tokens/s per
    chip and $ per million output tokens."""
    from .estimate import estimate_inference

    out = []
    for name, kind in MODELS.items():
        progress(f"serving {name}")
        est = estimate_inference(name, "serving", input_len=SERVE_IN, output_len=SERVE_OUT)
        for c in est.chips:
            r = c.row()
            out.append(
                {
                    "model": name,
                    "kind": kind,
                    "chip": r["chip"],
                    "chips": r["chips"],
                    "concurrency": r.get("concurrency", 0),
                    "expected_s": r["expected_step_s"],
                    "interval_s": tuple(r["interval_step_s"]) if r["interval_step_s"] else None,
                    "tokens_per_s_per_chip": r["tokens_per_s_per_chip"],
                    "usd_per_million_tokens": r.get("usd_per_million_tokens"),
                    "level": None if r["calibrated_on"] is None else r["calibrated_on"]["level"],
                }
            )
    return out


def dit_rows(progress: Progress = _quiet) -> list[dict[str, Any]]:
    """FLUX.1 [dev]'s transformer, one 1024 x 1024 image at 28 steps on one chip: the floor (s per image) and the
    floor's cost per image."""
    from .. import cost
    from .claims import flux_trace, flux_transformer
    from .estimate import estimate_trace

    progress("FLUX.1 [dev] transformer")
    steps = int(cost.model_config("flux1_dev_pipeline")["num_inference_steps"])
    est = estimate_trace(flux_trace(flux_transformer(), 1024, 1024, 1), chips=1, steps_per_item=steps)
    out = []
    for c in est.chips:
        per_image = c.band.low_s * steps
        price = c.machine.usd_per_hour
        out.append(
            {
                "model": "flux1_dev_transformer",
                "kind": "diffusion transformer",
                "chip": c.machine.id,
                "floor_s_per_image": per_image,
                "band_s_per_image": (c.band.low_s * steps, c.band.high_s * steps),
                "usd_per_image_at_floor": None if price is None else price / 3600 * per_image,
                "fits": c.fit.chips <= 1,
            }
        )
    return out


def _money(x: float | None, digits: int = 3) -> str:
    return "no price" if x is None else f"{x:#.{digits}g}"


def _secs(x: float) -> str:
    return f"{x * 1e3:#.3g} ms" if x < 1 else f"{x:#.3g} s"


def _rate(x: float) -> str:
    """Tokens per second to 3 significant figures (8,140, not 8,137): the intervals behind them are about 2× wide."""
    return f"{float(f'{x:.3g}'):,.0f}"


def render(progress: Progress = _quiet) -> str:
    """The page "Estimates for common models" as MyST markdown (dollar signs escaped by the caller)."""
    from .. import cost
    from .calibrate import MAX_WIDTH, evaluate, fit, held_out_summary
    from .inference import USABLE

    aims = held_out_summary(evaluate(fit()))["inference"]
    names = {c: cost.chip(c).name for c in cost.chip_names()}
    models = {m: str(cost.model_config(m)["name"]) for m in MODELS}
    lines = [
        "# Estimates for common models",
        "",
        "**What a step costs on each chip, for models a team is likely to run, from `xlaport estimate` at the time "
        "this site was built.** Every training and serving number is the estimator's *expected* value: the roofline floor over the fraction "
        "of it that published runs of the same chip family, software stack and kind of step reached "
        "({doc}`/notebooks/predict_before_renting` shows those runs and how far the fit held on runs it never "
        f"saw). Each interval is at most {MAX_WIDTH:g}× wide; treat serving as a first estimate: on the held-out inference "
        f"runs the median error was {aims['median_abs_error']:.0%} and {aims['n'] - aims['inside']:.0f} of "
        f"{aims['n']:.0f} fell outside their interval. "
        "Prices are the data file's on-demand prices ({doc}`/book/generated/hardware`); a chip with no published price shows none.",
        "",
        "## Training",
        "",
        f"{TRAIN_BATCH} sequences of {TRAIN_SEQ:,} tokens per step (about a million tokens), AdamW, bf16, full "
        "activation checkpointing (each layer's input kept, the rest recomputed), FSDP over the fewest chips that "
        "hold it. The cost is per million trained tokens. Chip counts are the fewest that hold the step, not the slice "
        "or instance sizes sold, and a step on fewer chips takes longer: compare chips by tokens per second per chip "
        "and by cost, not by step time.",
    ]
    train = training_rows(progress)
    for m in MODELS:
        lines += [
            "",
            f"### {models[m]} ({MODELS[m]}), training",
            "",
            "| chip | $ per M tokens | tokens/s per chip | chips | step (interval) |",
            "|---|---:|---:|---:|---:|",
        ]
        for r in (r for r in train if r["model"] == m):
            lo, hi = r["interval_s"]
            lines.append(
                f"| {names[r['chip']]} | {_money(r['usd_per_million_tokens'])} | {_rate(r['tokens_per_s_per_chip'])} | "
                f"{r['chips']} | {_secs(r['expected_s'])} ({_secs(lo)}–{_secs(hi)}) |"
            )
    levels: dict[str, dict[str, str]] = {}
    for r in train:
        levels.setdefault(r["chip"], {})[MODELS[r["model"]]] = r["level"]
    kinds = list(dict.fromkeys(MODELS.values()))
    lines += [
        "",
        "Which published runs set each fraction (chip family / stack / regime); where a chip has none of its own "
        "(Trainium2 has no published training run; the file holds no GPU mixture-of-experts run), the fit falls back "
        "to a wider group and names it:",
        "",
        "| chip | " + " | ".join(kinds) + " |",
        "|---|" + "---|" * len(kinds),
    ]
    for chip_id, by_kind in levels.items():
        lines.append(f"| {names[chip_id]} | " + " | ".join(by_kind.get(k, "") for k in kinds) + " |")
    lines += [
        "",
        "## Serving",
        "",
        f"Requests of {SERVE_IN:,} tokens in and {SERVE_OUT:,} out, as many at once as the KV caches fit beside the "
        "weights (*at once*), bf16 weights split over the fewest chips, a power of two, on which they take at most half "
        f"of the memory a program can use, {USABLE:.0%} of HBM (tensor parallelism; the rest holds the caches). A step yields one token for every request, prefills included; output tokens per second per "
        "chip and the cost per million output tokens follow at the expected step.",
    ]
    serve = serving_rows(progress)
    for m in MODELS:
        lines += [
            "",
            f"### {models[m]} ({MODELS[m]}), serving",
            "",
            "| chip | $ per M tokens | output tokens/s per chip | chips | at once | step (interval) |",
            "|---|---:|---:|---:|---:|---:|",
        ]
        for r in (r for r in serve if r["model"] == m):
            step = "not calibrated" if r["expected_s"] is None else _secs(r["expected_s"])
            if r["interval_s"]:
                step += f" ({_secs(r['interval_s'][0])}–{_secs(r['interval_s'][1])})"
            lines.append(
                f"| {names[r['chip']]} | {_money(r['usd_per_million_tokens'])} | {_rate(r['tokens_per_s_per_chip'])} | "
                f"{r['chips']} | {r['concurrency']:,} | {step} |"
            )
    lines += [
        "",
        "## A diffusion transformer",
        "",
        "FLUX.1 [dev]'s transformer, traced from its published configuration, one 1,024 × 1,024 image at "
        "FluxPipeline's 28 denoising steps on one chip. No published run measures it, so there is no calibrated "
        "expected time: the band runs from the floor (every matmul at peak, fused) to the unfused, eager end, and the "
        "cost is at the floor. Expect a real run above the floor, as the language models above are.",
        "",
        "| chip | seconds per image (band) | $ per image at the floor |",
        "|---|---:|---:|",
    ]
    for r in dit_rows(progress):
        lo, hi = r["band_s_per_image"]
        if not r["fits"]:
            lines.append(f"| {names[r['chip']]} | does not fit one chip | |")
            continue
        lines.append(f"| {names[r['chip']]} | {lo:.3g}–{hi:.3g} | {_money(r['usd_per_image_at_floor'])} |")
    lines += [
        "",
        "Run the same for your own model: `xlaport estimate path/to/config.json` (training), or with "
        "`--mode serving`, `decode` or `prefill`; `--json` gives every field.",
        "",
    ]
    return "\n".join(lines)
