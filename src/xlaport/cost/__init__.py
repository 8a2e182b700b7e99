"""Pricing math: MFU, throughput, cost per token/image/run, and whether a migration pays back.

Hardware facts (peak FLOP/s, memory, prices) live in ``xlaport/reference/data/hardware.toml``,
each value with its source, date and evidence marker. Units are in the names: ``_flop_per_s``,
``_usd``, ``_per_chip_hour``, ``_s``, ``_months``. A month is ``hours_per_month()`` (730) hours.

Modules: :mod:`~xlaport.cost.facts` (the sourced facts), :mod:`~xlaport.cost.throughput` (FLOPs
per token, MFU, tokens/s, cost per unit of work), :mod:`~xlaport.cost.breakeven` (migration
break-even and sensitivity). Everything is re-exported here: ``from xlaport import cost``.
Torch-free. Bad input (negative, zero, NaN, infinite, unknown chip) raises ``ValueError`` with one line.
"""

from __future__ import annotations

from .breakeven import (
    Decision,
    Migration,
    Side,
    break_even_current_usd_per_chip_hour,
    break_even_months,
    decide,
    decision_table,
    monthly_compute_usd,
    one_time_usd,
    relative_rounding,
    sensitivity,
    sensitivity_table,
)
from .facts import (
    DATA_FILE,
    PRICE_TERMS,
    Chip,
    Fact,
    chip,
    chip_names,
    chip_table,
    claim,
    claim_rows,
    claims,
    data_info,
    hours_per_month,
    model_config,
    parse_fact,
    reference_rows,
)
from .throughput import (
    Mode,
    decoder_params,
    flop_per_token,
    items_per_usd,
    mfu_fraction,
    tokens_per_s,
    tokens_per_s_per_chip_for_usd_per_million_tokens,
    train_cost_usd,
    train_time_s,
    usd_per_item,
    usd_per_million_tokens,
)

__all__ = [
    "DATA_FILE",
    "PRICE_TERMS",
    "Fact",
    "Chip",
    "Side",
    "Migration",
    "Decision",
    "Mode",
    "chip",
    "chip_names",
    "claim",
    "claims",
    "model_config",
    "data_info",
    "hours_per_month",
    "reference_rows",
    "claim_rows",
    "parse_fact",
    "decoder_params",
    "flop_per_token",
    "mfu_fraction",
    "tokens_per_s",
    "usd_per_million_tokens",
    "tokens_per_s_per_chip_for_usd_per_million_tokens",
    "usd_per_item",
    "items_per_usd",
    "train_time_s",
    "train_cost_usd",
    "monthly_compute_usd",
    "one_time_usd",
    "break_even_months",
    "decide",
    "sensitivity",
    "break_even_current_usd_per_chip_hour",
    "relative_rounding",
    "chip_table",
    "decision_table",
    "sensitivity_table",
]
