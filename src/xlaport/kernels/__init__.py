"""Custom kernels: a Triton kernel ported to Pallas (TPU) and NKI (Trainium), wired back into PyTorch.

- :mod:`~xlaport.kernels.bridge`: ``pallas_op`` registers a Pallas kernel as a torch custom op (TorchTPU's
  ``jax_op`` on a TPU VM, TPU interpret mode on CPU elsewhere), with a fake implementation.
- :mod:`~xlaport.kernels.ops`: the ported ``rmsnorm`` and ``matmul_bias_relu`` with autograd, and
  ``RMSNorm``, a drop-in for ``torch.nn.RMSNorm``.
- :mod:`~xlaport.kernels.triton_kernels`, :mod:`~xlaport.kernels.pallas_kernels`,
  :mod:`~xlaport.kernels.nki_kernels`: the kernels in each language (NKI as source text).
- :mod:`~xlaport.kernels.report`: errors against PyTorch, the race check, lines of code;
  :mod:`~xlaport.kernels.fusion`: the fusions XLA makes of the plain-PyTorch version.

Importing this package imports neither JAX nor Triton; JAX is imported CPU-only unless a TPU is found.
The concept table (Triton → Pallas → NKI) is :mod:`xlaport.reference.kernel_concepts`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

__all__ = [
    "RMSNorm",
    "Sizes",
    "backend",
    "describe_race",
    "errors_table",
    "interpret_params",
    "lines_of_code",
    "losses_table",
    "matmul_bias_relu",
    "pallas_op",
    "pallas_report",
    "race_report",
    "races_table",
    "rmsnorm",
    "triton_report",
    "xla_fusions",
]

_LAZY = {
    "RMSNorm": "ops",
    "rmsnorm": "ops",
    "matmul_bias_relu": "ops",
    "pallas_op": "bridge",
    "backend": "bridge",
    "interpret_params": "_jax",
    "Sizes": "report",
    "lines_of_code": "report",
    "errors_table": "report",
    "losses_table": "report",
    "races_table": "report",
    "describe_race": "report",
    "pallas_report": "report",
    "race_report": "report",
    "triton_report": "report",
    "xla_fusions": "fusion",
}

if TYPE_CHECKING:  # pragma: no cover
    from ._jax import interpret_params
    from .bridge import backend, pallas_op
    from .fusion import xla_fusions
    from .ops import RMSNorm, matmul_bias_relu, rmsnorm
    from .report import (
        Sizes,
        describe_race,
        errors_table,
        lines_of_code,
        losses_table,
        pallas_report,
        race_report,
        races_table,
        triton_report,
    )


__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())
