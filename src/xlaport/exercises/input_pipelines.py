"""Chapter *Feeding the chip*: loader workers that keep a step fed, and a padded last batch that keeps the update."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from .common import Verdict, fails, guarded, passes, raised

__all__ = ["check_workers", "check_padding", "HIDDEN_PIPELINES"]

#: (host_ms per batch on one worker, step_ms) the workers check asks about.
HIDDEN_PIPELINES = ((90.0, 40.0), (30.0, 45.0), (120.0, 30.0), (50.0, 25.0), (7.0, 6.9))


@guarded("loader workers", must_be="a function workers(host_ms, step_ms), not a number")
def check_workers(workers: Callable[..., Any]) -> Verdict:
    """``workers(host_ms, step_ms) -> int``: the fewest parallel workers whose batches arrive at least as fast as the
    steps consume them, on :data:`HIDDEN_PIPELINES`."""
    done = []
    for host, step in HIDDEN_PIPELINES:
        want = max(1, math.ceil(host / step - 1e-12))
        where = f"for {host:g} ms a batch on one worker and {step:g} ms a step"
        try:
            got = workers(host, step)
        except Exception as e:
            return fails(f"{where}: {raised(e, 'it')}")
        if isinstance(got, (int, float)) and not isinstance(got, bool) and got == want:
            done.append(str(int(got)))
            continue
        hint = ""
        if isinstance(got, (int, float)) and not isinstance(got, bool):
            if got == math.floor(host / step) and got < want:
                hint = ": rounded down, so the batches arrive a little slower than the steps; round up"
            elif got == math.ceil(step / host) or (got and got < want and host > step):
                hint = ": the ratio is upside down; a slower host needs more workers"
            elif got > want:
                hint = f": {want} already keep up"
            elif got < 1:
                hint = ": at least one worker (or the main process) prepares the batches"
        return fails(f"{where}: {got!r}, expected {want}{hint}")
    return passes(f"right on {len(done)} unseen pipelines: {', '.join(done)} workers")


def _grads(pad: Callable[..., Any] | None, x: Any, y: Any, size: int, w: Any) -> Any:
    import torch

    ww = w.detach().clone().requires_grad_(True)
    if pad is None:
        loss = ((x @ ww - y) ** 2).mean()
    else:
        out = pad(x, y, size)
        if not isinstance(out, (tuple, list)) or len(out) != 3:
            raise ValueError("return a tuple (x, y, weight) of three tensors")
        xp, yp, weight = (torch.as_tensor(v, dtype=torch.float32) for v in out)
        if xp.shape[0] != size or yp.shape[0] != size or weight.shape[0] != size:
            raise ValueError(f"padded to {xp.shape[0]} rows, not {size}")
        loss = (weight * (xp @ ww - yp) ** 2).sum() / weight.sum()
    loss.backward()
    assert ww.grad is not None
    return ww.grad


@guarded("padded batch", must_be="a function pad(x, y, size) returning (x, y, weight)")
def check_padding(pad: Callable[..., Any]) -> Verdict:
    """``pad(x, y, size) -> (x, y, weight)``: a short batch padded to ``size`` rows whose weighted mean loss has the
    gradient of the short batch's own mean loss, on batches and a model this chapter never shows."""
    import torch

    g = torch.Generator().manual_seed(1234)
    done = []
    for rows, size, feats in ((5, 8, 3), (1, 16, 6), (11, 12, 4), (8, 8, 2)):
        x, y, w = torch.randn(rows, feats, generator=g), torch.randn(rows, generator=g), torch.randn(feats, generator=g)
        where = f"for {rows} rows padded to {size}"
        want = _grads(None, x, y, size, w)
        try:
            got = _grads(pad, x, y, size, w)
        except ValueError as e:
            return fails(f"{where}: {e}")
        except Exception as e:
            return fails(f"{where}: {raised(e, 'it')} (return a tuple (x, y, weight))")
        gap = float((got - want).abs().max())
        if math.isfinite(gap) and gap <= 1e-5 * max(1.0, float(want.abs().max())):
            done.append(f"{rows}->{size}")
            continue
        hint = ""
        if rows < size and abs(float((got * size / rows - want).abs().max())) <= 1e-5 * max(
            1.0, float(want.abs().max())
        ):
            hint = ": the padding rows are counted in the mean; give them weight 0"
        return fails(f"{where}: the gradient differs by {gap:.2e} from the short batch's{hint}")
    return passes(f"the same gradient as the short batch in {len(done)} unseen cases: {', '.join(done)}")
