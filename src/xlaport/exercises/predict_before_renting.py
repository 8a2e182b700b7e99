"""Chapter *Predict before renting*: the batch at which a layer turns compute-bound, and a chip count that fits."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from .common import ArgumentError, Verdict, fails, guarded, passes, raised

__all__ = ["check_ridge_batch", "check_fewest_chips", "HIDDEN_LAYERS", "HIDDEN_STEPS"]


def _linear_intensity(batch: int, d: int, bytes_per_elem: int) -> float:
    """FLOPs per byte of ``(batch, d) @ (d, d)``: the weights, the input and the output each cross memory once."""
    return 2 * batch * d * d / (bytes_per_elem * (d * d + 2 * batch * d))


def _ridge_batch(ridge: float, d: int, bytes_per_elem: int) -> int:
    b = 1
    while _linear_intensity(b, d, bytes_per_elem) < ridge:
        b += 1
    return b


#: The (chip id, d, bytes per element) the ridge check asks the reader's function about; none is the chapter's
#: (v6e, 4096, bf16), and each layer can reach its chip's ridge (d / bytes per element is above it).
HIDDEN_LAYERS = (("tpu_v5e", 2048, 2), ("h100_sxm", 8192, 2), ("tpu_v5p", 4096, 4), ("tpu_v6e", 16384, 2))


@guarded("ridge batch", must_be="a function ridge_batch(ridge, d, bytes_per_elem) -> batch, not a number")
def check_ridge_batch(ridge_batch: Callable[..., Any]) -> Verdict:
    """``ridge_batch(ridge, d, bytes_per_elem) -> batch``: the smallest batch at which a ``d`` x ``d`` linear layer
    with elements of ``bytes_per_elem`` bytes does at least ``ridge`` FLOPs per byte (compute-bound), asked about the
    layers and chips of :data:`HIDDEN_LAYERS` (chip ridges from ``xlaport.perf.chip``)."""
    from ..perf.machine import chip

    done = []
    for chip_id, d, nbytes in HIDDEN_LAYERS:
        ridge = chip(chip_id).ridge
        where = f"for d = {d} in {nbytes}-byte elements on {chip_id} (ridge {ridge:.0f} FLOP/byte)"
        try:
            got = ridge_batch(ridge, d, nbytes)
            b = int(got)
        except Exception as e:
            return fails(f"{where}: {raised(e, 'it')}")
        if b != got or b < 1:
            return fails(f"{where}: a batch is a whole number >= 1, got {got!r:.30}")
        if _linear_intensity(b, d, nbytes) < ridge:
            return fails(
                f"{where}: at batch {b} the layer does {_linear_intensity(b, d, nbytes):.0f} FLOP/byte, below the "
                "ridge: still memory-bound (count the bytes of the weights, the input and the output)",
            )
        if b > 1 and _linear_intensity(b - 1, d, nbytes) >= ridge:
            return fails(f"{where}: batch {b - 1} is already compute-bound: look for the smallest")
        done.append(f"{chip_id} d={d}: {b}")
    return passes(f"the smallest compute-bound batch for {len(done)} unseen layers: " + ", ".join(done))


#: The training steps the chip-count check asks about: (state bytes, activation bytes, samples, chip id).
#: In the second, the batch of 2 cannot split the activations over more than two chips.
HIDDEN_STEPS = (
    (30e9, 12e9, 8, "tpu_v5e"),
    (60e9, 20e9, 2, "tpu_v5e"),
    (400e9, 150e9, 32, "tpu_v6e"),
    (0.5e9, 0.2e9, 1, "tpu_v5e"),
)


def _per_chip(state: float, act: float, items: int, n: int) -> float:
    return state / n + act / min(n, max(1, items))


def _check_usable(usable: float) -> None:
    if not 0 < usable <= 1:
        raise ArgumentError(f"usable must be a share in (0, 1], got {usable!r}")


@guarded(
    "fewest chips",
    must_be="a function fewest(state_bytes, activation_bytes, items, hbm_bytes)",
    arguments=_check_usable,
)
def check_fewest_chips(fewest: Callable[..., Any], usable: float = 0.9) -> Verdict:
    """``fewest(state_bytes, activation_bytes, items, hbm_bytes) -> chips``: the fewest chips whose HBM, ``usable``
    of it, holds a training step under FSDP (the state sharded over every chip, the activations split by the batch
    of ``items`` samples, never finer than one sample per chip), as ``xlaport.perf.fewest_chips`` computes; asked about
    the steps of :data:`HIDDEN_STEPS`."""
    from ..perf.machine import chip

    done = []
    for state, act, items, chip_id in HIDDEN_STEPS:
        m = chip(chip_id)
        cap = usable * m.hbm_bytes
        want = max(1, math.ceil((state + act) / cap))
        while _per_chip(state, act, items, want) > cap:
            want += 1
        where = f"for {state / 1e9:g} GB of state, {act / 1e9:g} GB of activations over {items} samples on {m.name}"
        try:
            got = fewest(state, act, items, m.hbm_bytes)
            n = int(got)
        except Exception as e:
            return fails(f"{where}: {raised(e, 'it')}")
        if n != got or n < 1:
            return fails(f"{where}: a chip count is a whole number >= 1, got {got!r:.30}")
        if n < want:
            why = f"on {n} chips each holds {_per_chip(state, act, items, n) / 1e9:.1f} GB, more than {usable:.0%} of "
            why += f"{m.hbm_bytes / 1e9:.0f} GB"
            if n > items:
                why += f" (the activations split over at most {items} chips: one sample each)"
            return fails(f"{where}: {why}")
        if n > want:
            return fails(f"{where}: {want} chips already hold it: look for the fewest")
        done.append(str(n))
    return passes(f"the fewest chips for {len(done)} unseen steps: {', '.join(done)}")
