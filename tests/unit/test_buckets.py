"""Bucketing math, padding masks, the collate function, and padded == unpadded for the chapter's model."""

from __future__ import annotations

import pytest
import torch
from torch.utils.data import DataLoader

from xlaport.models.whisper import TinyWhisper, encoder_frames, synthetic_mel
from xlaport.recompile.buckets import (
    BucketCollate,
    bucket_for,
    choose_buckets,
    pad_batch,
    pad_to_length,
    padding_waste,
    parse_policy,
)


@pytest.mark.parametrize(
    "lengths,policy,expected",
    [
        ([130, 250, 700, 990], "pow2", [256, 512, 1024]),
        ([128, 129], "pow2", [128, 256]),
        ([1], "pow2", [1]),
        ([100, 300, 900], "mult128", [128, 256, 384, 512, 640, 768, 896, 1024]),
        ([128], "mult128", [128]),
        (list(range(1, 101)), "quantile:4", [32, 56, 80, 104]),  # 25, 50, 75, 100 rounded up to 8
        ([10, 10, 10, 10], "quantile:3", [16]),  # equal quantiles collapse
    ],
)
def test_choose_buckets(lengths: list[int], policy: str, expected: list[int]) -> None:
    b = choose_buckets(lengths, policy)
    assert b == expected
    assert max(b) >= max(lengths)  # every observed length fits


def test_quantile_round_to() -> None:
    assert choose_buckets(list(range(1, 101)), "quantile:2", round_to=1) == [50, 100]


@pytest.mark.parametrize("bad", ["pow3", "quantile:0", "quantile:", "mult0", "", 5])
def test_bad_policy(bad: object) -> None:
    with pytest.raises(ValueError):
        parse_policy(bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [[], [0, 3], ["a"], None])
def test_bad_lengths(bad: object) -> None:
    with pytest.raises(ValueError):
        choose_buckets(bad, "pow2")  # type: ignore[arg-type]


def test_bucket_for() -> None:
    assert bucket_for(257, [256, 512]) == 512
    assert bucket_for(256, [512, 256]) == 256
    with pytest.raises(ValueError, match="longer than the largest bucket 512"):
        bucket_for(513, [256, 512])
    with pytest.raises(ValueError):
        bucket_for(5, [])


def test_pad_to_length_and_batch_mask() -> None:
    x = torch.arange(6.0).view(2, 3)
    p = pad_to_length(x, 5, dim=1, value=-1.0)
    assert p.shape == (2, 5) and p[:, 3:].eq(-1).all() and torch.equal(p[:, :3], x)
    with pytest.raises(ValueError):
        pad_to_length(x, 2, dim=1)
    items = [torch.ones(4, 3), torch.ones(4, 7)]
    b, m, lens = pad_batch(items, buckets=[8, 16])
    assert b.shape == (2, 4, 8) and lens.tolist() == [3, 7]
    assert m.tolist() == [[True] * 3 + [False] * 5, [True] * 7 + [False]]
    assert b[0, :, 3:].eq(0).all()
    b2, m2, _ = pad_batch(items)  # no buckets: pad to the longest
    assert b2.shape == (2, 4, 7) and m2.sum().item() == 10


def test_collate_in_a_dataloader() -> None:
    g = torch.Generator().manual_seed(0)
    lens = [30, 70, 100, 140, 20]
    ds = [(torch.randn(80, n, generator=g), torch.zeros(5, dtype=torch.long)) for n in lens]
    shapes = {
        name: [tuple(b["features"].shape) for b in DataLoader(ds, batch_size=2, collate_fn=fn)]
        for name, fn in (
            ("batch-max", BucketCollate()),
            ("bucket", BucketCollate([64, 128, 256])),
            ("fixed", BucketCollate(fixed=160)),
        )
    }
    assert shapes["batch-max"] == [(2, 80, 70), (2, 80, 140), (1, 80, 20)]
    assert shapes["bucket"] == [(2, 80, 128), (2, 80, 256), (1, 80, 64)]
    assert shapes["fixed"] == [(2, 80, 160)] * 2 + [(1, 80, 160)]
    batch = next(iter(DataLoader(ds, batch_size=2, collate_fn=BucketCollate([128]))))
    assert batch["mask"].sum(1).tolist() == [30, 70] and batch["tokens"].shape == (2, 5)
    with pytest.raises(ValueError, match="not both"):
        BucketCollate([64], fixed=64)


def test_padding_waste() -> None:
    assert padding_waste([100, 300], [512, 512]) == pytest.approx(1 - 400 / 1024)
    assert padding_waste([5], [5]) == 0.0
    with pytest.raises(ValueError):
        padding_waste([5, 6], [4, 6])


def test_padded_equals_unpadded_for_the_chapter_model() -> None:
    torch.manual_seed(0)
    model = TinyWhisper().eval()
    lengths = [203, 96, 150]
    g = torch.Generator().manual_seed(1)
    mel, mask = synthetic_mel(lengths, pad_to=256, generator=g)  # bucket 256, masked
    tokens = torch.randint(0, 256, (3, 8), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        logits = model(mel, tokens, mask)
        mem, emask = model.encode(mel, mask)
        for i, n in enumerate(lengths):
            alone = mel[i : i + 1, :, :n]  # unpadded, no mask at all
            ref = model(alone, tokens[i : i + 1])
            ref_mem, _ = model.encode(alone)
            ne = encoder_frames(n)
            assert emask is not None and int(emask[i].sum()) == ne
            torch.testing.assert_close(mem[i, :ne], ref_mem[0], atol=1e-5, rtol=1e-4)
            torch.testing.assert_close(logits[i], ref[0], atol=1e-5, rtol=1e-4)
    # and padding without the mask does change the result (so the test above can fail)
    with torch.no_grad():
        unmasked = model(mel, tokens)
    assert not torch.allclose(unmasked[1], logits[1], atol=1e-3)


def test_forward_flops_counts_cpu_attention() -> None:
    from xlaport.recompile.buckets import forward_flops

    q = torch.randn(1, 2, 10, 32)
    assert forward_flops(torch.nn.functional.scaled_dot_product_attention, q, q, q) == 4 * 2 * 10 * 10 * 32
    lin = torch.nn.Linear(8, 4, bias=False)
    assert forward_flops(lin, torch.randn(3, 8)) == 2 * 3 * 8 * 4
    model = TinyWhisper().eval()
    tok = torch.zeros(1, 8, dtype=torch.long)
    f1, f2 = (forward_flops(model, synthetic_mel([n])[0], tok) for n in (200, 400))
    assert f2 > 2 * f1  # encoder self-attention grows with the square of the length
