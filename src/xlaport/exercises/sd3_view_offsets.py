"""Chapter *SD3 view offsets*: the arguments whose storage offset moves, and a loop that keeps them still."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from ..text import plural
from .common import ArgumentError, Verdict, fails, guarded, passes, raised

__all__ = ["check_view_culprits", "check_offsets_fixed", "hidden_loops"]


def _offsets(calls: Sequence[Mapping[str, Any]]) -> dict[str, list[int]]:
    from ..recompile.guards import logical_storage_offset

    out: dict[str, list[int]] = {}
    for call in calls:
        for k, v in call.items():
            if hasattr(v, "storage_offset"):
                out.setdefault(k, []).append(logical_storage_offset(v))
    return out


def hidden_loops() -> list[list[dict[str, Any]]]:
    """The recorded loops the culprit check runs the reader's function on: argument names, schedules and kinds of
    view the chapter never shows (a view at a fixed offset, a fresh tensor every step, a slice, an offset that
    alternates)."""
    import torch

    g = torch.Generator().manual_seed(2718)
    sched, sig = torch.linspace(999, 0, 9), torch.linspace(1, 0, 10)
    scales, cond, lat = torch.tensor([1.0, 7.0]), torch.randn(3, 8, generator=g), torch.randn(4, generator=g)
    first = [
        {"x": lat, "t": sched[i], "sigma_next": sig[i + 1], "cfg": scales[1], "context": cond[0],
         "noise": torch.randn(4, generator=g)}
        for i in range(8)
    ]  # fmt: skip
    idx, mask, table = torch.arange(12), torch.ones(2, 6), torch.randn(2, 5, generator=g)
    second = [
        {"step_index": idx[i : i + 1], "mask": mask[:, :], "hidden": torch.randn(2, 6, generator=g),
         "phase": table[i % 2], "bias": table[1, 1:]}
        for i in range(6)
    ]  # fmt: skip
    return [first, second]


def _names(answer: Any) -> set[str]:
    if isinstance(answer, str):
        return {answer}
    out = set(answer)
    if not all(isinstance(n, str) for n in out):
        raise TypeError("it must return argument names (strings)")
    return out


@guarded("view culprits", must_be="a function find(calls) -> argument names, not the names themselves")
def check_view_culprits(find: Callable[[Sequence[Mapping[str, Any]]], Iterable[str]]) -> Verdict:
    """``find(calls) -> names``: given one ``{argument: tensor}`` per step of a recorded loop, the names of the
    arguments whose storage offset changes from step to step (what TorchTPU's guard recompiles on). Run on loops the
    chapter never shows (:func:`hidden_loops`)."""
    found = []
    for calls in hidden_loops():
        where = f"on a loop with arguments {', '.join(calls[0])}"
        try:
            named = _names(find(calls))
        except Exception as e:
            return fails(f"{where}: {raised(e, 'it')}")
        offs = _offsets(calls)
        moving = {k for k, v in offs.items() if len(set(v)) > 1}
        if named == moving:
            found.append(", ".join(sorted(moving)))
            continue
        missed, wrong = moving - named, named - moving
        parts = []
        if missed:
            parts.append(f"missed {', '.join(sorted(missed))} (offsets {offs[sorted(missed)[0]][:4]}...)")
        unknown, still = sorted(wrong - set(offs)), sorted(wrong & set(offs))
        if unknown:
            parts.append(f"{', '.join(unknown)} {'is' if len(unknown) == 1 else 'are'} not an argument of this loop")
        if still:
            parts.append(
                f"{', '.join(still)} {'keeps' if len(still) == 1 else 'keep'} one offset ({still[0]} is a new tensor "
                "or the same view every step: its values or address may change, its offset does not)"
            )
        return fails(f"{where}: " + "; ".join(parts))
    return passes(f"found the moving views in {len(found)} loops the chapter never shows: " + " | ".join(found))


def _schedules() -> list[tuple[Any, Any]]:
    """(timesteps, sigmas) the fix is run on: other lengths and values than the chapter's."""
    import torch

    return [(torch.linspace(999, 1, 7), torch.linspace(1, 0, 8)), (torch.linspace(500, 20, 4) ** 1.1, torch.rand(5))]


def _check_original(original: Callable[..., Any]) -> None:
    if not callable(original):
        raise ArgumentError("original must be the chapter's loop, a function (timesteps, sigmas) -> calls")


@guarded(
    "offsets fixed",
    must_be="a function fix(timesteps, sigmas) -> calls, not the calls themselves",
    arguments=_check_original,
)
def check_offsets_fixed(
    fix: Callable[[Any, Any], Sequence[Mapping[str, Any]]],
    original: Callable[[Any, Any], Sequence[Mapping[str, Any]]],
    atol: float = 0.0,
) -> Verdict:
    """``fix(timesteps, sigmas) -> calls``: a version of the chapter's ``original(timesteps, sigmas)`` loop (``sigmas``
    one longer than ``timesteps``) in which every argument keeps one storage offset across steps and the values equal
    the original's; both run on schedules the chapter never shows."""
    for ts, sg in _schedules():
        reference = original(ts, sg)
        where = f"on a {len(ts)}-step schedule"
        try:
            calls = list(fix(ts.clone(), sg.clone()))
        except Exception as e:
            return fails(f"{where}: {raised(e, 'it')}")
        if len(calls) != len(reference):
            return fails(
                f"{where}: {plural(len(calls), 'step')}, the loop has {len(reference)} (use the schedules passed in, not the "
                "chapter's)",
            )
        if not all(isinstance(c, Mapping) for c in calls):
            return fails(f"{where}: each step must be a dict {{argument: value}}")
        moving = {k: v for k, v in _offsets(calls).items() if len(set(v)) > 1}
        if moving:
            k, v = next(iter(moving.items()))
            return fails(f"{where}: {k} still moves: storage offsets {v[:4]}... so each step recompiles")
        for i, (got, want) in enumerate(zip(calls, reference)):
            for k, w in want.items():
                if k not in got:
                    return fails(f"{where}, step {i}: argument {k!r} missing")
                if not hasattr(got[k], "storage_offset"):
                    return fails(
                        f"step {i}: {k} is a {type(got[k]).__name__}, not a tensor: a compiled step specializes on a "
                        "Python number (specialize_float), so each new value recompiles; pass a tensor that is not a "
                        "view (.clone())",
                    )
                err = float((got[k].cpu().double() - w.cpu().double()).abs().max())
                if not err <= atol:
                    return fails(f"{where}, step {i}: {k} differs from the original loop by {err:.2e}")
    return passes(
        f"every argument keeps one storage offset on {len(_schedules())} schedules the chapter never shows; values "
        "unchanged",
    )
