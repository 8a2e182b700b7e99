"""xlaport.models: the chapters' small models build, run, and refuse bad sizes with one-line errors."""

from __future__ import annotations

import pytest
import torch

from xlaport.models import GPT, TinyDiT, TinyWhisper, synthetic_mel


def test_gpt_forward_and_halves_agree() -> None:
    torch.manual_seed(0)
    model = GPT(vocab=48, max_len=16, d=32, heads=2, layers=2).eval()
    idx = torch.randint(0, 48, (2, 10))
    logits = model(idx)
    assert logits.shape == (2, 10, 48)
    # the two halves a KV-cache loop uses give the same result as the block's own forward
    x = model.tok(idx) + model.pos(torch.arange(10))
    blk = model.blocks[0]
    q, k, v = blk.split_heads(x)
    y = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    torch.testing.assert_close(blk.finish(x, y), blk(x))


def test_gpt_bad_sizes() -> None:
    with pytest.raises(ValueError, match="multiple of heads"):
        GPT(vocab=8, max_len=8, d=30, heads=4)
    with pytest.raises(ValueError, match="vocab must be a whole number"):
        GPT(vocab=0, max_len=8)
    with pytest.raises(ValueError, match="time <= 8"):
        GPT(vocab=8, max_len=8, d=16, heads=2)(torch.zeros(1, 9, dtype=torch.long))


def test_tiny_dit_keeps_latent_shape() -> None:
    torch.manual_seed(0)
    model = TinyDiT(channels=16, size=8, d=32, depth=1).eval()
    lat = torch.randn(1, 16, 8, 8)
    assert model(lat, torch.tensor([500.0])).shape == lat.shape
    with pytest.raises(ValueError, match="multiple of patch"):
        TinyDiT(channels=4, size=7, d=32, depth=1)


def test_tiny_whisper_runs() -> None:
    torch.manual_seed(0)
    model = TinyWhisper(enc_layers=1, dec_layers=1).eval()
    mel, mask = synthetic_mel([120, 80], generator=torch.Generator().manual_seed(0))
    assert model(mel, torch.zeros(2, 4, dtype=torch.long), mask).shape[:2] == (2, 4)
