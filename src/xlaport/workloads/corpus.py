"""Text for the workload chapters without downloading anything: a word-level tokenizer made in memory and
synthetic documents of varied lengths.

>>> tok = word_tokenizer(256)                  # "<pad>" is id 0, "<unk>" id 1, then "w0" .. "w253"
>>> texts = synthetic_texts(48, (12, 120), seed=0, avoid_multiple_of=64)
>>> ids = [tok(t)["input_ids"] for t in texts]
"""

from __future__ import annotations

import random
from typing import Any

from ..validate import integer

__all__ = ["word_tokenizer", "synthetic_texts", "PAD", "UNK"]

PAD, UNK = "<pad>", "<unk>"


def word_tokenizer(vocab_size: int = 256) -> Any:
    """A ``transformers`` fast tokenizer over the words ``w0 .. w{vocab_size - 3}``, split on whitespace, with
    ``<pad>`` = 0 and ``<unk>`` = 1: what the collators and the Trainer need, built without a download."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    n = integer("vocab_size", vocab_size, minimum=3)
    vocab = {PAD: 0, UNK: 1, **{f"w{i}": i + 2 for i in range(n - 2)}}
    core = Tokenizer(models.WordLevel(vocab, unk_token=UNK))
    core.pre_tokenizer = pre_tokenizers.Whitespace()
    return PreTrainedTokenizerFast(tokenizer_object=core, pad_token=PAD, unk_token=UNK)


def synthetic_texts(
    n: int,
    lengths: tuple[int, int],
    *,
    seed: int = 0,
    vocab_size: int = 256,
    avoid_multiple_of: int | None = None,
) -> list[str]:
    """``n`` documents of random words, each of a length drawn uniformly from ``lengths`` (inclusive), seeded.

    ``avoid_multiple_of`` redraws lengths that are multiples of it, so that a batch padded to its longest
    document never has the shape a bucketed batch has (a chapter can then count each policy's compiles in one
    process without one policy reusing another's program)."""
    count = integer("n", n, minimum=1)
    if not (isinstance(lengths, tuple) and len(lengths) == 2):
        raise ValueError(f"lengths must be a (shortest, longest) tuple, got {lengths!r}")
    lo = integer("shortest length", lengths[0], minimum=1)
    hi = integer("longest length", lengths[1], minimum=lo)
    words = integer("vocab_size", vocab_size, minimum=3) - 2
    step = None if avoid_multiple_of is None else integer("avoid_multiple_of", avoid_multiple_of, minimum=2)
    if step is not None and all(k % step == 0 for k in range(lo, hi + 1)):
        raise ValueError(f"every length in {lengths} is a multiple of {step}")
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        k = rng.randint(lo, hi)
        while step is not None and k % step == 0:
            k = rng.randint(lo, hi)
        out.append(" ".join(f"w{rng.randrange(words)}" for _ in range(k)))
    return out
