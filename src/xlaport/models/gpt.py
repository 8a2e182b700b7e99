"""A small GPT-style decoder: the model of the walk (training and inference chapters).

Pre-LN Transformer blocks with causal self-attention through ``F.scaled_dot_product_attention``.
Each block also exposes its two halves, :meth:`Block.split_heads` (LayerNorm, QKV projection,
split into heads) and :meth:`Block.finish` (output projection, residuals, MLP), so an inference
loop can put its own attention (a KV cache) in between, as ``port_inference`` does.

>>> model = GPT(vocab=48, max_len=64, d=32, heads=2, layers=1)
>>> logits = model(torch.zeros(1, 8, dtype=torch.long))     # (1, 8, 48)
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["GPT", "Block"]


class Block(nn.Module):
    """Pre-LN block: causal self-attention, then a 4x MLP, each with a residual."""

    def __init__(self, d: int, heads: int) -> None:
        super().__init__()
        if d % heads:
            raise ValueError(f"width d={d} must be a multiple of heads={heads}")
        self.n_heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def split_heads(self, x: torch.Tensor) -> list[torch.Tensor]:
        """``[q, k, v]``, each ``(batch, heads, time, head_dim)``, from ``x`` of shape ``(batch, time, d)``."""
        B, T, C = x.shape
        return [
            u.view(B, T, self.n_heads, C // self.n_heads).transpose(1, 2) for u in self.qkv(self.ln1(x)).split(C, dim=2)
        ]

    def finish(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """The rest of the block, given the attention output ``y`` of shape ``(batch, heads, time, head_dim)``."""
        B, _, T, _ = y.shape
        x = x + self.proj(y.transpose(1, 2).reshape(B, T, x.shape[-1]))
        return x + self.mlp(self.ln2(x))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = self.split_heads(x)
        return self.finish(x, F.scaled_dot_product_attention(q, k, v, is_causal=True))


class GPT(nn.Module):
    """Token and learned position embeddings, ``layers`` blocks, a final LayerNorm and an untied head."""

    def __init__(self, vocab: int, max_len: int, d: int = 64, heads: int = 4, layers: int = 2) -> None:
        super().__init__()
        for name, v in (("vocab", vocab), ("max_len", max_len), ("d", d), ("heads", heads), ("layers", layers)):
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise ValueError(f"{name} must be a whole number >= 1, got {v!r}")
        self.max_len = max_len
        self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(max_len, d)
        self.blocks = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.ln, self.head = nn.LayerNorm(d), nn.Linear(d, vocab, bias=False)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        """Logits ``(batch, time, vocab)`` for token ids ``idx`` of shape ``(batch, time)``."""
        if idx.dim() != 2 or idx.shape[1] > self.max_len:
            raise ValueError(f"idx must be (batch, time) with time <= {self.max_len}, got shape {tuple(idx.shape)}")
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1], device=idx.device))
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln(x))
