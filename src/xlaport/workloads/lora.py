"""What a LoRA run really trains, and what it compiles.

>>> report = trainable(peft_model)        # before training: adapters only?
>>> report.fraction, report.outside_adapters
>>> before = frozen_digests(peft_model)
>>> ... train ...
>>> moved(before, frozen_digests(peft_model))   # [] when no frozen weight changed
>>> counter = compile_counter()          # a transformers TrainerCallback
>>> Trainer(..., callbacks=[counter]).train(); counter.per_step   # programs compiled in each optimizer step

A parameter belongs to an adapter when its name holds ``lora_`` (peft names them ``lora_A``, ``lora_B``,
``lora_embedding_A``/``_B`` and ``lora_magnitude_vector``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Trainable", "trainable", "frozen_digests", "moved", "compile_counter", "is_adapter"]


def is_adapter(name: str) -> bool:
    """Whether a parameter name is a peft LoRA adapter's."""
    return "lora_" in name


def _named(model: Any) -> Iterable[tuple[str, Any]]:
    if not hasattr(model, "named_parameters"):
        raise ValueError(f"expected a torch module, got {type(model).__name__}")
    seen: set[int] = set()
    for name, p in model.named_parameters():
        if id(p) not in seen:  # tied weights once
            seen.add(id(p))
            yield name, p


@dataclass(frozen=True)
class Trainable:
    """Parameters (elements) that will receive gradients, against the whole model."""

    trainable: int
    total: int
    adapter: int  # trainable elements in LoRA adapters
    outside_adapters: list[str] = field(default_factory=list)  # trainable parameters that are not adapters

    @property
    def fraction(self) -> float:
        return self.trainable / self.total if self.total else 0.0

    @property
    def adapters_only(self) -> bool:
        return self.trainable > 0 and not self.outside_adapters


def trainable(model: Any) -> Trainable:
    """Count what ``model`` will train (``requires_grad``), shared parameters once."""
    total = train = adapter = 0
    outside: list[str] = []
    for name, p in _named(model):
        total += p.numel()
        if p.requires_grad:
            train += p.numel()
            if is_adapter(name):
                adapter += p.numel()
            else:
                outside.append(name)
    return Trainable(train, total, adapter, outside)


def frozen_digests(model: Any) -> dict[str, str]:
    """SHA-256 of every frozen parameter (``requires_grad=False``), read to the CPU."""
    from ..distributed.toy import digests

    return digests({name: p for name, p in _named(model) if not p.requires_grad})


def moved(before: Mapping[str, str], after: Mapping[str, str]) -> list[str]:
    """Names whose digests differ between two readings (or that appear in only one of them)."""
    if not isinstance(before, Mapping) or not isinstance(after, Mapping):
        raise ValueError("moved() takes two digest maps from frozen_digests()")
    return sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))


def compile_counter() -> Any:
    """A ``transformers.TrainerCallback`` that records the programs compiled (XLA's ``UncachedCompile``) and the
    seconds spent compiling in each optimizer step, in ``per_step`` and ``seconds``."""
    from transformers import TrainerCallback

    from .. import metrics

    class CompileCounter(TrainerCallback):
        def __init__(self) -> None:
            self.per_step: list[int] = []
            self.seconds: list[float] = []
            self._last = metrics.snapshot()

        def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            self._last = metrics.snapshot()

        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            if metrics.xla_loaded():
                import torch_xla

                # run the step's pending graph now, so that its compile counts in this step (the device loader
                # would run it when it fetches the next batch)
                torch_xla.sync()
            now = metrics.snapshot()
            d = now.delta(self._last)
            self.per_step.append(d.compiles or 0)
            self.seconds.append(d.compile_s or 0.0)
            self._last = now

    return CompileCounter()
