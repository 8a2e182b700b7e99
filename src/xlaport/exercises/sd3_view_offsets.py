"""Chapter *SD3 view offsets*: the arguments whose storage offset moves, and a loop that keeps them still."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .common import Check, _fail, _none, _ok, guarded

__all__ = ["check_view_culprits", "check_offsets_fixed"]


def _offsets(calls: Sequence[Mapping[str, Any]]) -> dict[str, list[int]]:
    from ..recompile.guards import logical_storage_offset

    out: dict[str, list[int]] = {}
    for call in calls:
        for k, v in call.items():
            if hasattr(v, "storage_offset"):
                out.setdefault(k, []).append(logical_storage_offset(v))
    return out


@guarded("view culprits")
def check_view_culprits(calls: Sequence[Mapping[str, Any]], answer: Iterable[str] | str | None) -> Check:
    """``answer``: the argument name(s) whose storage offset changes from step to step (what TorchTPU's guard
    recompiles on). ``calls``: one ``{argument: tensor}`` per denoising step."""
    name = "view culprits"
    if answer is None:
        return _none(name)
    named = {answer} if isinstance(answer, str) else set(answer)
    offs = _offsets(calls)
    moving = {k for k, v in offs.items() if len(set(v)) > 1}
    if named == moving:
        return _ok(name, f"{', '.join(sorted(moving))}: a new storage offset every step, so a recompile every step")
    missed, wrong = moving - named, named - moving
    parts = []
    if missed:
        parts.append(f"missed {', '.join(sorted(missed))} (offsets {offs[sorted(missed)[0]][:4]}...)")
    if wrong:
        parts.append(f"{', '.join(sorted(wrong))} keeps one offset")
    return _fail(name, "; ".join(parts))


@guarded("offsets fixed")
def check_offsets_fixed(
    calls: Sequence[Mapping[str, Any]] | None, reference: Sequence[Mapping[str, Any]], atol: float = 0.0
) -> Check:
    """Every argument keeps one storage offset across steps, and the values equal the reference loop's."""
    name = "offsets fixed"
    if calls is None:
        return _none(name)
    if len(calls) != len(reference):
        return _fail(name, f"{len(calls)} steps, the loop has {len(reference)}")
    moving = {k: v for k, v in _offsets(calls).items() if len(set(v)) > 1}
    if moving:
        k, v = next(iter(moving.items()))
        return _fail(name, f"{k} still moves: storage offsets {v[:4]}... so each step recompiles")
    for i, (got, want) in enumerate(zip(calls, reference)):
        for k, w in want.items():
            if k not in got:
                return _fail(name, f"step {i}: argument {k!r} missing")
            if not hasattr(got[k], "storage_offset"):
                return _fail(
                    name,
                    f"step {i}: {k} is a {type(got[k]).__name__}, not a tensor: a compiled step specializes on a "
                    "Python number (specialize_float), so each new value recompiles; pass a tensor that is not a "
                    "view (.clone())",
                )
            err = float((got[k].cpu().double() - w.cpu().double()).abs().max())
            if err > atol:
                return _fail(name, f"step {i}: {k} differs from the original loop by {err:.2e}")
    return _ok(name, f"every argument keeps one storage offset over {len(calls)} steps; values unchanged")
