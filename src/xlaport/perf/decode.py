"""Decode as its own regime: one new token per sequence per step, every weight and the KV cache read.

Per step of ``batch`` sequences at context ``context``: matrix FLOPs ``2·N·batch`` plus attention
``4·L·H·Q·context·batch`` (scores and weighted sum over the cache); bytes: the weights once
(``N·b``) plus each sequence's K and V cache (``2·L·kv_heads·Q·context·b``). Weights are shared by
the batch, the cache is not, so batching raises intensity until the cache dominates or compute does.
The batch that fits is bounded by HBM: weights plus ``batch`` caches.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .. import cost
from ..validate import integer, positive
from .machine import Machine

__all__ = ["DecoderShape", "DecodeStep", "decoder_shape", "decode_step", "max_batch", "decode_sweep"]


@dataclass(frozen=True)
class DecoderShape:
    """What decode needs from a decoder: parameters (matmul weights, embedding excluded) and cache shape."""

    params: float  # parameters that multiply (2 FLOPs each per token); excludes the input embedding
    weight_params: float  # parameters read per step (includes the output head, excludes the input embedding)
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    name: str = ""

    def kv_bytes_per_token(self, bytes_per_elem: float = 2) -> float:
        return 2 * self.layers * self.kv_heads * self.head_dim * bytes_per_elem


def decoder_shape(config: dict[str, Any] | str) -> DecoderShape:
    """From a Llama/Qwen-style config dict, or the name of a model in the data file (``qwen3_8b``)."""
    cfg = cost.model_config(config) if isinstance(config, str) else dict(config)
    total, embed = cost.decoder_params(**cfg)
    return DecoderShape(
        params=total - embed,
        weight_params=total - embed,
        layers=int(cfg["num_hidden_layers"]),
        heads=int(cfg["num_attention_heads"]),
        kv_heads=int(cfg["num_key_value_heads"]),
        head_dim=int(cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]),
        name=str(cfg.get("name", config if isinstance(config, str) else "")),
    )


@dataclass(frozen=True)
class DecodeStep:
    machine: str
    batch: int
    context: int
    flop: float
    bytes: float
    seconds: float
    bound: str
    fits: bool

    @property
    def tokens_per_s(self) -> float:
        return self.batch / self.seconds


def decode_step(
    shape: DecoderShape, m: Machine, batch: int, context: int, bytes_per_elem: float = 2, chips: int = 1
) -> DecodeStep:
    """Roofline time of one decode step (``batch`` sequences, ``context`` cached tokens each) on ``chips`` of ``m``
    (weights and caches sharded evenly; collectives not counted)."""
    b = integer("batch", batch, minimum=1)
    s = integer("context", context, minimum=1)
    n = integer("chips", chips, minimum=1)
    positive("bytes_per_elem", bytes_per_elem)
    flop = 2 * shape.params * b + 4 * shape.layers * shape.heads * shape.head_dim * s * b
    moved = shape.weight_params * bytes_per_elem + b * s * shape.kv_bytes_per_token(bytes_per_elem)
    tc, tm = flop / n / m.peak_flop_per_s, moved / n / m.hbm_bytes_per_s
    return DecodeStep(
        machine=m.id,
        batch=b,
        context=s,
        flop=flop,
        bytes=moved,
        seconds=max(tc, tm),
        bound="compute" if tc >= tm else "memory",
        fits=moved <= m.hbm_bytes * n,
    )


def max_batch(shape: DecoderShape, m: Machine, context: int, bytes_per_elem: float = 2, usable: float = 0.9) -> int:
    """The most sequences whose caches fit beside the weights on one chip (0 if the weights alone do not fit)."""
    free = m.hbm_bytes * usable - shape.weight_params * bytes_per_elem
    if free <= 0:
        return 0
    return int(free // (context * shape.kv_bytes_per_token(bytes_per_elem)))


def decode_sweep(
    shape: DecoderShape,
    m: Machine,
    context: int,
    batches: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512),
    bytes_per_elem: float = 2,
) -> list[DecodeStep]:
    """Decode steps over a range of batch sizes (each marked whether it fits one chip's HBM)."""
    out = []
    cap = max_batch(shape, m, context, bytes_per_elem)
    for b in batches:
        st = decode_step(shape, m, b, context, bytes_per_elem)
        out.append(DecodeStep(**{**st.__dict__, "fits": b <= cap}))
    return out
