"""The "Hardware facts" reference page: every chip figure with its source, date and evidence."""

from __future__ import annotations

from typing import Any

from ..cost import claim_rows, data_info, reference_rows

__all__ = ["render"]


def _fmt_value(value: Any, unit: str) -> str:
    if isinstance(value, float) and unit == "FLOP/s":
        return f"{value / 1e12:,.0f} TFLOP/s"
    if isinstance(value, float) and unit == "B/s":
        return f"{value / 1e9:,.0f} GB/s"
    if isinstance(value, float):
        return f"{value:,.4g} {unit}"
    return f"{value} {unit}"


def render() -> str:
    """The book's hardware-facts reference page, rendered from ``reference/data/hardware.toml`` at build time."""

    def cell(x: Any) -> str:
        return str(x).replace("|", "\\|").replace("\n", " ")

    info = data_info()
    lines = [
        "# Hardware facts",
        "",
        "**Every chip figure the pricing and estimate chapters use lives in one data file, each value with its source, its "
        f"date and how well it is established.** This page is generated from `{info['file']}` "
        f"(first compiled {info['compiled']}; each row gives the day it was read) when the site is built; `xlaport cost chips` prints the same facts. Evidence: "
        "**V** read in the primary source, **V2** seen only through a copy, **U** unverified.",
        "",
        "| chip | quantity | value | evidence | source (date published; read) | note |",
        "|---|---|---|---|---|---|",
    ]
    for r in reference_rows():
        lines.append(
            f"| {cell(r['chip'])} | `{r['quantity']}` | {cell(_fmt_value(r['value'], r['unit']))} | "
            f"{r['evidence']} | {cell(r['source'])} ({r['date']}; read {r['checked']}) | {cell(r['note'])} |"
        )
    lines += [
        "",
        "## Published figures the chapter checks",
        "",
        "| claim | value | evidence | source (date published; read) | note |",
        "|---|---|---|---|---|",
    ]
    for r in claim_rows():
        lines.append(
            f"| `{r['claim']}` | {cell(_fmt_value(r['value'], r['unit']))} | {r['evidence']} | "
            f"{cell(r['source'])} ({r['date']}; read {r['checked']}) | {cell(r['note'])} |"
        )
    return "\n".join(lines) + "\n"
