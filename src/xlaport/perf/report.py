"""Tables of the performance estimate's results, as rows of display strings (torch-free).

Each function takes what :mod:`xlaport.perf` returns and gives rows a notebook renders with
:func:`xlaport.notebook.markdown_table` (or a report writes out), so a chapter never lays out columns by hand.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..text import figures

__all__ = [
    "regimes_table",
    "estimate_table",
    "decode_table",
    "validation_table",
    "table_error",
    "published_table",
    "flux_table",
    "qwen_table",
    "price_table",
    "step_summary",
    "validation_record",
]


def _rows(rows: Iterable[Any], what: str) -> list[Any]:
    out = list(rows) if not isinstance(rows, (str, bytes, Mapping)) else []
    if not out:
        raise ValueError(f"{what} needs at least one row")
    return out


def _need(row: Mapping[str, Any], keys: Sequence[str], what: str) -> None:
    if not isinstance(row, Mapping):
        raise ValueError(f"{what}: a row must be a dict, got {type(row).__name__}")
    missing = [k for k in keys if k not in row]
    if missing:
        raise ValueError(f"{what}: a row lacks {missing[0]!r}")


def regimes_table(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, str]]:
    """:func:`xlaport.perf.regimes` rows: calls, intensity, bound and unfused time per op class, with each class's
    share of the unfused total."""
    table = _rows(rows, "regimes_table()")
    for r in table:
        _need(r, ("op_class", "calls", "intensity", "bound", "seconds"), "regimes_table()")
    total = sum(r["seconds"] for r in table)
    return [
        {
            "op class": r["op_class"],
            "calls": f"{r['calls']:,}",
            "FLOP/B": figures(r["intensity"]),
            "bound": r["bound"],
            "ms unfused": f"{r['seconds'] * 1e3:.1f}",
            "share": f"{r['seconds'] / total:.0%}" if total > 0 else "n/a",
        }
        for r in table
    ]


def estimate_table(est: Any) -> list[dict[str, str]]:
    """An :class:`~xlaport.perf.estimate.Estimate`: per chip the chips used, the step's band (fused and overlapped
    .. unfused), the bound at the fast end, the MFU band and the price per million tokens (where priced)."""
    chips = getattr(est, "chips", None)
    if chips is None:
        raise ValueError(f"estimate_table() takes an Estimate, got {type(est).__name__}")
    out = []
    for c in _rows(chips, "estimate_table()"):
        r = c.row()
        mtok = r.get("usd_per_million_tokens")
        out.append(
            {
                "chip": r["chip"],
                "chips": str(r["chips"]),
                "expected (ms)": "" if r["expected_step_s"] is None else f"{r['expected_step_s'] * 1e3:.0f}",
                "band (ms)": f"{r['step_s'][0] * 1e3:.0f}–{r['step_s'][1] * 1e3:.0f}",
                "bound": r["low_bound"],
                "MFU": f"{r['mfu'][0]:.0%}–{r['mfu'][1]:.0%}",
                "$ per M tokens": f"{mtok[0]:.3f}–{mtok[1]:.3f}" if mtok else "no price",
            }
        )
    return out


def decode_table(sweep: Iterable[Any], chip: str = "the chip") -> list[dict[str, str]]:
    """:func:`xlaport.perf.decode_sweep` steps: tokens per second, bound and whether the batch's weights and KV
    cache fit ``chip``."""
    out = []
    for st in _rows(sweep, "decode_table()"):
        if not hasattr(st, "tokens_per_s"):
            raise ValueError(f"decode_table() takes DecodeStep rows, got {type(st).__name__}")
        out.append(
            {
                "batch": f"{st.batch:,}",
                "tokens/s": f"{st.tokens_per_s:,.0f}",
                "bound": st.bound,
                f"fits {chip}": "yes" if st.fits else "no",
            }
        )
    return out


def validation_table(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, str]]:
    """Predicted against measured step times (:func:`xlaport.perf.validate` rows, or a committed record's
    summary): the case, its bound, both times and the prediction's error."""
    out = []
    for r in _rows(rows, "validation_table()"):
        _need(r, ("case", "bound", "predicted_s", "measured_s", "error"), "validation_table()")
        out.append(
            {
                "case": r["case"],
                "bound": r["bound"],
                "predicted": f"{r['predicted_s'] * 1e3:.2f} ms",
                "measured": f"{r['measured_s'] * 1e3:.2f} ms",
                "error": f"{table_error(r):+.0%}",
            }
        )
    return out


def table_error(row: Mapping[str, Any]) -> float:
    """A validation row's error as its table shows it: predicted over measured, minus one (negative: the prediction
    was faster than the run, i.e. optimistic). Computed from the two times shown, so the table recomputes."""
    return float(row["predicted_s"]) / float(row["measured_s"]) - 1


def _rate_or_time(kind: str, seconds: float) -> str:
    if kind in ("training", "serving"):
        return f"{1 / seconds:,.0f}"
    return f"{seconds * 1e3:.3g}" if seconds < 1 else f"{seconds:.3g} s"


PUBLISHED_UNITS = {
    "training": "tokens/s per chip",
    "serving": "output tokens/s per chip",
    "decode": "ms per output token",
    "prefill": "ms to the first token",
}


def published_table(predictions: Iterable[Any], kind: str | None = None) -> list[dict[str, str]]:
    """:func:`xlaport.perf.calibrate.evaluate` rows (those of ``kind`` when given): per published run the expected
    value with its interval, the measured value, the error (expected time over measured time, minus one: negative is
    optimistic). The first column's header carries the unit; a held-out run is marked after its id. (Whether the
    measured value lies inside the interval is in the same row: four columns read on a phone.)"""
    rows = [p for p in _rows(predictions, "published_table()") if kind is None or getattr(p, "kind", None) == kind]
    if not rows:
        raise ValueError(f"published_table(): no run of kind {kind!r}")
    out = []
    for p in rows:
        if not hasattr(p, "expected_s"):
            raise ValueError(f"published_table() takes Prediction rows, got {type(p).__name__}")
        fast, slow = p.interval_s
        lo, hi = sorted((_rate_or_time(p.kind, fast), _rate_or_time(p.kind, slow)), key=_number)
        head = f"{p.kind} run ({PUBLISHED_UNITS[p.kind]})" if kind else f"run ({PUBLISHED_UNITS[p.kind]})"
        out.append(
            {
                head: p.run_id + (" · held out" if p.held_out else ""),
                "expected (interval)": f"{_rate_or_time(p.kind, p.expected_s)} ({lo}–{hi})",
                "measured": _rate_or_time(p.kind, p.measured_s),
                "error": f"{p.error:+.0%}",
            }
        )
    return out


def _number(text: str) -> float:
    value = float(text.split()[0].replace(",", ""))
    return value * 1e3 if text.endswith(" s") else value


def flux_table(rows: Iterable[Mapping[str, Any]], claimed_ms: float) -> list[dict[str, str]]:
    """:func:`xlaport.perf.flux_claim` rows against a claimed step time: the step's FLOPs, the v6e floor, and the
    MFU the claim implies (flagged where the claim is faster than the chip can go)."""
    if isinstance(claimed_ms, bool) or not isinstance(claimed_ms, (int, float)) or not claimed_ms > 0:
        raise ValueError(f"flux_table(): claimed_ms must be a positive number, got {claimed_ms!r}")
    out = []
    for r in _rows(rows, "flux_table()"):
        _need(
            r,
            ("height", "width", "batch", "flop", "floor_s", "floor_bound", "implied_mfu", "consistent"),
            "flux_table()",
        )
        out.append(
            {
                "image": f"{r['height']}x{r['width']}",
                "batch": str(r["batch"]),
                "TFLOP": f"{r['flop'] / 1e12:.1f}",
                "v6e floor": f"{r['floor_s'] * 1e3:.1f} ms ({r['floor_bound']})",
                f"MFU {claimed_ms:g} ms means": f"{r['implied_mfu']:.0%}"
                + ("" if r["consistent"] else ": faster than the chip can go"),
            }
        )
    return out


def qwen_table(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, str]]:
    """:func:`xlaport.perf.qwen3_mfu_claim` rows: FLOPs per token and the tokens per second the claimed MFU means,
    per chip and in all."""
    out = []
    for r in _rows(rows, "qwen_table()"):
        _need(r, ("seq_len", "flop_per_token", "tokens_per_s_per_chip", "tokens_per_s_total"), "qwen_table()")
        out.append(
            {
                "sequence": f"{r['seq_len']:,}",
                "GFLOP per token": f"{r['flop_per_token'] / 1e9:.1f}",
                "tokens/s per chip": f"{r['tokens_per_s_per_chip']:,.0f}",
                "M tokens/s in all": f"{r['tokens_per_s_total'] / 1e6:,.0f}",
            }
        )
    return out


def price_table(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, str]]:
    """:func:`xlaport.perf.price_claim`'s ``decode`` rows: tokens per second per chip, whether the batch fits, and
    how far short of the price's throughput it falls."""
    out = []
    for r in _rows(rows, "price_table()"):
        _need(r, ("batch", "tokens_per_s", "fits", "ratio_needed"), "price_table()")
        out.append(
            {
                "decode batch": f"{r['batch']:,}",
                "tokens/s per chip": f"{r['tokens_per_s']:,.0f}",
                "fits": "yes" if r["fits"] else "no",
                "short of the price": f"{r['ratio_needed']:.1f}x",
            }
        )
    return out


def step_summary(step: Any, trace_s: float | None = None) -> str:
    """Two lines on a traced step (:class:`~xlaport.perf.trace.StepTrace`): parameters, op calls, TFLOPs (and how
    long the trace took, if given), then the bytes it moves, fused and unfused."""
    summary = getattr(step, "summary", None)
    if not callable(summary):
        raise ValueError(f"step_summary() takes a StepTrace, got {type(step).__name__}")
    s = summary()
    traced = "" if trace_s is None else f", traced in {trace_s:.1f} s"
    return (
        f"{s['params'] / 1e9:.2f} B parameters, {s['ops']} op calls, {s['flop'] / 1e12:.0f} TFLOP per step{traced}\n"
        f"bytes per step: {s['bytes_fused'] / 1e9:.0f} GB at least (fused), {s['bytes_unfused'] / 1e9:.0f} GB unfused"
    )


def validation_record(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The committed record of predicted against measured CPU step times (``benchmarks/perf_cpu_validation.py``
    writes it), or ``None`` where the file is absent (a copy of a notebook outside a checkout)."""
    p = Path(path)
    if not p.is_file():
        return None
    try:
        record = json.loads(p.read_text())
    except json.JSONDecodeError as e:
        raise ValueError(f"validation_record(): {p} is not JSON ({e.msg}, line {e.lineno})") from None
    if not isinstance(record, dict) or not isinstance(record.get("summary"), list):
        raise ValueError(f"validation_record(): {p} has no 'summary' list of cases")
    return record
