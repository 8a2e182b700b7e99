"""Will it be fast, and what will it cost? A step predicted from the model before renting a chip.

Modules (torch is imported only when a trace runs):

- :mod:`~xlaport.perf.trace`: one step traced on ``meta``: FLOPs and bytes per ATen op (forward, backward,
  optimizer), the fused lower bound on bytes, parameters, gradients, optimizer state, saved activations.
- :mod:`~xlaport.perf.machine`: a chip (or this CPU) as the roofline sees it: peak, HBM and link bandwidth, HBM.
- :mod:`~xlaport.perf.roofline`: per-op times, the step's band (fused and overlapped .. unfused and summed),
  the regime of each op class, FSDP collectives on several chips.
- :mod:`~xlaport.perf.memory`: the fewest chips whose HBM holds the step under FSDP.
- :mod:`~xlaport.perf.ladder`: the fixes that make a step fit, cheapest first: gradient accumulation, activation
  checkpointing, bf16 optimizer state, FSDP.
- :mod:`~xlaport.perf.compiled_memory`: the memory XLA assigned a compiled program, read from its buffer assignment.
- :mod:`~xlaport.perf.xla_trace`: torch_xla's profiler trace read into compile, execute, transfer, HLO-op and
  annotation events, and the time each kind was busy.
- :mod:`~xlaport.perf.inference`: prefill, decode with a KV cache (alone, or swept over batch sizes) and serving as
  servers run them, tensor-parallel.
- :mod:`~xlaport.perf.pricing`: cost per step, per image and per million tokens, band carried through.
- :mod:`~xlaport.perf.estimate`: load a model (``module:factory``, a transformers config), trace, estimate every chip.
- :mod:`~xlaport.perf.bench`: this CPU measured, and predicted vs measured step times on it.
- :mod:`~xlaport.perf.claims`: the launch figures in the data file checked against physics.
- :mod:`~xlaport.perf.published`: measured runs from published sources (MaxText, torchtitan, NeMo, vLLM, Neuron,
  MLPerf), each with its source and quote, a held-out third marked before any fit.
- :mod:`~xlaport.perf.calibrate`: how much of the roofline published training and inference runs achieve, per chip
  family, stack and regime, fitted without the held-out runs and checked on them.
- :mod:`~xlaport.perf.report`: the results above as table rows for a notebook or a report.

``xlaport estimate`` is the command line.
"""

from __future__ import annotations

from .._lazy import lazy_exports

_EXPORTS = {
    "OpCount": "trace",
    "StepTrace": "trace",
    "trace_step": "trace",
    "op_class": "trace",
    "OPTIMIZERS": "trace",
    "Machine": "machine",
    "chip": "machine",
    "chips": "machine",
    "Band": "roofline",
    "band": "roofline",
    "op_times": "roofline",
    "regimes": "roofline",
    "collective_bytes": "roofline",
    "Fit": "memory",
    "fewest_chips": "memory",
    "Rung": "ladder",
    "climb": "ladder",
    "first_fit": "ladder",
    "bytes_per_chip": "memory",
    "StepCost": "pricing",
    "step_cost": "pricing",
    "Estimate": "estimate",
    "ChipEstimate": "estimate",
    "estimate": "estimate",
    "estimate_trace": "estimate",
    "load_model": "estimate",
    "example_inputs": "estimate",
    "measure_cpu": "bench",
    "validate": "bench",
    "CASES": "bench",
    "flux_claim": "claims",
    "qwen3_mfu_claim": "claims",
    "price_claim": "claims",
    "PublishedRun": "published",
    "published_runs": "published",
    "regimes_table": "report",
    "estimate_table": "report",
    "decode_table": "report",
    "validation_table": "report",
    "published_table": "report",
    "table_error": "report",
    "ProgramMemory": "compiled_memory",
    "program_memory": "compiled_memory",
    "read_memory": "compiled_memory",
    "Decoder": "inference",
    "decoder": "inference",
    "decoder_from_config": "inference",
    "DecodeStep": "inference",
    "decode_sweep": "inference",
    "largest_batch": "inference",
    "serving": "inference",
    "estimate_inference": "estimate",
    "published_fit": "memory",
    "flux_table": "report",
    "qwen_table": "report",
    "price_table": "report",
    "step_summary": "report",
    "validation_record": "report",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
