"""FLOPs per token, MFU and throughput, and what a unit of work costs at a price per chip-hour.

FLOPs per token follow PaLM, Appendix B (https://arxiv.org/abs/2204.02311): training costs
``6·N + 12·L·H·Q·T`` (N = parameters without the input embedding, L layers, H query heads, Q head
dim, T sequence length); inference (forward only) is a third of that, ``2·N + 4·L·H·Q·T``.
torchtitan computes the training form the same way (``get_nparams_and_flops``). MFU = achieved
FLOP/s / peak dense BF16 FLOP/s of the chips used. Utilisation = the fraction of paid chip-hours
that do useful work (1.0 = never idle).
"""

from __future__ import annotations

import math
from typing import Any, Literal

from ..validate import fraction, non_negative, positive

__all__ = [
    "Mode",
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
]

Mode = Literal["training", "inference"]


def decoder_params(
    *,
    vocab_size: int,
    hidden_size: int,
    intermediate_size: int,
    num_hidden_layers: int,
    num_attention_heads: int,
    num_key_value_heads: int,
    head_dim: int,
    tie_word_embeddings: bool = False,
    **_: Any,
) -> tuple[int, int]:
    """(total parameters, input-embedding parameters) of a Llama/Qwen-style decoder.

    Counts Q/K/V/O projections (grouped-query attention, no biases), a gated MLP (three matrices),
    RMSNorm weights (two per layer, final, and per-head q/k norms as Qwen3 has), the input
    embedding and, unless tied, the output head.
    """
    for k, v in dict(
        vocab_size=vocab_size,
        hidden_size=hidden_size,
        intermediate_size=intermediate_size,
        num_hidden_layers=num_hidden_layers,
        num_attention_heads=num_attention_heads,
        num_key_value_heads=num_key_value_heads,
        head_dim=head_dim,
    ).items():
        positive(k, v)
    d, q = hidden_size, num_attention_heads * head_dim
    kv = num_key_value_heads * head_dim
    attn = d * q + 2 * d * kv + q * d
    mlp = 3 * d * intermediate_size
    norms = 2 * d + 2 * head_dim
    layer = attn + mlp + norms
    embedding = vocab_size * d
    head = 0 if tie_word_embeddings else vocab_size * d
    total = num_hidden_layers * layer + embedding + head + d
    return total, embedding


def flop_per_token(
    n_params: float,
    mode: Mode = "training",
    *,
    n_layers: int = 0,
    n_heads: int = 0,
    head_dim: int = 0,
    seq_len: int = 0,
) -> float:
    """Model FLOPs per token (PaLM, Appendix B): ``6N`` training / ``2N`` inference, plus attention.

    ``n_params`` excludes the input embedding (a lookup, not a matmul). The attention term
    ``12·L·H·Q·T`` (training) or ``4·L·H·Q·T`` (inference) is added when all four of
    ``n_layers``, ``n_heads``, ``head_dim``, ``seq_len`` are given; leave them 0 to omit it.
    """
    n = positive("n_params", n_params)
    if mode not in ("training", "inference"):
        raise ValueError(f"mode must be 'training' or 'inference', got {mode!r}")
    attn = [
        non_negative(k, v)
        for k, v in (("n_layers", n_layers), ("n_heads", n_heads), ("head_dim", head_dim), ("seq_len", seq_len))
    ]
    if any(attn) and not all(attn):
        raise ValueError("attention term needs all of n_layers, n_heads, head_dim, seq_len (or none)")
    per_matmul = 6.0 if mode == "training" else 2.0
    attention = 2 * per_matmul * math.prod(attn) if all(attn) else 0.0
    return per_matmul * n + attention


def mfu_fraction(tokens_per_s: float, flop_per_token: float, peak_flop_per_s: float, n_chips: float = 1) -> float:
    """Model FLOPs utilisation: achieved model FLOP/s over the peak of ``n_chips`` chips (a fraction)."""
    t = positive("tokens_per_s", tokens_per_s)
    f = positive("flop_per_token", flop_per_token)
    p = positive("peak_flop_per_s", peak_flop_per_s)
    n = positive("n_chips", n_chips)
    return t * f / (n * p)


def tokens_per_s(mfu: float, flop_per_token: float, peak_flop_per_s: float, n_chips: float = 1) -> float:
    """Tokens/s that ``n_chips`` chips reach at a given MFU (the inverse of :func:`mfu_fraction`)."""
    m = fraction("mfu", mfu)
    f = positive("flop_per_token", flop_per_token)
    p = positive("peak_flop_per_s", peak_flop_per_s)
    n = positive("n_chips", n_chips)
    return m * n * p / f


# --------------------------------------------------------------------------------------------
# Cost per unit of work


def usd_per_million_tokens(tokens_per_s_per_chip: float, usd_per_chip_hour: float, utilisation: float = 1.0) -> float:
    """USD per 1e6 tokens: a chip-hour's price over the tokens it produces while busy."""
    t = positive("tokens_per_s_per_chip", tokens_per_s_per_chip)
    p = positive("usd_per_chip_hour", usd_per_chip_hour)
    u = fraction("utilisation", utilisation)
    return p / (t * 3600.0 * u) * 1e6


def tokens_per_s_per_chip_for_usd_per_million_tokens(
    usd_per_million_tokens: float, usd_per_chip_hour: float, utilisation: float = 1.0
) -> float:
    """The per-chip throughput a quoted price per million tokens implies (inverse of the above)."""
    c = positive("usd_per_million_tokens", usd_per_million_tokens)
    p = positive("usd_per_chip_hour", usd_per_chip_hour)
    u = fraction("utilisation", utilisation)
    return p / (c / 1e6) / 3600.0 / u


def usd_per_item(
    seconds_per_step: float,
    steps_per_item: float,
    usd_per_chip_hour: float,
    n_chips: float = 1,
    utilisation: float = 1.0,
) -> float:
    """USD per image (or per any item that takes ``steps_per_item`` steps on ``n_chips`` chips)."""
    s = positive("seconds_per_step", seconds_per_step)
    k = positive("steps_per_item", steps_per_item)
    p = positive("usd_per_chip_hour", usd_per_chip_hour)
    n = positive("n_chips", n_chips)
    u = fraction("utilisation", utilisation)
    return s * k * n / 3600.0 * p / u


def items_per_usd(
    seconds_per_step: float,
    steps_per_item: float,
    usd_per_chip_hour: float,
    n_chips: float = 1,
    utilisation: float = 1.0,
) -> float:
    """Images (items) per dollar: ``1 / usd_per_item``."""
    return 1.0 / usd_per_item(seconds_per_step, steps_per_item, usd_per_chip_hour, n_chips, utilisation)


def train_time_s(n_tokens: float, tokens_per_s: float) -> float:
    """Seconds to process ``n_tokens`` at ``tokens_per_s`` (whole system)."""
    return positive("n_tokens", n_tokens) / positive("tokens_per_s", tokens_per_s)


def train_cost_usd(
    n_tokens: float, tokens_per_s_per_chip: float, usd_per_chip_hour: float, utilisation: float = 1.0
) -> float:
    """USD to train on ``n_tokens``: chip-hours (independent of chip count) times price."""
    chip_hours = train_time_s(n_tokens, tokens_per_s_per_chip) / 3600.0
    return chip_hours * positive("usd_per_chip_hour", usd_per_chip_hour) / fraction("utilisation", utilisation)
