"""Chapter *Op fallbacks*: rewrites with ops every target has, and a padded unique."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from ..text import sci
from .common import Check, _fail, _none, _ok, guarded

__all__ = ["check_rewrite", "check_padded_unique"]


@guarded("rewrite")
def check_rewrite(
    fn: Callable[..., Any] | None,
    reference: Callable[..., Any],
    inputs: Sequence[Any],
    targets: Sequence[str] = ("tpu", "neuron"),
    atol: float = 1e-4,
) -> Check:
    """``fn`` computes what ``reference`` does (within ``atol``) and no op it runs raises or falls back on ``targets``."""
    import torch

    from ..ops.coverage import coverage
    from ..ops.trace import aten_ops

    name = "rewrite"
    if fn is None:
        return _none(name)
    try:
        got, want = fn(*inputs), reference(*inputs)
    except Exception as e:
        return _fail(name, f"the rewrite raised {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
    if tuple(got.shape) != tuple(want.shape):
        return _fail(name, f"shape {tuple(got.shape)}, the reference gives {tuple(want.shape)}")
    err = float((got.double() - want.double()).abs().max())
    if not math.isfinite(err) or err > atol:
        return _fail(name, f"max |error| against the reference {err:.2e} > {atol:.0e}")
    trace = aten_ops(fn, *inputs)
    for target in targets:
        cov = coverage(trace, target)
        if not cov.ok:
            bad = cov.raises + cov.fallbacks
            return _fail(
                name, f"on {target}: {', '.join(bad)} {cov[bad[0]].status}; rewrite it with ops the target has"
            )
    del torch
    return _ok(name, f"matches the reference to {sci(err)}; every op runs on {' and '.join(targets)}")


@guarded("padded unique")
def check_padded_unique(fn: Callable[..., Any] | None, batches: Sequence[Any], target: str = "tpu") -> Check:
    """``fn(pairs (n, 2)) -> (padded (n, 2), count)``: the first ``count`` rows are the distinct pairs, the shape
    never changes, and no op raises or falls back on ``target``."""
    import torch

    from ..ops.coverage import coverage
    from ..ops.trace import aten_ops

    name = "padded unique"
    if fn is None:
        return _none(name)
    shapes = set()
    for i, x in enumerate(batches):
        try:
            padded, count = fn(x)
        except Exception as e:
            return _fail(name, f"raised {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
        shapes.add(tuple(padded.shape))
        n = int(count)
        want = {tuple(r) for r in torch.unique(x, dim=0).tolist()}
        got = [tuple(r) for r in padded[:n].tolist()]
        if set(got) != want or len(got) != len(want):
            return _fail(name, f"batch {i}: {n} rows counted, {len(want)} distinct pairs expected")
    if len(shapes) > 1:
        return _fail(name, f"{len(shapes)} output shapes {sorted(shapes)}: each is a new program")
    cov = coverage(aten_ops(fn, batches[0]), target)
    if not cov.ok:
        bad = cov.raises + cov.fallbacks
        return _fail(name, f"on {target}: {', '.join(bad)} {cov[bad[0]].status}")
    return _ok(name, f"one output shape {shapes.pop()} for {len(batches)} batches; every op runs on {target}")
