"""Chapter *First steps*: batches of one shape, and no compile after warm-up."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from ..text import plural
from .common import Verdict, fails, guarded, passes, raised

__all__ = ["check_batch_shapes", "check_padded_batches", "check_steady_compiles"]


@guarded("batch shapes")
def check_batch_shapes(
    batches: Sequence[tuple[Any, Any]], n_items: int | None = None, ignore_index: int = -100
) -> Verdict:
    """One input shape for every batch (one program), and, if ``n_items`` is given, every item trained on once.

    Padding rows are those whose label is ``ignore_index`` (``F.cross_entropy`` skips them).
    """
    batches = list(batches)
    if not batches:
        return fails("no batches")
    shapes = [tuple(x.shape) for x, _ in batches]
    distinct = sorted(set(shapes), key=shapes.index)
    if len(distinct) > 1:
        odd = next(i for i, s in enumerate(shapes) if s != shapes[0])
        return fails(
            f"{len(distinct)} input shapes, so {len(distinct)} programs per step kind: batch {odd} is "
            f"{shapes[odd]}, the others {shapes[0]}; pad it or drop it",
        )
    if n_items is not None:
        real = sum(int((y != ignore_index).sum()) for _, y in batches)
        if real < n_items:
            return fails(
                f"one shape {shapes[0]}, but {real} real items of {n_items}: {n_items - real} "
                f"{'is' if n_items - real == 1 else 'are'} never seen",
            )
        if real > n_items:
            return fails(f"one shape {shapes[0]}, but {real} real items for {n_items}: some are trained on twice")
    seen = "" if n_items is None else f", all {n_items} items seen"
    return passes(f"{len(batches)} batches of one shape {shapes[0]}: one program{seen}")


# The datasets the checks feed the reader's code: sizes, batch sizes and seeds the chapter never prints.
_HIDDEN = ((203, 16, 7), (100, 24, 11), (96, 32, 13))


def _numbered(n: int) -> tuple[Any, Any]:
    """``n`` images of 1 x 8 x 8 whose every pixel is the image's number + 1 (so a batch tells which images it
    holds, and a blank padding image reads 0), and labels ``number % 10``."""
    import torch

    images = (torch.arange(n, dtype=torch.float32) + 1).view(n, 1, 1, 1).expand(n, 1, 8, 8).clone()
    return images, torch.arange(n) % 10


def _batches_problem(batches: Any, n: int, batch_size: int, labels: Any, ignore_index: int = -100) -> str | None:
    """What is wrong with ``batches`` as one pass over the numbered images, or None."""
    import torch

    try:
        pairs = [(x, y) for x, y in batches]
    except (TypeError, ValueError):
        return "it must return a list of (images, labels) pairs"
    if not pairs:
        return "it returned no batches"
    if not all(isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor) for x, y in pairs):
        return "each batch must be a pair of tensors (images, labels)"
    for i, (x, y) in enumerate(pairs):
        if x.dim() == 0 or y.dim() == 0 or x.shape[0] != y.shape[0]:
            nx, ny = (int(t.shape[0]) if t.dim() else 1 for t in (x, y))
            return f"batch {i} has {nx} images but {ny} labels: pad the labels too (with {ignore_index})"
    shapes = [tuple(x.shape) for x, _ in pairs]
    distinct = sorted(set(shapes), key=shapes.index)
    if len(distinct) > 1:
        odd = next(i for i, s in enumerate(shapes) if s != shapes[0])
        return (
            f"{len(distinct)} input shapes, so {len(distinct)} programs: batch {odd} is {shapes[odd]}, the others "
            f"{shapes[0]}; pad it or drop it"
        )
    if shapes[0][0] != batch_size:
        return f"batches of {shapes[0][0]} images; the batch size asked for is {batch_size}"
    ylab = torch.cat([y.reshape(-1) for _, y in pairs])
    ids = torch.cat([x.reshape(x.shape[0], -1)[:, 0] for x, _ in pairs]).round().long() - 1
    real = ylab != ignore_index
    blank_labelled = int((real & (ids < 0)).sum())
    if blank_labelled:
        return (
            f"{plural(blank_labelled, 'padding image')} carry a real label, so the loss trains on blanks: "
            f"label them {ignore_index}"
        )
    empty = [i for i, (_, y) in enumerate(pairs) if bool((y == ignore_index).all())]
    if empty:
        return f"batch {empty[0]} is all padding: a step that trains on nothing"
    seen = ids[real]
    if bool((seen >= n).any()):
        return "some images are not from the dataset passed in (did you use a global instead of the argument?)"
    counts = torch.bincount(seen, minlength=n)
    if int(counts.max()) > 1:
        i = int(counts.argmax())
        return (
            f"image {i} is trained on {int(counts[i])} times in one pass: each batch must take new images "
            "(not a repeated batch or overlapping windows)"
        )
    missing = int((counts == 0).sum())
    if missing:
        return f"{missing} of {n} images {'is' if missing == 1 else 'are'} never seen"
    if bool((ylab[real] != labels[seen]).any()):
        return "labels no longer match their images: index images and labels with the same positions"
    return None


@guarded(
    "padded batches",
    must_be="your function make_batches(images, labels, batch_size, generator), not its batches: the check runs it on datasets you have not seen",
)
def check_padded_batches(make_batches: Callable[..., Any]) -> Verdict:
    """``make_batches(images, labels, batch_size, generator) -> [(images, labels), ...]``: run on datasets the
    chapter never shows (other sizes, batch sizes and seeds), every image once, every batch of one shape and of
    ``batch_size`` rows; padding rows labelled -100 (which ``F.cross_entropy`` ignores)."""
    import torch

    for n, bs, seed in _HIDDEN:
        images, labels = _numbered(n)
        try:
            out = make_batches(images, labels, bs, torch.Generator().manual_seed(seed))
        except Exception as e:
            return fails(f"{n} images in batches of {bs}: {raised(e, 'make_batches')}")
        problem = _batches_problem(out, n, bs, labels)
        if problem:
            return fails(f"{n} images in batches of {bs}: {problem}")
    sizes = ", ".join(f"{n} in batches of {bs}" for n, bs, _ in _HIDDEN)
    return passes(f"one shape per dataset and every image once ({sizes}): one program each")


class _Tracked(list[Any]):
    """A list of batches that remembers which positions were read."""

    def __init__(self, items: Iterable[Any]) -> None:
        super().__init__(items)
        self.read: set[int] = set()

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, int):
            self.read.add(i % len(self))
        else:
            self.read.update(range(len(self))[i])
        return super().__getitem__(i)

    def __iter__(self) -> Any:
        for i in range(len(self)):
            self.read.add(i)
            yield super().__getitem__(i)


_RUN = itertools.count()


@guarded(
    "compiles after warm-up",
    must_be="your function train_on(t, batches, steps), not a list of counts: the check runs it on batches you have not seen",
)
def check_steady_compiles(train_on: Callable[..., Any], target: Any, warm: int = 2) -> Verdict:
    """``train_on(t, batches, steps)``: a training loop that takes its batches and step count as arguments and
    returns the compiles of each step (a list, or a dict with ``"compiled"``).

    The check runs it once on ``target`` over five batches of a size the chapter never uses (a new size each call,
    so nothing is cached): three full ones, a padded one (the same shape: no compile at its step) and a short one
    (a new shape: the counts must show its compile), for ``len(batches) + warm`` steps. It counts the compiles
    itself around the run and compares them with the reader's per-step counts.
    """
    import torch

    k = next(_RUN)
    bs = 8 + 2 * (k % 28)  # even batch sizes the chapter never uses, new on every call; the short batch odd (bs - 1)
    n = 5 * bs - 1
    images, labels = _numbered(n)
    images = images / n
    full = [(images[i * bs : (i + 1) * bs], labels[i * bs : (i + 1) * bs]) for i in range(3)]
    pad = (
        torch.cat([images[3 * bs : 4 * bs - 1], torch.zeros(1, 1, 8, 8)]),
        torch.cat([labels[3 * bs : 4 * bs - 1], torch.full((1,), -100)]),
    )
    short = (images[4 * bs :], labels[4 * bs :])
    pad_step, short_step = 3, 4
    batches = _Tracked([*full, pad, short])
    steps = len(batches) + warm
    before = target.compiles()
    try:
        run = train_on(target, batches, steps)
    except Exception as e:
        return fails(f"{raised(e, 'train_on')} (batches of {bs})")
    measured = None if before is None else target.compiles() - before
    got: Any = run.get("compiled") if isinstance(run, Mapping) else run
    try:
        counts = list(got)
    except TypeError:
        return fails("train_on must return the per-step compile counts (a list, or a dict with 'compiled')")
    if len(counts) != steps:
        return fails(f"{len(counts)} counts for the {steps} steps asked for: one count per step")
    unread = sorted(set(range(len(batches))) - batches.read)
    if unread:
        return fails(
            f"the run never read batch {unread[0]} of {len(batches)}: cycle through every batch it is given",
        )
    if measured is None:
        if any(c is not None for c in counts):
            return fails("this backend counts no compiles, yet the counts are numbers: use t.compiles()")
        return Verdict(None, "this backend does not count compiles: run with target tpu or neuron to check")
    if any(c is None for c in counts):
        return fails("some steps were not counted: count t.compiles() around every step")
    try:
        per_step = [int(c) for c in counts]
    except (TypeError, ValueError):
        return fails("the counts must be whole numbers of programs")
    if sum(per_step) != measured:
        return fails(
            f"the counts add up to {plural(sum(per_step), 'program')}, but the run compiled {measured}: count "
            "t.compiles() before and after each step's t.sync()",
        )
    late = {i: c for i, c in enumerate(per_step) if i >= warm and c and i != short_step}
    if late:
        where = ", ".join(str(i) for i in list(late)[:5])
        padded = " (the padded batch, which has the others' shape)" if pad_step in late else ""
        return fails(
            f"{plural(sum(late.values()), 'program')} compiled after warm-up at step {where}{padded}: the loop "
            "itself changes a shape",
        )
    if not per_step[short_step]:
        return fails(
            f"no compile at step {short_step}, where the short batch runs: does the loop reach every batch "
            "(batches[step % len(batches)]) and count each step?",
        )
    return passes(
        f"batches of {bs}: no program after the {warm} warm-up steps, the padded batch included; the short batch "
        f"compiled {plural(per_step[short_step], 'program')} at its step",
    )
