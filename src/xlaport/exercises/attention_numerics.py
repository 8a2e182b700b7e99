"""Chapter *Attention numerics*: finite attention in low precision, and a masked softmax."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from ..text import plural, sci
from .common import Verdict, fails, guarded, passes, raised

__all__ = ["check_finite_attention", "check_masked_softmax", "hidden_attention_inputs", "hidden_masks"]


def _verb(n: int) -> str:
    return "gives" if n == 1 else "give"


def _finite(*ts: Any) -> bool:
    return all(bool(t.isfinite().all()) for t in ts if t is not None)


def hidden_attention_inputs() -> list[tuple[Any, Any, Any]]:
    """The fp16 ``(q, k, v)`` the attention check runs on: head sizes the chapter never shows (64 and 16), two with
    scores that overflow fp16 unless scaled first and one of ordinary size, where the softmax is not one-hot and the
    ``1/sqrt(d)`` scale must be the inputs' own."""
    import torch

    out = []
    for seed, shape, scale in ((11, (1, 2, 24, 64), 60.0), (12, (2, 1, 16, 16), 100.0), (15, (1, 2, 20, 64), 1.0)):
        g = torch.Generator().manual_seed(seed)
        q, k = (torch.randn(*shape, generator=g) * scale for _ in range(2))
        out.append((q.half(), k.half(), torch.randn(*shape, generator=g).half()))
    return out


def _reference(q: Any, k: Any, v: Any) -> Any:
    import torch

    q, k, v = (x.detach().float() for x in (q, k, v))
    return torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1]), -1) @ v


@guarded("finite attention", must_be="a function attend(q, k, v) -> output")
def check_finite_attention(attend: Callable[..., Any], atol: float = 1e-2) -> Verdict:
    """``attend(q, k, v)`` on fp16 inputs the chapter never shows (:func:`hidden_attention_inputs`): finite forward
    and gradients, and within ``atol`` of softmax(q kᵀ / sqrt(d)) v computed in fp32, ``d`` the inputs' head size."""
    worst = 0.0
    for inputs in hidden_attention_inputs():
        where = f"on fp16 inputs of shape {tuple(inputs[0].shape)} (head size {inputs[0].shape[-1]})"
        ins = [x.detach().clone().requires_grad_(True) for x in inputs]
        try:
            out = attend(*ins)
            out.float().sum().backward()
        except Exception as e:
            return fails(f"{where}: {raised(e, 'it')}")
        if not _finite(out):
            return fails(f"{where}: {int((~out.isfinite()).sum())} non-finite outputs in {out.dtype}")
        bad = [n for n, x in zip("qkv", ins) if not _finite(x.grad)]
        if bad:
            return fails(f"{where}: forward finite, gradient of {', '.join(bad)} is not")
        err = float((out.detach().double() - _reference(*inputs).double()).abs().max())
        if not err <= atol:
            return fails(
                f"{where}: finite, but {err:.2e} from the fp32 reference softmax(q kᵀ / sqrt({inputs[0].shape[-1]})) v "
                f"(tolerance {atol:.0e})",
            )
        worst = max(worst, err)
    return passes(f"forward and gradients finite in fp16 on 3 unseen inputs, {sci(worst)} from the fp32 reference")


def hidden_masks() -> list[tuple[Any, Any]]:
    """The ``(scores, keep)`` the masked-softmax check runs on: shapes and masks the chapter never shows, with fully
    masked rows in several places and a row that keeps a single key."""
    import torch

    g = torch.Generator().manual_seed(77)
    s1, k1 = torch.randn(2, 5, 7, generator=g) * 3, torch.rand(2, 5, 7, generator=g) > 0.5
    k1[1, 2] = False
    k1[0, 4] = False
    k1[0, 0] = torch.arange(7) == 3
    s2, k2 = torch.randn(4, 9, generator=g), torch.rand(4, 9, generator=g) > 0.3
    k2[0] = False
    return [(s1, k1), (s2, k2)]


@guarded("masked softmax", must_be="a function softmax(scores, keep) -> probabilities")
def check_masked_softmax(softmax: Callable[..., Any]) -> Verdict:
    """``softmax(scores, keep)`` on masks the chapter never shows (:func:`hidden_masks`): rows with nothing kept give
    0, the others match a softmax over the kept positions, forward and backward finite."""
    import torch

    masks = hidden_masks()
    worst, empty = 0.0, 0
    for scores, keep in masks:
        where = f"on scores of shape {tuple(scores.shape)}"
        s = scores.detach().clone().requires_grad_(True)
        try:
            p = softmax(s, keep.clone())
            (p * torch.arange(p.shape[-1], dtype=p.dtype)).sum().backward()
        except Exception as e:
            return fails(f"{where}: {raised(e, 'it')}")
        if tuple(p.shape) != tuple(scores.shape):
            return fails(f"{where}: output shape {tuple(p.shape)}")
        none_kept = ~keep.any(-1)
        n_empty = int(none_kept.sum())
        if not _finite(p):
            return fails(f"{where}: {plural(n_empty, 'fully masked row')} {_verb(n_empty)} non-finite probabilities")
        if not _finite(s.grad):
            return fails(f"{where}: forward finite, but the gradient through a fully masked row is NaN")
        if bool((p[none_kept] != 0).any()):
            return fails(f"{where}: fully masked rows must give 0, not a distribution over masked keys")
        ref = torch.softmax(scores.float().masked_fill(~keep, float("-inf")), -1)
        rows = ~none_kept
        err = float((p.detach().float()[rows] - ref[rows]).abs().max())
        if not err <= 1e-3:
            return fails(f"{where}: rows with kept keys are {err:.2e} from a softmax over the kept positions")
        worst, empty = max(worst, err), empty + n_empty
    return passes(
        f"on {len(masks)} unseen masks {plural(empty, 'fully masked row')} {_verb(empty)} 0, gradients finite, other "
        f"rows exact to {sci(worst, 0)}",
    )
