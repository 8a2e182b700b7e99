"""Chapter *Port a training loop*: a checkpoint that loads anywhere."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .common import Check, _fail, _none, _ok

__all__ = ["check_cpu_checkpoint"]


def check_cpu_checkpoint(state: Mapping[str, Any] | None) -> Check:
    """A checkpoint that loads anywhere: every tensor in it is on the CPU."""
    name = "portable checkpoint"
    if state is None:
        return _none(name)
    found: list[tuple[str, str]] = []

    def walk(prefix: str, obj: Any) -> None:
        if hasattr(obj, "device") and hasattr(obj, "storage_offset"):
            found.append((prefix, str(obj.device)))
        elif isinstance(obj, Mapping):
            for k, v in obj.items():
                walk(f"{prefix}.{k}" if prefix else str(k), v)
        elif isinstance(obj, (list, tuple)):
            for i, v in enumerate(obj):
                walk(f"{prefix}[{i}]", v)

    walk("", state)
    off = [(k, d) for k, d in found if d != "cpu"]
    if not found:
        return _fail(name, "no tensors in the checkpoint")
    if off:
        return _fail(
            name, f"{len(off)} of {len(found)} tensors on {off[0][1]} (e.g. {off[0][0]}): move them with .cpu()"
        )
    return _ok(name, f"all {len(found)} tensors on the CPU: it loads without the accelerator")
