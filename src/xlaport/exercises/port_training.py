"""Chapter *Port a training loop*: a loader of one batch shape, and a checkpoint that loads anywhere."""

from __future__ import annotations

import io
from collections.abc import Callable, Mapping
from typing import Any

from ..text import plural
from .common import Verdict, fails, guarded, passes, raised

__all__ = ["check_loader", "check_cpu_checkpoint"]

# Datasets the check feeds the reader's loader: (windows, batch size, seed), none of them the chapter's.
_HIDDEN = ((101, 24, 5), (50, 16, 9), (96, 32, 3))
_TARGET_OFFSET = 1000  # window i holds token i everywhere, its target token i + 1000


def _windows(n: int, block: int = 6) -> Any:
    import torch
    from torch.utils.data import TensorDataset

    x = torch.arange(n, dtype=torch.int32).view(n, 1).expand(n, block).clone()
    return TensorDataset(x, x + _TARGET_OFFSET)


def _order(make_loader: Callable[..., Any], n: int, bs: int, seed: int) -> tuple[list[int] | None, str | None]:
    """The window ids in the order one pass of the reader's loader yields them, or what is wrong."""
    import torch

    try:
        batches = list(make_loader(_windows(n), bs, torch.Generator().manual_seed(seed)))
    except Exception as e:
        return None, raised(e, "make_loader")
    try:
        pairs = [(x, y) for x, y in batches]
    except (TypeError, ValueError):
        return None, "the loader must yield (inputs, targets) pairs"
    if not pairs:
        return None, "the loader yields no batches"
    if not all(isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor) and x.dim() and y.dim() for x, y in pairs):
        return None, "each batch must be a pair of tensors (inputs, targets)"
    for i, (x, y) in enumerate(pairs):
        if x.shape[0] != y.shape[0]:
            return None, f"batch {i} has {x.shape[0]} inputs but {y.shape[0]} targets: pad both or neither"
    shapes = [tuple(x.shape) for x, _ in pairs]
    distinct = sorted(set(shapes), key=shapes.index)
    if len(distinct) > 1:
        odd = next(i for i, s in enumerate(shapes) if s != shapes[0])
        return None, (
            f"{len(distinct)} input shapes, so {len(distinct)} forward, backward and update programs: batch {odd} is "
            f"{shapes[odd]}, the others {shapes[0]} (drop_last=True)"
        )
    if shapes[0][0] != bs:
        return None, f"batches of {shapes[0][0]} windows; the batch size asked for is {bs}"
    ids = torch.cat([x.reshape(x.shape[0], -1)[:, 0] for x, _ in pairs]).long()
    tgt = torch.cat([y.reshape(y.shape[0], -1)[:, 0] for _, y in pairs]).long()
    if bool(((ids < 0) | (ids >= n)).any()):
        return None, "some rows are not windows of the dataset passed in (did you use a global instead?)"
    if bool((tgt != ids + _TARGET_OFFSET).any()):
        return None, "targets no longer match their inputs: take both from the same dataset item"
    counts = torch.bincount(ids, minlength=n)
    if int(counts.max()) > 1:
        i = int(counts.argmax())
        return None, f"window {i} comes {int(counts[i])} times in one pass: one pass sees each window once"
    missing = int((counts == 0).sum())
    if missing >= bs:
        return (
            None,
            f"{missing} of {n} windows {'is' if missing == 1 else 'are'} never seen: drop_last loses fewer than one batch",
        )
    return ids.tolist(), None


@guarded(
    "loader",
    must_be="your function make_loader(dataset, batch_size, generator), not its batches: the check runs it on datasets you have not seen",
)
def check_loader(make_loader: Callable[..., Any]) -> Verdict:
    """``make_loader(dataset, batch_size, generator)``: one pass over the loader it returns, on datasets and batch
    sizes the chapter never uses, gives batches of one shape and ``batch_size`` rows, each window at most once and
    fewer than one batch left out, shuffled by ``generator`` (same seed, same order)."""
    for n, bs, seed in _HIDDEN:
        order, problem = _order(make_loader, n, bs, seed)
        if problem or order is None:
            return fails(f"{n} windows in batches of {bs}: {problem}")
        if order == sorted(order):
            return fails(f"{n} windows in batches of {bs}: not shuffled (shuffle=True, with the generator)")
        again, _ = _order(make_loader, n, bs, seed)
        if again != order:
            return fails(
                f"{n} windows in batches of {bs}: two passes with the same generator seed differ: pass the "
                "generator to the loader",
            )
    return passes(
        "one shape per loader, each window at most once, shuffled by the generator ("
        + ", ".join(f"{n} windows in batches of {bs}" for n, bs, _ in _HIDDEN)
        + ")",
    )


def _walk(obj: Any, prefix: str = "") -> list[tuple[str, Any]]:
    """Every leaf of a checkpoint, with its path; modules and optimizers are leaves too (so they can be named)."""
    if isinstance(obj, Mapping):
        return [leaf for k, v in obj.items() for leaf in _walk(v, f"{prefix}.{k}" if prefix else str(k))]
    if isinstance(obj, (list, tuple)):
        return [leaf for i, v in enumerate(obj) for leaf in _walk(v, f"{prefix}[{i}]")]
    return [(prefix, obj)]


def _find(obj: Any, want: Callable[[Mapping[Any, Any]], bool]) -> Mapping[Any, Any] | None:
    if isinstance(obj, Mapping):
        if want(obj):
            return obj
        for v in obj.values():
            if (hit := _find(v, want)) is not None:
                return hit
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            if (hit := _find(v, want)) is not None:
                return hit
    return None


@guarded(
    "portable checkpoint",
    must_be="your function portable(model, opt) that returns the dict to save, not the dict: the check runs it on a model you have not seen",
)
def check_cpu_checkpoint(portable: Callable[..., Any], device: Any) -> Verdict:
    """``portable(model, opt) -> dict`` to ``torch.save``: run on a model and AdamW the chapter never shows, trained
    one step on ``device``. The dict holds only CPU tensors and plain values, loads with ``weights_only=True``, and
    holds the model's weights (equal to the model's) and the optimizer's state."""
    import torch
    import torch.nn as nn

    torch.manual_seed(3)
    model = nn.Sequential(nn.Linear(5, 7), nn.ReLU(), nn.Linear(7, 3)).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    model(torch.randn(4, 5).to(device)).sum().backward()
    opt.step()
    try:
        state = portable(model, opt)
    except Exception as e:
        return fails(raised(e, "portable"))
    if not isinstance(state, Mapping):
        return fails(f"portable returned a {type(state).__name__}; return the dict you would torch.save")
    leaves = _walk(state)
    for path, v in leaves:
        if isinstance(v, nn.Module):
            return fails(
                f"{path or 'it'} is a whole nn.Module: save its state_dict(); a module does not load with "
                "torch.load(weights_only=True) and pickles the device it lives on",
            )
        if isinstance(v, torch.optim.Optimizer):
            return fails(f"{path} is the optimizer object: save opt.state_dict() (as CPU tensors)")
    tensors = [(p, v) for p, v in leaves if isinstance(v, torch.Tensor)]
    if not tensors:
        return fails("no tensors in the checkpoint")
    off = [(p, v.device) for p, v in tensors if v.device.type != "cpu"]
    if off:
        return fails(
            f"{len(off)} of {plural(len(tensors), 'tensor')} on {off[0][1]} (e.g. {off[0][0]}): move every tensor, "
            "the optimizer's too, with .cpu()",
        )
    buf = io.BytesIO()
    try:
        torch.save(state, buf)
        buf.seek(0)
        loaded = torch.load(buf, map_location="cpu", weights_only=True)
    except Exception as e:
        return fails(f"torch.load(weights_only=True) refuses it: {raised(e)}")
    want = model.state_dict()
    weights = _find(loaded, lambda m: set(m) == set(want))
    if weights is None:
        return fails("no model state_dict in it (the keys of model.state_dict())")
    for k, v in want.items():
        w = weights[k]
        if not isinstance(w, torch.Tensor) or w.shape != v.shape or not torch.equal(w, v.detach().cpu()):
            return fails(f"{k} differs from the model's own weights: save this model's state_dict()")
    if _find(loaded, lambda m: {"state", "param_groups"} <= set(m) and bool(m.get("state"))) is None:
        return fails("no optimizer state: resuming would restart AdamW's moments; save opt.state_dict() too")
    return passes(
        f"{plural(len(tensors), 'tensor')}, all on the CPU; loads with weights_only=True; weights equal the model's; "
        "optimizer state kept",
    )
