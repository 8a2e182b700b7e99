"""Minimal reproductions of the ways attention goes inf/NaN in low precision, and their fixes.

Each case builds a tiny attention (or autocast) program, runs forward and backward on one
device, eagerly or through a compile function, and says whether the forward output and
the gradients are finite. The chapter ``notebooks/attention_numerics.ipynb`` runs them on
CPU (in a subprocess without torch_xla, via ``python -m xlaport.cli attention-check --json``) and
on the emulated ``tpu``/``neuron`` targets. You can run the same table on a real device.

Cases (each with its upstream source):

- ``autocast_outside_compile``: pytorch/pytorch#153044. ``torch.autocast`` around a
  compiled region: AOTAutograd traces the backward under the forward's autocast
  (``torch._functorch.config.backward_pass_autocast = "same_as_forward"``), so an fp32
  island's backward runs in fp16.
- ``fp16_logits``: hand-written ``softmax(q @ k.T / sqrt(d)) @ v`` whose logits pass fp16's
  65504 (pytorch/pytorch#119131).
- ``f32min_mask``: an additive mask built from ``torch.finfo(torch.float32).min`` kept as a
  tensor in the model dtype: it becomes -inf in bf16/fp16 and ``(1 - m) * -inf`` is NaN
  (huggingface/transformers#20605).
- ``fully_masked_rows``: padded query rows whose keys are all masked: softmax of all -inf is
  0/0 (pytorch/pytorch#131863 added ``_safe_softmax`` to SDPA for this).
"""

from __future__ import annotations

import contextlib
import functools
import math
import sys
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from typing import Any

import torch
import torch._functorch.config as functorch_config
import torch.nn.functional as F
from torch import nn

__all__ = [
    "CASES",
    "Case",
    "Outcome",
    "Fp32Island",
    "plan",
    "run_case",
    "run_table",
    "table",
    "max_logit",
    "QKV_SHAPE",
    "FP16_LOGITS_SCALE",
    "compile_modes",
    "safe_softmax",
    "tpu_sdpa_backend",
]

CompileFn = Callable[[Callable[..., Any]], Callable[..., Any]]


@dataclass(frozen=True)
class Case:
    name: str
    title: str
    source: str
    variants: tuple[str, ...]  # first is the broken code, the rest are fixes
    dtypes: tuple[str, ...]  # dtypes the broken variant is run in (fixes run in the first)


@dataclass(frozen=True)
class Outcome:
    case: str
    variant: str
    dtype: str
    device: str
    mode: str  # "eager" or the compile backend's name
    forward_finite: bool
    backward_finite: bool

    @property
    def cell(self) -> str:
        if self.forward_finite and self.backward_finite:
            return "ok"
        if not self.forward_finite and not self.backward_finite:
            return "NaN/inf fwd+bwd"
        return "NaN/inf fwd" if not self.forward_finite else "NaN/inf bwd"


CASES: dict[str, Case] = {
    c.name: c
    for c in (
        Case(
            "autocast_outside_compile",
            "autocast wrapped around a compiled region",
            "https://github.com/pytorch/pytorch/issues/153044",
            ("broken", "backward_pass_autocast='off'", "autocast inside the compiled region"),
            ("float16", "bfloat16"),
        ),
        Case(
            "fp16_logits",
            "hand-written attention, logits past 65504",
            "https://github.com/pytorch/pytorch/issues/119131",
            ("broken", "prescale q by 1/sqrt(d)", "fp32 scores + softmax", "SDPA"),
            ("float16", "bfloat16"),
        ),
        Case(
            "f32min_mask",
            "finfo(float32).min mask constant in the model dtype",
            "https://github.com/huggingface/transformers/pull/20605",
            ("broken", "finfo(compute dtype).min", "boolean mask + SDPA"),
            ("bfloat16", "float16"),
        ),
        Case(
            "fully_masked_rows",
            "fully masked query rows (padding), -inf fill",
            "https://github.com/pytorch/pytorch/pull/131863",
            ("broken", "zero the rows after softmax", "finfo(dtype).min fill", "safe softmax", "SDPA"),
            ("bfloat16", "float32"),
        ),
    )
}


Tensors = list[torch.Tensor | None]


def _finite_pair(forward: Tensors, backward: Tensors) -> tuple[bool, bool]:
    """(forward finite, backward finite) with one readback, so a lazy device runs one graph."""

    def flag(ts: Tensors) -> torch.Tensor:
        return torch.stack([torch.isfinite(t.detach()).all() for t in ts if t is not None]).all()

    f, b = torch.stack([flag(forward), flag(backward)]).cpu().tolist()
    return bool(f), bool(b)


@contextlib.contextmanager
def _backward_pass_autocast(value: Any) -> Iterator[None]:
    old = functorch_config.backward_pass_autocast
    functorch_config.backward_pass_autocast = value
    try:
        yield
    finally:
        functorch_config.backward_pass_autocast = old


def safe_softmax(scores: torch.Tensor, keep: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """Softmax over ``keep``-ed positions; rows with nothing kept give 0, forward *and* backward finite.

    Same contract as PyTorch's internal ``_safe_softmax`` (pytorch/pytorch#131060): the
    fully masked rows are given a finite input before the softmax, so neither the softmax
    nor its derivative ever sees a row of -inf.
    """
    if scores.shape[dim] != keep.shape[dim] and keep.shape[dim] != 1:
        raise ValueError(f"keep mask shape {tuple(keep.shape)} does not broadcast to scores {tuple(scores.shape)}")
    none_kept = ~keep.any(dim=dim, keepdim=True)
    filled = scores.masked_fill(~keep, float("-inf")).masked_fill(none_kept, 0.0)
    return torch.softmax(filled, dim=dim).masked_fill(none_kept, 0.0)


# ---------------------------------------------------------------- case 1: pytorch#153044
class Fp32Island(nn.Module):
    """The shape of the program in pytorch/pytorch#153044: low-precision matmul, then an fp32 island."""

    w: torch.Tensor

    def __init__(self, device_type: str) -> None:
        super().__init__()
        self.device_type = device_type
        self.register_buffer("w", torch.ones(4, 4))
        self.lin = nn.Linear(4, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x @ self.w  # autocast: low precision
        with torch.autocast(self.device_type, enabled=False):
            return self.lin(y.float())  # meant to run, and be differentiated, in fp32


def _autocast_outside_compile(
    device: torch.device, dtype: torch.dtype, compile_fn: CompileFn | None, variant: str
) -> tuple[bool, bool]:
    model = Fp32Island(device.type).to(device)
    x = torch.ones(1, 4, device=device)
    if variant == "autocast inside the compiled region":

        def step(x: torch.Tensor) -> torch.Tensor:
            with torch.autocast(device.type, dtype=dtype):
                return model(x)

        y = (compile_fn(step) if compile_fn else step)(x)
    else:
        setting = "off" if variant == "backward_pass_autocast='off'" else functorch_config.backward_pass_autocast
        with _backward_pass_autocast(setting):
            fn = compile_fn(model) if compile_fn else model
            with torch.autocast(device.type, dtype=dtype):
                y = fn(x)
            (y * 16384).sum().backward()  # loss scale 2**14, as in pytorch/pytorch#153044 (GradScaler starts at 2**16)
        return _finite_pair([y], [model.lin.weight.grad, model.lin.bias.grad])
    (y * 16384).sum().backward()
    return _finite_pair([y], [model.lin.weight.grad, model.lin.bias.grad])


# ---------------------------------------------------------------- cases 2-4: attention
QKV_SHAPE: tuple[int, int, int, int] = (1, 2, 32, 32)  # batch, heads, tokens, head dim of the reproductions
FP16_LOGITS_SCALE = 100.0  # size of q and k entries in the fp16_logits case


def _qkv(device: torch.device, dtype: torch.dtype, scale: float, seed: int = 0) -> tuple[torch.Tensor, ...]:
    g = torch.Generator().manual_seed(seed)
    shape = QKV_SHAPE
    q, k = (torch.randn(shape, generator=g) * scale for _ in range(2))
    v = torch.randn(shape, generator=g)
    return tuple(t.to(device=device, dtype=dtype).requires_grad_() for t in (q, k, v))


def _fp16_logits(
    device: torch.device, dtype: torch.dtype, compile_fn: CompileFn | None, variant: str
) -> tuple[bool, bool]:
    q, k, v = _qkv(device, dtype, scale=FP16_LOGITS_SCALE)
    d = q.shape[-1]

    def attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        if variant == "broken":
            return torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(d), dim=-1) @ v
        if variant == "prescale q by 1/sqrt(d)":
            return torch.softmax((q / math.sqrt(d)) @ k.transpose(-1, -2), dim=-1) @ v
        if variant == "fp32 scores + softmax":
            s = q.float() @ k.float().transpose(-1, -2) / math.sqrt(d)
            return torch.softmax(s, dim=-1).to(v.dtype) @ v
        return F.scaled_dot_product_attention(q, k, v)

    out = (compile_fn(attend) if compile_fn else attend)(q, k, v)
    out.float().square().mean().backward()
    return _finite_pair([out], [q.grad, k.grad, v.grad])


class _BertStyleMask(nn.Module):
    """Additive padding mask the way BERT-era code built it, constant kept as a buffer."""

    mask_min: torch.Tensor

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("mask_min", torch.tensor(torch.finfo(torch.float32).min))

    def forward(self, keep: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
        return (1.0 - keep.to(dtype)) * self.mask_min  # 0 where kept, "min" where padded


def _keep_mask(device: torch.device, lengths: tuple[int, ...] = (32, 20)) -> torch.Tensor:
    return (torch.arange(32)[None, :] < torch.tensor(lengths)[:, None]).to(device)  # (batch, tokens)


def _f32min_mask(
    device: torch.device, dtype: torch.dtype, compile_fn: CompileFn | None, variant: str
) -> tuple[bool, bool]:
    g = torch.Generator().manual_seed(1)
    q, k, v = (torch.randn(2, 2, 32, 32, generator=g).to(device=device, dtype=dtype).requires_grad_() for _ in range(3))
    keep = _keep_mask(device)  # second sequence is padded after 20 tokens
    masker = _BertStyleMask().to(device).to(dtype)  # model.to(bf16) also casts the buffer: -3.40e38 -> -inf
    d = q.shape[-1]

    def attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
        if variant == "boolean mask + SDPA":
            return F.scaled_dot_product_attention(q, k, v, attn_mask=keep[:, None, None, :])
        if variant == "broken":
            bias = masker(keep, q.dtype)
        else:  # finfo of the dtype the scores are computed in
            bias = (1.0 - keep.to(q.dtype)) * torch.finfo(q.dtype).min
        scores = q @ k.transpose(-1, -2) / math.sqrt(d) + bias[:, None, None, :]
        return torch.softmax(scores, dim=-1) @ v

    out = (compile_fn(attend) if compile_fn else attend)(q, k, v, keep)
    out.float().square().mean().backward()
    return _finite_pair([out], [q.grad, k.grad, v.grad])


def _fully_masked_rows(
    device: torch.device, dtype: torch.dtype, compile_fn: CompileFn | None, variant: str
) -> tuple[bool, bool]:
    g = torch.Generator().manual_seed(2)
    q, k, v = (torch.randn(2, 2, 32, 32, generator=g).to(device=device, dtype=dtype).requires_grad_() for _ in range(3))
    keep = _keep_mask(device)
    pair = keep[:, None, :, None] & keep[:, None, None, :]  # query i may see key j: padded queries see nothing
    d = q.shape[-1]

    def attend(
        q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, pair: torch.Tensor, keep: torch.Tensor
    ) -> torch.Tensor:
        scores = q @ k.transpose(-1, -2) / math.sqrt(d)
        if variant == "SDPA":
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=pair)
        elif variant == "finfo(dtype).min fill":
            out = torch.softmax(scores.masked_fill(~pair, torch.finfo(scores.dtype).min), dim=-1) @ v
        elif variant == "safe softmax":
            out = safe_softmax(scores, pair) @ v
        else:
            p = torch.softmax(scores.masked_fill(~pair, float("-inf")), dim=-1)
            if variant == "zero the rows after softmax":
                p = torch.where(pair.any(-1, keepdim=True), p, torch.zeros_like(p))
            out = p @ v
        # the loss ignores padded query rows, as a real training loss does
        return torch.where(keep[:, None, :, None], out, torch.zeros_like(out))

    out = (compile_fn(attend) if compile_fn else attend)(q, k, v, pair, keep)
    loss = out.float().square().mean()
    loss.backward()
    return _finite_pair([loss], [q.grad, k.grad, v.grad])


_RUNNERS = {
    "autocast_outside_compile": _autocast_outside_compile,
    "fp16_logits": _fp16_logits,
    "f32min_mask": _f32min_mask,
    "fully_masked_rows": _fully_masked_rows,
}


def run_case(
    case: str,
    variant: str,
    dtype: str,
    device: torch.device | str,
    compile_fn: CompileFn | None = None,
    mode: str = "eager",
) -> Outcome:
    """Run one variant of one case; ``compile_fn`` compiles the program (None: eager)."""
    if case not in CASES:
        raise ValueError(f"unknown case {case!r}; choose one of: {', '.join(CASES)}")
    if variant not in CASES[case].variants:
        raise ValueError(f"case {case!r} has no variant {variant!r}; it has: {', '.join(CASES[case].variants)}")
    dt = getattr(torch, dtype, None)
    if not isinstance(dt, torch.dtype) or not dt.is_floating_point:
        raise ValueError(f"dtype must name a torch floating dtype (float32, bfloat16, float16), got {dtype!r}")
    dev = torch.device(device)
    if compile_fn is not None:
        torch._dynamo.reset()  # a fresh trace, so config changes (backward_pass_autocast) take effect
    torch.manual_seed(0)
    fwd, bwd = _RUNNERS[case](dev, dt, compile_fn, variant)
    return Outcome(case, variant, dtype, str(dev), mode, fwd, bwd)


def plan() -> list[tuple[str, str, str]]:
    """(case, variant, dtype) rows: the broken code in every listed dtype, each fix in the first dtype."""
    rows = []
    for c in CASES.values():
        rows += [(c.name, "broken", dt) for dt in c.dtypes]
        rows += [(c.name, v, c.dtypes[0]) for v in c.variants[1:]]
    return rows


def run_table(
    device: torch.device | str, modes: dict[str, CompileFn | None], rows: list[tuple[str, str, str]] | None = None
) -> list[Outcome]:
    """Every row of :func:`plan` (or ``rows``) on ``device`` in each mode (name -> compile function or None)."""
    out = []
    for case, variant, dtype in rows if rows is not None else plan():
        for mode, fn in modes.items():
            out.append(run_case(case, variant, dtype, device, fn, mode))
    return out


# ---------------------------------------------------------------- TorchTPU's SDPA paths (documented rules)
def tpu_sdpa_backend(
    query_shape: tuple[int, ...],
    dtype: str,
    *,
    dropout_p: float = 0.0,
    static_shapes: bool = True,
    mask_requires_grad: bool = False,
) -> str:
    """Which SDPA path TorchTPU 0.2.0 documents for these inputs: "flash", "math" or "none".

    Applies the conditions in the torch_tpu 0.2.0 wheel's error strings (see
    ``profiles.toml``, rule ``tpu/sdpa-paths``); this is the documented rule, not an
    observation on a TPU.
    """
    if len(query_shape) < 1 or any((not isinstance(n, int)) or n < 0 for n in query_shape):
        raise ValueError(f"query_shape must be a tuple of non-negative ints, got {query_shape!r}")
    if not 0.0 <= dropout_p < 1.0:
        raise ValueError(f"dropout_p must be in [0, 1), got {dropout_p!r}")
    from ..profiles import profile

    head_dim = query_shape[-1]
    flash = (
        static_shapes
        and dtype in profile("tpu").rule("sdpa-paths").extra["flash_dtypes"]
        and not mask_requires_grad
        and len(query_shape) >= 4
        and query_shape[0] >= 1
        and (head_dim < 128 or head_dim % 128 == 0)
    )
    if flash:
        return "flash"
    return "math" if dropout_p == 0.0 else "none"


def max_logit(scale: float = FP16_LOGITS_SCALE, seed: int = 0) -> float:
    """The largest |q · k| of the fp16_logits case's inputs, computed in float32 (before any 1/sqrt(d))."""
    q, k, _ = _qkv(torch.device("cpu"), torch.float32, scale=scale, seed=seed)
    return float((q.detach() @ k.detach().transpose(-1, -2)).abs().max())


# ---------------------------------------------------------------- the whole table, as data
def compile_modes(backends: list[str]) -> dict[str, CompileFn | None]:
    """Eager plus one ``torch.compile(backend=b)`` mode per backend name (CPU runs)."""
    modes: dict[str, CompileFn | None] = {"eager": None}
    for b in backends:
        modes[b] = functools.partial(torch.compile, backend=b)
    return modes


def table(
    target: str = "cpu", backends: tuple[str, ...] | list[str] = ("aot_eager",), case: str | None = None
) -> dict[str, Any]:
    """Run the reproductions and their fixes: on CPU (eager + ``backends``) or on a target (eager + its compile).

    Returns plain data (JSON-ready): torch version, device, autocast default, whether torch_xla
    was imported, and one outcome dict per (case, variant, dtype, mode).
    """
    if case is not None and case not in CASES:
        raise ValueError(f"unknown case {case!r}; choose one of: {', '.join(CASES)}")
    rows = [r for r in plan() if case in (None, r[0])]
    if target == "cpu":
        device, modes = torch.device("cpu"), compile_modes([b for b in backends if b])
    else:
        from ..targets import target as get_target

        t = get_target(target)
        device, modes = t.device, {"eager": None, "compiled": t.compile}
    return {
        "torch": torch.__version__,
        "device": str(device),
        "backward_pass_autocast_default": functorch_config.backward_pass_autocast,
        "torch_xla_imported": "torch_xla" in sys.modules,
        "outcomes": [asdict(o) for o in run_table(device, modes, rows)],
    }
