"""The chapters' small models, as documented fixtures (random weights, nothing downloaded).

- :class:`~xlaport.models.whisper.TinyWhisper` and :func:`~xlaport.models.whisper.synthetic_mel`:
  a mask-aware Whisper-style encoder-decoder and synthetic log-mel batches (recompile storms).
- :class:`~xlaport.models.gpt.GPT`: a small decoder whose blocks expose their attention halves
  (the walk: training and inference with a KV cache).
- :class:`~xlaport.models.dit.TinyDiT`: an SD3-shaped diffusion transformer (view offsets).
"""

from __future__ import annotations

from .dit import AdaNormBlock, TinyDiT
from .gpt import GPT, Block
from .whisper import TinyWhisper, encoder_frames, synthetic_mel

__all__ = ["GPT", "Block", "TinyDiT", "AdaNormBlock", "TinyWhisper", "synthetic_mel", "encoder_frames"]
