"""The distributed chapter's model and data: the same numbers in every process that builds them.

Every rank, every mesh and the single-device reference must start from identical weights and see
identical batches, or their losses cannot be compared. :func:`mlp` builds the two-layer MLP from a
seed without touching the global RNG; :func:`teacher_batches` draws inputs and labels them with a
fixed random linear "teacher", so the task is learnable and the loss falls; :func:`sgd_reference`
is the single-device, single-process run the distributed runs are checked against. :func:`fsdp2_mlp` is the same
model sharded with FSDP2 over the ranks of the current process group; :func:`digests` and :func:`full_digests` hash
tensors so that processes can compare weights bit for bit without sending them.

>>> x, y = teacher_batches(steps=8, batch=64, seed=0)     # x: (8, 64, 32) float32, y: (8, 64) int64
>>> losses = sgd_reference(x, y, seed=0, lr=0.5)          # one float per step, plain CPU eager
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import torch
import torch.nn as nn
import torch.nn.functional as F

from .. import validate

__all__ = [
    "FEATURES",
    "HIDDEN",
    "CLASSES",
    "mlp",
    "fsdp2_mlp",
    "digests",
    "full_digests",
    "teacher_batches",
    "sgd_reference",
]

FEATURES, HIDDEN, CLASSES = 32, 64, 8  # every dimension divisible by 4 and 2: shards and micro-batches are even


def mlp(seed: int, features: int = FEATURES, hidden: int = HIDDEN, classes: int = CLASSES) -> nn.Sequential:
    """``Linear(features, hidden) -> ReLU -> Linear(hidden, classes)`` with weights drawn from ``seed`` (on CPU)."""
    seed = validate.integer("seed", seed, minimum=0)
    for name, v in (("features", features), ("hidden", hidden), ("classes", classes)):
        validate.integer(name, v, minimum=1)
    with torch.random.fork_rng(devices=[]):  # leave the caller's global generator where it was
        torch.manual_seed(seed)
        return nn.Sequential(nn.Linear(features, hidden), nn.ReLU(), nn.Linear(hidden, classes))


def teacher_batches(
    steps: int, batch: int, seed: int, features: int = FEATURES, classes: int = CLASSES
) -> tuple[torch.Tensor, torch.Tensor]:
    """``steps`` batches of ``batch`` examples: inputs ``(steps, batch, features)``, labels ``(steps, batch)``.

    Labels are ``argmax(x @ teacher)`` for a random teacher drawn from ``seed`` too.
    """
    steps = validate.integer("steps", steps, minimum=1)
    batch = validate.integer("batch", batch, minimum=1)
    seed = validate.integer("seed", seed, minimum=0)
    g = torch.Generator().manual_seed(10_000 + seed)  # a different stream from the weights' seed
    teacher = torch.randn(features, classes, generator=g)
    x = torch.randn(steps, batch, features, generator=g)
    return x, (x @ teacher).argmax(-1)


def sgd_reference(x: torch.Tensor, y: torch.Tensor, seed: int, lr: float, classes: int = CLASSES) -> list[float]:
    """Train :func:`mlp` (``seed``) with plain SGD on one CPU device, one step per batch; the loss of each step."""
    if x.dim() != 3 or y.shape != x.shape[:2]:
        raise ValueError(
            f"x must be (steps, batch, features) and y (steps, batch), got {tuple(x.shape)} and {tuple(y.shape)}"
        )
    lr = validate.positive("lr", lr)
    if y.numel() and int(y.max()) >= classes:
        raise ValueError(f"labels go up to {int(y.max())}, more than classes={classes} allows")
    model = mlp(seed, features=x.shape[-1], classes=classes)
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    losses = []
    for xb, yb in zip(x, y):
        loss = F.cross_entropy(model(xb), yb)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
    return losses


def fsdp2_mlp(seed: int) -> nn.Sequential:
    """:func:`mlp`, each linear layer and the whole model sharded with FSDP2 (``fully_shard``) over a CPU mesh of every
    rank of the default process group (which must exist)."""
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    if not dist.is_initialized():
        raise ValueError("fsdp2_mlp needs a process group: call torch.distributed.init_process_group first")
    mesh = init_device_mesh("cpu", (dist.get_world_size(),))
    model = mlp(seed)
    for layer in (model[0], model[2]):
        fully_shard(layer, mesh=mesh)
    fully_shard(model, mesh=mesh)
    return model


def digests(tensors: Mapping[str, Any]) -> dict[str, str]:
    """SHA-256 of each tensor's bytes (on the CPU; any dtype, bfloat16 included): equal digests, equal tensors bit
    for bit."""

    def raw(v: Any) -> bytes:
        return bytes(v.detach().cpu().contiguous().reshape(-1).view(torch.uint8).numpy())

    return {k: hashlib.sha256(raw(v)).hexdigest() for k, v in tensors.items()}


def full_digests(model: nn.Module, optimizer: torch.optim.Optimizer | None = None) -> dict[str, str]:
    """:func:`digests` of a sharded model's full parameters, gathered from every rank, and with ``optimizer`` of its
    full state too (``optim/<parameter>/<key>``, AdamW's moments and step): a collective, so every rank must call it;
    rank 0 gets the digests (the full state is gathered to its CPU), the other ranks an empty dict."""
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict, get_optimizer_state_dict

    options = StateDictOptions(full_state_dict=True, cpu_offload=True)
    out = digests(get_model_state_dict(model, options=options))
    if optimizer is not None:
        state: Any = get_optimizer_state_dict(model, optimizer, options=options).get("state", {})
        out.update(
            digests({f"optim/{p}/{k}": torch.as_tensor(v) for p, entry in state.items() for k, v in entry.items()})
        )
    return out
