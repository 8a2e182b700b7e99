"""A tiny Whisper-style encoder-decoder and synthetic log-mel batches, for the recompile chapter.

Written for this project (random weights, nothing downloaded). The shape of the
computation follows Whisper: a 2-layer conv stem over 80 mel bins (the second conv has
stride 2), sinusoidal positions, pre-LN Transformer encoder blocks, and a decoder with causal
self-attention and cross-attention over the encoder output. Unlike Whisper, it is
**mask-aware**: padded frames are zeroed after each conv and masked out of every attention,
so a batch padded to a bucket gives the same outputs on its valid positions as the unpadded
batch (``tests/unit/test_buckets.py`` checks this).

>>> model = TinyWhisper().eval()
>>> mel, mask = synthetic_mel([310, 122], generator=torch.Generator().manual_seed(0))
>>> tokens = torch.zeros(2, 8, dtype=torch.long)
>>> logits = model(mel, tokens, mask)          # (2, 8, vocab)
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["TinyWhisper", "synthetic_mel", "encoder_frames"]


def encoder_frames(n_frames: int) -> int:
    """Encoder positions for ``n_frames`` mel frames (conv k=3, stride 2, padding 1)."""
    return (n_frames - 1) // 2 + 1


def synthetic_mel(
    lengths: Sequence[int], n_mels: int = 80, pad_to: int | None = None, generator: torch.Generator | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Random log-mel-like features ``(B, n_mels, T)`` and a validity mask ``(B, T)``.

    ``T`` is ``pad_to`` or the longest length; frames past each length are zero and
    masked False. Values are smooth in time (a cumulative sum of noise, squashed), roughly
    in Whisper's normalised log-mel range [-1, 1].
    """
    if not lengths or any(int(n) < 1 for n in lengths):
        raise ValueError(f"lengths must be a non-empty list of positive ints, got {list(lengths)!r}")
    T = max(int(n) for n in lengths) if pad_to is None else int(pad_to)
    if max(lengths) > T:
        raise ValueError(f"pad_to={pad_to} is shorter than the longest length {max(lengths)}")
    mel = torch.zeros(len(lengths), n_mels, T)
    mask = torch.zeros(len(lengths), T, dtype=torch.bool)
    for i, n in enumerate(lengths):
        noise = torch.randn(n_mels, int(n), generator=generator)
        mel[i, :, :n] = torch.tanh(noise.cumsum(-1) / math.sqrt(int(n)) + 0.3 * noise)
        mask[i, :n] = True
    return mel, mask


def _sinusoids(length: int, channels: int, device: torch.device) -> torch.Tensor:
    half = channels // 2
    inv = torch.exp(-math.log(10000.0) * torch.arange(half, device=device, dtype=torch.float32) / max(half - 1, 1))
    t = torch.arange(length, device=device, dtype=torch.float32)[:, None] * inv[None, :]
    return torch.cat([t.sin(), t.cos()], dim=1)


class _Attention(nn.Module):
    def __init__(self, d: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.q = nn.Linear(d, d)
        self.kv = nn.Linear(d, 2 * d)
        self.out = nn.Linear(d, d)

    def forward(
        self, x: torch.Tensor, ctx: torch.Tensor, key_mask: torch.Tensor | None = None, causal: bool = False
    ) -> torch.Tensor:
        B, Tq, d = x.shape
        Tk = ctx.shape[1]
        h = self.heads
        q = self.q(x).view(B, Tq, h, d // h).transpose(1, 2)
        k, v = self.kv(ctx).view(B, Tk, 2, h, d // h).permute(2, 0, 3, 1, 4)
        mask = None if key_mask is None else key_mask[:, None, None, :]
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal and mask is None)
        return self.out(y.transpose(1, 2).reshape(B, Tq, d))


class _Block(nn.Module):
    def __init__(self, d: int, heads: int, ffn: int, cross: bool) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(d)
        self.attn = _Attention(d, heads)
        self.ln_x = nn.LayerNorm(d) if cross else None
        self.xattn = _Attention(d, heads) if cross else None
        self.ln2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, ffn), nn.GELU(), nn.Linear(ffn, d))

    def forward(
        self,
        x: torch.Tensor,
        mask: torch.Tensor | None,
        mem: torch.Tensor | None = None,
        mem_mask: torch.Tensor | None = None,
    ) -> torch.Tensor:
        y = self.ln1(x)
        x = x + self.attn(y, y, mask, causal=self.xattn is not None)
        if self.xattn is not None and self.ln_x is not None and mem is not None:
            x = x + self.xattn(self.ln_x(x), mem, mem_mask)
        return x + self.mlp(self.ln2(x))


class TinyWhisper(nn.Module):
    """Whisper-shaped encoder-decoder, small enough to compile in seconds on XLA:CPU."""

    enc_pos: torch.Tensor

    def __init__(
        self,
        n_mels: int = 80,
        d: int = 64,
        heads: int = 2,
        enc_layers: int = 2,
        dec_layers: int = 2,
        ffn: int = 128,
        vocab: int = 256,
        max_tokens: int = 32,
        max_frames: int = 3000,
    ) -> None:
        super().__init__()
        if d % heads or d % 2:
            raise ValueError(f"d={d} must be even and divisible by heads={heads}")
        self.conv1 = nn.Conv1d(n_mels, d, 3, padding=1)
        self.conv2 = nn.Conv1d(d, d, 3, stride=2, padding=1)
        self.enc = nn.ModuleList(_Block(d, heads, ffn, cross=False) for _ in range(enc_layers))
        self.enc_ln = nn.LayerNorm(d)
        # fixed sinusoidal positions, computed once (Whisper keeps them as a buffer too)
        self.register_buffer(
            "enc_pos", _sinusoids(encoder_frames(max_frames), d, torch.device("cpu")), persistent=False
        )
        self.embed = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(torch.randn(max_tokens, d) * 0.02)
        self.dec = nn.ModuleList(_Block(d, heads, ffn, cross=True) for _ in range(dec_layers))
        self.dec_ln = nn.LayerNorm(d)

    def encode(self, mel: torch.Tensor, mask: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor | None]:
        """``mel`` (B, n_mels, T), ``mask`` (B, T) True on valid frames -> (B, T', d) and its mask."""
        x = F.gelu(self.conv1(mel))
        if mask is not None:
            x = x * mask[:, None, :]
        x = F.gelu(self.conv2(x))
        emask = None if mask is None else mask[:, ::2]
        if emask is not None:
            x = x * emask[:, None, :]
        x = x.transpose(1, 2)
        if x.shape[1] > self.enc_pos.shape[0]:
            raise ValueError(f"{mel.shape[-1]} frames is longer than this model's max_frames")
        x = x + self.enc_pos[: x.shape[1]]
        for blk in self.enc:
            x = blk(x, emask)
        return self.enc_ln(x), emask

    def forward(self, mel: torch.Tensor, tokens: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """Teacher-forced logits (B, S, vocab) for decoder ``tokens`` (B, S)."""
        mem, emask = self.encode(mel, mask)
        x = self.embed(tokens) + self.pos[: tokens.shape[1]]
        for blk in self.dec:
            x = blk(x, None, mem, emask)
        return self.dec_ln(x) @ self.embed.weight.t()
