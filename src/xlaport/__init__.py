"""xlaport: move PyTorch CUDA code to Google TPUs (TorchTPU) and AWS Trainium (TorchNeuron).

Module map (torch is imported only by the modules that need it; ``import xlaport`` is light)::

    xlaport.targets        target("tpu"|"neuron"|"cuda"|"cpu"|"auto"): a device, real or emulated, with its rules
    xlaport.profiles       each target's documented behaviour, as data with sources
    xlaport.detect         find TPUs (PCI scan), Trainium and CUDA without starting any of them
    xlaport.metrics        one reader of backend counters: compiles, executions, transfers, CPU fallbacks
    xlaport.validate       one-line ValueErrors for numbers users pass in (torch-free)
    xlaport.notebook       glue(), plural(), sci() and timer() for the book's chapters; reader-friendly torch logs
    xlaport.text           plural() and sci(): counts and small numbers written for prose (torch-free)
    xlaport.diagrams       the book's diagrams, matplotlib only: lazy_vs_eager, fallback_chain, schedule_views, kv_cache, migration_flowchart

    xlaport.recompile      monitor (RecompileMonitor), guards (storage-offset guard), buckets, packing, persistent_cache
    xlaport.ops            trace (aten_ops), support (per-target tables), coverage, fallback (CPU-fallback switch), entry
    xlaport.numerics       nonfinite (NonFiniteFinder), attention (inf/NaN reproductions and fixes), precision (TPU float32 matmul rule)
    xlaport.kernels        bridge (pallas_op: jax_op or interpret mode), ops (rmsnorm, matmul_bias_relu, RMSNorm), report, fusion
    xlaport.distributed    launch (per-rank processes), mesh (SPMD on N devices, shards), hlo (collective counts), streams, toy
    xlaport.cost           facts (sourced hardware data), throughput (MFU, cost per unit), breakeven (torch-free)
    xlaport.scan           scan(): CUDA-isms, kernels and recompile risks, static and torch-free; SARIF/JSON/markdown
    xlaport.doctor         diagnose(): scan + ops per target + recompile probe + effort + break-even; HTML report
    xlaport.zoo            registry (tiny HF configs, random weights, no downloads), sweep (forward / training step / cliff)
    xlaport.models         the chapters' small models: TinyWhisper, GPT, TinyDiT
    xlaport.exercises      checks: the chapters' exercise checkers (Check, check_buckets, check_rewrite, ...)
    xlaport.reference      data files with provenance, api_mapping, cite (source_md), one renderer per generated page
    xlaport.cli            the ``xlaport`` command: one module per subcommand, loaded lazily
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._lazy import lazy_exports

__version__ = "0.1.0"
__all__ = ["Profile", "Rule", "Target", "TARGET_NAMES", "profile", "target", "__version__"]

# Imported on first use, so that torch-free tools (xlaport.cost, the CLI's help) start fast.
_LAZY = {
    "Profile": "profiles",
    "Rule": "profiles",
    "profile": "profiles",
    "Target": "targets",
    "TARGET_NAMES": "targets",
    "target": "targets",
}

if TYPE_CHECKING:  # pragma: no cover
    from .profiles import Profile, Rule, profile
    from .targets import TARGET_NAMES, Target, target


__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())
