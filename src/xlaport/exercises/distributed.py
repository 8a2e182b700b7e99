"""Chapter *Distributed*: a port of CUDA stream code, and the fewest chips for FSDP."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from ..distributed.mesh import fsdp_bytes_per_device, largest_parameter
from ..text import plural
from .common import ArgumentError, Verdict, fails, guarded, passes, raised

__all__ = ["check_stream_port", "check_fsdp_chips", "hidden_fsdp_jobs"]


def _original_on_unseen(original: Callable[..., Any], inputs: Sequence[Any]) -> tuple[list[Any], Sequence[Any]]:
    """Inputs of the shapes of ``inputs`` with values the chapter never shows, and the outputs ``original`` computes
    from them in program order (the ``cpu`` profile: no stream rules)."""
    import torch

    from ..distributed.streams import EmulatedStreams
    from ..profiles import profile

    g = torch.Generator().manual_seed(6174)
    unseen = [
        torch.randn(x.shape, generator=g, dtype=x.dtype) if isinstance(x, torch.Tensor) and x.is_floating_point() else x
        for x in inputs
    ]
    ref = original(EmulatedStreams(profile("cpu")), *unseen)
    want = ref if isinstance(ref, (tuple, list)) else (ref,)
    if not all(isinstance(w, torch.Tensor) for w in want):
        raise ArgumentError("the original stream code must return a tensor or a tuple of tensors")
    return unseen, want


@guarded(
    "stream port",
    must_be="a function with the original's arguments (dm, ...) -> its outputs",
    arguments=_original_on_unseen,
)
def check_stream_port(
    fn: Callable[..., Any], original: Callable[..., Any], inputs: Sequence[Any], target: str = "tpu"
) -> Verdict:
    """``fn(dm, *inputs)``, a port of the CUDA stream code ``original(dm, *inputs)``: on ``target``'s stream rules
    (``xlaport.distributed.streams``) no call it makes raises or does nothing, and its outputs equal the
    original's run in program order (no stream rules: the ``cpu`` profile). Both run on inputs of the shapes of
    ``inputs`` with values the chapter never shows, so outputs computed from the chapter's own tensors fail."""
    import torch

    from ..distributed.streams import EmulatedStreams
    from ..profiles import profile

    inputs, want = _original_on_unseen(original, inputs)
    dm = EmulatedStreams(profile(target))
    try:
        got = fn(dm, *inputs)
    except Exception as e:
        text = str(e).splitlines()[0] if str(e) else ""
        if dm.log and dm.log[-1][1] == "raises":  # a stream call the target's rules say raises
            return fails(f"`{dm.log[-1][0]}` raises {type(e).__name__} on {target}: {text}")
        return fails(f"raised {type(e).__name__}: {text}")
    dead = list(dict.fromkeys(c for c, outcome, _ in dm.log if outcome == "no-op"))
    if dead:
        return fails(
            f"{', '.join(f'`{c}`' for c in dead)} {'does' if len(dead) == 1 else 'do'} nothing on {target}: dead "
            "code that promises an overlap it does not get; delete it",
        )
    have = got if isinstance(got, (tuple, list)) else (got,)
    if len(have) != len(want):
        return fails(f"{plural(len(have), 'output')}, the CUDA version returns {len(want)}")
    for i, (h, w) in enumerate(zip(have, want)):
        if not isinstance(h, torch.Tensor) or tuple(h.shape) != tuple(w.shape):
            return fails(f"output {i}: not a tensor of shape {tuple(w.shape)}")
        if not w.numel():
            continue
        err = float((h.detach().cpu().double() - w.detach().cpu().double()).abs().max())
        if not math.isfinite(err) or err > 1e-5 * (1 + float(w.detach().abs().max())):
            return fails(
                f"output {i} differs from the CUDA version's by {err:.2e} on inputs this chapter never shows (compute "
                "from the arguments, not the chapter's tensors)",
            )
    left = sorted({c for c, _, _ in dm.log})
    return passes(
        f"same outputs as the CUDA version; no stream call raises or does nothing on {target}"
        + (f" ({len(left)} that run left: {', '.join(left)})" if left else " (no stream call left)"),
    )


def _decoder(hidden: int, mlp: int, layers: int, vocab: int) -> dict[str, tuple[int, ...]]:
    shapes: dict[str, tuple[int, ...]] = {"embed.weight": (vocab, hidden), "lm_head.weight": (vocab, hidden)}
    for i in range(layers):
        for part, shape in {"q": (hidden, hidden), "k": (hidden, hidden), "v": (hidden, hidden),
                            "o": (hidden, hidden), "gate": (mlp, hidden), "up": (mlp, hidden),
                            "down": (hidden, mlp), "norm1": (hidden,), "norm2": (hidden,)}.items():  # fmt: skip
            shapes[f"layers.{i}.{part}.weight"] = shape
    shapes["norm.weight"] = (hidden,)
    return shapes


def hidden_fsdp_jobs() -> list[tuple[dict[str, tuple[int, ...]], float, int]]:
    """The ``(shapes, budget_bytes, batch)`` the FSDP check asks the reader's function about: models, budgets and
    batches the chapter never shows (in one the batch's divisors decide the answer)."""
    toy = {"embed": (1000, 100), "w1": (100, 100), "w2": (100, 400), "bias": (100,)}
    toy_budget = (fsdp_bytes_per_device(toy, 4, 16) + fsdp_bytes_per_device(toy, 2, 16)) / 2 + 400_000
    return [
        (_decoder(2048, 5632, 22, 32000), 0.75 * 16e9, 96),
        (_decoder(1024, 4096, 8, 50000), 2e9, 10),
        (toy, toy_budget, 8),
    ]


def _fsdp_verdict(
    n: int, shapes: Any, budget_bytes: float, batch: int, state: float, gathered: float
) -> tuple[bool, str]:
    largest = largest_parameter(shapes) * float(gathered)

    def need(m: int) -> float:
        return fsdp_bytes_per_device(shapes, m, state) + largest

    if batch % n:
        return False, f"the global batch of {batch} does not split evenly over {n} chips"
    if need(n) > budget_bytes:
        return False, (
            f"{_size(need(n))} per chip on {n} chips (sharded state {_size(need(n) - largest)} + the largest "
            f"parameter gathered whole {_size(largest)}); the budget is {_size(budget_bytes)}"
        )
    fewer = next((m for m in range(1, n) if batch % m == 0 and need(m) <= budget_bytes), None)
    if fewer is not None:
        return False, f"fits ({_size(need(n))} per chip), but {fewer} chips fit too ({_size(need(fewer))})"
    return True, f"{n} chips ({_size(need(n))} of {_size(budget_bytes)})"


def _check_bytes(state_bytes_per_param: float, gathered_bytes_per_param: float) -> None:
    if not state_bytes_per_param > 0 or not gathered_bytes_per_param > 0:
        raise ArgumentError("bytes per parameter must be positive")


@guarded("FSDP chips", must_be="a function fewest(shapes, budget_bytes, batch) -> chips", arguments=_check_bytes)
def check_fsdp_chips(
    fewest: Callable[..., Any],
    state_bytes_per_param: float = 16,
    gathered_bytes_per_param: float = 4,
) -> Verdict:
    """``fewest(shapes, budget_bytes, batch) -> chips``: the fewest chips over which FSDP fits a model of parameter
    ``shapes`` in ``budget_bytes`` per chip, asked about models the chapter never shows (:func:`hidden_fsdp_jobs`).

    Per chip: every parameter's training state (``state_bytes_per_param``, 16 = float32 parameter, gradient and
    AdamW's two moments) sharded as :func:`xlaport.distributed.mesh.fsdp_bytes_per_device` computes, plus the largest
    parameter gathered whole (``gathered_bytes_per_param``), as FSDP does before a layer uses it. The global
    ``batch`` must split evenly over the chips.
    """
    done = []
    for shapes, budget, batch in hidden_fsdp_jobs():
        params = sum(math.prod(s) for s in shapes.values())
        where = f"for {params / 1e6:,.1f} M parameters, {_size(budget)} per chip, a batch of {batch}"
        try:
            got = fewest(dict(shapes), budget, batch)
        except Exception as e:
            return fails(f"{where}: {raised(e, 'it')}")
        try:
            n = int(got)
        except (TypeError, ValueError):
            return fails(f"{where}: it must return a whole number of chips, got {got!r:.30}")
        if n != got or n < 1:
            return fails(f"{where}: it must return a whole number of chips >= 1, got {got!r:.30}")
        ok, why = _fsdp_verdict(n, shapes, budget, batch, state_bytes_per_param, gathered_bytes_per_param)
        if not ok:
            return fails(f"{where}: {why}")
        done.append(why)
    return passes(f"the fewest chips for {len(done)} models the chapter never shows: " + "; ".join(done))


def _size(n_bytes: float) -> str:
    """Bytes for a message: GB with one decimal, or MB below a tenth of a GB (never "0.0 GB")."""
    return f"{n_bytes / 1e9:.1f} GB" if n_bytes >= 1e8 else f"{n_bytes / 1e6:.1f} MB"
