"""The curriculum's session table and the decision brief's break-even band, generated when the site build starts.

- ``book/generated/curriculum_sessions.md``: each session's pages, prerequisites and duration, measured: the
  chapters' run times from ``_build/executed/timings.json`` (written by ``tests/notebooks/test_chapters_execute.py``) plus reading
  time at :data:`WORDS_PER_MINUTE` over the words of every markdown and code cell or prose page;
- ``book/generated/decision_band.md``: break-even months per workload profile over a band of GPU prices around the
  data file's unverified price, against TPU v6e's published price, and the Trainium2 price that matches TPU v6e
  (so that a user's Trainium2 quote can be read against it), all from ``xlaport.cost``.

:mod:`.generated` calls :func:`write` when the build starts (``xlaport_generate: [curriculum]``).
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

from xlaport.exercises.curriculum import SESSIONS
from xlaport.myst import directives
from xlaport.text import escape_dollars

from .checkout import project_root

ROOT = project_root()
TIMINGS = ROOT / "_build" / "executed" / "timings.json"
WORDS_PER_MINUTE = 150  # an assumption for technical prose with code, stated on the page
# Per exercise: a base (read the task, run the check, read its verdict) plus minutes per line of the reference
# solution that is new (not already in the chapter's own code): copying is quick, writing new logic is not. The rate
# is calibrated on the one timing a trial reported (the top-p sampler, 7 new lines: 20-30 minutes at a first try).
EXERCISE_BASE_MINUTES = 3
MINUTES_PER_NEW_LINE = 3
DISCUSSION_SHARE = 1 / 3  # of the whole session, as the facilitator notes ask
JUPYTERLAB_SETUP_MINUTES = 10  # an allowance (pip install 'xlaport[learn]', xlaport learn start, first launch)
# The capstone session's pair work, as the facilitator notes ask (each pair runs the doctor on a module of its own code
# and reports its three numbers): an allowance, stated on the page, counted with the session's exercises.
OWN_CODE_MINUTES = 30
OWN_CODE_PAGE = "notebooks/capstone"
DOWNLOAD_MBIT_PER_S = 50  # an assumption for the first install's download, stated on the page
VENV = ROOT / ".venv"


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
    cells = json.loads(nb.read_text())["cells"]
    return sum(
        d.name == "exercise" for c in cells if c["cell_type"] == "markdown" for d in directives("".join(c["source"]))
    )


_CHECK_LINE = re.compile(r"^(solution = check_|print\(solution\)|assert solution\.)")


def _code_lines(text: str) -> list[str]:
    return [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.strip().startswith("#")]


def exercise_minutes(page: str, root: Path = ROOT) -> list[tuple[str, int, int]]:
    """Per exercise of a chapter: (label, new lines in its reference solution, estimated minutes)."""
    nb = root / f"{page}.ipynb"
    if not nb.exists():
        return []
    cells = json.loads(nb.read_text())["cells"]
    chapter_code: set[str] = set()
    out = []
    label = None
    for c in cells:
        text = "".join(c["source"])
        if c["cell_type"] == "markdown":
            names = {d.name: d for d in directives(text)}
            if "solution-start" in names:
                label = names["solution-start"].argument
            elif "solution-end" in names:
                label = None
            continue
        lines = _code_lines(text)
        if label is None:
            if "answer = None" not in text:
                chapter_code.update(lines)
            continue
        new = [ln for ln in lines if ln not in chapter_code and not _CHECK_LINE.match(ln)]
        out.append((label, len(new), EXERCISE_BASE_MINUTES + MINUTES_PER_NEW_LINE * len(new)))
    return out


def install_minutes(venv: Path = VENV) -> tuple[float, float] | None:
    """(GB on disk, minutes to download at DOWNLOAD_MBIT_PER_S) of the emulator environment, when one is here."""
    site = sorted(venv.glob("lib/python*/site-packages"))
    if not site:
        return None
    size = sum(f.stat().st_size for f in site[0].rglob("*") if f.is_file() and not f.is_symlink())
    # an assumption, stated on the page: wheels are compressed, about half the installed size goes over the wire
    return size / 1e9, (size / 2) * 8 / (DOWNLOAD_MBIT_PER_S * 1e6) / 60


def load_timings(path: Path = TIMINGS) -> dict[str, float]:
    if not path.exists():
        return {}
    return {stem: float(v["seconds"]) for stem, v in json.loads(path.read_text()).items()}


def _link(page: str) -> str:
    return f"{{doc}}`/{page}`"


def sessions_md(timings: dict[str, float], root: Path = ROOT, wpm: int = WORDS_PER_MINUTE, venv: Path = VENV) -> str:
    """The session table (pages, prerequisites, each part of a session's time) and the per-exercise estimates."""
    install = install_minutes(venv)
    # Two narrow tables rather than one of nine columns, which on a laptop hid its last column behind a scroll whose
    # bar sat below the fold: what each session covers, then where its minutes go (each part rounded up to a whole
    # minute, and the total their sum, so that every row adds up as printed).
    # The total comes right after the session in both, so a phone shows it without scrolling.
    lines = ["| session (after) | total (min) | pages |", "|---|--:|---|"]
    parts = [
        "| session | total | run | reading | exercises | setup | discussion |",
        "|---|--:|--:|--:|--:|--:|--:|",
    ]
    per_exercise = []
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
        exercises = [(p, *e) for p in s.pages for e in exercise_minutes(p, root)]
        per_exercise += [(i, *e) for e in exercises]
        ex_min = sum(m for *_, m in exercises) + (OWN_CODE_MINUTES if OWN_CODE_PAGE in s.pages else 0)
        setup = math.ceil((install[1] if install else 0.0) + JUPYTERLAB_SETUP_MINUTES) if i == 1 else 0
        run_min, reading = math.ceil(run / 60), math.ceil(words / wpm)
        work = run_min + reading + ex_min + setup
        discussion = math.ceil(work * DISCUSSION_SHARE / (1 - DISCUSSION_SHARE))
        total = work + discussion
        needs = f" (after {', '.join(str(n) for n in s.prerequisites)})" if s.prerequisites else ""
        run_cell = f"{run_min}" + (" (+ not yet run: " + ", ".join(unmeasured) + ")" if unmeasured else "")
        pages = ", ".join(_link(p) for p in s.pages)
        lines.append(f"| {i}. {s.title}{needs} | {total} | {pages} |")
        parts.append(f"| {i} | {total} | {run_cell} | {reading} | {ex_min} | {setup} | {discussion} |")
    lines += ["", "Minutes per part of each session:", "", *parts]
    lines.append("")
    size = (
        f"the emulator environment measured on the build machine, {install[0]:.1f} GB installed; assumed: half of "
        f"that downloaded (wheels are compressed) at {DOWNLOAD_MBIT_PER_S} Mbit/s"
        if install
        else "not measured on this build (no environment here), so counted as 0"
    )
    lines += [
        "",
        "How each number is obtained:",
        "",
        "- **run**: the chapters' measured execution time in the last `make test` on the CI machine (two "
        "cores, two chapters side by side, each on about one core), rounded up to a whole minute.",
        f"- **reading**: every markdown and code cell's words at an assumed {wpm} words per minute.",
        f"- **exercises**: per exercise, {EXERCISE_BASE_MINUTES} minutes to read the task, run the check and read "
        f"its verdict, plus {MINUTES_PER_NEW_LINE} minutes per line of the reference solution that is new (not "
        "already in the chapter's own code). The rate is an assumption calibrated on one trial's timing: the top-p "
        "sampler, 7 new lines, took 20 to 30 minutes at a first attempt. The table below gives each exercise. The "
        f"capstone session's count is its pair work: {OWN_CODE_MINUTES} minutes allowed for each pair to run the doctor "
        "on a module of its own code and report its three numbers, as the facilitator notes below ask.",
        f"- **setup** (session 1 only): the first install ({size}), plus {JUPYTERLAB_SETUP_MINUTES} minutes allowed "
        "for `pip install 'xlaport[learn]'`, `xlaport learn start` and JupyterLab's first launch.",
        "- **discussion**: a third of the whole session, as the facilitator notes ask, so half the time of "
        "everything else.",
        "",
        "| session | chapter | exercise | new lines | minutes |",
        "|---|---|---|--:|--:|",
    ]
    lines += [f"| {i} | {_link(p)} | `{label}` | {n} | {m} |" for i, p, label, n, m in per_exercise]
    lines.append("")
    lines.append("| session | what the discussion should settle |")
    lines.append("|---|---|")
    lines += [f"| {i}. {s.title} | {s.settles} |" for i, s in enumerate(SESSIONS, 1)]
    return escape_dollars("\n".join(lines) + "\n")


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


ASSUMPTIONS = (  # (row label, how to show a profile's value)
    ("GPUs (H100) running the work", lambda p: f"{p['gpus']:.0f}"),
    ("{term}`MFU` on GPU → on TPU", lambda p: f"{p['gpu_mfu']:.0%} → {p['tpu_mfu']:.0%}"),
    ("utilisation (share of paid hours doing work; the same on both sides, so it cancels out of the break-even)",
     lambda p: f"{p['utilisation']:.0%}"),
    ("custom kernels to rewrite", lambda p: f"{p['kernels']:.0f}"),
    ("porting + validation (person-weeks)", lambda p: f"{p['port_weeks']:.0f} + {p['validation_weeks']:.0f}"),
    ("team slowed, by how much, for how long", lambda p: f"{p['team']:.0f} people, {p['velocity_loss']:.0%}, {p['disruption_weeks']:.0f} weeks"),
    ("ongoing cost of two code paths (person-weeks/month)", lambda p: f"{p['ongoing']:.0f}"),
)  # fmt: skip


def _migration(p: dict[str, float]) -> Any:
    from xlaport import cost

    return cost.Migration(
        kernels=p["kernels"], person_weeks_per_kernel=WEEKS_PER_KERNEL, port_person_weeks=p["port_weeks"],
        validation_person_weeks=p["validation_weeks"], usd_per_person_week=USD_PER_PERSON_WEEK,
        team_size=p["team"], velocity_loss=p["velocity_loss"], disruption_weeks=p["disruption_weeks"],
        ongoing_person_weeks_per_month=p["ongoing"],
    )  # fmt: skip


def decision_md() -> str:
    """The decision brief's band: each profile's assumptions, its break-even GPU price, the months to pay back over
    a band of GPU prices, and the Trainium2 price that matches TPU v6e."""
    from xlaport import cost

    gpu, tpu, trn2 = cost.chip(GPU_CHIP), cost.chip(TPU_CHIP), cost.chip("trn2")
    gpu_fact = gpu.price_fact("on_demand")
    tpu_price = tpu.usd_per_chip_hour(TPU_TERM)
    unverified = gpu_fact.evidence == "U"
    band = (PRICE_BAND[0], 1.0, PRICE_BAND[-1]) if unverified else (1.0,)
    names = list(PROFILES)
    lines = [
        f"**Prices.** GPU: {gpu.name} **on demand**, ${gpu_fact.value:.2f}/chip-hour in the data file (evidence "
        f"{gpu_fact.evidence}: "
        + ("unverified, so the table shows half and one and a half times it too" if unverified else "verified")
        + f"). TPU: {tpu.name} at a **{TPU_TERM.replace('yr', '-year')} commitment**, ${tpu_price:.2f}/chip-hour "
        f"(evidence {tpu.price_fact(TPU_TERM).evidence}). The two terms differ on purpose: a team that moves commits "
        "to the new chips, while the GPUs it leaves are priced as it pays for them today. If your GPUs are on a "
        "commitment too, read your price against the break-even column. Evidence levels are explained in "
        "{doc}`/book/generated/hardware`.",
        "",
        f"**Assumptions**, for illustration (replace them with yours; the same model runs as `xlaport cost breakeven`): "
        f"a {HORIZON_MONTHS:g}-month horizon, ${USD_PER_PERSON_WEEK:,.0f} per person-week and "
        f"{WEEKS_PER_KERNEL:g} person-weeks per custom kernel, and per profile:",
        "",
        "| assumption | " + " | ".join(names) + " |",
        "|---|" + "---|" * len(names),
    ]
    for label, show in ASSUMPTIONS:
        lines.append(f"| {label} | " + " | ".join(show(PROFILES[n]) for n in names) + " |")
    prices = [gpu_fact.value * f for f in band]
    lines += [
        "",
        "**The band.** *Break-even GPU price*: the GPU price per hour above which the move pays back within the "
        "horizon (below it, stay). Then the months until the move pays back at each GPU price.",
        "",
        "| profile | break-even GPU price | " + " | ".join(f"months at ${x:.2f}" for x in prices) + " |",
        "|---|--:|" + "--:|" * len(band),
    ]
    for name, p in PROFILES.items():
        m = _migration(p)
        flop = p["gpus"] * cost.hours_per_month() * 3600 * p["utilisation"] * p["gpu_mfu"] * gpu.peak_bf16_flop_per_s
        proposed = cost.Side(tpu.id, tpu_price, p["tpu_mfu"], p["utilisation"])
        current = cost.Side(gpu.id, gpu_fact.value, p["gpu_mfu"], p["utilisation"])
        p_star = cost.break_even_current_usd_per_chip_hour(flop, current, proposed, m, HORIZON_MONTHS)
        cells = []
        for x in prices:
            d = cost.decide(flop, cost.Side(gpu.id, x, p["gpu_mfu"], p["utilisation"]), proposed, m, HORIZON_MONTHS)
            cells.append("never" if math.isinf(d.break_even_months) else f"{d.break_even_months:.1f}")
        lines.append(f"| {name} | ${p_star:.2f}/hour | " + " | ".join(cells) + " |")
    # Same work, same MFU and utilisation as on TPU: the Trainium2 chip-hour price with the same monthly bill.
    ratio = trn2.peak_bf16_flop_per_s / tpu.peak_bf16_flop_per_s
    parity = tpu_price * ratio
    lines += [
        "",
        f"**Trainium2 instead of TPU.** For the same work at the same MFU, a Trainium2 chip-hour is worth "
        f"${parity:.2f} against {tpu.name} at ${tpu_price:.2f} (its dense BF16 peak is {ratio:.2f}× v6e's): a "
        "Trainium2 quote below that buys the same work for less, in every profile alike.",
    ]
    if trn2.has_price("on_demand"):
        f = trn2.price_fact("on_demand")
        lines[-1] += (
            f" The data file's Trainium2 price is ${f.value:.2f}/chip-hour on demand (evidence {f.evidence}); compare "
            f"the parity price with a committed Trainium2 quote, since it comes from v6e's {TPU_TERM.replace('yr', '-year')} price."
        )
    # Prices are dollars, not maths: two unescaped $ in a line open a MyST formula that swallows the words between.
    return escape_dollars("\n".join(lines) + "\n")


def write(out_dir: Path) -> list[Path]:
    """Write the generated pages into ``out_dir``; the run times come from TIMINGS, read at call time (a test pins
    them by setting this module's TIMINGS)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    pages = {
        "curriculum_sessions.md": sessions_md(load_timings(TIMINGS)),
        "decision_band.md": decision_md(),
    }
    written = []
    for name, text in pages.items():
        (out_dir / name).write_text(text)
        written.append(out_dir / name)
    return written
