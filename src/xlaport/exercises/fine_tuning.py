"""Chapter *Fine-tuning with LoRA*: what an adapter trains, and how much of a padded batch is padding."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .common import Verdict, fails, guarded, passes, raised

__all__ = ["check_lora_params", "check_padding_share", "HIDDEN_ADAPTED", "HIDDEN_BATCHES"]

#: (adapted layers as (in_features, out_features), rank) the adapter-size check asks about.
HIDDEN_ADAPTED = (
    ([(4096, 4096), (4096, 1024)] * 32, 16),  # Llama 3.1 8B's q_proj and v_proj
    ([(2048, 2048)] * 4, 8),
    ([(768, 2304)], 4),
    ([(512, 512), (512, 128), (1536, 512)], 32),
)


@guarded("LoRA trainable parameters", must_be="a function count(layers, rank)")
def check_lora_params(count: Callable[..., Any]) -> Verdict:
    """``count(layers, rank) -> trainable parameters`` for LoRA on ``layers`` (``(in, out)`` pairs), on
    :data:`HIDDEN_ADAPTED`."""
    done = []
    for layers, rank in HIDDEN_ADAPTED:
        want = sum(rank * (i + o) for i, o in layers)
        where = f"for {len(layers)} adapted layers at rank {rank}"
        try:
            got = count([tuple(x) for x in layers], rank)
            got = int(got)
        except Exception as e:
            return fails(f"{where}: {raised(e, 'it')} (return a whole number)")
        if got == want:
            done.append(f"{got:,}")
            continue
        hint = ""
        if got == sum(i * o for i, o in layers):
            hint = ": that is the layers' own weights, what full fine-tuning trains"
        elif got == sum(rank * i * o for i, o in layers):
            hint = ": an adapter is two thin matrices, A (rank x in) and B (out x rank), not rank copies of the layer"
        elif got in (sum(rank * i for i, _ in layers), sum(rank * o for _, o in layers)):
            hint = ": count both matrices, A (rank x in) and B (out x rank)"
        elif got == rank * sum(i + o for i, o in set(layers)):
            hint = ": every adapted layer has its own adapter, repeated layers included"
        return fails(f"{where}: {got:,}, expected {want:,}{hint}")
    return passes(f"right on {len(done)} unseen models: {', '.join(done)}")


#: (documents' lengths per batch, pad_to_multiple_of) the padding-share check asks about.
HIDDEN_BATCHES = (
    ([[30, 12, 7, 25], [90, 88, 91, 70]], None),
    ([[30, 12, 7, 25], [90, 88, 91, 70]], 32),
    ([[100, 5], [64, 64], [65, 1]], 64),
    ([[17, 17, 17]], None),
    ([[3, 200, 45], [120, 119]], 128),
)


def _share(batches: list[list[int]], multiple: int | None) -> float:
    padded = real = 0
    for lengths in batches:
        longest = max(lengths)
        if multiple:
            longest = -(-longest // multiple) * multiple
        padded += longest * len(lengths)
        real += sum(lengths)
    return 1 - real / padded


@guarded("padding share", must_be="a function share(batches, multiple)")
def check_padding_share(share: Callable[..., Any]) -> Verdict:
    """``share(batches, multiple) -> fraction of the padded tokens that are padding`` when each batch is padded to
    its longest document, rounded up to ``multiple`` when it is not None, on :data:`HIDDEN_BATCHES`."""
    done = []
    for batches, multiple in HIDDEN_BATCHES:
        want = _share(batches, multiple)
        where = f"for batches {batches} padded to {'the longest' if multiple is None else f'a multiple of {multiple}'}"
        try:
            got = float(share([list(b) for b in batches], multiple))
        except Exception as e:
            return fails(f"{where}: {raised(e, 'it')} (return a fraction between 0 and 1)")
        if abs(got - want) < 1e-9:
            done.append(f"{want:.1%}")
            continue
        hint = ""
        if multiple and abs(got - _share(batches, None)) < 1e-9:
            hint = f": round each batch's longest document up to a multiple of {multiple} first"
        elif abs(got - (1 - want)) < 1e-9:
            hint = ": that is the share of real tokens; padding is the rest"
        elif abs(got - sum(_share([b], multiple) for b in batches) / len(batches)) < 1e-9:
            hint = ": weigh the batches by their tokens; a mean of per-batch shares counts a short batch as much as a long one"
        elif got > 1:
            hint = ": a share is a fraction between 0 and 1"
        return fails(f"{where}: {got:.4f}, expected {want:.4f}{hint}")
    return passes(f"right on {len(done)} unseen batch sets: {', '.join(done)}")
