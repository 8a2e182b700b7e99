"""Every exercise's checker against the answers a learner really writes: the reference passes, each wrong answer
fails with a message that names the mistake, and no answer at all (garbage included) makes a checker raise.

``CASES`` maps each exercise label to a call of its checker with the chapter's kind of arguments (small, seeded
stand-ins) and its answers; sessions 1 and 2 have their own file (``test_exercises_sessions.py``).
``python tests/unit/test_exercises_wrong.py`` prints every answer with the message it gets.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import torch

import xlaport.exercises as X
from xlaport.cost import Migration, Side, break_even_current_usd_per_chip_hour
from xlaport.distributed.mesh import fsdp_bytes_per_device, largest_parameter
from xlaport.numerics.attention import safe_softmax
from xlaport.recompile.buckets import choose_buckets
from xlaport.recompile.guards import logical_storage_offset
from xlaport.recompile.packing import pack


@dataclass
class Case:
    check: Callable[[Any], X.Check]  # the checker with the chapter's arguments bound; takes the answer
    reference: Any
    wrong: dict[str, tuple[Any, str]] = field(default_factory=dict)  # name -> (answer, words the message must hold)


ROOT = Path(__file__).resolve().parents[2]
G = torch.Generator().manual_seed(0)
CASES: dict[str, Case] = {}


# ------------------------------------------------------------------ recompile_storms
def _quantile(lengths: list[int], budget: int) -> list[int]:
    return choose_buckets(lengths, f"quantile:{budget}")


CHAPTER_BATCHES = [128, 256]  # the recompile_storms chapter's own buckets, as a learner might copy them
CASES["recompile-storms-budget"] = Case(
    lambda a: X.check_buckets(a, budget=2),
    _quantile,
    {
        "the chapter's buckets, copied": (lambda lengths, budget: CHAPTER_BATCHES, "fits no bucket"),
        "the chapter's buckets as a value": (CHAPTER_BATCHES, "answer must be a function"),
        "one bucket per length": (lambda lengths, budget: sorted(set(lengths)), "compiles; the budget is 2"),
        "powers of two": (lambda lengths, budget: choose_buckets(lengths, "pow2"), "compiles; the budget is 2"),
        "the budget ignored": (lambda lengths, budget: _quantile(lengths, 4), "compiles; the budget is 2"),
        "quantiles not rounded up past the longest": (
            lambda lengths, budget: [sorted(lengths)[len(lengths) // 2], sorted(lengths)[-2]],
            "fits no bucket",
        ),
        "zero-length bucket": (lambda lengths, budget: [0, max(lengths)], "positive"),
        "not numbers": (lambda lengths, budget: ["small", "large"], "whole numbers"),
    },
)
CASES["recompile-storms-waste"] = Case(
    lambda a: X.check_buckets(a, budget=3, max_waste=0.2),
    _quantile,
    {
        "one big bucket": (lambda lengths, budget: [max(lengths)], "padding"),
        "two buckets kept": (lambda lengths, budget: _quantile(lengths, 2), "padding"),
        "evenly spaced up to the longest": (
            lambda lengths, budget: [max(lengths) * (j + 1) // budget for j in range(budget)],
            "padding",
        ),
        "four buckets": (lambda lengths, budget: _quantile(lengths, 4), "compiles; the budget is 3"),
    },
)


# ------------------------------------------------------------------ sd3_view_offsets
def _moving(calls: list[dict[str, Any]]) -> set[str]:
    tensors = [k for k, v in calls[0].items() if torch.is_tensor(v)]
    return {k for k in tensors if len({logical_storage_offset(c[k]) for c in calls}) > 1}


CASES["sd3-culprits"] = Case(
    lambda a: X.check_view_culprits(a),
    _moving,
    {
        "the chapter's names, copied": (lambda calls: {"timestep", "sigma_next"}, "missed"),
        "the names as a value": ({"timestep", "sigma_next"}, "answer must be a function"),
        "every view": (lambda calls: {k for k, v in calls[0].items() if v._base is not None}, "keep one offset"),
        "the address changes": (
            lambda calls: {k for k in calls[0] if len({c[k].data_ptr() for c in calls}) > 1},
            "noise keeps one offset",
        ),
        "the values change": (
            lambda calls: {k for k in calls[0] if not all(torch.equal(c[k], calls[0][k]) for c in calls)},
            "keeps one offset",
        ),
        "only the first step looked at": (
            lambda calls: {k for k, v in calls[0].items() if v.storage_offset() > 0},
            "missed t",
        ),
    },
)


def _loop(ts: torch.Tensor, sg: torch.Tensor) -> list[dict[str, torch.Tensor]]:
    lat, scales = torch.zeros(4), torch.tensor([1.0, 4.5])
    return [{"latents": lat, "timestep": ts[i], "sigma_next": sg[i + 1], "scale": scales[1]} for i in range(len(ts))]


def _fixed(ts: torch.Tensor, sg: torch.Tensor) -> list[dict[str, torch.Tensor]]:
    return [{k: v.clone() for k, v in c.items()} for c in _loop(ts, sg)]


_CHAPTER_TS, _CHAPTER_SG = torch.linspace(1000, 0, 5), torch.linspace(1, 0, 6)
CASES["sd3-fix"] = Case(
    lambda a: X.check_offsets_fixed(a, _loop),
    _fixed,
    {
        "the original loop": (_loop, "still moves"),
        "the chapter's schedule, not the argument": (
            lambda ts, sg: _fixed(_CHAPTER_TS, _CHAPTER_SG),
            "steps, the loop has",
        ),
        "calls as a value": (_fixed(_CHAPTER_TS, _CHAPTER_SG), "answer must be a function"),
        "values changed": (
            lambda ts, sg: [{**c, "sigma_next": c["sigma_next"] + 1} for c in _fixed(ts, sg)],
            "differs",
        ),
        "off by one step": (lambda ts, sg: _fixed(sg[1:], sg), "differs"),
        "an argument dropped": (
            lambda ts, sg: [{k: v for k, v in c.items() if k != "scale"} for c in _fixed(ts, sg)],
            "missing",
        ),
        ".item() floats": (
            lambda ts, sg: [{**c, "timestep": float(c["timestep"])} for c in _fixed(ts, sg)],
            "specializes on a Python number",
        ),
    },
)


# ------------------------------------------------------------------ op_fallbacks
def _chol(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.cholesky_solve(b, torch.linalg.cholesky(a))


_A6 = torch.eye(6, dtype=torch.float64) * 3
_B6 = torch.ones(6, 1, dtype=torch.float64)
CASES["op-fallbacks-solve"] = Case(
    lambda a: X.check_rewrite(a, _chol),
    lambda a, b: torch.linalg.solve(a, b),
    {
        "the original": (_chol, "on tpu"),
        "the chapter's system, not the arguments": (lambda a, b: torch.linalg.solve(_A6, _B6), "shape"),
        "the inverse, transposed": (lambda a, b: (torch.linalg.inv(a).T @ b.T).T, "shape"),
        "float32 on the way": (lambda a, b: torch.linalg.solve(a.float(), b.float()).double(), "max |error|"),
        "one right-hand side only": (lambda a, b: torch.linalg.solve(a, b[:, :1]), "right-hand side(s): shape"),
        "the factorization kept": (
            lambda a, b: torch.linalg.solve_triangular(
                torch.linalg.cholesky(a).T,
                torch.linalg.solve_triangular(torch.linalg.cholesky(a), b, upper=False),
                upper=True,
            ),
            "on tpu",
        ),
    },
)


def _padded(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    same = (x[:, None, :] == x[None, :, :]).all(-1)
    first = same.int().argmax(0) == torch.arange(len(x))
    order = torch.argsort((~first).to(torch.int8), stable=True)
    return x[order], first.sum()


def _keyed16(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:  # the chapter's id_range as the key's base
    key = x[:, 0] * 16 + x[:, 1]
    first = (key[:, None] == key[None, :]).int().argmax(0) == torch.arange(len(x))
    return x[torch.argsort((~first).int(), stable=True)], first.sum()


def _counted_unique(x: torch.Tensor) -> tuple[torch.Tensor, int]:
    r = torch.unique(x, dim=0)
    return r, len(r)


def _unique_padded(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:  # one shape, but unique_dim on the way
    r = torch.unique(x, dim=0)
    return torch.cat([r, x[: len(x) - len(r)]]), torch.tensor(len(r))


CASES["op-fallbacks-dedup"] = Case(
    lambda a: X.check_padded_unique(a),
    _padded,
    {
        "torch.unique": (_counted_unique, "output shape"),
        "torch.unique, padded back": (_unique_padded, "on tpu"),
        "the chapter's key base": (_keyed16, "different pairs got one key"),
        "count of all rows": (lambda x: (x, len(x)), "distinct pairs expected"),
        "sorted, not deduplicated": (lambda x: (x.sort(0).values, torch.tensor(len(x))), "distinct pairs expected"),
    },
)


# ------------------------------------------------------------------ attention_numerics
def _scaled(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return torch.softmax((q / q.shape[-1] ** 0.5) @ k.transpose(-1, -2), -1) @ v


CASES["attention-fp16"] = Case(
    lambda a: X.check_finite_attention(a, atol=1e-2),
    _scaled,
    {
        "the naive order": (
            lambda q, k, v: torch.softmax(q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5, -1) @ v,
            "non-finite",
        ),
        "scale forgotten": (lambda q, k, v: torch.softmax(q @ k.transpose(-1, -2), -1) @ v, "non-finite"),
        "the chapter's head size": (
            lambda q, k, v: torch.softmax((q / 32**0.5) @ k.transpose(-1, -2), -1) @ v,
            "from the fp32 reference softmax(q kᵀ / sqrt(64)) v",
        ),
        "zeros": (lambda q, k, v: v * 0, "from the fp32 reference"),
        "nan_to_num on the output": (
            lambda q, k, v: torch.nan_to_num(torch.softmax(q @ k.transpose(-1, -2) / 8, -1) @ v),
            "forward finite, gradient of q, k",
        ),
    },
)
_KEEP_CHAPTER = torch.ones(2, 4, 6, dtype=torch.bool)
CASES["attention-masked"] = Case(
    lambda a: X.check_masked_softmax(a),
    safe_softmax,
    {
        "-inf fill": (lambda s, k: torch.softmax(s.masked_fill(~k, float("-inf")), -1), "non-finite"),
        "-1e4 fill": (lambda s, k: torch.softmax(s.masked_fill(~k, -1e4), -1), "must give 0"),
        "float32 min fill": (
            lambda s, k: torch.softmax(s.masked_fill(~k, torch.finfo(s.dtype).min), -1),
            "must give 0",
        ),
        "mask ignored": (lambda s, k: torch.softmax(s, -1), "must give 0"),
        "the chapter's mask, not the argument": (
            lambda s, k: torch.softmax(s.masked_fill(~_KEEP_CHAPTER, -1e4), -1),
            "raised RuntimeError",
        ),
        "zeroed but not renormalised": (lambda s, k: torch.softmax(s, -1) * k, "from a softmax over the kept"),
    },
)


# ------------------------------------------------------------------ custom_kernels
def _rms(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.rms_norm(x, (x.shape[-1],), w, 1e-6)


CASES["kernels-fallback"] = Case(
    lambda a: X.check_kernel_port(a, _rms, 1e-4),
    lambda x, w: x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w,
    {
        "weight detached": (
            lambda x, w: x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w.detach(),
            "no gradient for input 1",
        ),
        "the variance, not the mean of squares": (
            lambda x, w: x * torch.rsqrt(x.var(-1, keepdim=True, unbiased=False) + 1e-6) * w,
            "forward max |error|",
        ),
        "no epsilon": (lambda x, w: x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True)) * w, "keep eps inside"),
        "the chapter's dim": (lambda x, w: torch.nn.functional.rms_norm(x, (96,), w, 1e-6), "raised RuntimeError"),
        "layer norm instead": (lambda x, w: torch.nn.functional.layer_norm(x, (x.shape[-1],)) * w, "forward"),
        "under no_grad": (lambda x, w: torch.no_grad()(_rms)(x, w), "not differentiable"),
    },
)
CASES["kernels-block"] = Case(
    lambda a: X.check_block_shape(a),
    lambda shape: (8 if shape[0] >= 8 else shape[0], shape[1]),
    {
        "the chapter's block, copied": (lambda shape: (8, 96), "neither a multiple of 128 nor the full dim"),
        "a block as a value": ((8, 96), "answer must be a function"),
        "a CUDA tile": (lambda shape: (16, 64), "multiple of 128"),
        "a lane-width column block": (lambda shape: (8, 128), "larger than the array"),
        "the whole array": (lambda shape: shape, "rows in one block"),
        "eight rows, even for fewer": (lambda shape: (8, shape[1]), "larger than the array's 5"),
        "a quarter of the rows": (lambda shape: (shape[0] // 4, shape[1]), "dim 0: block"),
    },
)


# ------------------------------------------------------------------ beyond_forward
class _Tied(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = torch.nn.Embedding(10, 4)
        self.head = torch.nn.Linear(4, 10, bias=False)
        self.tie_weights()

    def tie_weights(self) -> None:
        self.head.weight = self.embed.weight


def _retie(m: Any, d: Any) -> Any:
    m = m.to(d)
    m.tie_weights()
    return m


def _hard_coded_retie(m: Any, d: Any) -> Any:  # the chapter's model's names, not the model's own method
    m = m.to(d)
    m.head.weight = m.embed.weight
    return m


CASES["beyond-forward-retie"] = Case(
    lambda a: X.check_tied_weights(a, _Tied, torch.device("meta")),
    _retie,
    {
        "move only (untied on the device)": (lambda m, d: m.to(d), "are 2 tensors"),
        "not moved": (lambda m, d: m.tie_weights(), "is on cpu, not meta"),
        "re-tied by the chapter's names": (_hard_coded_retie, "has no attribute 'embed'"),
        "tied before the move": (lambda m, d: (m.tie_weights(), m.to(d))[1], "are 2 tensors"),
        "a copy of the weight": (
            lambda m, d: setattr(m.to(d).head, "weight", torch.nn.Parameter(m.embed.weight.clone())),
            "are 2 tensors",
        ),
        "a model as the answer": (_Tied(), "answer must be a function"),
    },
)


def _least_padding(lengths: list[int], tokens: tuple[int, int], max_waste: float) -> tuple[int, int]:
    least, most = tokens

    def share(row: int, k: int) -> float:
        n = len(pack(lengths, row, "first_fit"))
        return 1 - sum(lengths) / (-(-n // k) * k * row)

    shortest = -(-max(lengths) // 8) * 8
    plans = [(r, k) for r in range(shortest, most + 1, 8) for k in range(1, most // r + 1) if r * k >= least]
    return min(plans, key=lambda p: share(*p))


CASES["beyond-forward-packing"] = Case(
    lambda a: X.check_packing(a, (512, 1024), 0.05),
    _least_padding,
    {
        "the chapter's plan, copied": (lambda lengths, tokens, waste: (128, 1), "does not fit a row of 128"),
        "a plan as a value": ((984, 1), "answer must be a function"),
        "rows just long enough, as many as fit": (
            lambda lengths, tokens, waste: (-(-max(lengths) // 8) * 8, tokens[1] // (-(-max(lengths) // 8) * 8)),
            "empty rows filling the last batch",
        ),
        "one row of the most tokens": (lambda lengths, tokens, waste: (tokens[1], 1), "padding (limit 5%)"),
        "too few tokens per step": (lambda lengths, tokens, waste: (max(lengths), 1), "tokens per batch"),
    },
)


# ------------------------------------------------------------------ distributed
def _overlap(dm: Any, x: torch.Tensor, w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    side = dm.Stream()
    with dm.stream(side):
        y = x @ w
    total = x.sum()
    side.synchronize()
    return y, total


_XS = (torch.randn(4, 3, generator=G), torch.randn(3, 5, generator=G))
CASES["distributed-streams"] = Case(
    lambda a: X.check_stream_port(a, _overlap, _XS),
    lambda dm, x, w: (x @ w, x.sum()),
    {
        "the CUDA code as is": (_overlap, "does nothing on tpu"),
        "polls the stream": (lambda dm, x, w: (dm.Stream().query(), (x @ w, x.sum()))[1], "raises"),
        "one output dropped": (lambda dm, x, w: (x @ w,), "1 output,"),
        "an output changed": (lambda dm, x, w: (x @ w, x.mean()), "output 1 differs"),
        "the chapter's tensors, not the arguments": (
            lambda dm, x, w: (_XS[0] @ _XS[1], _XS[0].sum()),
            "compute from the arguments",
        ),
    },
)


def _fewest(shapes: dict[str, Any], budget: float, batch: int) -> int:
    gathered = largest_parameter(shapes) * 4
    return next(
        n for n in range(1, batch + 1) if batch % n == 0 and fsdp_bytes_per_device(shapes, n, 16) + gathered <= budget
    )


CASES["distributed-fsdp-chips"] = Case(
    lambda a: X.check_fsdp_chips(a),
    _fewest,
    {
        "sharded state only, no gathered layer": (
            lambda s, b, n: next(k for k in range(1, n + 1) if n % k == 0 and fsdp_bytes_per_device(s, k, 16) <= b),
            "gathered whole",
        ),
        "the batch ignored": (
            lambda s, b, n: next(
                k for k in range(1, n + 1) if fsdp_bytes_per_device(s, k, 16) + largest_parameter(s) * 4 <= b
            ),
            "does not split evenly",
        ),
        "powers of two only": (
            lambda s, b, n: next(
                2**k for k in range(12) if fsdp_bytes_per_device(s, 2**k, 16) + largest_parameter(s) * 4 <= b
            ),
            "does not split evenly",
        ),
        "a constant": (lambda s, b, n: 8, "but 2 chips fit too"),
        "a number as the answer": (4, "answer must be a function"),
    },
)

# ------------------------------------------------------------------ audit_your_code
_RULES = ["cuda-device", "cuda-api", "cuda-amp"]
_PORTED = (ROOT / "examples" / "audit_exercises" / "ported_step.py").read_text()
_X_FIRST = (
    _PORTED.replace("model = torch.nn.Linear(64, 64).to(t.device)\n", "")
    .replace(
        't = xlaport.target("auto")\n',
        't = xlaport.target("auto")\nx = torch.randn(8, 64, device=t.device)\nmodel = torch.nn.Linear(64, 64).to(t.device)\n',
    )
    .replace("x = torch.randn(8, 64, device=t.device)\nwith", "with")
)
CASES["audit-cuda-api"] = Case(
    lambda a: X.check_step_port(a),
    _PORTED,
    {
        "the learning rate changed": (_PORTED.replace("lr=0.1", "lr=0.01"), "differs from the CUDA step's by 90%"),
        "another loss": (_PORTED.replace(".square()", ".abs()"), "differs from the CUDA step's"),
        "the data drawn before the model": (_X_FIRST, "their order"),
        "two steps for one": (_PORTED + "opt.step()\n", "differs from the CUDA step's"),
        "the step dropped, its name kept in a comment": (
            _PORTED.replace("opt.step()", "opt.zero_grad()  # opt.step() later"),
            "no longer defines or calls step",
        ),
        "the CUDA step": ("import torch\nx = torch.zeros(2).cuda()\ntorch.cuda.synchronize()\n", "cuda-device"),
        "synchronize left": ("import torch\nx = torch.zeros(2)\ntorch.cuda.synchronize()\n", "cuda-api"),
        "the old GradScaler": ("scaler = torch.cuda.amp.GradScaler()\nx.backward()\nopt.step()\n", "finding"),
        "a broken edit": ("import torch\nx = torch.zeros(2).to(\n", "no longer parses"),
        "backward named but never called": (
            _PORTED.replace("loss.backward()", "loss.detach()\nloss.backward").replace("opt.step()", "opt.step"),
            "no longer defines or calls",
        ),
        "the step under no_grad": (
            _PORTED.replace("with t.autocast():", "with t.autocast(), torch.no_grad():").replace(
                "loss.backward()", "loss.requires_grad_().backward()"
            ),
            "left the weights unchanged",
        ),
        "a name the port never defines": (_PORTED.replace("t.device", "device"), "does not run on the CPU"),
    },
)
_BUCKETED = (ROOT / "examples" / "audit_exercises" / "bucketed_collate.py").read_text()
CASES["audit-buckets"] = Case(
    lambda a: X.check_collate(a),
    _BUCKETED,
    {
        "pad_sequence": (
            (ROOT / "examples" / "audit_exercises" / "cuda_collate.py").read_text(),
            "variable-length-batch",
        ),
        "padded by hand to the batch's longest": (
            "import torch\n\n\ndef collate(docs):\n    n = max(len(d) for d in docs)\n"
            "    return torch.stack([torch.cat([d, torch.zeros(n - len(d), dtype=d.dtype)]) for d in docs])\n",
            "lengths, so",
        ),
        "one length that cuts long documents": (
            "import torch\n\n\ndef collate(docs):\n"
            "    return torch.stack([torch.cat([d, torch.zeros(64, dtype=d.dtype)])[:64] for d in docs])\n",
            "truncated",
        ),
        "buckets too short for the data": (_BUCKETED.replace("[32, 64, 128]", "[16, 32, 64]"), "collate raised"),
        "a syntax slip": ("def collate(docs)\n    return docs\n", "no longer parses"),
        "a number, not source": (64, "as a string"),
        "collate deleted": ("import torch\n", "no longer defines or calls collate"),
    },
)


# ------------------------------------------------------------------ predict_before_renting
def _ridge_batch(ridge: float, d: int, nbytes: int) -> int:
    b = 1
    while 2 * b * d * d / (nbytes * (d * d + 2 * b * d)) < ridge:
        b += 1
    return b


CASES["predict-ridge"] = Case(
    lambda a: X.check_ridge_batch(a),
    _ridge_batch,
    {
        "the ridge itself": (lambda ridge, d, nbytes: math.ceil(ridge), "still memory-bound"),
        "bfloat16 assumed": (lambda ridge, d, nbytes: _ridge_batch(ridge, d, 2), "4-byte elements"),
        "the output's bytes left out": (
            lambda ridge, d, nbytes: next(
                b for b in range(1, 10**5) if 2 * b * d * d / (nbytes * (d * d + b * d)) >= ridge
            ),
            "still memory-bound",
        ),
        "one past the smallest": (lambda ridge, d, nbytes: _ridge_batch(ridge, d, nbytes) + 1, "look for the smallest"),
        "the chapter's v6e answer as a value": (_ridge_batch(560, 4096, 2), "answer must be a function"),
    },
)


def _fewest_fit(state: float, act: float, items: int, hbm: float) -> int:
    n = 1
    while state / n + act / min(n, items) > 0.9 * hbm:
        n += 1
    return n


CASES["predict-chips"] = Case(
    lambda a: X.check_fewest_chips(a),
    _fewest_fit,
    {
        "total over usable memory": (
            lambda state, act, items, hbm: math.ceil((state + act) / (0.9 * hbm)),
            "at most 2 chips: one sample each",
        ),
        "the whole HBM usable": (lambda state, act, items, hbm: math.ceil((state + act) / hbm), "more than 90%"),
        "activations not sharded": (
            lambda state, act, items, hbm: next(n for n in range(1, 10**4) if state / n + act <= 0.9 * hbm),
            "already hold it",
        ),
        "a constant": (lambda state, act, items, hbm: 4, "already hold it"),
        "a number as the answer": (4, "answer must be a function"),
    },
)


# ------------------------------------------------------------------ pricing_math
def _price(tps: float, usd: float, busy: float) -> float:
    return usd / (tps * 3600 * busy) * 1e6


CASES["pricing-token"] = Case(
    lambda a: X.check_usd_per_million_tokens(a),
    _price,
    {
        "busy hours only": (lambda tps, usd, busy: _price(tps, usd, 1.0), "idle hours are paid"),
        "times the busy share": (lambda tps, usd, busy: _price(tps, usd, 1.0) * busy, "instead of dividing"),
        "per token": (lambda tps, usd, busy: _price(tps, usd, busy) / 1e6, "a million"),
        "seconds for hours": (lambda tps, usd, busy: _price(tps, usd, busy) * 3600, "3600"),
        "this chapter's value": (0.75, "answer must be a function"),
        "a string": (lambda tps, usd, busy: "$1.50", "could not convert"),
    },
)


def _break_even(flop: float, cur: Side, new: Side, mig: Migration, horizon: float) -> float:
    return break_even_current_usd_per_chip_hour(flop, cur, new, mig, horizon)


CASES["pricing-breakeven"] = Case(
    lambda a: X.check_break_even_price(a),
    _break_even,
    {
        "too high": (lambda *args: _break_even(*args) * 1.5, "still pays"),
        "too low": (lambda *args: _break_even(*args) * 0.5, "higher"),
        "the new chip's price": (lambda f, c, p, m, h: p.usd_per_chip_hour, "the new chip's price"),
        "today's price": (lambda f, c, p, m, h: c.usd_per_chip_hour, "today's price"),
        "migration left out": (lambda f, c, p, m, h: _break_even(f, c, p, Migration(0, 0, 0, 0), h), "higher"),
        "zero": (lambda *args: 0, "positive"),
    },
)


# ------------------------------------------------------------------ memory_fit
def _micro(state: float, per: float, batch: int, budget: float) -> int | None:
    return next((u for u in range(batch, 0, -1) if batch % u == 0 and state + u * per <= budget), None)


CASES["memory-micro-batch"] = Case(
    lambda a: X.check_micro_batch(a),
    _micro,
    {
        "state left out": (lambda s, p, b, budget: _micro(0, p, b, budget), "state"),
        "not a divisor": (lambda s, p, b, budget: max(1, int((budget - s) // p)) if budget > s else None, "divide"),
        "the smallest that fits": (
            lambda s, p, b, budget: next((u for u in range(1, b + 1) if b % u == 0 and s + u * p <= budget), None),
            "fits as well",
        ),
        "always one": (lambda s, p, b, budget: 1, "expected"),
        "this chapter's value": (2, "answer must be a function"),
    },
)

CASES["memory-checkpoint-bytes"] = Case(
    lambda a: X.check_checkpoint_bytes(a),
    lambda layers, inp, act: layers * inp + act,
    {
        "inputs only": (lambda layers, inp, act: layers * inp, "recomputed holds its own activations"),
        "nothing checkpointed": (lambda layers, inp, act: layers * act, "without checkpointing"),
        "every layer recomputed at once": (lambda layers, inp, act: layers * (inp + act), "only one layer"),
        "a number": (3e9, "answer must be a function"),
    },
)


# ------------------------------------------------------------------ profiling
def _busy_share(spans: list[tuple[float, float]], a: float, b: float) -> float:
    total, end = 0.0, a
    for s0, e0 in sorted((max(x, a), min(x + d, b)) for x, d in spans):
        if e0 > max(s0, end):
            total += e0 - max(s0, end)
            end = e0
    return total / (b - a)


CASES["profiling-busy"] = Case(
    lambda a: X.check_busy_share(a),
    _busy_share,
    {
        "durations summed": (lambda spans, a, b: sum(d for _, d in spans) / (b - a), "counted twice"),
        "the spans' own extent": (
            lambda spans, a, b: _busy_share(spans, min(x for x, _ in spans), max(x + d for x, d in spans)),
            "window given",
        ),
        "milliseconds, not a share": (lambda spans, a, b: _busy_share(spans, a, b) * (b - a), "at most 1"),
        "a number": (0.4, "answer must be a function"),
    },
)

CASES["profiling-overlap"] = Case(
    lambda a: X.check_overlap_rate(a),
    lambda h, d: (1000 / max(h, d), (h + d) / max(h, d)),
    {
        "one after the other": (lambda h, d: (1000 / (h + d), 1.0), "slower side sets the pace"),
        "the faster side": (lambda h, d: (1000 / min(h, d), (h + d) / min(h, d)), "faster side cannot"),
        "per millisecond": (lambda h, d: (1 / max(h, d), (h + d) / max(h, d)), "1000 / ms"),
        "a bare rate": (lambda h, d: 1000 / max(h, d), "return a pair"),
    },
)


# ------------------------------------------------------------------ input_pipelines
CASES["input-workers"] = Case(
    lambda a: X.check_workers(a),
    lambda host, step: max(1, math.ceil(host / step - 1e-12)),
    {
        "rounded down": (lambda host, step: int(host // step), "round up"),
        "upside down": (lambda host, step: math.ceil(step / host), "upside down"),
        "one more for luck": (lambda host, step: math.ceil(host / step) + 1, "already keep up"),
        "a number": (3, "answer must be a function"),
    },
)


def _pad(x: torch.Tensor, y: torch.Tensor, size: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    n = x.shape[0]
    return (
        torch.cat([x, x.new_zeros(size - n, x.shape[1])]),
        torch.cat([y, y.new_zeros(size - n)]),
        torch.cat([torch.ones(n), torch.zeros(size - n)]),
    )


CASES["input-padding"] = Case(
    lambda a: X.check_padding(a),
    _pad,
    {
        "padding weighted like data": (lambda x, y, size: (*_pad(x, y, size)[:2], torch.ones(size)), "weight 0"),
        "not padded": (lambda x, y, size: (x, y, torch.ones(x.shape[0])), "padded to"),
        "two values": (lambda x, y, size: _pad(x, y, size)[:2], "return a tuple"),
        "a number": (8, "answer must be a function"),
    },
)


# ------------------------------------------------------------------ checkpoints
def _reads(rows: int, saved: int, new: int, rank: int) -> list[tuple[int, int, int]]:
    lo, hi = rank * rows // new, (rank + 1) * rows // new
    return [
        (s, max(s * rows // saved, lo), min((s + 1) * rows // saved, hi))
        for s in range(saved)
        if max(s * rows // saved, lo) < min((s + 1) * rows // saved, hi)
    ]


CASES["checkpoints-reshard"] = Case(
    lambda a: X.check_reshard_reads(a),
    _reads,
    {
        "whole saved blocks": (
            lambda rows, saved, new, rank: [
                (s, s * rows // saved, (s + 1) * rows // saved) for s, _, _ in _reads(rows, saved, new, rank)
            ],
            "the wrong rows",
        ),
        "the same rank number": (
            lambda rows, saved, new, rank: [p for p in _reads(rows, saved, new, rank) if p[0] == rank],
            "expected",
        ),
        "only the first piece": (lambda rows, saved, new, rank: _reads(rows, saved, new, rank)[:1], "expected"),
        "a number": (2, "answer must be a function"),
    },
)

CASES["checkpoints-shard-rows"] = Case(
    lambda a: X.check_shard_rows(a),
    lambda rows, ranks: [max(0, min(-(-rows // ranks), rows - r * -(-rows // ranks))) for r in range(ranks)],
    {
        "an even spread": (
            lambda rows, ranks: [rows // ranks + (1 if r < rows % ranks else 0) for r in range(ranks)],
            "even spread",
        ),
        "floor for everyone": (lambda rows, ranks: [rows // ranks] * ranks, "add up"),
        "one count too few": (lambda rows, ranks: [-(-rows // ranks)] * (ranks - 1), "one count per rank"),
        "a number": (3, "answer must be a function"),
    },
)


# ------------------------------------------------------------------ fine_tuning
def _share(batches: list[list[int]], multiple: int | None) -> float:
    padded = [(-(-max(b) // multiple) * multiple if multiple else max(b)) * len(b) for b in batches]
    return 1 - sum(map(sum, batches)) / sum(padded)


CASES["fine-tuning-lora-params"] = Case(
    lambda a: X.check_lora_params(a),
    lambda layers, rank: sum(rank * (i + o) for i, o in layers),
    {
        "full fine-tuning": (lambda layers, rank: sum(i * o for i, o in layers), "full fine-tuning"),
        "rank copies of the layer": (lambda layers, rank: sum(rank * i * o for i, o in layers), "two thin matrices"),
        "only A": (lambda layers, rank: sum(rank * i for i, _ in layers), "both matrices"),
        "repeated layers once": (lambda layers, rank: rank * sum(i + o for i, o in set(layers)), "repeated layers"),
        "a number": (3584, "answer must be a function"),
    },
)

CASES["fine-tuning-padding-share"] = Case(
    lambda a: X.check_padding_share(a),
    _share,
    {
        "the multiple ignored": (lambda batches, multiple: _share(batches, None), "round each batch"),
        "the real share": (lambda batches, multiple: 1 - _share(batches, multiple), "share of real tokens"),
        "a mean of batches": (
            lambda batches, multiple: sum(_share([b], multiple) for b in batches) / len(batches),
            "weigh the batches",
        ),
        "a number": (0.2, "answer must be a function"),
    },
)


# ------------------------------------------------------------------ serving
def _buckets(smallest: int, budget: int) -> list[int]:
    out = [smallest * 2**k for k in range(64) if smallest * 2**k < budget]
    return [*out, budget]


def _slots(hbm: float, weights: float, layers: int, kv: int, hd: int, n: int, per: float) -> int:
    return max(0, int((hbm - weights) // (2 * layers * kv * hd * n * per)))


CASES["serving-token-buckets"] = Case(
    lambda a: X.check_token_buckets(a),
    _buckets,
    {
        "the next power of two": (
            lambda smallest, budget: (
                [b for b in _buckets(smallest, budget)[:-1]] + [smallest * 2 ** (len(_buckets(smallest, budget)) - 1)]
            ),
            "the budget itself",
        ),
        "no last bucket": (lambda smallest, budget: _buckets(smallest, budget)[:-1], "must be a bucket"),
        "from one": (lambda smallest, budget: _buckets(1, budget), "start at the smallest"),
        "a list": ([16, 32, 64], "answer must be a function"),
    },
)

CASES["serving-max-slots"] = Case(
    lambda a: X.check_max_slots(a),
    _slots,
    {
        "keys only": (
            lambda hbm, w, layers, kv, hd, n, per: max(0, int((hbm - w) // (layers * kv * hd * n * per))),
            "keys and values",
        ),
        "weights forgotten": (
            lambda hbm, w, layers, kv, hd, n, per: int(hbm // (2 * layers * kv * hd * n * per)),
            "weights",
        ),
        "rounded up": (
            lambda hbm, w, layers, kv, hd, n, per: max(0, -(-(hbm - w) // (2 * layers * kv * hd * n * per))),
            "round down",
        ),
        "a number": (3, "answer must be a function"),
    },
)


# ------------------------------------------------------------------ quantized_inference
def _int8_rows(w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    scale = w.abs().amax(dim=1, keepdim=True) / 127.5
    return torch.round(w / scale).clamp(-128, 127).to(torch.int8), scale


CASES["quantized-int8-rows"] = Case(
    lambda a: X.check_int8_rows(a),
    _int8_rows,
    {
        "one scale per tensor": (
            lambda w: (torch.round(w / (w.abs().max() / 127.5)).clamp(-128, 127).to(torch.int8), w.abs().max() / 127.5),
            "one scale for the whole tensor",
        ),
        "truncated": (
            lambda w: (torch.trunc(w / _int8_rows(w)[1]).to(torch.int8), _int8_rows(w)[1]),
            "round to the nearest",
        ),
        "floats kept": (lambda w: (torch.round(w / _int8_rows(w)[1]), _int8_rows(w)[1]), "store integers"),
        "scale too small": (
            lambda w: (torch.round(w / (_int8_rows(w)[1] / 4)).clamp(-128, 127).to(torch.int8), _int8_rows(w)[1] / 4),
            "clipped",
        ),
        "a number": (3, "answer must be a function"),
    },
)

CASES["quantized-decode-floor"] = Case(
    lambda a: X.check_decode_floor(a),
    lambda params, per, bw, chips: params * per / (bw * chips),
    {
        "bits": (lambda params, per, bw, chips: params * per * 8 / (bw * chips), "bytes, not bits"),
        "chips ignored": (lambda params, per, bw, chips: params * per / bw, "own share"),
        "bytes ignored": (lambda params, per, bw, chips: params / (bw * chips), "bytes each weight"),
        "a number": (0.01, "answer must be a function"),
    },
)

GARBAGE: dict[str, Any] = {
    "[]": [],
    "''": "",
    "a string": "x",
    "3": 3,
    "-1": -1,
    "nan": float("nan"),
    "an object": object(),
    "a dict": {"a": 1},
    "a tensor": torch.zeros(2),
    "a function returning None": lambda *a, **k: None,
    "a function that raises": lambda *a, **k: 1 / 0,
}


@pytest.mark.parametrize("label", list(CASES))
def test_reference_passes(label: str) -> None:
    c = CASES[label].check(CASES[label].reference)
    assert c.passed is True, f"{label}: {c}"


@pytest.mark.parametrize("label", list(CASES))
def test_at_least_three_wrong_answers(label: str) -> None:
    assert len(CASES[label].wrong) >= 3, label


WRONG = [(label, name) for label, case in CASES.items() for name in case.wrong]


@pytest.mark.parametrize("label,name", WRONG, ids=[f"{lb}: {n}" for lb, n in WRONG])
def test_wrong_answer_fails_naming_the_mistake(label: str, name: str) -> None:
    answer, words = CASES[label].wrong[name]
    c = CASES[label].check(answer)
    assert c.passed is False, f"{label} / {name}: {c}"
    assert words in c.message, f"{label} / {name}: {words!r} not in {c.message!r}"


@pytest.mark.parametrize("label", list(CASES))
def test_garbage_never_raises(label: str) -> None:
    for name, answer in GARBAGE.items():
        c = CASES[label].check(answer)
        assert isinstance(c, X.Check) and c.passed is not True, f"{label} / {name}: {c}"
        assert c.message, f"{label} / {name}: an empty message"
    assert CASES[label].check(None).passed is None


def main() -> None:  # the report: every answer with the message it gets
    for label, case in CASES.items():
        print(f"{label}\n  reference: {case.check(case.reference)}")
        for name, (answer, _) in case.wrong.items():
            print(f"  {name}: {case.check(answer)}")


if __name__ == "__main__":
    main()
