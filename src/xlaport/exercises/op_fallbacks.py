"""Chapter *Op fallbacks*: a solve with ops every target has, and a padded unique."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from ..text import plural, sci
from .common import ArgumentError, Verdict, fails, guarded, passes, raised

__all__ = ["check_rewrite", "check_padded_unique", "hidden_spd_systems", "hidden_pair_batches"]


def hidden_spd_systems() -> list[tuple[Any, Any]]:
    """The systems ``A x = b`` the solve check runs on (float64, ``A`` symmetric positive definite, condition number
    10 to 1000): sizes and right-hand sides the chapter never shows, one with several columns."""
    import torch

    g = torch.Generator().manual_seed(1618)
    out = []
    for m, cols, cond in ((3, 1, 10.0), (7, 3, 1e3), (12, 2, 1e2)):
        q, _ = torch.linalg.qr(torch.randn(m, m, generator=g, dtype=torch.float64))
        a = (q * torch.logspace(0, math.log10(cond), m, dtype=torch.float64)) @ q.T
        out.append(((a + a.T) / 2, torch.randn(m, cols, generator=g, dtype=torch.float64)))
    return out


def _check_reference(reference: Callable[..., Any]) -> None:
    if not callable(reference):
        raise ArgumentError("reference must be the original solve, a function (A, b) -> x")


@guarded("rewrite", must_be="a function solve(A, b) -> x, not a tensor", arguments=_check_reference)
def check_rewrite(
    fn: Callable[..., Any],
    reference: Callable[..., Any],
    atol: float = 1e-8,
    targets: Sequence[str] = ("tpu", "neuron"),
) -> Verdict:
    """``fn(A, b)`` solves the symmetric positive definite system ``A x = b`` as ``reference(A, b)`` does (within
    ``atol``) on systems the chapter never shows (:func:`hidden_spd_systems`), and no op it runs raises or falls back
    on ``targets``."""
    from ..ops.trace import aten_ops

    systems = hidden_spd_systems()
    worst = 0.0
    for a, b in systems:
        where = f"on a {a.shape[0]}x{a.shape[0]} system with {b.shape[1]} right-hand side(s)"
        want = reference(a, b)
        try:
            got = fn(a.clone(), b.clone())
        except Exception as e:
            return fails(f"{where}: the rewrite {raised(e)}")
        if not hasattr(got, "shape") or tuple(got.shape) != tuple(want.shape):
            return fails(f"{where}: shape {tuple(getattr(got, 'shape', ()))}, the reference gives {tuple(want.shape)}")
        err = float((got.double() - want.double()).abs().max())
        if not math.isfinite(err) or err > atol:
            return fails(f"{where}: max |error| against the reference {err:.2e} > {atol:.0e}")
        worst = max(worst, err)
    problem, verdict = _op_coverage(aten_ops(fn, *systems[1]), targets)
    if problem:
        return fails(f"{problem}; rewrite it with ops the target has")
    return passes(f"matches the reference to {sci(worst)} on {len(systems)} systems the chapter never shows; {verdict}")


def hidden_pair_batches() -> list[Any]:
    """The batches of id pairs the padded-unique check runs on: sizes and id ranges the chapter never shows (ids
    above 16 included), one batch of a single repeated pair and one without duplicates."""
    import torch

    g = torch.Generator().manual_seed(4242)
    n = torch.arange(30)
    return [
        torch.randint(0, 5, (16, 2), generator=g),
        torch.randint(0, 50, (40, 2), generator=g),
        torch.full((24, 2), 7),
        torch.stack([n // 6 * 9, n % 6 + 20], 1)[torch.randperm(30, generator=g)],
        torch.randint(0, 4, (33, 2), generator=g) * torch.tensor([1, 100]),
    ]


@guarded("padded unique", must_be="a function dedup(pairs) -> (padded, count)")
def check_padded_unique(fn: Callable[..., Any], target: str = "tpu") -> Verdict:
    """``fn(pairs (n, 2)) -> (padded (n, 2), count)``: the first ``count`` rows are the distinct pairs, the output
    has the input's shape, and no op raises or falls back on ``target``; run on batches the chapter never shows
    (:func:`hidden_pair_batches`)."""
    import torch

    from ..ops.trace import aten_ops

    batches = hidden_pair_batches()
    for x in batches:
        where = f"on a batch of {len(x)} pairs with ids up to {int(x.max())}"
        try:
            padded, count = fn(x.clone())
        except Exception as e:
            return fails(f"{where}: {raised(e, 'it')}")
        if not isinstance(padded, torch.Tensor):
            return fails(f"{where}: it must return (padded tensor, count), got a {type(padded).__name__}")
        want = {tuple(r) for r in torch.unique(x, dim=0).tolist()}
        if tuple(padded.shape) != tuple(x.shape):
            return fails(
                f"{where}: output shape {tuple(padded.shape)} for input {tuple(x.shape)}: the shape follows the "
                "number of distinct pairs, so each count is a new program",
            )
        n = int(count)
        got = [tuple(r) for r in padded[:n].tolist()]
        if set(got) != want or len(got) != len(want):
            hint = ""
            if len(got) != len(want) and len({p for p in got}) == len(got) and set(got) < want:
                hint = " (different pairs got one key: make the key unique for any ids, e.g. from the batch's max)"
            return fails(f"{where}: {plural(n, 'row')} counted, {len(want)} distinct pairs expected{hint}")
    problem, verdict = _op_coverage(aten_ops(fn, batches[1]), [target])
    if problem:
        return fails(problem)
    return passes(f"right on {len(batches)} batches the chapter never shows, one shape each; {verdict}")


def _op_coverage(trace: Any, targets: Sequence[str]) -> tuple[str | None, str]:
    """The coverage check of a traced answer on each target: (what raises or falls back, or None; what the check
    shows when nothing does, counting the ops a target's published tables do not list)."""
    from ..ops.coverage import coverage

    covs = {t: coverage(trace, t) for t in targets}
    for t, cov in covs.items():
        if not cov.ok:
            bad = cov.raises + cov.fallbacks
            return f"on {t}: {', '.join(bad)} {cov[bad[0]].status}", ""
    said = [
        f"{plural(n, 'op')} unknown on {t} (not in its published tables: check on the device)"
        for t, cov in covs.items()
        if (n := len(cov.with_status("unknown")))
    ]
    return None, f"no op raises or falls back on {' or '.join(targets)}" + (f"; {'; '.join(said)}" if said else "")
