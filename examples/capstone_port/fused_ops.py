"""RMSNorm in plain PyTorch: XLA fuses it on TPU and Trainium, Inductor on CUDA."""

from __future__ import annotations

import torch


def rmsnorm(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """x / rms(x) * weight over the last dimension."""
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight
