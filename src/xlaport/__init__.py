"""xlaport: move PyTorch CUDA code to Google TPUs (TorchTPU) and AWS Trainium (TorchNeuron).

Modules, one concept each:

- :mod:`xlaport.targets`  — get a device for ``cuda``/``tpu``/``neuron``/``cpu``, real or emulated
- :mod:`xlaport.profiles` — each target's documented behaviour, as data with sources
- :mod:`xlaport.detect`   — find real accelerators without starting them
- :mod:`xlaport.recompile` — per-step compiles, compile time and recompile reasons; storm verdict
- :mod:`xlaport.buckets`  — pad variable lengths to a few buckets (with attention masks) to stop recompiles
- :mod:`xlaport.tiny_whisper` — a tiny mask-aware Whisper-style encoder-decoder and synthetic log-mel (recompile chapter)
- :mod:`xlaport.guards`   — TorchTPU's storage-offset guard, applied on the emulated ``tpu`` target
- :mod:`xlaport.cost`     — pricing math from sourced hardware facts: MFU, tokens/s, cost per token/image/run, migration break-even
- :mod:`xlaport.ops`      — the ATen ops a model dispatches, per-target op support (TorchTPU, TorchNeuron, torch_xla), TorchTPU's missing-op rule
- :mod:`xlaport.nonfinite` — find the first inf/NaN in a forward or backward pass (eager or compiled) and name the op
- :mod:`xlaport.attention_numerics` — minimal reproductions of attention inf/NaN in low precision and under compile, with fixes; TorchTPU's SDPA path rule
- :mod:`xlaport.api_mapping` — ``torch.cuda.*`` calls mapped to ``torch.accelerator``/TorchTPU/TorchNeuron, status and source per row, checked against the torch_tpu wheel
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = ["Profile", "Rule", "Target", "TARGET_NAMES", "profile", "target", "__version__"]

# Imported on first use, so that torch-free tools (xlaport.cost, the CLI's help) start fast.
_LAZY = {
    "Profile": "profiles", "Rule": "profiles", "profile": "profiles",
    "Target": "targets", "TARGET_NAMES": "targets", "target": "targets",
}

if TYPE_CHECKING:  # pragma: no cover
    from .profiles import Profile, Rule, profile
    from .targets import TARGET_NAMES, Target, target


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'xlaport' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])
