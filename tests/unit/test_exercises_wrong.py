"""Every exercise's checker against the answers a learner really writes: the reference passes, each wrong answer
fails with a message that names the mistake, and no answer at all (garbage included) makes a checker raise.

``CASES`` maps each exercise label to a call of its checker with the chapter's kind of arguments (small, seeded
stand-ins) and its answers; sessions 1 and 2 have their own file (``test_exercises_sessions.py``).
``python tests/unit/test_exercises_wrong.py`` prints every answer with the message it gets.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
import torch

import xlaport.exercises as X
from xlaport.cost import Migration, Side, break_even_current_usd_per_chip_hour, usd_per_million_tokens
from xlaport.distributed.mesh import fsdp_bytes_per_device
from xlaport.numerics.attention import FP16_LOGITS_SCALE, _qkv, safe_softmax


@dataclass
class Case:
    check: Callable[[Any], X.Check]  # the checker with the chapter's arguments bound; takes the answer
    reference: Any
    wrong: dict[str, tuple[Any, str]] = field(default_factory=dict)  # name -> (answer, words the message must hold)


G = torch.Generator().manual_seed(0)
CASES: dict[str, Case] = {}

# ------------------------------------------------------------------ recompile_storms
LENS = [120, 250, 301, 140, 260, 90, 310, 180]
CASES["recompile-storms-budget"] = Case(
    lambda a: X.check_buckets(LENS, a, budget=2),
    [180, 320],
    {
        "the chapter's buckets": ([128, 256], "fits no bucket"),
        "one bucket per length": (sorted(set(LENS)), "compiles; the budget is 2"),
        "powers of two": ([128, 256, 512], "compiles; the budget is 2"),
        "zero-length bucket": ([0, 512], "positive"),
        "not numbers": (["small", "large"], "whole numbers"),
    },
)
CASES["recompile-storms-waste"] = Case(
    lambda a: X.check_buckets(LENS, a, budget=3, max_waste=0.2),
    [140, 260, 310],
    {
        "one big bucket": ([512], "padding"),
        "the largest length only": ([310], "padding"),
        "four buckets": ([120, 180, 260, 310], "compiles; the budget is 3"),
        "too small": ([128, 256, 300], "fits no bucket"),
    },
)

# ------------------------------------------------------------------ sd3_view_offsets
TS, SIG, LAT = torch.arange(5.0), torch.linspace(1, 0, 6), torch.zeros(4)
CALLS = [{"latents": LAT, "timestep": TS[i], "sigma": SIG[i]} for i in range(5)]
CASES["sd3-culprits"] = Case(
    lambda a: X.check_view_culprits(CALLS, a),
    ["timestep", "sigma"],
    {
        "only the timestep": ("timestep", "missed sigma"),
        "every argument": (["latents", "timestep", "sigma"], "latents keeps one offset"),
        "the buffer's name": (["timesteps"], "missed"),
    },
)
FIXED = [{k: v.clone() for k, v in c.items()} for c in CALLS]
CASES["sd3-fix"] = Case(
    lambda a: X.check_offsets_fixed(a, CALLS),
    FIXED,
    {
        "the original loop": (CALLS, "still moves"),
        "values changed": ([{**c, "sigma": c["sigma"] + 1} for c in FIXED], "differs"),
        "a step dropped": (FIXED[:-1], "4 steps, the loop has 5"),
        "an argument dropped": ([{k: v for k, v in c.items() if k != "sigma"} for c in FIXED], "missing"),
        ".item() floats": ([{**c, "sigma": float(c["sigma"])} for c in FIXED], "specializes on a Python number"),
    },
)

# ------------------------------------------------------------------ op_fallbacks
_A = torch.randn(6, 6, generator=G, dtype=torch.float64)
_A = _A @ _A.T + 6 * torch.eye(6, dtype=torch.float64)
_B = torch.ones(6, 1, dtype=torch.float64)


def _chol(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.cholesky_solve(b, torch.linalg.cholesky(a))


CASES["op-fallbacks-solve"] = Case(
    lambda a: X.check_rewrite(a, _chol, (_A, _B)),
    lambda a, b: torch.linalg.solve(a, b),
    {
        "the original": (_chol, "on tpu"),
        "the inverse, transposed": (lambda a, b: torch.linalg.inv(a).T @ b.T, "shape"),
        "float32 on the way": (lambda a, b: torch.linalg.solve(a.float(), b.float()).double() * 1.01, "max |error|"),
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
_PAIRS = [torch.randint(0, 3, (12, 2), generator=G) for _ in range(3)]


def _padded(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    key = x[:, 0] * 3 + x[:, 1]
    first = (key[:, None] == key[None, :]).float().argmax(0) == torch.arange(len(x))
    order = torch.argsort((~first).to(torch.int8), stable=True)
    return x[order], first.sum()


def _counted_unique(x: torch.Tensor) -> tuple[torch.Tensor, int]:
    r = torch.unique(x, dim=0)
    return r, len(r)


CASES["op-fallbacks-dedup"] = Case(
    lambda a: X.check_padded_unique(a, _PAIRS),
    _padded,
    {
        "torch.unique": (_counted_unique, "output shapes"),
        "count of all rows": (lambda x: (x, len(x)), "distinct pairs expected"),
        "sorted, not deduplicated": (lambda x: (x.sort(0).values, torch.tensor(len(x))), "distinct pairs expected"),
    },
)

# ------------------------------------------------------------------ attention_numerics
_q, _k, _v = (x.detach() for x in _qkv(torch.device("cpu"), torch.float32, FP16_LOGITS_SCALE))
_REF = torch.softmax(_q @ _k.transpose(-1, -2) / 32**0.5, -1) @ _v
_QKV = (_q.half(), _k.half(), _v.half())
CASES["attention-fp16"] = Case(
    lambda a: X.check_finite_attention(a, _QKV, _REF, atol=1e-2),
    lambda q, k, v: torch.softmax((q / 32**0.5) @ k.transpose(-1, -2), -1) @ v,
    {
        "the naive order": (lambda q, k, v: torch.softmax(q @ k.transpose(-1, -2) / 32**0.5, -1) @ v, "non-finite"),
        "scale forgotten": (lambda q, k, v: torch.softmax(q @ k.transpose(-1, -2), -1) @ v, "non-finite"),
        "zeros": (lambda q, k, v: v * 0, "from the fp32 reference"),
        "nan_to_num after": (
            lambda q, k, v: torch.nan_to_num(torch.softmax(q @ k.transpose(-1, -2) / 32**0.5, -1)) @ v,
            "gradient of q, k is not",
        ),
    },
)
_S = torch.randn(3, 5, generator=G)
_KEEP = torch.tensor([[1, 1, 0, 0, 1], [0, 0, 0, 0, 0], [1, 0, 0, 0, 0]], dtype=torch.bool)
CASES["attention-masked"] = Case(
    lambda a: X.check_masked_softmax(a, _S, _KEEP),
    safe_softmax,
    {
        "-inf fill": (lambda s, k: torch.softmax(s.masked_fill(~k, float("-inf")), -1), "non-finite"),
        "-1e4 fill": (lambda s, k: torch.softmax(s.masked_fill(~k, -1e4), -1), "must give 0"),
        "float32 min fill": (
            lambda s, k: torch.softmax(s.masked_fill(~k, torch.finfo(s.dtype).min), -1),
            "must give 0",
        ),
        "mask ignored": (lambda s, k: torch.softmax(s, -1), "must give 0"),
    },
)

# ------------------------------------------------------------------ custom_kernels
_X, _W = torch.randn(4, 8, generator=G), torch.randn(8, generator=G)


def _rms(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.rms_norm(x, (8,), w, 1e-6)


CASES["kernels-fallback"] = Case(
    lambda a: X.check_kernel_port(a, _rms, (_X, _W), 1e-5),
    lambda x, w: x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w,
    {
        "weight detached": (
            lambda x, w: x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w.detach(),
            "no gradient for input 1",
        ),
        "layer norm instead": (lambda x, w: torch.nn.functional.layer_norm(x, (8,)) * w, "forward"),
        "no epsilon, sum not mean": (lambda x, w: x * torch.rsqrt(x.pow(2).sum(-1, keepdim=True)) * w, "forward"),
        "under no_grad": (lambda x, w: torch.no_grad()(_rms)(x, w), "not differentiable"),
    },
)
CASES["kernels-block"] = Case(
    lambda a: X.check_block_shape(a, (24, 96)),
    (8, 96),
    {
        "a CUDA tile": ((16, 64), "multiple of 128"),
        "not a multiple of 8": ((10, 96), "dim 0: block 10"),
        "bigger than the array": ((32, 96), "larger than the array"),
        "one dim": ((8,), "1 dims"),
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


def _untie(m: _Tied, d: Any) -> _Tied:  # what moving does on an XLA device: a second tensor
    m.head.weight = torch.nn.Parameter(m.head.weight.detach().clone())
    return m


CASES["beyond-forward-retie"] = Case(
    lambda a: X.check_tied_weights(a, _Tied, torch.device("meta")),
    lambda m, d: _untie(m.to(d), d).tie_weights(),
    {
        "move only (untied on the device)": (lambda m, d: _untie(m.to(d), d), "are 2 tensors"),
        "not moved": (lambda m, d: m.tie_weights(), "is on cpu, not meta"),
        "a copy of the weight": (
            lambda m, d: setattr(m.to(d).head, "weight", torch.nn.Parameter(m.embed.weight.clone())),
            "are 2 tensors",
        ),
        "returns a new untied model": (lambda m, d: _untie(_Tied().to(d), d), "are 2 tensors"),
    },
)
_DOCS = [100, 90, 60, 50, 40, 30, 25]
CASES["beyond-forward-packing"] = Case(
    lambda a: X.check_packing(_DOCS, a, (128, 512), 0.25),
    (100, 5),
    {
        "rows shorter than the longest document": ((64, 4), "does not fit a row of 64"),
        "one row per batch": ((100, 1), "tokens per batch"),
        "too few rows per batch": ((100, 2), "padding"),
        "a batch too big": ((128, 8), "tokens per batch"),
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
    },
)
_SHAPES = {"embed": (1000, 100), "w1": (100, 100), "w2": (100, 400), "bias": (100,)}
_NEED = {n: fsdp_bytes_per_device(_SHAPES, n, 16) + 400_000 for n in (1, 2, 4, 8)}
_BUDGET = (_NEED[4] + _NEED[2]) / 2
CASES["distributed-fsdp-chips"] = Case(
    lambda a: X.check_fsdp_chips(a, _SHAPES, _BUDGET, batch=8),
    4,
    {
        "sharded state only, no gathered layer": (2, "gathered whole"),
        "as many as the batch": (8, "but 4 chips fit too"),
        "an uneven split": (3, "does not split evenly"),
        "a fraction": (2.5, "whole number"),
    },
)

# ------------------------------------------------------------------ audit_your_code
_RULES = ["cuda-device", "cuda-api", "cuda-amp"]
CASES["audit-cuda-api"] = Case(
    lambda a: X.check_scan_clean(a, _RULES, keep=["backward", "step"]),
    'import torch\nimport xlaport\n\nt = xlaport.target("auto")\nm = torch.nn.Linear(2, 2).to(t.device)\n'
    "opt = torch.optim.SGD(m.parameters(), lr=0.1)\nm(torch.zeros(2, device=t.device)).sum().backward()\nopt.step()\n",
    {
        "the CUDA step": ("import torch\nx = torch.zeros(2).cuda()\ntorch.cuda.synchronize()\n", "cuda-device"),
        "synchronize left": ("import torch\nx = torch.zeros(2)\ntorch.cuda.synchronize()\n", "cuda-api"),
        "the old GradScaler": ("scaler = torch.cuda.amp.GradScaler()\nx.backward()\nopt.step()\n", "finding"),
        "a broken edit": ("import torch\nx = torch.zeros(2).to(\n", "no longer parses"),
    },
)
CASES["audit-buckets"] = Case(
    lambda a: X.check_scan_clean(a, ["variable-length-batch"], keep=["collate"]),
    "import torch\n\n\ndef collate(docs):\n    return torch.stack([torch.nn.functional.pad(d, (0, 64 - len(d))) for d in docs])\n",
    {
        "pad_sequence": (
            "from torch.nn.utils.rnn import pad_sequence\n\n\ndef collate(docs):\n"
            "    return pad_sequence(docs, batch_first=True)\n",
            "variable-length-batch",
        ),
        "a syntax slip": ("def collate(docs)\n    return docs\n", "no longer parses"),
        "a number, not source": (64, "as a string"),
        "collate deleted": ("import torch\n", "no longer defines or calls collate"),
    },
)

# ------------------------------------------------------------------ pricing_math
_WANT = usd_per_million_tokens(1000, 2.7, 0.5)
CASES["pricing-token"] = Case(
    lambda a: X.check_usd_per_million_tokens(a, 1000, 2.7, 0.5),
    _WANT,
    {
        "busy hours only": (_WANT / 2, "idle hours are paid"),
        "per token": (_WANT / 1e6, "a million"),
        "seconds for hours": (_WANT * 3600, "3600"),
        "a string": ("$1.50", "could not check"),
    },
)
_CUR, _NEW = Side("h100_sxm", 4.0, 0.4), Side("tpu_v6e", 2.7, 0.35)
_MIG = Migration(kernels=3, person_weeks_per_kernel=2, port_person_weeks=8, usd_per_person_week=5000)
_P = break_even_current_usd_per_chip_hour(1e21, _CUR, _NEW, _MIG, 24)
CASES["pricing-breakeven"] = Case(
    lambda a: X.check_break_even_price(a, 1e21, _CUR, _NEW, _MIG, 24),
    _P,
    {
        "too high": (_P * 1.5, "still pays"),
        "too low": (_P * 0.5, "higher"),
        "the TPU's price": (2.7, "the break-even is"),
        "zero": (0, "positive"),
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
