"""Chapter *Will it fit?*: the largest micro-batch that fits, and what activation checkpointing keeps."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from .common import Verdict, fails, guarded, passes, raised

__all__ = ["check_micro_batch", "check_checkpoint_bytes", "HIDDEN_FITS", "HIDDEN_CHECKPOINT_LAYERS"]

#: (state bytes, activation bytes per sample, global batch, budget bytes) the micro-batch check asks about.
HIDDEN_FITS = (
    (60e9, 3.5e9, 32, 80e9),  # 5 samples' worth of room: 4 divides 32, 5 does not
    (12e9, 1.1e9, 24, 16e9),  # 3 samples of room, and 3 divides 24
    (90e9, 2.0e9, 16, 95e9),  # 2 samples
    (20e9, 0.5e9, 8, 96e9),  # the whole batch fits
    (15e9, 2.0e9, 64, 16e9),  # not one sample fits
    (40e9, 4.0e9, 12, 64e9),  # exactly 6 samples of room: 6 divides 12
)


def reference_micro_batch(state: float, per_sample: float, batch: int, budget: float) -> int | None:
    """The largest divisor of ``batch`` whose activations fit ``budget`` beside ``state``; None if none does."""
    return next((u for u in range(batch, 0, -1) if batch % u == 0 and state + u * per_sample <= budget), None)


@guarded("largest micro-batch", must_be="a function micro(state_bytes, per_sample_bytes, batch, budget_bytes)")
def check_micro_batch(micro: Callable[..., Any]) -> Verdict:
    """``micro(state_bytes, activation_bytes_per_sample, batch, budget_bytes) -> int | None``: the largest micro-batch
    that divides the global batch and fits, asked about :data:`HIDDEN_FITS`."""
    done = []
    for state, per, batch, budget in HIDDEN_FITS:
        want = reference_micro_batch(state, per, batch, budget)
        where = f"with {state / 1e9:g} GB of state, {per / 1e9:g} GB a sample, batch {batch}, {budget / 1e9:g} GB"
        try:
            got = micro(state, per, batch, budget)
        except Exception as e:
            return fails(f"{where}: {raised(e, 'it')}")
        if got == want and (got is None or isinstance(got, int)):
            done.append(str(got))
            continue
        hint = ""
        room = (budget - state) / per
        if want is None:
            hint = ": not even one sample fits beside the state, so the answer is None"
        elif isinstance(got, (int, float)) and not isinstance(got, bool) and got > 0 and batch % got:
            hint = f": {got:g} does not divide the batch of {batch}, so the micro-batches would differ in shape"
        elif isinstance(got, (int, float)) and got and abs(got - math.floor(budget / per)) < 1e-9:
            hint = ": the state (weights, gradients, optimizer state) needs room too"
        elif isinstance(got, (int, float)) and got and got < want:
            hint = f": {want} fits as well (room for {room:.1f} samples)"
        return fails(f"{where}: {got!r}, expected {want!r}{hint}")
    return passes(f"right on {len(done)} unseen cases: {', '.join(done)}")


#: (layers, layer input bytes, one layer's saved activations in bytes) the checkpointing check asks about.
HIDDEN_CHECKPOINT_LAYERS = ((32, 64e6, 1.1e9), (80, 0.25e9, 4.5e9), (12, 8e6, 0.2e9), (1, 1e6, 30e6))


@guarded(
    "activations kept with checkpointing", must_be="a function kept(layers, layer_input_bytes, layer_activation_bytes)"
)
def check_checkpoint_bytes(kept: Callable[..., Any]) -> Verdict:
    """``kept(layers, layer_input_bytes, layer_activation_bytes) -> bytes``: what full activation checkpointing keeps
    at the peak (every layer's input, plus one layer's activations while it is recomputed), within 0.1 %."""
    done = []
    for layers, inp, act in HIDDEN_CHECKPOINT_LAYERS:
        want = layers * inp + act
        where = f"for {layers} layers, {inp / 1e6:g} MB inputs, {act / 1e6:g} MB activations a layer"
        try:
            got = float(kept(layers, inp, act))
        except Exception as e:
            return fails(f"{where}: {raised(e, 'it')}")
        if math.isfinite(got) and abs(got / want - 1) <= 1e-3:
            done.append(f"{got / 1e6:,.0f} MB")
            continue
        hint = ""
        if abs(got - layers * inp) <= 1e-3 * want:
            hint = ": the layer being recomputed holds its own activations for a while, on top of the inputs"
        elif abs(got - layers * act) <= 1e-3 * layers * act:
            hint = ": that is every layer's activations, what a step keeps without checkpointing"
        elif abs(got - layers * (inp + act)) <= 1e-3 * layers * (inp + act):
            hint = ": only one layer is recomputed at a time, so only one layer's activations are held"
        return fails(f"{where}: {got / 1e6:,.1f} MB, expected {want / 1e6:,.1f} MB{hint}")
    return passes(f"right for {len(done)} unseen models: {', '.join(done)}")
