"""``xlaport cost``: the pricing questions from the command line, answered as a table.

    xlaport cost chips                                     the facts, with sources and evidence
    xlaport cost tokens --chip tpu_v6e --params 8e9 --mfu 0.3 --mode inference
    xlaport cost mfu --chip tpu_v7x --params 7e9 --tokens-per-s 2e8 --chips 8192
    xlaport cost image --chip tpu_v6e --ms-per-step 122.51 --steps 28
    xlaport cost train --chip tpu_v6e --params 7e9 --tokens 1e12 --mfu 0.4 --chips 256
    xlaport cost breakeven --from-chip h100_sxm --from-mfu 0.4 --from-chips 64 --to-chip tpu_v6e --to-mfu 0.35 ...

Every number is parsed here (not by argparse) so a bad one gets one line and exit status 2.
"""

from __future__ import annotations

import argparse
import math

from .. import cost
from ..validate import fraction, unit_interval
from .args import OneLineParser, positive_real, positive_whole, real, whole

__all__ = ["configure", "run"]


def _price(args: argparse.Namespace, c: cost.Chip, prefix: str = "") -> tuple[float, str]:
    given = getattr(args, f"{prefix}price")
    if given is not None:
        return positive_real(f"--{prefix.replace('_', '-')}price", given), "given"
    term = getattr(args, f"{prefix}term")
    f = c.price_fact(term)
    return f.value, f"{term}, {f.evidence}"


def _table(rows: list[tuple[str, str]]) -> None:
    width = max(len(k) for k, _ in rows)
    for k, v in rows:
        print(f"{k:<{width}}  {v}")


def _fpt(args: argparse.Namespace) -> float:
    return cost.flop_per_token(
        positive_real("--params", args.params),
        args.mode,
        n_layers=whole("--layers", args.layers),
        n_heads=whole("--heads", args.heads),
        head_dim=whole("--head-dim", args.head_dim),
        seq_len=whole("--seq-len", args.seq_len),
    )


def _chips_cmd(args: argparse.Namespace) -> int:
    print(
        f"facts from {cost.data_info()['file']} (compiled {cost.data_info()['compiled']}); "
        "evidence V = primary source, V2 = via a copy, U = unverified"
    )
    print(f"{'chip':<10} {'bf16 TFLOP/s':>12} {'HBM':>9} {'$/chip-h on-demand':>19} {'1yr':>6} {'3yr':>6}")
    for cid in cost.chip_names():
        c = cost.chip(cid)
        hbm = c.facts["hbm"]
        prices = []
        for term in cost.PRICE_TERMS:
            prices.append(
                f"{c.usd_per_chip_hour(term):.2f}{'' if c.price_fact(term).verified else '*'}"
                if c.has_price(term)
                else "-"
            )
        print(
            f"{cid:<10} {c.peak_bf16_flop_per_s / 1e12:>12,.0f} {hbm.value:>5g} {hbm.unit:<3} "
            f"{prices[0]:>19} {prices[1]:>6} {prices[2]:>6}"
        )
    print("* price not verified in a primary source (see --sources)")
    if args.sources:
        for row in cost.reference_rows():
            print(
                f"- {row['chip']} {row['quantity']} = {row['value']:g} {row['unit']} [{row['evidence']}, "
                f"{row['date']}]: {row['source']}"
            )
    return 0


def _throughput(args: argparse.Namespace) -> tuple[cost.Chip, float, float, float, float, str]:
    """What `tokens` and `train` share: chip, chip count, FLOP per token, tokens/s per chip at --mfu, price."""
    c = cost.chip(args.chip)
    n = positive_whole("--chips", args.chips)
    fpt = _fpt(args)
    per_chip = cost.tokens_per_s(fraction("--mfu", args.mfu), fpt, c.peak_bf16_flop_per_s)
    price, how = _price(args, c)
    return c, n, fpt, per_chip, price, how


def _tokens_cmd(args: argparse.Namespace) -> int:
    c, n, fpt, per_chip, price, how = _throughput(args)
    usd = cost.usd_per_million_tokens(per_chip, price, fraction("--utilisation", args.utilisation))
    _table(
        [
            ("chip", c.name),
            ("FLOP per token", f"{fpt:.4g} ({args.mode})"),
            ("tokens/s per chip", f"{per_chip:,.0f}"),
            ("tokens/s total", f"{per_chip * n:,.0f}"),
            ("price", f"${price:.2f} per chip-hour ({how})"),
            ("USD per million tokens", f"{usd:.4f}"),
        ]
    )
    return 0


def _mfu_cmd(args: argparse.Namespace) -> int:
    c = cost.chip(args.chip)
    fpt = _fpt(args)
    m = cost.mfu_fraction(
        real("--tokens-per-s", args.tokens_per_s), fpt, c.peak_bf16_flop_per_s, positive_whole("--chips", args.chips)
    )
    _table(
        [("chip", c.name), ("FLOP per token", f"{fpt:.4g} ({args.mode})"), ("MFU", f"{m:.1%}")]
        + (
            [("note", "MFU above 100%: the inputs are inconsistent (check the parameter count and mode)")]
            if m > 1
            else []
        )
    )
    return 0


def _image_cmd(args: argparse.Namespace) -> int:
    c = cost.chip(args.chip)
    price, how = _price(args, c)
    s = positive_real("--ms-per-step", args.ms_per_step) / 1000.0
    steps = positive_whole("--steps", args.steps)
    usd = cost.usd_per_item(
        s, steps, price, positive_whole("--chips", args.chips), fraction("--utilisation", args.utilisation)
    )
    _table(
        [
            ("chip", c.name),
            ("seconds per image", f"{s * steps:.3f}"),
            ("price", f"${price:.2f} per chip-hour ({how})"),
            ("USD per image", f"{usd:.5f}"),
            ("images per USD", f"{1 / usd:,.1f}"),
        ]
    )
    return 0


def _train_cmd(args: argparse.Namespace) -> int:
    c, n, _, per_chip, price, how = _throughput(args)
    tokens = positive_real("--tokens", args.tokens)
    secs = cost.train_time_s(tokens, per_chip * n)
    usd = cost.train_cost_usd(tokens, per_chip, price, fraction("--utilisation", args.utilisation))
    _table(
        [
            ("chip", f"{c.name} x {n:g}"),
            ("tokens/s total", f"{per_chip * n:,.0f}"),
            ("time", f"{secs / 86400:,.2f} days"),
            ("price", f"${price:.2f} per chip-hour ({how})"),
            ("cost", f"${usd:,.0f}"),
        ]
    )
    return 0


def _breakeven_cmd(args: argparse.Namespace) -> int:
    cur_chip, new_chip = cost.chip(args.from_chip), cost.chip(args.to_chip)
    cur_price, cur_how = _price(args, cur_chip, "from_")
    new_price, new_how = _price(args, new_chip, "to_")
    current = cost.Side(
        cur_chip.id,
        cur_price,
        fraction("--from-mfu", args.from_mfu),
        fraction("--from-utilisation", args.from_utilisation),
    )
    proposed = cost.Side(
        new_chip.id, new_price, fraction("--to-mfu", args.to_mfu), fraction("--to-utilisation", args.to_utilisation)
    )
    fleet = positive_whole("--from-chips", args.from_chips)
    flop_per_month = (
        fleet * cost.hours_per_month() * 3600 * current.utilisation * current.mfu * cur_chip.peak_bf16_flop_per_s
    )
    m = cost.Migration(
        kernels=whole("--kernels", args.kernels),
        person_weeks_per_kernel=real("--weeks-per-kernel", args.weeks_per_kernel),
        port_person_weeks=real("--port-weeks", args.port_weeks),
        validation_person_weeks=real("--validation-weeks", args.validation_weeks),
        usd_per_person_week=real("--usd-per-person-week", args.usd_per_person_week),
        team_size=whole("--team", args.team),
        velocity_loss=unit_interval("--velocity-loss", args.velocity_loss),
        disruption_weeks=real("--disruption-weeks", args.disruption_weeks),
        ongoing_person_weeks_per_month=real("--ongoing-weeks-per-month", args.ongoing_weeks_per_month),
    )
    horizon = real("--horizon-months", args.horizon_months)
    d = cost.decide(flop_per_month, current, proposed, m, horizon)
    p_star = cost.break_even_current_usd_per_chip_hour(flop_per_month, current, proposed, m, horizon)
    be = "never (no monthly saving)" if math.isinf(d.break_even_months) else f"{d.break_even_months:.1f} months"
    _table(
        [
            ("current", f"{fleet:g} x {cur_chip.name} at ${cur_price:.2f}/h ({cur_how}), MFU {current.mfu:.0%}"),
            ("proposed", f"{new_chip.name} at ${new_price:.2f}/h ({new_how}), MFU {proposed.mfu:.0%}"),
            ("compute per month now", f"${d.current_monthly_usd:,.0f}"),
            ("compute per month after", f"${d.proposed_monthly_usd:,.0f}"),
            ("extra engineering per month", f"${d.ongoing_usd_per_month:,.0f}"),
            ("saving per month", f"${d.monthly_saving_usd:,.0f}"),
            ("one-time cost", f"${d.one_time_usd:,.0f}"),
            ("break-even", be),
            (f"net over {d.horizon_months:g} months", f"${d.net_over_horizon_usd:,.0f}"),
            ("stay if you pay under", f"${p_star:.2f} per {cur_chip.name} hour"),
            ("verdict", "migrate" if d.migrate else "stay"),
        ]
    )
    return 0


def _flop_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--chip", required=True, help="chip id (see 'xlaport cost chips')")
    p.add_argument("--params", required=True, help="model parameters without the input embedding, e.g. 8e9")
    p.add_argument(
        "--mode",
        default="training",
        choices=("training", "inference"),
        help="6N FLOPs per token (training) or 2N (inference); default training",
    )
    for flag in ("--layers", "--heads", "--head-dim", "--seq-len"):
        p.add_argument(flag, default=0, help="attention term (give all four, or none)")
    p.add_argument("--chips", default=1, help="number of chips (default 1)")


def _price_args(p: argparse.ArgumentParser, prefix: str = "") -> None:
    dash = prefix.replace("_", "-")
    p.add_argument(f"--{dash}price", default=None, help="your price in USD per chip-hour (default: the published one)")
    p.add_argument(
        f"--{dash}term",
        default="on_demand",
        choices=cost.PRICE_TERMS,
        help="which published price to use (default on_demand)",
    )
    if not prefix:
        p.add_argument("--utilisation", default=1.0, help="fraction of paid hours doing work (default 1)")


def configure(p: argparse.ArgumentParser) -> None:
    p.description = "Pricing math from sourced hardware facts (xlaport/reference/data/hardware.toml)."
    cs = p.add_subparsers(dest="cost_command", metavar="QUESTION", parser_class=OneLineParser)

    c = cs.add_parser("chips", help="list chips, peak FLOP/s, memory and published prices")
    c.add_argument("--sources", action="store_true", help="also print every value's source, date and evidence")

    t = cs.add_parser("tokens", help="tokens/s and USD per million tokens at a given MFU")
    _flop_args(t)
    t.add_argument("--mfu", required=True, help="model FLOPs utilisation, a fraction (0.4 = 40%%)")
    _price_args(t)

    m = cs.add_parser("mfu", help="MFU from measured tokens/s")
    _flop_args(m)
    m.add_argument("--tokens-per-s", required=True, help="measured tokens/s over all chips")

    i = cs.add_parser("image", help="USD per image and images per USD from time per step")
    i.add_argument("--chip", required=True, help="chip id")
    i.add_argument("--ms-per-step", required=True, help="milliseconds per denoising step")
    i.add_argument("--steps", default=28, help="steps per image (default 28, diffusers FluxPipeline)")
    i.add_argument("--chips", default=1, help="chips per image (default 1)")
    _price_args(i)

    tr = cs.add_parser("train", help="time and cost to train on N tokens")
    _flop_args(tr)
    tr.add_argument("--tokens", required=True, help="training tokens, e.g. 1e12")
    tr.add_argument("--mfu", required=True, help="model FLOPs utilisation, a fraction")
    _price_args(tr)

    b = cs.add_parser("breakeven", help="months until a migration pays back, and the net over a horizon")
    b.add_argument("--from-chip", required=True, help="chip you run on now")
    b.add_argument("--from-chips", required=True, help="how many of them you keep busy now")
    b.add_argument("--from-mfu", required=True, help="MFU you reach now")
    b.add_argument("--from-utilisation", default=1.0, help="fraction of paid hours doing work now (default 1)")
    _price_args(b, "from_")
    b.add_argument("--to-chip", required=True, help="chip you would move to")
    b.add_argument("--to-mfu", required=True, help="MFU you expect there")
    b.add_argument("--to-utilisation", default=1.0, help="fraction of paid hours doing work there (default 1)")
    _price_args(b, "to_")
    b.add_argument("--kernels", default=0, help="custom kernels to rewrite in Pallas/NKI (default 0)")
    b.add_argument("--weeks-per-kernel", default=2.0, help="person-weeks per kernel (default 2)")
    b.add_argument("--port-weeks", default=4.0, help="person-weeks of porting and recompile work (default 4)")
    b.add_argument("--validation-weeks", default=4.0, help="person-weeks of validation (default 4)")
    b.add_argument("--usd-per-person-week", default=5000.0, help="loaded cost of a person-week (default 5000)")
    b.add_argument("--team", default=1, help="people whose velocity drops during the move (default 1)")
    b.add_argument("--velocity-loss", default=0.0, help="fraction of their velocity lost (default 0)")
    b.add_argument("--disruption-weeks", default=0.0, help="weeks the loss lasts (default 0)")
    b.add_argument(
        "--ongoing-weeks-per-month",
        default=0.0,
        help="extra person-weeks a month after the move (new kernels written twice; default 0)",
    )
    b.add_argument("--horizon-months", default=24, help="months to total over (default 24)")


_QUESTIONS = {
    "chips": _chips_cmd,
    "tokens": _tokens_cmd,
    "mfu": _mfu_cmd,
    "image": _image_cmd,
    "train": _train_cmd,
    "breakeven": _breakeven_cmd,
}


def run(args: argparse.Namespace) -> int:
    if not args.cost_command:
        raise ValueError("name a question: " + ", ".join(_QUESTIONS) + " (see 'xlaport cost --help')")
    return _QUESTIONS[args.cost_command](args)
