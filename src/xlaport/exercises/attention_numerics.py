"""Chapter *Attention numerics*: finite attention in low precision, and a masked softmax."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..text import plural, sci
from .common import Check, _fail, _none, _ok, guarded

__all__ = ["check_finite_attention", "check_masked_softmax"]


def _verb(n: int) -> str:
    return "gives" if n == 1 else "give"


def _finite(*ts: Any) -> bool:
    return all(bool(t.isfinite().all()) for t in ts if t is not None)


@guarded("finite attention")
def check_finite_attention(
    attend: Callable[..., Any] | None, inputs: Sequence[Any], reference: Any, atol: float
) -> Check:
    """``attend(q, k, v)`` in the inputs' dtype: finite forward and gradients, and within ``atol`` of ``reference``."""
    name = "finite attention"
    if attend is None:
        return _none(name)
    ins = [x.detach().clone().requires_grad_(True) for x in inputs]
    try:
        out = attend(*ins)
        out.float().sum().backward()
    except Exception as e:
        return _fail(name, f"raised {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
    if not _finite(out):
        return _fail(name, f"{int((~out.isfinite()).sum())} non-finite outputs in {out.dtype}")
    bad = [n for n, x in zip("qkv", ins) if not _finite(x.grad)]
    if bad:
        return _fail(name, f"forward finite, gradient of {', '.join(bad)} is not")
    err = float((out.detach().double() - reference.detach().double()).abs().max())
    if err > atol:
        return _fail(name, f"finite, but {err:.2e} from the fp32 reference (tolerance {atol:.0e})")
    return _ok(name, f"forward and gradients finite in {out.dtype}, {sci(err)} from the fp32 reference")


@guarded("masked softmax")
def check_masked_softmax(softmax: Callable[..., Any] | None, scores: Any, keep: Any) -> Check:
    """``softmax(scores, keep)``: rows with nothing kept give 0, the others match a softmax over the kept
    positions, forward and backward finite."""
    import torch

    name = "masked softmax"
    if softmax is None:
        return _none(name)
    s = scores.detach().clone().requires_grad_(True)
    try:
        p = softmax(s, keep)
        (p * torch.arange(p.shape[-1], dtype=p.dtype)).sum().backward()
    except Exception as e:
        return _fail(name, f"raised {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
    none_kept = ~keep.any(-1)
    if not _finite(p):
        return _fail(
            name,
            f"{plural(int(none_kept.sum()), 'fully masked row')} {_verb(int(none_kept.sum()))} non-finite probabilities",
        )
    if not _finite(s.grad):
        return _fail(name, "forward finite, but the gradient through a fully masked row is NaN")
    if bool((p[none_kept.expand_as(p[..., 0])] != 0).any()):
        return _fail(name, "fully masked rows must give 0, not a distribution over masked keys")
    ref = torch.softmax(scores.float().masked_fill(~keep, float("-inf")), -1)
    rows = ~none_kept.expand_as(p[..., 0])
    err = float((p.detach().float()[rows] - ref[rows]).abs().max()) if bool(rows.any()) else 0.0
    if err > 1e-3:
        return _fail(name, f"rows with kept keys are {err:.2e} from a softmax over the kept positions")
    return _ok(
        name,
        f"{plural(int(none_kept.sum()), 'fully masked row')} {_verb(int(none_kept.sum()))} 0, gradients finite, other rows exact to {sci(err, 0)}",
    )
