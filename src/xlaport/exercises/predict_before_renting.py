"""Chapter *Predict before renting*: the batch at which a layer turns compute-bound, and a chip count that fits."""

from __future__ import annotations

from typing import Any

from .common import Check, _fail, _none, _ok, guarded

__all__ = ["check_ridge_batch", "check_fewest_chips"]


def _linear_intensity(batch: int, d: int, bytes_per_elem: int) -> float:
    """FLOPs per byte of ``(batch, d) @ (d, d)``: the weights, the input and the output each cross memory once."""
    return 2 * batch * d * d / (bytes_per_elem * (d * d + 2 * batch * d))


@guarded("ridge batch")
def check_ridge_batch(answer: int | None, chip_id: str, d: int, bytes_per_elem: int = 2) -> Check:
    """The smallest batch at which a ``d`` x ``d`` linear layer is compute-bound on ``chip_id`` (exact)."""
    from ..perf.machine import chip

    name = "ridge batch"
    if answer is None:
        return _none(name)
    ridge = chip(chip_id).ridge
    b = int(answer)
    if b < 1:
        return _fail(name, "a batch is at least 1")
    if _linear_intensity(b, d, bytes_per_elem) < ridge:
        return _fail(
            name,
            f"at batch {b} the layer does {_linear_intensity(b, d, bytes_per_elem):.0f} FLOP/byte, below the "
            f"ridge of {ridge:.0f}: still memory-bound",
        )
    if b > 1 and _linear_intensity(b - 1, d, bytes_per_elem) >= ridge:
        return _fail(name, f"batch {b - 1} is already compute-bound: look for the smallest")
    return _ok(name, f"batch {b}: {_linear_intensity(b, d, bytes_per_elem):.0f} FLOP/byte ≥ ridge {ridge:.0f}")


@guarded("fewest chips")
def check_fewest_chips(answer: int | None, trace: Any, chip_id: str, usable: float = 0.9) -> Check:
    """The fewest chips of ``chip_id`` whose HBM holds ``trace``'s step under FSDP (``xlaport.perf.fewest_chips``)."""
    from ..perf.machine import chip
    from ..perf.memory import bytes_per_chip, fewest_chips

    name = "fewest chips"
    if answer is None:
        return _none(name)
    m = chip(chip_id)
    want = fewest_chips(trace, m, usable).chips
    n = int(answer)
    if n == want:
        return _ok(name, f"{n} × {m.name}: {bytes_per_chip(trace, n) / 1e9:.1f} GB each")
    if n < want:
        return _fail(
            name,
            f"on {n} chips each holds {bytes_per_chip(trace, n) / 1e9:.1f} GB, more than "
            f"{usable:.0%} of {m.hbm_bytes / 1e9:.0f} GB",
        )
    return _fail(name, f"{n - 1} chips already hold it: look for the fewest")
