"""xlaport: move PyTorch CUDA code to Google TPUs (TorchTPU) and AWS Trainium (TorchNeuron).

Modules, one concept each:

- :mod:`xlaport.targets`  — get a device for ``cuda``/``tpu``/``neuron``/``cpu``, real or emulated
- :mod:`xlaport.profiles` — each target's documented behaviour, as data with sources
- :mod:`xlaport.detect`   — find real accelerators without starting them
- :mod:`xlaport.recompile` — per-step compiles, compile time and recompile reasons; storm verdict
- :mod:`xlaport.buckets`  — pad variable lengths to a few buckets (with attention masks) to stop recompiles
- :mod:`xlaport.guards`   — TorchTPU's storage-offset guard, applied on the emulated ``tpu`` target
- :mod:`xlaport.cost`     — pricing math from sourced hardware facts: MFU, tokens/s, cost per token/image/run, migration break-even
- :mod:`xlaport.ops`      — the ATen ops a model dispatches, per-target op support (TorchTPU, TorchNeuron, torch_xla), TorchTPU's missing-op rule
"""

from .profiles import Profile, Rule, profile
from .targets import TARGET_NAMES, Target, target

__version__ = "0.1.0"
__all__ = ["Profile", "Rule", "Target", "TARGET_NAMES", "profile", "target", "__version__"]
