"""Chapter *Beyond the forward pass*: a packing plan, tied weights after a move, and matmul precision."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..text import plural, sci
from .common import ArgumentError, Verdict, fails, guarded, passes, raised

__all__ = [
    "check_packing",
    "check_tied_weights",
    "check_matmul_precision",
    "hidden_document_lengths",
    "hidden_tied_model",
    "fresh_inputs",
]


#: The document-length jobs the packing check runs a plan on: (seed, documents, median, longest), log-normal
#: lengths as in the chapter but other counts, medians and tails.
_HIDDEN_JOBS = ((301, 96, 48, 192), (302, 120, 40, 160), (303, 80, 60, 240))


def hidden_document_lengths() -> list[list[int]]:
    """The document lengths of the jobs the packing check runs the reader's plan on (none is the chapter's)."""
    import numpy as np

    out = []
    for seed, n, median, longest in _HIDDEN_JOBS:
        raw = np.random.default_rng(seed).lognormal(np.log(median), 0.6, n).round()
        out.append(np.clip(raw, 8, longest).astype(int).tolist())
    return out


def _plan_verdict(
    lens: list[int], row_len: int, rows_per_batch: int, lo: int, hi: int, max_waste: float, strategy: str
) -> tuple[bool, str]:
    from ..recompile.packing import pack

    if row_len < 1 or rows_per_batch < 1:
        return False, f"row_len and rows_per_batch must be positive, got ({row_len}, {rows_per_batch})"
    longest = max(lens)
    if longest > row_len:
        return (
            False,
            f"the {longest}-token document does not fit a row of {row_len}: raise row_len (or split documents)",
        )
    per_batch = row_len * rows_per_batch
    if not lo <= per_batch <= hi:
        return False, f"{rows_per_batch} x {row_len} = {per_batch} tokens per batch; a step should carry {lo} to {hi}"
    rows = pack(lens, row_len, strategy)
    empty = -len(rows) % rows_per_batch  # rows of padding that fill up the last batch
    batches = (len(rows) + empty) // rows_per_batch
    positions = batches * per_batch
    waste = 1 - sum(lens) / positions
    if waste > max_waste:
        slack = len(rows) * row_len - sum(lens)
        return False, (
            f"{waste:.1%} of the {positions} positions are padding (limit {max_waste:.0%}): {slack} at the ends of "
            f"{len(rows)} rows, {empty * row_len} in {plural(empty, 'empty row')} filling the last batch"
        )
    return True, f"(row_len {row_len}, rows_per_batch {rows_per_batch}) for {batches} batches, {waste:.1%} padding"


def _check_packing_arguments(tokens_per_batch: tuple[int, int], max_waste: float) -> None:
    lo, hi = (int(v) for v in tokens_per_batch)
    if not 1 <= lo <= hi:
        raise ArgumentError(f"tokens_per_batch must be (least, most) with 1 <= least <= most, got {tokens_per_batch!r}")
    if not 0 <= max_waste < 1:
        raise ArgumentError(f"max_waste must be a share in [0, 1), got {max_waste!r}")


@guarded(
    "packing plan",
    must_be="a function plan(lengths, tokens_per_batch, max_waste) -> (row_len, rows)",
    arguments=_check_packing_arguments,
)
def check_packing(
    plan: Callable[..., Any],
    tokens_per_batch: tuple[int, int],
    max_waste: float,
    strategy: str = "first_fit",
) -> Verdict:
    """``plan(lengths, tokens_per_batch, max_waste) -> (row_len, rows_per_batch)`` for packing documents of
    ``lengths`` whole (never split), run on jobs the chapter never shows (:func:`hidden_document_lengths`): one batch
    shape, ``tokens_per_batch = (least, most)`` positions per batch, and at most ``max_waste`` of them padding.

    The rows are those :func:`xlaport.recompile.packing.pack` builds with ``strategy``; the last batch is filled
    up with rows of padding, as :func:`~xlaport.recompile.packing.pack_documents` does.
    """
    lo, hi = (int(v) for v in tokens_per_batch)
    done = []
    for lens in hidden_document_lengths():
        where = f"on {len(lens)} documents of {min(lens)}-{max(lens)} tokens"
        try:
            got = plan(list(lens), (lo, hi), max_waste)
        except Exception as e:
            return fails(f"{where}: {raised(e, 'it')}")
        try:
            row_len, rows_per_batch = (int(v) for v in got)
        except (TypeError, ValueError):
            return fails(f"{where}: it must return (row_len, rows_per_batch), e.g. (128, 2); got {got!r:.40}")
        ok, why = _plan_verdict(lens, row_len, rows_per_batch, lo, hi, max_waste, strategy)
        if not ok:
            return fails(f"{where}: {why}")
        done.append(why)
    return passes(
        f"one shape per job, so no compile after the first step, on {len(done)} unseen jobs: " + "; ".join(done)
    )


def hidden_tied_model() -> Any:
    """A small model the chapter never shows whose output layer shares its embedding's tensor, under other names
    (``decoder.out.weight = encoder.tokens.weight``), with the ``tie_weights()`` method Hugging Face models have."""
    import torch

    class TiedCodec(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.encoder = torch.nn.ModuleDict({"tokens": torch.nn.Embedding(12, 6)})
            self.mix = torch.nn.Linear(6, 6)
            self.decoder = torch.nn.ModuleDict({"out": torch.nn.Linear(6, 12, bias=False)})
            self.tie_weights()

        def tie_weights(self) -> None:
            self.decoder["out"].weight = self.encoder["tokens"].weight

        def forward(self, ids: Any) -> Any:
            return self.decoder["out"](self.mix(self.encoder["tokens"](ids)))

    return TiedCodec()


def _tied_groups(model: Any) -> list[list[str]]:
    groups: dict[int, list[str]] = {}
    for pname, p in model.named_parameters(remove_duplicate=False):
        groups.setdefault(id(p), []).append(pname)
    return [names for names in groups.values() if len(names) > 1]


def _tied_verdict(move: Callable[..., Any], model: Any, device: Any, tied: list[list[str]]) -> str | None:
    """Why ``move(model, device)`` is not a move that keeps the ``tied`` groups tied, or None."""
    try:
        out = move(model, device)
    except Exception as e:
        return raised(e, "it")
    model = model if out is None else out
    if not hasattr(model, "named_parameters"):
        return f"it returned a {type(model).__name__}, not the model"
    params = dict(model.named_parameters(remove_duplicate=False))
    want = getattr(device, "type", str(device).split(":")[0])
    off = [(n, p.device) for n, p in params.items() if p.device.type != want]
    if off:
        return f"{off[0][0]} is on {off[0][1]}, not {want}: move the whole model"
    for names in tied:
        missing = [n for n in names if n not in params]
        if missing:
            return f"parameter {missing[0]} is gone after the move"
        if len({id(params[n]) for n in names}) > 1:
            return (
                f"{' and '.join(names)} are {len({id(params[n]) for n in names})} tensors after the move: a training "
                "step would update them apart; re-tie them after moving (model.tie_weights())"
            )
    return None


def _check_build(build: Callable[[], Any]) -> None:
    if not _tied_groups(build()):
        raise ArgumentError("the model built has no tied weights: nothing to check")


_MOVE = "a function move(model, device) -> model, not a model"


@guarded("tied weights", must_be=_MOVE, arguments=_check_build)
def check_tied_weights(move: Callable[..., Any], build: Callable[[], Any], device: Any) -> Verdict:
    """``move(model, device) -> model`` (or ``None``: the model moved in place): every parameter on ``device``, and
    the parameters that share one tensor on the CPU (tied weights) still share one after the move; run on the
    chapter's model (``build()``) and on a model the chapter never shows (:func:`hidden_tied_model`)."""
    if hasattr(move, "parameters"):  # a model is callable too
        return fails(f"answer must be {_MOVE}")
    counts = []
    for builder in (build, hidden_tied_model):
        model = builder()  # one build per model: its tied groups are read before the move
        groups = _tied_groups(model)
        why = _tied_verdict(move, model, device, groups)
        if why is not None:
            shared = "; ".join(" = ".join(names) for names in groups)
            return fails(f"on a model with {shared} tied: {why}")
        counts.append("; ".join(" = ".join(names) for names in groups))
    want = getattr(device, "type", str(device).split(":")[0])
    return passes(f"every parameter on {want}, and still one tensor: " + " | ".join(counts))


def fresh_inputs(inputs: Any, model: Any, seed: int = 8128) -> Any:
    """Inputs of the same shapes and kinds as ``inputs`` (a tensor or a dict of them) with values the chapter never
    shows: float tensors drawn anew, token ids drawn over the model's vocabulary, masks kept."""
    import torch

    g = torch.Generator().manual_seed(seed)
    vocab = getattr(getattr(model, "config", None), "vocab_size", None)

    def fresh(key: str, t: Any) -> Any:
        if not isinstance(t, torch.Tensor):
            return t
        if t.is_floating_point():
            return torch.randn(t.shape, generator=g, dtype=t.dtype) * t.float().std().clamp(min=1e-3).to(t.dtype)
        if "mask" in key or t.dtype == torch.bool:
            return t.clone()
        hi = int(vocab) if vocab else int(t.max()) + 1
        return torch.randint(min(4, hi - 1), hi, t.shape, generator=g, dtype=t.dtype)

    if isinstance(inputs, Mapping):
        return {k: fresh(k, v) for k, v in inputs.items()}
    return fresh("x", inputs)


def _to(inputs: Any, device: Any) -> Any:
    if isinstance(inputs, Mapping):
        return {k: v.to(device) if hasattr(v, "to") else v for k, v in inputs.items()}
    return inputs.to(device)


def _call(model: Any, inputs: Any) -> Any:
    return model(**inputs) if isinstance(inputs, Mapping) else model(inputs)


def _check_target(target: Any) -> None:
    from ..numerics import precision

    if precision.rule(target) is None:
        raise ArgumentError("the target has no matmul_precision rule: pass the tpu profile (xlaport.profile('tpu'))")


@guarded("matmul precision", must_be="a function forward(model, inputs) -> logits", arguments=_check_target)
def check_matmul_precision(
    forward: Callable[..., Any],
    cpu_model: Any,
    device_model: Any,
    inputs: Any,
    target: Any,
    tolerance: tuple[float, float],
) -> Verdict:
    """``forward(model, inputs) -> logits`` run on ``device_model`` with ``target``'s default float32 matmul precision
    in effect (:func:`xlaport.numerics.precision.emulate`), on inputs the chapter never shows (:func:`fresh_inputs`:
    the shapes of ``inputs``, other values): the logits pass an ``allclose(atol, rtol)`` test against ``cpu_model``'s
    float32 logits at ``tolerance``, computed on the model's device (not moved to the CPU first)."""
    import torch

    from ..numerics import precision

    atol, rtol = (float(v) for v in tolerance)
    first = next(iter(device_model.parameters()))
    unseen = fresh_inputs(inputs, cpu_model)
    with torch.no_grad():
        reference = getattr(_call(cpu_model, unseen), "logits", _call(cpu_model, unseen))
    try:
        with precision.emulate(target) as default, torch.no_grad():
            out = forward(device_model, _to(unseen, first.device))
            used = precision.current_mode()
    except Exception as e:
        return fails(raised(e, "it"))
    logits = getattr(out, "logits", out)
    if not isinstance(logits, torch.Tensor):
        return fails(f"it returned a {type(logits).__name__}, not the logits")
    if logits.device.type != first.device.type:
        return fails(f"the logits came from {logits.device.type}, not the model's {first.device.type}")
    if tuple(logits.shape) != tuple(reference.shape):
        return fails(f"logits of shape {tuple(logits.shape)}, the model gives {tuple(reference.shape)}")
    c = precision.compare(logits.cpu(), reference)
    at = (
        "at the device's own setting"
        if used is None
        else f"at {used!r} ({plural(precision.PASSES[used], 'pass', 'passes')})"
    )
    if not c.passes(atol, rtol):
        return fails(
            f"on inputs this chapter never shows, {at} the logits need tolerance {c.tol_needed:.1e}; the test allows "
            f"atol={atol:g}, rtol={rtol:g}"
            + (f" ({used!r} is the target's default)" if used is not None and used == default else ""),
        )
    return passes(f"on unseen inputs, {at} the logits need {sci(c.tol_needed)}: within atol={atol:g}, rtol={rtol:g}")
