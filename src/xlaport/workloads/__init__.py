"""The workloads teams run after the port: fine-tuning with LoRA, serving, quantized inference (the chapters' plumbing).

Modules (torch, transformers and peft are imported only when a function that needs them runs):

- :mod:`~xlaport.workloads.corpus`: a word-level tokenizer built in memory (no download) and synthetic texts of
  varied lengths, seeded.
- :mod:`~xlaport.workloads.lora`: what an adapter trains (trainable parameters against the whole model, by module
  kind), digests that show whether frozen weights moved, and a Trainer callback that counts compiles per step.
- :mod:`~xlaport.workloads.serving`: a continuous-batching decoder loop with fixed decode slots, prefill buckets
  and a preallocated KV cache, beside a naive loop that pads each request to its own length.
- :mod:`~xlaport.workloads.quantize`: weight-only int8 by hand and by torchao, and the errors of a quantized
  model's logits against bf16.
"""

from __future__ import annotations

from .._lazy import lazy_exports

_EXPORTS = {
    "word_tokenizer": "corpus",
    "synthetic_texts": "corpus",
    "Trainable": "lora",
    "trainable": "lora",
    "frozen_digests": "lora",
    "moved": "lora",
    "compile_counter": "lora",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
