"""A tiny diffusion transformer shaped like Stable Diffusion 3's denoiser (the view-offset chapter).

A velocity model ``v = f(latents, timestep)``: latents are cut into patches, embedded with
learned positions, passed through adaptive-norm blocks whose scales, shifts and gates come from
a sinusoidal timestep embedding, and projected back to latent patches. Much smaller than SD3's
MMDiT and with no text stream: the chapter needs its call pattern, not its quality.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["TinyDiT", "AdaNormBlock"]


class AdaNormBlock(nn.Module):
    """Adaptive-norm transformer block: the timestep embedding ``c`` scales, shifts and gates each sub-layer."""

    def __init__(self, d: int, heads: int = 2) -> None:
        super().__init__()
        self.heads = heads
        self.mod = nn.Linear(d, 6 * d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(approximate="tanh"), nn.Linear(4 * d, d))

    @staticmethod
    def norm(x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)

    def forward(self, x: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
        b, n, d = x.shape
        scale1, shift1, gate1, scale2, shift2, gate2 = self.mod(F.gelu(c, approximate="tanh"))[:, None].chunk(6, -1)
        h = self.norm(x) * (1 + scale1) + shift1
        q, k, v = self.qkv(h).view(b, n, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        x = x + gate1 * self.proj(F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b, n, d))
        return x + gate2 * self.mlp(self.norm(x) * (1 + scale2) + shift2)


class TinyDiT(nn.Module):
    """Velocity model for ``channels`` x ``size`` x ``size`` latents: width ``d``, ``depth`` blocks, ``patch`` x ``patch`` patches."""

    freqs: torch.Tensor

    def __init__(self, channels: int, size: int, d: int, depth: int, patch: int = 2) -> None:
        super().__init__()
        if size % patch or d % 2:
            raise ValueError(f"size ({size}) must be a multiple of patch ({patch}) and d ({d}) even")
        self.c, self.p, self.n = channels, patch, size // patch
        half = d // 2
        self.register_buffer("freqs", torch.tensor([10000.0 ** (-i / half) for i in range(half)]))
        self.embed = nn.Linear(channels * patch * patch, d)
        self.pos = nn.Parameter(0.02 * torch.randn(1, self.n * self.n, d))
        self.t_mlp = nn.Sequential(nn.Linear(d, d), nn.GELU(approximate="tanh"), nn.Linear(d, d))
        self.blocks = nn.ModuleList(AdaNormBlock(d) for _ in range(depth))
        self.out = nn.Linear(d, channels * patch * patch)

    def forward(self, latents: torch.Tensor, timestep: torch.Tensor) -> torch.Tensor:
        b, c, p, n = latents.shape[0], self.c, self.p, self.n
        angles = timestep[:, None].float() * self.freqs[None]
        cond = self.t_mlp(torch.cat([angles.cos(), angles.sin()], dim=-1))
        x = latents.view(b, c, n, p, n, p).permute(0, 2, 4, 1, 3, 5).reshape(b, n * n, c * p * p)
        x = self.embed(x) + self.pos
        for block in self.blocks:
            x = block(x, cond)
        x = self.out(x).view(b, n, n, c, p, p).permute(0, 3, 1, 4, 2, 5)
        return x.reshape(latents.shape)
