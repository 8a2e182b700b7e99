"""Call a Pallas kernel from PyTorch as a custom op: compiled on a TPU VM, interpreted elsewhere.

On a TPU VM, :func:`pallas_op` hands the JAX function to TorchTPU's ``torch.tpu.pallas.jax_op``,
which exports it for the TPU and registers it as a ``torch.library`` custom op (torch_tpu 0.2.0
wheel, ``torch/tpu/pallas``; guide: the torch_tpu repository's ``docs/notebooks/custom_pallas_kernel.py``).
Everywhere else it registers the same function through ``torch.library.custom_op`` with an
implementation that converts the tensors to JAX arrays on the host and runs the kernel in Pallas'
TPU interpret mode. Both paths take the caller's fake (meta) implementation, so ``torch.compile``
traces the op without running it, and both return a ``CustomOpDef`` for ``register_autograd``.

>>> op = pallas_op("mylib::double", lambda x: x * 2, fake=lambda x: torch.empty_like(x), num_inputs=1)
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from ._jax import jax as _import_jax
from ._jax import on_tpu

__all__ = ["backend", "pallas_op", "to_jax", "to_torch", "SUPPORTED_DTYPES"]

SUPPORTED_DTYPES = (torch.float32, torch.bfloat16)
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*::[A-Za-z_][A-Za-z0-9_]*$")


def backend() -> str:
    """How :func:`pallas_op` runs kernels on this machine, in words."""
    if on_tpu():
        return "compiled for the TPU through torch_tpu's jax_op"
    return "Pallas TPU interpret mode on CPU (jax_op needs a TPU VM)"


def to_jax(t: torch.Tensor) -> Any:
    """A host JAX array with ``t``'s values (float32 or bfloat16; bf16 goes bit for bit)."""
    jnp = _import_jax().numpy
    host = t.detach().to("cpu").contiguous()
    if host.dtype == torch.bfloat16:
        import ml_dtypes

        return jnp.asarray(host.view(torch.int16).numpy().view(ml_dtypes.bfloat16))
    return jnp.asarray(host.numpy())


def to_torch(a: Any, device: torch.device) -> torch.Tensor:
    """A torch tensor on ``device`` with the values of JAX array ``a``."""
    arr = np.asarray(a)
    if arr.dtype.name == "bfloat16":
        return torch.from_numpy(arr.view(np.int16).copy()).view(torch.bfloat16).to(device)
    return torch.from_numpy(arr.copy()).to(device)


def pallas_op(
    name: str,
    jax_fn: Callable[..., Any],
    *,
    fake: Callable[..., Any],
    num_inputs: int,
    num_outputs: int = 1,
) -> Any:
    """Register ``jax_fn`` (tensors in, one tensor or a tuple out) as the torch custom op ``name``.

    ``fake`` computes output shapes and dtypes from (fake) inputs, for ``torch.compile`` and
    ``torch.export``. Non-tensor arguments must be bound into ``jax_fn`` beforehand (as with
    ``jax_op``: ``functools.partial``). Returns the ``CustomOpDef``: call it like a function, and give
    it a backward with ``register_autograd``.
    """
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValueError(f"op name must look like 'namespace::name', got {name!r}")
    if num_inputs < 1 or num_outputs < 1:
        raise ValueError(f"an op needs at least one input and one output, got {num_inputs} and {num_outputs}")
    if on_tpu():
        import torch_tpu  # noqa: F401  (only here, after a PCI scan found a TPU; registers torch.tpu)

        op = torch.tpu.pallas.jax_op(name, jax_fn)  # type: ignore[attr-defined]
        op.register_fake(fake)
        return op

    args = ", ".join(f"Tensor a{i}" for i in range(num_inputs))
    outs = "Tensor" if num_outputs == 1 else "(" + ", ".join(["Tensor"] * num_outputs) + ")"

    def impl(*tensors: torch.Tensor) -> Any:
        device = tensors[0].device
        result = jax_fn(*(to_jax(t) for t in tensors))
        if num_outputs == 1:
            return to_torch(result, device)
        return tuple(to_torch(r, device) for r in result)

    op = torch.library.custom_op(name, impl, mutates_args=(), schema=f"({args}) -> {outs}")
    op.register_fake(fake)
    return op
