"""``xlaport doctor PATH``: one migration report (markdown on stdout, optional HTML and JSON files).

    xlaport doctor my_project
    xlaport doctor my_project --entry my_project/model.py:Step --input 8x64 --probe 8x64 --probe 8x80 \\
        --from-chip h100_sxm --from-chips 64 --from-mfu 0.4 --to-chip tpu_v6e --to-mfu 0.35 --html report.html
"""

from __future__ import annotations

import argparse
import sys

from .args import TRACE_TARGETS, add_input_option

__all__ = ["configure", "run"]


def configure(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Scan PATH; with --entry, trace it and report per target which ATen ops raise, fall back or are unknown; "
        "with --probe, run it on the emulated tpu in a fresh interpreter over those input shapes and count "
        "compiles; estimate the effort in person-weeks per finding class; with --from-chip/--to-chip, the "
        "break-even of the move. Prints markdown; --html writes a self-contained page with plots."
    )
    p.add_argument("path", help="the project folder (or a file) to audit")
    p.add_argument("--entry", metavar="FILE.py:CALLABLE", help="entry point to trace and probe (MODULE:CALLABLE too)")
    add_input_option(
        p,
        "an input of the entry for the trace (repeat per argument)",
    )
    p.add_argument(
        "--probe",
        action="append",
        default=[],
        metavar="SHAPES",
        help="one probe call's inputs, e.g. 4x17:int64 (several arguments: '4x8;4x8:bool'); repeat for more calls",
    )
    p.add_argument("--probe-repeat", default=2, help="times the probe runs the list of calls (default 2)")
    p.add_argument("--probe-timeout", default=180, help="seconds the probe may take (default 180)")
    p.add_argument(
        "--target",
        action="append",
        choices=TRACE_TARGETS,
        default=None,
        help="op-coverage target (default tpu, neuron)",
    )
    p.add_argument("--assume", action="append", default=[], metavar="KEY=VALUE", help="override an effort assumption")
    p.add_argument("--from-chip", help="chip you run on now (see 'xlaport cost chips')")
    p.add_argument("--from-chips", default=None, help="how many of them you keep busy")
    p.add_argument("--from-mfu", default=None, help="MFU you reach now (default with --entry: the entry's estimate)")
    p.add_argument("--from-price", default=None, help="your price per chip-hour now (default: published)")
    p.add_argument("--from-utilisation", default=1.0, help="fraction of paid hours doing work now (default 1)")
    p.add_argument("--to-chip", help="chip you would move to")
    p.add_argument("--to-mfu", default=None, help="MFU you expect there (default with --entry: the entry's estimate)")
    p.add_argument("--to-price", default=None, help="price per chip-hour there (default: published)")
    p.add_argument("--to-utilisation", default=1.0, help="fraction of paid hours doing work there (default 1)")
    p.add_argument("--usd-per-person-week", default=5000.0, help="loaded cost of a person-week (default 5000)")
    p.add_argument("--horizon-months", default=24, help="months to total over (default 24)")
    p.add_argument("--seed", default="0", help="seed for the random example inputs (default 0)")
    p.add_argument("--html", metavar="FILE", help="also write a self-contained HTML report")
    p.add_argument("--json", metavar="FILE", help="also write the report as JSON")
    p.add_argument(
        "--format", choices=("markdown", "json"), default="markdown", help="what to print (default markdown)"
    )


def _mfu_band(args: argparse.Namespace) -> dict[str, object] | None:
    """With --entry and no --from-mfu/--to-mfu: each side's MFU band from the entry's roofline (xlaport.perf)."""
    if not (args.entry and args.from_chip and args.to_chip) or args.from_mfu is not None or args.to_mfu is not None:
        return None
    from ..perf.entry_band import entry_band, trace_entry_step
    from .args import whole

    tr = trace_entry_step(args.entry, args.input, seed=whole("--seed", args.seed))
    return {"from": entry_band(tr, args.from_chip), "to": entry_band(tr, args.to_chip)}


def _cost(args: argparse.Namespace, band: dict[str, object] | None = None, end: int = 0) -> object | None:
    """The break-even inputs; with ``band``, MFU from the entry's estimate (``end`` 0: slow end, 1: fast end)."""
    from ..doctor import CostInputs
    from .args import positive_real, positive_whole, real

    if band is not None:
        args = argparse.Namespace(**{**vars(args), "from_mfu": band["from"].mfu[end], "to_mfu": band["to"].mfu[end]})  # type: ignore[attr-defined]
    given = [args.from_chip, args.to_chip, args.from_chips, args.from_mfu, args.to_mfu]
    if not any(given):
        return None
    if not all(given):
        raise ValueError(
            "the break-even needs --from-chip, --from-chips, --to-chip and either --from-mfu and --to-mfu "
            "or --entry (MFU then comes from the entry's estimate)"
        )
    return CostInputs(
        from_chip=args.from_chip,
        from_chips=positive_whole("--from-chips", args.from_chips),
        from_mfu=min(1.0, real("--from-mfu", args.from_mfu)),
        to_chip=args.to_chip,
        to_mfu=min(1.0, real("--to-mfu", args.to_mfu)),
        from_price=positive_real("--from-price", args.from_price) if args.from_price is not None else None,
        to_price=positive_real("--to-price", args.to_price) if args.to_price is not None else None,
        from_utilisation=real("--from-utilisation", args.from_utilisation),
        to_utilisation=real("--to-utilisation", args.to_utilisation),
        usd_per_person_week=positive_real("--usd-per-person-week", args.usd_per_person_week),
        horizon_months=positive_real("--horizon-months", args.horizon_months),
    )


def run(args: argparse.Namespace) -> int:
    import os

    from ..doctor import diagnose, parse_assume, parse_probe
    from .args import positive_real, positive_whole, whole

    if not os.path.exists(args.path):
        raise ValueError(f"no such file or folder: {args.path}")
    band = _mfu_band(args)
    rep = diagnose(
        args.path,
        entry=args.entry,
        inputs=args.input,
        probes=[parse_probe(p) for p in args.probe],
        targets=args.target or ["tpu", "neuron"],
        probe_repeat=positive_whole("--probe-repeat", args.probe_repeat),
        probe_timeout=positive_real("--probe-timeout", args.probe_timeout),
        effort=parse_assume(args.assume),
        cost=_cost(args, band),  # type: ignore[arg-type]
        seed=whole("--seed", args.seed),
    )
    if band is not None and rep.cost is not None:
        from ..doctor.report import _cost as price

        fast = price(_cost(args, band, end=1), rep.effort)  # type: ignore[arg-type]
        rep.cost["mfu_source"] = "estimate of the entry (xlaport.perf): the band's slow end; fast end beside it"
        rep.cost["mfu_band"] = {k: v.as_dict() for k, v in band.items()}  # type: ignore[attr-defined]
        rep.cost["break_even_months_band"] = [fast["break_even_months"], rep.cost["break_even_months"]]
        lo, hi = rep.cost["break_even_months_band"]
        print(
            f"MFU from the entry's estimate: {args.from_chip} {band['from'].mfu[0]:.1%}–{band['from'].mfu[1]:.1%}, "  # type: ignore[attr-defined]
            f"{args.to_chip} {band['to'].mfu[0]:.1%}–{band['to'].mfu[1]:.1%}; break-even {lo:.3g}–{hi:.3g} months",  # type: ignore[attr-defined]
            file=sys.stderr,
        )
    for target, path in (("html", args.html), ("json", args.json)):
        if path:
            try:
                with open(path, "w", encoding="utf-8") as fh:
                    fh.write(rep.to_html() if target == "html" else rep.to_json())
            except OSError as e:
                raise ValueError(f"cannot write {path}: {e.strerror or e}") from None
            print(f"wrote {path}", file=sys.stderr)
    print(rep.to_json() if args.format == "json" else rep.to_markdown())
    return 0
