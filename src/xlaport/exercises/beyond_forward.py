"""Chapter *Beyond the forward pass*: a packing plan, tied weights after a move, and matmul precision."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..text import plural, sci
from .common import ArgumentError, Check, _fail, _ints, _none, _ok, guarded

__all__ = ["check_packing", "check_tied_weights", "check_matmul_precision"]


@guarded("packing plan")
def check_packing(
    lengths: Iterable[int],
    answer: tuple[int, int] | None,
    tokens_per_batch: tuple[int, int],
    max_waste: float,
    strategy: str = "first_fit",
) -> Check:
    """``answer = (row_len, rows_per_batch)`` for packing documents of ``lengths`` whole (never split): one batch
    shape, ``tokens_per_batch = (least, most)`` positions per batch, and at most ``max_waste`` of them padding.

    The rows are those :func:`xlaport.recompile.packing.pack` builds with ``strategy``; the last batch is filled
    up with rows of padding, as :func:`~xlaport.recompile.packing.pack_documents` does.
    """
    from ..recompile.packing import pack

    name = "packing plan"
    lens = _ints("lengths", lengths)
    lo, hi = (int(v) for v in tokens_per_batch)
    if not 1 <= lo <= hi:
        raise ArgumentError(f"tokens_per_batch must be (least, most) with 1 <= least <= most, got {tokens_per_batch!r}")
    if not 0 <= max_waste < 1:
        raise ArgumentError(f"max_waste must be a share in [0, 1), got {max_waste!r}")
    if answer is None:
        return _none(name)
    try:
        row_len, rows_per_batch = (int(v) for v in answer)
    except (TypeError, ValueError):
        return _fail(name, "answer must be (row_len, rows_per_batch), e.g. (128, 2)")
    if row_len < 1 or rows_per_batch < 1:
        return _fail(name, f"row_len and rows_per_batch must be positive, got ({row_len}, {rows_per_batch})")
    longest = max(lens)
    if longest > row_len:
        return _fail(
            name, f"the {longest}-token document does not fit a row of {row_len}: raise row_len (or split documents)"
        )
    per_batch = row_len * rows_per_batch
    if not lo <= per_batch <= hi:
        return _fail(
            name,
            f"{rows_per_batch} x {row_len} = {per_batch} tokens per batch; a step should carry {lo} to {hi}",
        )
    rows = pack(lens, row_len, strategy)
    empty = -len(rows) % rows_per_batch  # rows of padding that fill up the last batch
    batches = (len(rows) + empty) // rows_per_batch
    positions = batches * per_batch
    waste = 1 - sum(lens) / positions
    if waste > max_waste:
        slack = len(rows) * row_len - sum(lens)
        return _fail(
            name,
            f"{waste:.0%} of the {positions} positions are padding (limit {max_waste:.0%}): {slack} at the ends of "
            f"{len(rows)} rows, {empty * row_len} in {plural(empty, 'empty row')} filling the last batch",
        )
    return _ok(
        name,
        f"one shape ({rows_per_batch}, {row_len}) for all {batches} batches, so no compile after the first step; "
        f"{waste:.0%} padding",
    )


@guarded("tied weights")
def check_tied_weights(move: Callable[..., Any] | None, build: Callable[[], Any], device: Any) -> Check:
    """``move(model, device) -> model`` (or ``None``: the model moved in place): every parameter on ``device``, and
    the parameters that share one tensor on the CPU (tied weights) still share one after the move."""
    name = "tied weights"
    ref = build()
    groups: dict[int, list[str]] = {}
    for pname, p in ref.named_parameters(remove_duplicate=False):
        groups.setdefault(id(p), []).append(pname)
    tied = [names for names in groups.values() if len(names) > 1]
    if not tied:
        raise ArgumentError("the model built has no tied weights: nothing to check")
    if move is None:
        return _none(name)
    model = build()
    try:
        out = move(model, device)
    except Exception as e:
        return _fail(name, f"raised {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
    model = model if out is None else out
    params = dict(model.named_parameters(remove_duplicate=False))
    want = getattr(device, "type", str(device).split(":")[0])
    off = [(n, p.device) for n, p in params.items() if p.device.type != want]
    if off:
        return _fail(name, f"{off[0][0]} is on {off[0][1]}, not {want}: move the whole model")
    for names in tied:
        missing = [n for n in names if n not in params]
        if missing:
            return _fail(name, f"parameter {missing[0]} is gone after the move")
        if len({id(params[n]) for n in names}) > 1:
            return _fail(
                name,
                f"{' and '.join(names)} are {len({id(params[n]) for n in names})} tensors after the move: a training "
                "step would update them apart; re-tie them after moving (model.tie_weights())",
            )
    shared = "; ".join(" = ".join(names) for names in tied)
    return _ok(
        name, f"all {len({id(p) for p in params.values()})} parameter tensors on {want}; still one tensor: {shared}"
    )


@guarded("matmul precision")
def check_matmul_precision(
    forward: Callable[..., Any] | None,
    model: Any,
    inputs: Mapping[str, Any],
    reference: Any,
    target: Any,
    tolerance: tuple[float, float],
) -> Check:
    """``forward(model, inputs) -> logits`` run on ``target`` with its default float32 matmul precision in effect
    (:func:`xlaport.numerics.precision.emulate`): the logits pass an ``allclose(atol, rtol)`` test against the float32
    ``reference`` at ``tolerance``, computed on the model's device (not moved to the CPU first)."""
    import torch

    from ..numerics import precision

    name = "matmul precision"
    atol, rtol = (float(v) for v in tolerance)
    if precision.rule(target) is None:
        raise ArgumentError("the target has no matmul_precision rule: pass the tpu profile (xlaport.profile('tpu'))")
    if forward is None:
        return _none(name)
    first = next(iter(model.parameters()))
    try:
        with precision.emulate(target) as default, torch.no_grad():
            out = forward(model, inputs)
            used = precision.current_mode()
    except Exception as e:
        return _fail(name, f"raised {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
    logits = getattr(out, "logits", out)
    if logits.device.type != first.device.type:
        return _fail(name, f"the logits came from {logits.device.type}, not the model's {first.device.type}")
    c = precision.compare(logits.cpu(), reference)
    at = (
        "at the device's own setting"
        if used is None
        else f"at {used!r} ({plural(precision.PASSES[used], 'pass', 'passes')})"
    )
    if not c.passes(atol, rtol):
        return _fail(
            name,
            f"{at} the logits need tolerance {c.tol_needed:.1e}; the test allows atol={atol:g}, rtol={rtol:g}"
            + (f" ({used!r} is the target's default)" if used is not None and used == default else ""),
        )
    return _ok(name, f"{at} the logits need {sci(c.tol_needed)}: within atol={atol:g}, rtol={rtol:g}")
