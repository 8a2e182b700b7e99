"""The workloads teams run after the port: fine-tuning with LoRA, serving, quantized inference (the chapters' plumbing).

Modules (torch, transformers and peft are imported only when a function that needs them runs):

- :mod:`~xlaport.workloads.corpus`: a word-level tokenizer built in memory (no download) and synthetic texts of
  varied lengths, seeded.
- :mod:`~xlaport.workloads.lora`: what an adapter trains (trainable parameters against the whole model, by module
  kind), digests that show whether frozen weights moved, and a Trainer callback that counts compiles per step.
- :mod:`~xlaport.workloads.serving`: the two programs of a static-shape server on the book's GPT: a prefill into one
  slot of a preallocated KV cache, and a decode step of every slot; and vLLM TorchTPU's power-of-two buckets.
- :mod:`~xlaport.workloads.quantize`: the bytes a quantized model stores (torchao's subclasses counted by what they
  hold), and a compiled program's inputs by element type and its matrix products by operand type.
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
    "SlotCache": "serving",
    "prefill": "serving",
    "decode": "serving",
    "power_of_two_buckets": "serving",
    "stored_bytes": "quantize",
    "program_types": "quantize",
    "ProgramTypes": "quantize",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
