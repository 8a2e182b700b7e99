"""Distributed training on emulated multi-device XLA and on CPU process groups: the chapter's plumbing.

Modules (import the one you need; only ``toy`` and ``streams`` import torch at import time):

- :mod:`~xlaport.distributed.launch`: run functions in fresh processes, one per rank, in the background,
  with ports, timeouts and cleanup (gloo runs on CPU; SPMD runs that need ``CPU_NUM_DEVICES``).
- :mod:`~xlaport.distributed.mesh`: the environment for N emulated devices, an SPMD mesh with an ``fsdp``
  axis, and each parameter's shards (shapes and bytes per device).
- :mod:`~xlaport.distributed.hlo`: count the collectives in XLA's optimized HLO (a dump directory or text).
- :mod:`~xlaport.distributed.streams`: CUDA stream/event calls on a target, as its profile rules say
  (on emulated ``tpu``: TorchTPU's no-op contexts and ``NotImplementedError`` texts).
- :mod:`~xlaport.distributed.toy`: the chapter's MLP, learnable synthetic batches, the single-device reference.
"""

from __future__ import annotations
