"""Chapter *First steps*: batches of one shape, and no compile after warm-up."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .common import Check, _fail, _none, _ok

__all__ = ["check_batch_shapes", "check_steady_compiles"]


def check_batch_shapes(
    batches: Sequence[tuple[Any, Any]] | None, n_items: int | None = None, ignore_index: int = -100
) -> Check:
    """One input shape for every batch (one program), and, if ``n_items`` is given, every item trained on once.

    Padding rows are those whose label is ``ignore_index`` (``F.cross_entropy`` skips them).
    """
    name = "batch shapes"
    if batches is None:
        return _none(name)
    batches = list(batches)
    if not batches:
        return _fail(name, "no batches")
    shapes = [tuple(x.shape) for x, _ in batches]
    distinct = sorted(set(shapes), key=shapes.index)
    if len(distinct) > 1:
        odd = next(i for i, s in enumerate(shapes) if s != shapes[0])
        return _fail(
            name,
            f"{len(distinct)} input shapes, so {len(distinct)} programs per step kind: batch {odd} is "
            f"{shapes[odd]}, the others {shapes[0]}; pad it or drop it",
        )
    if n_items is not None:
        real = sum(int((y != ignore_index).sum()) for _, y in batches)
        if real != n_items:
            return _fail(
                name, f"one shape {shapes[0]}, but {real} real items of {n_items}: {n_items - real} are never seen"
            )
    seen = "" if n_items is None else f", all {n_items} items seen"
    return _ok(name, f"{len(batches)} batches of one shape {shapes[0]}: one program{seen}")


def check_steady_compiles(compiled_per_step: Sequence[int | None] | None, warm: int, budget: int = 0) -> Check:
    """At most ``budget`` programs compiled after the first ``warm`` steps."""
    name = "compiles after warm-up"
    if compiled_per_step is None:
        return _none(name)
    steps = list(compiled_per_step)
    if len(steps) <= warm:
        return _fail(name, f"only {len(steps)} steps: run more than the {warm} warm-up steps")
    if all(c is None for c in steps):  # CUDA or CPU: nothing to check, and nothing wrong
        return Check(name, None, "this backend does not count compiles: run with target tpu or neuron to check")
    if any(c is None for c in steps):
        return _fail(name, "some steps were not counted: run every step on one XLA target (tpu or neuron)")
    late = {i: int(c) for i, c in enumerate(steps) if i >= warm and c}
    n = sum(late.values())
    if n > budget:
        where = ", ".join(str(i) for i in list(late)[:5])
        return _fail(
            name,
            f"{n} programs compiled after warm-up (budget {budget}), at {'step' if len(late) == 1 else 'steps'} {where}: a new input shape",
        )
    return _ok(name, f"{n} programs compiled after the {warm} warm-up steps (budget {budget})")
