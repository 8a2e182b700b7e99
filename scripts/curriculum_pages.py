#!/usr/bin/env python
"""Generate the curriculum's session table and the decision brief's break-even band (never typed by hand).

- ``book/generated/curriculum_sessions.md``: each session's pages, prerequisites and duration, measured: the
  chapters' run times from ``_build/executed/timings.json`` (written by ``tests/notebooks/test_chapters_execute.py``) plus reading
  time at :data:`WORDS_PER_MINUTE` over the words of every markdown and code cell or prose page;
- ``book/generated/decision_band.md``: break-even months per workload profile over a band of GPU prices around the
  data file's unverified price, against TPU v6e's published price, and the Trainium2 price that matches TPU v6e
  (so that a user's Trainium2 quote can be read against it), all from ``xlaport.cost``.

``scripts/build_site.py`` calls :func:`write` while staging the book; run it alone to preview:

    python scripts/curriculum_pages.py [OUT_DIR]     # default: book/generated
"""

from __future__ import annotations

import json
import math
import re
import sys
from pathlib import Path

from xlaport.exercises.curriculum import SESSIONS

ROOT = Path(__file__).resolve().parents[1]
TIMINGS = ROOT / "_build" / "executed" / "timings.json"
WORDS_PER_MINUTE = 150  # an assumption for technical prose with code, stated on the page
EXERCISE_MINUTES = 10  # an allowance per checked exercise, stated on the page as an assumption


# The sessions are data in the toolkit, shared with `xlaport learn start --session N`.


def _words(text: str) -> int:
    return len(re.findall(r"[A-Za-z0-9_]+", text))


def page_words(page: str, root: Path = ROOT) -> int:
    """Words a reader reads on a page: every cell of a notebook (markdown and code), or a markdown page."""
    nb = root / f"{page}.ipynb"
    if nb.exists():
        cells = json.loads(nb.read_text())["cells"]
        skip = {"remove-cell", "colab-setup"}  # not read on the site, or read only by Colab users
        return sum(_words("".join(c["source"])) for c in cells if not skip & set(c["metadata"].get("tags", [])))
    md = root / f"{page}.md"
    if md.exists():
        return _words(md.read_text())
    raise ValueError(f"curriculum page {page!r} does not exist")


def page_exercises(page: str, root: Path = ROOT) -> int:
    nb = root / f"{page}.ipynb"
    if not nb.exists():
        return 0
    return sum(
        1 for c in json.loads(nb.read_text())["cells"] if "".join(c["source"]).lstrip().startswith("```{exercise}")
    )


def load_timings(path: Path = TIMINGS) -> dict[str, float]:
    if not path.exists():
        return {}
    return {stem: float(v["seconds"]) for stem, v in json.loads(path.read_text()).items()}


def _link(page: str) -> str:
    return f"{{doc}}`/{page}`"


def sessions_md(timings: dict[str, float], root: Path = ROOT, wpm: int = WORDS_PER_MINUTE) -> str:
    """The session table: pages (links), prerequisites and the measured duration of each session."""
    lines = [
        "| session | pages | needs | run (s) | words | exercises | minutes |",
        "|---|---|---|--:|--:|--:|--:|",
    ]
    for i, s in enumerate(SESSIONS, 1):
        run = 0.0
        unmeasured = []
        for p in s.pages:
            if p.startswith("notebooks/"):
                stem = p.split("/", 1)[1]
                if stem in timings:
                    run += timings[stem]
                else:
                    unmeasured.append(stem)
        words = sum(page_words(p, root) for p in s.pages)
        n_ex = sum(page_exercises(p, root) for p in s.pages)
        minutes = run / 60 + words / wpm + n_ex * EXERCISE_MINUTES
        needs = ", ".join(str(n) for n in s.prerequisites) or "none"
        run_s = f"{run:.0f}" + (" (+ not yet run: " + ", ".join(unmeasured) + ")" if unmeasured else "")
        pages = ", ".join(_link(p) for p in s.pages)
        lines.append(f"| {i}. {s.title} | {pages} | {needs} | {run_s} | {words:,} | {n_ex} | {math.ceil(minutes)} |")
    lines.append("")
    lines.append(
        f"Minutes = the chapters' measured run time on the CI machine + reading at {wpm} words per minute (every "
        f"markdown and code cell) + {EXERCISE_MINUTES} minutes per checked exercise. The run times are those of the "
        "last `make test`; the words are counted when the site is built."
    )
    lines.append("")
    lines.append("| session | what the discussion should settle |")
    lines.append("|---|---|")
    lines += [f"| {i}. {s.title} | {s.settles} |" for i, s in enumerate(SESSIONS, 1)]
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------ the decision brief's band
PROFILES: dict[str, dict[str, float]] = {
    # assumptions for illustration, stated on the page; the reader replaces them with their own
    "fixed-shape inference": dict(
        gpus=16, gpu_mfu=0.30, tpu_mfu=0.30, utilisation=0.6, kernels=0, port_weeks=6, validation_weeks=4, team=4,
        velocity_loss=0.25, disruption_weeks=8, ongoing=0,
    ),
    "fine-tuning": dict(
        gpus=32, gpu_mfu=0.40, tpu_mfu=0.35, utilisation=0.7, kernels=4, port_weeks=8, validation_weeks=6, team=8,
        velocity_loss=0.25, disruption_weeks=12, ongoing=2,
    ),
    "pre-training, many custom kernels": dict(
        gpus=64, gpu_mfu=0.45, tpu_mfu=0.30, utilisation=0.9, kernels=40, port_weeks=12, validation_weeks=12,
        team=25, velocity_loss=0.3, disruption_weeks=26, ongoing=12,
    ),
}  # fmt: skip
PRICE_BAND = (0.5, 0.75, 1.0, 1.25, 1.5)  # multiples of the data file's GPU price, when that price is unverified
USD_PER_PERSON_WEEK = 6000.0
WEEKS_PER_KERNEL = 4.0
HORIZON_MONTHS = 24.0
TPU_CHIP, TPU_TERM, GPU_CHIP = "tpu_v6e", "1yr", "h100_sxm"


def decision_md() -> str:
    """Break-even months per profile over the GPU price band, and the Trainium2 price that matches TPU v6e."""
    from xlaport import cost

    gpu, tpu, trn2 = cost.chip(GPU_CHIP), cost.chip(TPU_CHIP), cost.chip("trn2")
    gpu_fact = gpu.price_fact("on_demand")
    tpu_price = tpu.usd_per_chip_hour(TPU_TERM)
    unverified = gpu_fact.evidence == "U"
    band = PRICE_BAND if unverified else (1.0,)
    prices = [f"GPU at ${gpu_fact.value * f:.2f}" for f in band]
    lines = [
        f"GPU: {gpu.name}, data-file price ${gpu_fact.value:.2f}/chip-hour (evidence {gpu_fact.evidence}"
        + (", unverified: shown as a band from half to one and a half times it" if unverified else "")
        + f"). TPU: {tpu.name}, {TPU_TERM} price ${tpu_price:.2f}/chip-hour (evidence "
        f"{tpu.price_fact(TPU_TERM).evidence}). Horizon {HORIZON_MONTHS:g} months; "
        f"${USD_PER_PERSON_WEEK:,.0f} per person-week; {WEEKS_PER_KERNEL:g} person-weeks per custom kernel. "
        "Cells: months until the move pays back.",
        "",
        f"| profile | {' | '.join(prices)} | Trainium2 that matches {tpu.name} |",
        "|---|" + "--:|" * (len(band) + 1),
    ]
    for name, p in PROFILES.items():
        m = cost.Migration(
            kernels=p["kernels"], person_weeks_per_kernel=WEEKS_PER_KERNEL, port_person_weeks=p["port_weeks"],
            validation_person_weeks=p["validation_weeks"], usd_per_person_week=USD_PER_PERSON_WEEK,
            team_size=p["team"], velocity_loss=p["velocity_loss"], disruption_weeks=p["disruption_weeks"],
            ongoing_person_weeks_per_month=p["ongoing"],
        )  # fmt: skip
        flop = p["gpus"] * cost.hours_per_month() * 3600 * p["utilisation"] * p["gpu_mfu"] * gpu.peak_bf16_flop_per_s
        proposed = cost.Side(tpu.id, tpu_price, p["tpu_mfu"], p["utilisation"])
        cells = []
        for f in band:
            d = cost.decide(
                flop, cost.Side(gpu.id, gpu_fact.value * f, p["gpu_mfu"], p["utilisation"]), proposed, m, HORIZON_MONTHS
            )
            cells.append("never" if math.isinf(d.break_even_months) else f"{d.break_even_months:.1f}")
        # Same work, same MFU and utilisation as on TPU: the Trainium2 chip-hour price with the same monthly bill.
        parity = tpu_price * (trn2.peak_bf16_flop_per_s / tpu.peak_bf16_flop_per_s)
        lines.append(f"| {name} | " + " | ".join(cells) + f" | ${parity:.2f}/chip-hour |")
    lines.append("")
    lines.append(
        f"The last column assumes Trainium2 reaches the same MFU as {tpu.name} (its dense BF16 peak is "
        f"{trn2.peak_bf16_flop_per_s / tpu.peak_bf16_flop_per_s:.2f}× v6e's): a Trainium2 quote below it buys the "
        "same work for less. The data file has no Trainium2 price; price yours with "
        "`xlaport cost breakeven --to-chip trn2 --to-price YOUR_QUOTE ...`."
    )
    return "\n".join(lines) + "\n"


def write(out_dir: Path, timings_path: Path = TIMINGS) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    pages = {
        "curriculum_sessions.md": sessions_md(load_timings(timings_path)),
        "decision_band.md": decision_md(),
    }
    written = []
    for name, text in pages.items():
        (out_dir / name).write_text(text)
        written.append(out_dir / name)
    return written


if __name__ == "__main__":
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "book" / "generated"
    for p in write(out):
        print(p)
