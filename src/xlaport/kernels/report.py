"""Measure the ports: errors against PyTorch, the race check, and lines of code per version."""

from __future__ import annotations

import ast
import contextlib
import io
import json
import math
import os
import re
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..validate import integer
from . import _jax

__all__ = [
    "Sizes",
    "errors_table",
    "lines_of_code",
    "losses_table",
    "pallas_report",
    "race_report",
    "races_table",
    "triton_report",
]

_HERE = Path(__file__).resolve().parent


class Sizes:
    """The chapter's problem sizes, checked once: RMSNorm ``rows x dim``, matmul ``(m, k) @ (k, n)``."""

    def __init__(self, rows: int, dim: int, m: int, k: int, n: int, eps: float = 1e-6) -> None:
        self.rows, self.dim = integer("rows", rows, minimum=1), integer("dim", dim, minimum=1)
        self.m, self.k, self.n = (integer(x, v, minimum=1) for x, v in (("m", m), ("k", k), ("n", n)))
        if not (isinstance(eps, (int, float)) and 0 < eps < 1):
            raise ValueError(f"eps must be a number in (0, 1), got {eps!r}")
        self.eps = float(eps)

    def args(self) -> list[str]:
        return [f"--{k}={getattr(self, k)}" for k in ("rows", "dim", "m", "k", "n", "eps")]


def _inputs(seed: int, s: Sizes) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    shapes = {"x": (s.rows, s.dim), "w": (s.dim,), "dy": (s.rows, s.dim), "a": (s.m, s.k), "b": (s.k, s.n)}
    out = {name: torch.randn(*shape, generator=g) for name, shape in shapes.items()}
    out["bias"] = torch.randn(s.n, generator=g)
    out["dc"] = torch.randn(s.m, s.n, generator=g)
    return out


def triton_report(seed: int, sizes: Sizes, device: str = "cpu", timeout: float = 120) -> dict[str, Any]:
    """Run the Triton kernels against PyTorch: on a CUDA ``device`` for real, else in the interpreter.

    The interpreter needs ``TRITON_INTERPRET=1`` before triton is first imported, so on CPU this runs
    ``python -m xlaport.kernels.triton_kernels`` in a fresh process and reads its JSON.
    """
    seed = integer("seed", seed, minimum=0)
    if torch.device(device).type == "cuda":
        from . import triton_kernels

        return triton_kernels.check(seed, sizes.rows, sizes.dim, sizes.m, sizes.k, sizes.n, sizes.eps, device)
    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": os.pathsep.join([str(_HERE.parents[1]), *sys.path])}
    argv = [sys.executable, "-m", "xlaport.kernels.triton_kernels", f"--seed={seed}", *sizes.args()]
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=timeout)
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"the Triton interpreter process failed: {tail}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _maxerr(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a.detach().float() - b.detach().float()).abs().max())


def pallas_report(seed: int, sizes: Sizes) -> dict[str, float]:
    """The Pallas ports through the PyTorch bridge (forward and backward) against PyTorch: max abs errors."""
    from .ops import matmul_bias_relu, rmsnorm

    t = _inputs(integer("seed", seed, minimum=0), sizes)
    x, w = t["x"].clone().requires_grad_(), t["w"].clone().requires_grad_()
    xr, wr = t["x"].clone().requires_grad_(), t["w"].clone().requires_grad_()
    y, yr = rmsnorm(x, w, sizes.eps), torch.nn.functional.rms_norm(xr, (sizes.dim,), wr, sizes.eps)
    y.backward(t["dy"])
    yr.backward(t["dy"])
    a, b, bias = (t[k].clone().requires_grad_() for k in ("a", "b", "bias"))
    ar, br, biasr = (t[k].clone().requires_grad_() for k in ("a", "b", "bias"))
    c, cr = matmul_bias_relu(a, b, bias), torch.relu(ar @ br + biasr)
    c.backward(t["dc"])
    cr.backward(t["dc"])
    pairs = {
        "rmsnorm_y": (y, yr),
        "rmsnorm_dx": (x.grad, xr.grad),
        "rmsnorm_dw": (w.grad, wr.grad),
        "matmul": (c, cr),
        "matmul_da": (a.grad, ar.grad),
        "matmul_db": (b.grad, br.grad),
        "matmul_dbias": (bias.grad, biasr.grad),
    }
    return {k: _maxerr(p, r) for k, (p, r) in pairs.items()}  # type: ignore[arg-type]


def race_report(seed: int, sizes: Sizes, cores: int = 2) -> dict[str, dict[str, Any]]:
    """Run the kernels that revisit an output block with the interpret-mode race detector on ``cores`` cores.

    For each case: ``races`` (the detector's verdict), ``dw_error`` or ``error`` (max abs error against
    PyTorch; NaN when a core read a block another core had not initialised) and ``messages`` (lines the
    detector printed). Only meaningful in interpret mode; on a TPU VM it raises ``RuntimeError``.
    """
    if _jax.on_tpu():
        raise RuntimeError("the race detector is part of TPU interpret mode; on a TPU the kernels run compiled")
    from . import pallas_kernels as pk
    from .bridge import to_jax

    t = _inputs(integer("seed", seed, minimum=0), sizes)
    xr, wr = t["x"].clone().requires_grad_(), t["w"].clone().requires_grad_()
    torch.nn.functional.rms_norm(xr, (sizes.dim,), wr, sizes.eps).backward(t["dy"])
    x, w, dy = to_jax(t["x"]), to_jax(t["w"]), to_jax(t["dy"])
    _y, rstd = pk.rmsnorm_fwd(x, w, eps=sizes.eps, interpret=_jax.interpret_params())
    out: dict[str, dict[str, Any]] = {}
    for reduction in ("arbitrary", "parallel"):
        params = _jax.interpret_params(detect_races=True, cores=cores)
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            _dx, dw = pk.rmsnorm_bwd(dy, x, w, rstd, reduction=reduction, interpret=params)
            dw = np.asarray(dw)
        err = float(np.max(np.abs(dw - wr.grad.numpy())))  # type: ignore[union-attr]
        lines = [ln for ln in buf.getvalue().splitlines() if ln.strip()]
        out[f"rmsnorm_bwd/{reduction}"] = {"races": _jax.races_found(), "dw_error": err, "messages": lines}
    params = _jax.interpret_params(detect_races=True, cores=cores)
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        c = np.asarray(pk.matmul_bias_relu(to_jax(t["a"]), to_jax(t["b"]), to_jax(t["bias"]), interpret=params))
    ref = torch.relu(t["a"] @ t["b"] + t["bias"]).numpy()
    out["matmul/arbitrary"] = {
        "races": _jax.races_found(),
        "error": float(np.max(np.abs(c - ref))),
        "messages": [ln for ln in buf.getvalue().splitlines() if ln.strip()],
    }
    return out


def _code_lines(source: str, names: tuple[str, ...]) -> int:
    """Lines of code (no blank lines, comments or docstrings) of the top-level functions ``names`` in ``source``."""
    tree = ast.parse(source)
    lines = source.splitlines()
    total, found = 0, set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in names:
            found.add(node.name)
            doc = set()
            body0 = node.body[0] if node.body else None
            if isinstance(body0, ast.Expr) and isinstance(getattr(body0, "value", None), ast.Constant):
                doc = set(range(body0.lineno, (body0.end_lineno or body0.lineno) + 1))
            start = min([node.lineno] + [d.lineno for d in node.decorator_list])
            for i in range(start, (node.end_lineno or node.lineno) + 1):
                text = lines[i - 1].strip()
                if text and not text.startswith("#") and i not in doc:
                    total += 1
    missing = set(names) - found
    if missing:
        raise ValueError(f"no top-level function(s) {sorted(missing)} in the source")
    return total


def lines_of_code() -> dict[str, dict[str, int]]:
    """Lines of code of each version of the RMSNorm forward (kernel + launcher) and of the matmul."""
    from .nki_kernels import RMSNORM_SOURCE

    tri = (_HERE / "triton_kernels.py").read_text(encoding="utf-8")
    pal = (_HERE / "pallas_kernels.py").read_text(encoding="utf-8")
    return {
        "rmsnorm forward": {
            "Triton": _code_lines(tri, ("_rmsnorm_fwd_kernel", "rmsnorm_fwd")),
            "Pallas": _code_lines(pal, ("_rmsnorm_fwd_kernel", "rmsnorm_fwd")),
            "NKI": _code_lines(RMSNORM_SOURCE, ("rmsnorm_fwd",)),
        },
        "rmsnorm backward": {
            "Triton": _code_lines(tri, ("_rmsnorm_bwd_kernel", "rmsnorm_bwd")),
            "Pallas": _code_lines(pal, ("_rmsnorm_bwd_kernel", "rmsnorm_bwd")),
        },
        "matmul + bias + ReLU": {
            "Triton": _code_lines(tri, ("_matmul_bias_relu_kernel", "matmul_bias_relu")),
            "Pallas": _code_lines(pal, ("_matmul_kernel", "matmul_bias_relu")),
        },
    }


def errors_table(errors: Mapping[str, float]) -> Any:
    """The errors of :func:`triton_report` (its ``errors``) or :func:`pallas_report` as a markdown table:
    one row per result, its max abs error against PyTorch."""
    from ..notebook import markdown_table

    if not isinstance(errors, Mapping) or not errors:
        raise ValueError("errors_table() needs a non-empty mapping of result name -> max abs error")
    return markdown_table(
        [(name, f"{float(err):.2e}") for name, err in errors.items()], ["result", "max |error| vs PyTorch"]
    )


def races_table(races: Mapping[str, Mapping[str, Any]]) -> Any:
    """What :func:`race_report` found, as a markdown table: per case the detector's verdict, the max abs error
    against PyTorch and how many lines the detector printed."""
    from ..notebook import markdown_table

    if not isinstance(races, Mapping) or not races:
        raise ValueError("races_table() needs race_report()'s non-empty mapping of case -> result")
    rows = []
    for case, r in races.items():
        err = r.get("dw_error", r.get("error")) if isinstance(r, Mapping) else None
        if err is None or "races" not in r:
            raise ValueError(f"races_table(): case {case!r} lacks 'races' and 'dw_error' or 'error'")
        shown = f"{float(err):.2e}" if math.isfinite(float(err)) else "no result (the cores raced)"
        rows.append((case, "yes" if r["races"] else "no", shown, len(r.get("messages", []))))
    return markdown_table(rows, ["case", "races", "max |error|", "detector lines"])


_RACE = re.compile(
    r"(read|write) of \(.*?\)\[\(slice\((\d+), (\d+), 1\), slice\((\d+), (\d+), 1\)\)\] from (\d+), (\d+)"
)


def describe_race(messages: Sequence[str]) -> str:
    """Interpret mode's race report in words: which block each writer touched, from which device and core (JAX's
    ``RACE DETECTED`` lines give a buffer, the slice accessed, then device and core ids)."""
    seen = [m.groups() for line in messages for m in [_RACE.search(line)] if m]
    if not seen:
        return "no race reported"
    kind, r0, r1, c0, c1, _, _ = seen[0]
    who = " and ".join(f"core {core} of device {dev}" for *_, dev, core in seen)
    rows = f"row {r0}" if int(r1) - int(r0) == 1 else f"rows {r0} to {int(r1) - 1}"
    return (
        f"a race on one output block: {who} each did a {kind} of {rows}, columns {c0} to {int(c1) - 1}, of the same "
        "buffer, with nothing ordering them"
    )


def losses_table(losses: Mapping[str, Sequence[float]]) -> Any:
    """Training losses per step of models trained side by side (name -> loss per step) as a markdown table."""
    from ..notebook import markdown_table

    if not isinstance(losses, Mapping) or not losses:
        raise ValueError("losses_table() needs a non-empty mapping of model name -> losses per step")
    steps = {len(v) for v in losses.values()}
    if len(steps) != 1 or 0 in steps:
        raise ValueError("losses_table(): every model needs the same, non-zero number of steps")
    n = steps.pop()
    rows = [(name, *(f"{float(v):.4g}" for v in ls)) for name, ls in losses.items()]  # the printed gap says how close
    return markdown_table(rows, ["model", *(f"step {i + 1}" for i in range(n))])
