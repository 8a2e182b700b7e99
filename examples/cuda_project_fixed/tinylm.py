"""TinyLM: a small decoder-only language model (pre-norm attention and MLP blocks, learned positions)."""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F
from fused_ops import rmsnorm

PAD_ID = 0
VOCAB = 96
MAX_LEN = 128


class Block(nn.Module):
    def __init__(self, d: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.norm1 = nn.Parameter(torch.ones(d))
        self.norm2 = nn.Parameter(torch.ones(d))
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, D = x.shape
        q, k, v = self.qkv(rmsnorm(x, self.norm1)).split(D, dim=-1)
        q, k, v = (t.view(B, T, self.heads, D // self.heads).transpose(1, 2) for t in (q, k, v))
        att = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(att.transpose(1, 2).reshape(B, T, D))
        return x + self.mlp(rmsnorm(x, self.norm2))


class TinyLM(nn.Module):
    def __init__(
        self, vocab: int = VOCAB, d: int = 64, heads: int = 4, layers: int = 2, max_len: int = MAX_LEN
    ) -> None:
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(max_len, d)
        self.blocks = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.norm = nn.Parameter(torch.ones(d))
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.tok(tokens) + self.pos(torch.arange(tokens.shape[1], device=tokens.device))
        for blk in self.blocks:
            x = blk(x)
        return self.head(rmsnorm(x, self.norm))


def lm_loss(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Next-token cross-entropy over the real tokens only: padding is dropped."""
    mask = (targets != PAD_ID).to(logits.dtype)
    per_token = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction="none")
    return (per_token * mask.flatten()).sum() / mask.sum().clamp(min=1)


class TrainStep(nn.Module):
    """One training step's forward: the loss of TinyLM on a batch of token ids (B, T+1)."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.model = TinyLM()

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        logits = self.model(tokens[:, :-1])
        return lm_loss(logits, tokens[:, 1:])
