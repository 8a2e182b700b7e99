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

:func:`support_table` puts the targets' ``distributed`` rules side by side: each feature's status and what to do
about a gap, with sources.
"""

from __future__ import annotations

from typing import Any

_LABELS = {"tpu": "TPU", "neuron": "Trainium"}


def support_table(tpu: Any, neuron: Any) -> str:
    """What each target supports of distributed training (the ``distributed`` rules of two profiles, e.g.
    ``xlaport.profile("tpu")`` and ``xlaport.profile("neuron")``), as a markdown table and its sources."""
    from ..reference.cite import source_md

    for p in (tpu, neuron):
        if not hasattr(p, "of_kind"):
            raise ValueError(f"support_table takes two xlaport profiles, got {type(p).__name__}")
    theirs = {r.id: r for r in neuron.of_kind("distributed")}
    lines = [f"| feature | {tpu.title} | {neuron.title} | what to do about the gap |", "|---|---|---|---|"]
    sources = []
    for r in tpu.of_kind("distributed"):
        n = theirs.get(r.id)
        advice = [
            f"**{_LABELS.get(p.name, p.title)}:** {rule.extra['advice']}"
            for p, rule in ((tpu, r), (neuron, n))
            if rule is not None and rule.extra["status"] != "supported"
        ]
        status = n.extra["status"] if n else "not documented"
        todo = "<br>".join(advice) or "nothing: port the calls (see the tabs above)"
        lines.append(f"| {r.extra['feature']} | {r.extra['status']} | {status} | {todo} |")
        sources.append(
            f"- {r.extra['feature']}: TorchTPU, {source_md(r.source)}"
            + (f"; TorchNeuron, {source_md(n.source)}" if n else "")
        )
    return "\n".join(lines) + "\n\nSources:\n\n" + "\n".join(sources)
