"""The two programs a static-shape server compiles, on the book's GPT: a prefill into one slot of a preallocated KV
cache, and a decode step of every slot at once.

A server for a compiler that wants static shapes (XLA, TorchTPU, TorchNeuron) fixes three things up front: the number
of sequences decoded together (*slots*, vLLM's ``max_num_seqs``), the longest sequence (*max_len*,
``max_model_len``) and the prompt lengths it pads to (*buckets*). Then every decode step has one shape,
``(slots,)`` tokens against a ``(layers, slots, heads, max_len, head_dim)`` cache, whichever requests are running,
and every prefill has one of ``len(buckets)`` shapes; which slot a request occupies and where each sequence has got
to are *values* (tensors), never shapes.

>>> cache = SlotCache.empty(model, slots=8, max_len=128, device=dev)
>>> first = prefill(model, cache, padded_prompt, length, slot)   # (1, bucket) ids; length, slot: (1,) tensors
>>> nxt = decode(model, cache, tokens, positions)                # (slots,) ids at (slots,) positions

Inactive slots decode too (their results are ignored): a fixed shape costs the work of the empty slots.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F

from ..validate import integer

__all__ = ["SlotCache", "prefill", "decode", "power_of_two_buckets"]


@dataclass
class SlotCache:
    """Keys and values for every layer, slot and position, allocated once."""

    k: torch.Tensor  # (layers, slots, heads, max_len, head_dim)
    v: torch.Tensor

    @classmethod
    def empty(cls, model: Any, slots: int, max_len: int, device: Any = "cpu") -> SlotCache:
        s = integer("slots", slots, minimum=1)
        n = integer("max_len", max_len, minimum=2)
        if n > model.max_len:
            raise ValueError(f"max_len {n} exceeds the model's {model.max_len} positions")
        block = model.blocks[0]
        d = block.qkv.in_features
        shape = (len(model.blocks), s, block.n_heads, n, d // block.n_heads)
        dtype = block.qkv.weight.dtype
        # made on the host and copied over, so that on XLA the cache is device data from the start: zeros made on
        # the device would be a pending computation, and the first prefill's program would differ from the next
        return cls(torch.zeros(shape, dtype=dtype).to(device), torch.zeros(shape, dtype=dtype).to(device))

    @property
    def slots(self) -> int:
        return int(self.k.shape[1])

    @property
    def max_len(self) -> int:
        return int(self.k.shape[3])

    @property
    def nbytes(self) -> int:
        return 2 * self.k.numel() * self.k.element_size()


def prefill(model: Any, cache: SlotCache, ids: torch.Tensor, length: torch.Tensor, slot: torch.Tensor) -> torch.Tensor:
    """Run a prompt padded to a bucket, ``ids`` of shape ``(1, bucket)``, write its keys and values into ``slot`` of
    the cache, and return the greedy next token after its last real token (``length - 1``), shape ``(1,)``.

    The padding after the prompt is causal-masked away from the real tokens; its keys land in the cache beyond
    ``length``, where decode masks them until it overwrites them."""
    bucket = ids.shape[1]
    positions = torch.arange(bucket, device=ids.device)
    x = model.tok(ids) + model.pos(positions)
    for i, block in enumerate(model.blocks):
        q, k, v = block.split_heads(x)
        cache.k[i, :, :, :bucket].index_copy_(0, slot, k)
        cache.v[i, :, :, :bucket].index_copy_(0, slot, v)
        x = block.finish(x, F.scaled_dot_product_attention(q, k, v, is_causal=True))
    last = model.head(model.ln(x.index_select(1, length - 1)))
    return last[:, 0].argmax(-1)


def decode(model: Any, cache: SlotCache, tokens: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    """One token for every slot: ``tokens`` and ``positions`` of shape ``(slots,)``; each slot attends to its own
    cache up to its position. Returns the greedy next tokens, shape ``(slots,)``."""
    slots, n = cache.slots, cache.max_len
    x = (model.tok(tokens) + model.pos(positions))[:, None]  # (slots, 1, d)
    rows = torch.arange(slots, device=tokens.device)
    visible = (torch.arange(n, device=tokens.device)[None] <= positions[:, None]).view(slots, 1, 1, n)
    for i, block in enumerate(model.blocks):
        q, k, v = block.split_heads(x)  # (slots, heads, 1, head_dim)
        cache.k[i][rows, :, positions] = k[:, :, 0]
        cache.v[i][rows, :, positions] = v[:, :, 0]
        y = F.scaled_dot_product_attention(q, cache.k[i], cache.v[i], attn_mask=visible)
        x = block.finish(x, y)
    return model.head(model.ln(x[:, 0])).argmax(-1)


def power_of_two_buckets(smallest: int, largest: int) -> list[int]:
    """``smallest, 2·smallest, …`` up to ``largest``, which is always the last bucket (vLLM TorchTPU's token buckets
    are built this way, from 16 up to ``max_num_batched_tokens``)."""
    lo = integer("smallest", smallest, minimum=1)
    hi = integer("largest", largest, minimum=lo)
    out = []
    b = lo
    while b < hi:
        out.append(b)
        b *= 2
    return [*out, hi]
