"""Inference as real servers run it: prefill, decode with a KV cache, and serving, with the weights tensor-parallel.

A server puts one copy of the model on ``chips`` chips and splits every weight matrix across them (tensor
parallelism, as vLLM, TensorRT-LLM and NxD Inference do); each chip reads only its share of the weights and of the KV
cache. The roofline floor of each step on ``n`` chips:

* **prefill** of ``batch`` prompts of ``input_len`` tokens: ``2·A`` FLOPs per token (``A``: the parameters one token
  multiplies, the active ones for a mixture of experts) plus causal attention ``2·L·H·Q·input_len`` per token;
  compute-bound for any real prompt, never faster than one read of the weights;
* **decode** of one token for each of ``batch`` sequences at ``context`` cached tokens: ``2·A + 4·L·H·Q·context``
  FLOPs per sequence, and bytes: the weights once (for a mixture of experts, the experts the batch touches, at most
  all of them) plus each sequence's cache ``2·L·kv_heads·Q·context`` elements;
* the two all-reduces per layer that tensor parallelism adds (``batch·hidden`` elements each, a ring moving
  ``2(n-1)/n`` of them over the chip-to-chip link) overlap the step, so they bound it from below.

**Serving** ``concurrency`` requests of ``input_len`` in and ``output_len`` out (continuous batching, steady state):
each request's prefill, then ``output_len`` decode steps of the whole batch at a mean context of
``input_len + output_len / 2``. Output tokens per second per chip = ``concurrency · output_len`` over that time and
``n``. Where a benchmark does not say its concurrency (a throughput run fills memory), the largest batch whose caches
fit beside the weights.

The floor is what no implementation beats; :mod:`xlaport.perf.calibrate` says how far above it published servers
land. Precision: ``weight_bytes`` 2 for bf16, 1 for fp8 or int8; ``kv_bytes`` likewise for the cache.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .. import cost
from ..validate import integer, positive
from .machine import Machine
from .roofline import ring_allreduce_bytes

__all__ = [
    "Decoder",
    "DecodeStep",
    "Serving",
    "decode_s",
    "decode_sweep",
    "decoder",
    "decoder_from_config",
    "largest_batch",
    "prefill_s",
    "serving",
    "weights_fit",
]

USABLE = 0.9  # the fraction of HBM a program can use, as in :mod:`xlaport.perf.memory` (an assumption)


@dataclass(frozen=True)
class Decoder:
    """What inference needs from a decoder-only transformer."""

    params: float  # every parameter that multiplies (the embedding table excluded; the output head included)
    active: float  # the parameters one token multiplies (== params for a dense model)
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    name: str = ""

    def kv_elements_per_token(self) -> float:
        return 2.0 * self.layers * self.kv_heads * self.head_dim

    @property
    def moe(self) -> bool:
        return self.active < self.params


def decoder(
    params: float,
    layers: int,
    hidden: int,
    heads: int,
    kv_heads: int,
    *,
    active: float | None = None,
    head_dim: int | None = None,
    vocab: int = 0,
    name: str = "",
) -> Decoder:
    """A :class:`Decoder` from a model's headline sizes (``params`` and ``active`` in parameters, embedding
    included as published; the input embedding ``vocab·hidden`` is taken off)."""
    p = positive("params", params)
    a = positive("active", active) if active is not None else p
    lay, d = integer("layers", layers, minimum=1), integer("hidden", hidden, minimum=1)
    h, kv = integer("heads", heads, minimum=1), integer("kv_heads", kv_heads, minimum=1)
    q = integer("head_dim", head_dim, minimum=1) if head_dim else d // h
    emb = integer("vocab", vocab, minimum=0) * d
    if a > p:
        raise ValueError(f"active parameters ({a:.3g}) exceed the total ({p:.3g})")
    return Decoder(p - emb, a - emb, lay, d, h, kv, q, name)


def decoder_from_config(config: Mapping[str, Any] | str) -> Decoder:
    """A dense :class:`Decoder` from a Llama/Qwen-style config (a dict with ``vocab_size``, ``hidden_size``,
    ``intermediate_size``, layers, heads, KV heads and ``head_dim``), or the name of a model in the toolkit's data file
    (``qwen3_8b``); its parameters are counted from the shapes, the input embedding taken off."""
    cfg = cost.model_config(config) if isinstance(config, str) else dict(config)
    total, embed = cost.decoder_params(**cfg)
    heads = integer("num_attention_heads", cfg["num_attention_heads"], minimum=1)
    hidden = integer("hidden_size", cfg["hidden_size"], minimum=1)
    return Decoder(
        params=float(total - embed),
        active=float(total - embed),
        layers=integer("num_hidden_layers", cfg["num_hidden_layers"], minimum=1),
        hidden=hidden,
        heads=heads,
        kv_heads=integer("num_key_value_heads", cfg["num_key_value_heads"], minimum=1),
        head_dim=int(cfg.get("head_dim") or hidden // heads),
        name=str(cfg.get("name", config if isinstance(config, str) else "")),
    )


def _peak(m: Machine, peak_flop_per_s: float | None) -> float:
    return peak_flop_per_s if peak_flop_per_s else m.peak_flop_per_s


def _allreduce_s(model: Decoder, m: Machine, n: int, tokens: int, act_bytes: float = 2) -> float:
    """Time of the step's tensor-parallel all-reduces (two per layer of ``tokens × hidden``) over the links."""
    if n == 1:
        return 0.0
    if not m.link_bytes_per_s:
        raise ValueError(f"{m.id} has no chip-to-chip bandwidth; serve on one chip")
    return ring_allreduce_bytes(2 * model.layers, tokens * model.hidden, act_bytes, n) / (m.link_bytes_per_s / 2)


def prefill_s(
    model: Decoder,
    m: Machine,
    chips: int = 1,
    batch: int = 1,
    input_len: int = 2048,
    *,
    weight_bytes: float = 2,
    peak_flop_per_s: float | None = None,
) -> float:
    """Floor of one prefill of ``batch`` prompts of ``input_len`` tokens on ``chips`` chips, tensor-parallel."""
    n, b, s = (
        integer("chips", chips, minimum=1),
        integer("batch", batch, minimum=1),
        integer("input_len", input_len, minimum=1),
    )
    flop = b * s * (2 * model.active + 2 * model.layers * model.heads * model.head_dim * s)
    compute = flop / n / _peak(m, peak_flop_per_s)
    weights = model.params * weight_bytes / n / m.hbm_bytes_per_s
    return max(compute, weights, _allreduce_s(model, m, n, b * s))


def _decode_terms(
    model: Decoder,
    m: Machine,
    chips: int,
    batch: int,
    context: int,
    weight_bytes: float,
    kv_bytes: float,
    peak_flop_per_s: float | None,
) -> dict[str, float]:
    """The three floors of one decode step, in seconds: compute, memory (weights once, every cache) and links."""
    n, b, s = (
        integer("chips", chips, minimum=1),
        integer("batch", batch, minimum=1),
        integer("context", context, minimum=1),
    )
    flop = b * (2 * model.active + 4 * model.layers * model.heads * model.head_dim * s)
    weights_read = min(model.params, model.active * b) if model.moe else model.params
    moved = weights_read * weight_bytes + b * s * model.kv_elements_per_token() * kv_bytes
    return {
        "compute": flop / n / _peak(m, peak_flop_per_s),
        "memory": moved / n / m.hbm_bytes_per_s,
        "links": _allreduce_s(model, m, n, b),
    }


def decode_s(
    model: Decoder,
    m: Machine,
    chips: int = 1,
    batch: int = 1,
    context: int = 2048,
    *,
    weight_bytes: float = 2,
    kv_bytes: float = 2,
    peak_flop_per_s: float | None = None,
) -> float:
    """Floor of one decode step: one new token for each of ``batch`` sequences holding ``context`` cached tokens."""
    return max(_decode_terms(model, m, chips, batch, context, weight_bytes, kv_bytes, peak_flop_per_s).values())


@dataclass(frozen=True)
class DecodeStep:
    """One decode step of a sweep: its floor, what bounds it, and whether the weights and caches fit."""

    machine: str
    chips: int
    batch: int
    context: int
    seconds: float
    bound: str  # "compute", "memory" or "links"
    fits: bool

    @property
    def tokens_per_s(self) -> float:
        return self.batch / self.seconds


def decode_sweep(
    model: Decoder,
    m: Machine,
    context: int,
    batches: Sequence[int] = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512),
    *,
    chips: int = 1,
    weight_bytes: float = 2,
    kv_bytes: float = 2,
) -> list[DecodeStep]:
    """Decode steps over a range of batch sizes: batching shares one read of the weights among more sequences, until
    the caches or compute dominate; each step says whether its batch fits (:func:`largest_batch`)."""
    cap = largest_batch(model, m, chips, context, weight_bytes=weight_bytes, kv_bytes=kv_bytes)
    out = []
    for b in batches:
        terms = _decode_terms(model, m, chips, b, context, weight_bytes, kv_bytes, None)
        bound = max(terms, key=lambda k: terms[k])
        out.append(DecodeStep(m.id, chips, b, context, terms[bound], bound, fits=b <= cap))
    return out


def largest_batch(
    model: Decoder, m: Machine, chips: int, context: int, *, weight_bytes: float = 2, kv_bytes: float = 2
) -> int:
    """The most sequences of ``context`` tokens whose caches fit beside the weights on ``chips`` chips (0: the weights
    alone do not fit)."""
    n, s = integer("chips", chips, minimum=1), integer("context", context, minimum=1)
    free = m.hbm_bytes * USABLE * n - model.params * weight_bytes
    return max(0, int(free // (s * model.kv_elements_per_token() * kv_bytes)))


def weights_fit(
    model: Decoder, m: Machine, chips: int, batch: int, context: int, *, weight_bytes: float = 2, kv_bytes: float = 2
) -> bool:
    """Whether the weights and ``batch`` caches of ``context`` tokens fit on ``chips`` chips."""
    return largest_batch(model, m, chips, context, weight_bytes=weight_bytes, kv_bytes=kv_bytes) >= batch


@dataclass(frozen=True)
class Serving:
    """The floor of a serving benchmark on one tensor-parallel group."""

    machine: str
    chips: int
    concurrency: int
    input_len: int
    output_len: int
    prefill_s: float  # the batch's prefills
    decode_step_s: float  # one decode step of the whole batch at the mean context
    fits: bool

    @property
    def seconds(self) -> float:
        """Time to serve ``concurrency`` requests end to end."""
        return self.prefill_s + self.output_len * self.decode_step_s

    @property
    def output_tokens_per_s_per_chip(self) -> float:
        return self.concurrency * self.output_len / self.seconds / self.chips

    def as_dict(self) -> dict[str, Any]:
        d = {k: getattr(self, k) for k in self.__dataclass_fields__}
        d["seconds"] = self.seconds
        d["output_tokens_per_s_per_chip"] = self.output_tokens_per_s_per_chip
        return d


def serving(
    model: Decoder,
    m: Machine,
    chips: int = 1,
    input_len: int = 1024,
    output_len: int = 1024,
    concurrency: int | None = None,
    *,
    weight_bytes: float = 2,
    kv_bytes: float = 2,
    peak_flop_per_s: float | None = None,
) -> Serving:
    """Floor of serving ``concurrency`` requests (default: as many as the caches allow) on ``chips`` chips."""
    n = integer("chips", chips, minimum=1)
    i, o = integer("input_len", input_len, minimum=1), integer("output_len", output_len, minimum=1)
    cap = largest_batch(model, m, n, i + o, weight_bytes=weight_bytes, kv_bytes=kv_bytes)
    c = integer("concurrency", concurrency, minimum=1) if concurrency is not None else max(1, cap)
    pre = prefill_s(model, m, n, c, i, weight_bytes=weight_bytes, peak_flop_per_s=peak_flop_per_s)
    dec = decode_s(
        model, m, n, c, i + o // 2, weight_bytes=weight_bytes, kv_bytes=kv_bytes, peak_flop_per_s=peak_flop_per_s
    )
    return Serving(m.id, n, c, i, o, pre, dec, fits=c <= cap)
