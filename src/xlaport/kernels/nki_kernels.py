"""The chapter's RMSNorm in NKI (AWS Neuron Kernel Interface), as source text.

NKI and its CPU simulator (``nki.simulate``) ship with the Neuron SDK from AWS's own package
repository, not from the public Python package index, so the kernel is kept as text: the chapter
shows it, counts its lines and runs it only where ``nki`` is importable (:func:`run_rmsnorm`).

Written against the NKI API of Neuron 2.29+ (``import nki``; ``nki.language``/``nki.isa``):
quickstart https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/get-started/quickstart-implement-run-kernel.html,
ISA https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/nki.isa.html,
simulator https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/guides/nki_simulator.html.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

__all__ = ["RMSNORM_SOURCE", "available", "run_rmsnorm"]

RMSNORM_SOURCE = """\
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def rmsnorm_fwd(x, w, eps=1e-6):
    n, d = x.shape
    P = nl.tile_size.pmax  # 128 partitions: one row per partition
    assert n % P == 0, "pad the rows to a multiple of 128 on the host"
    y = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    w_tile = nl.ndarray((P, d), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=w_tile, src=w.reshape((1, d)).broadcast(0, P))  # the weight on every partition
    for i in range(n // P):  # the grid, as a loop over row tiles
        x_tile = nl.ndarray((P, d), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=x_tile, src=x[i * P:(i + 1) * P, :])  # HBM -> SBUF
        sq = nl.ndarray((P, d), dtype=nl.float32, buffer=nl.sbuf)
        ss = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=sq, op=nl.square, data=x_tile, reduce_op=nl.add,
                        reduce_res=ss, reduce_cmd=nisa.reduce_cmd.reset_reduce)  # sum of squares per row
        rstd = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=rstd, data=ss, op0=nl.multiply, operand0=1.0 / d, op1=nl.add, operand1=eps)
        nisa.activation(dst=rstd, op=nl.rsqrt, data=rstd)
        y_tile = nl.ndarray((P, d), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=y_tile, data=x_tile, op0=nl.multiply, operand0=rstd)  # x * rstd (per row)
        nisa.tensor_tensor(dst=y_tile, data1=y_tile, data2=w_tile, op=nl.multiply)
        nisa.dma_copy(dst=y[i * P:(i + 1) * P, :], src=y_tile)  # SBUF -> HBM
    return y
"""


def available() -> bool:
    """True where the ``nki`` package (with its simulator) is importable; it is not on PyPI."""
    return importlib.util.find_spec("nki") is not None


def run_rmsnorm(x: Any, w: Any, eps: float = 1e-6) -> Any:
    """Run :data:`RMSNORM_SOURCE` in ``nki.simulate`` on NumPy arrays (only where :func:`available`)."""
    if not available():
        raise RuntimeError("nki is not installed here (it ships with the AWS Neuron SDK, not on PyPI)")
    import tempfile

    import nki

    # nki.jit reads the kernel's source, so load it from a real file rather than exec'ing a string.
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "xlaport_nki_rmsnorm.py"
        path.write_text(RMSNORM_SOURCE, encoding="utf-8")
        spec = importlib.util.spec_from_file_location("xlaport_nki_rmsnorm", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return nki.simulate(module.rmsnorm_fwd)(x, w, eps)
