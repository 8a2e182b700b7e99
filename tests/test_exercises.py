"""The exercise checkers (pass, fail and not-attempted cases) and the count of checked exercises per chapter."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import torch

from xlaport.cost import Migration, Side, break_even_current_usd_per_chip_hour, usd_per_million_tokens
from xlaport.exercises import checks as C

ROOT = Path(__file__).resolve().parents[1]


def _is(check: C.Check, passed: bool | None, *words: str) -> None:
    assert check.passed is passed, str(check)
    for w in words:
        assert w in check.message, f"{w!r} not in {check.message!r}"


def test_not_attempted_prints_so() -> None:
    c = C.check_buckets([10], None, budget=1)
    _is(c, None)
    assert str(c).startswith("buckets: not attempted") and not bool(c)


def test_batch_shapes() -> None:
    x, y = torch.zeros(4, 3), torch.tensor([1, 2, 3, 4])
    _is(C.check_batch_shapes([(x, y), (x, y)], n_items=8), True, "one program", "all 8")
    _is(C.check_batch_shapes([(x, y), (x[:1], y[:1])]), False, "2 input shapes", "batch 1")
    pad = torch.tensor([1, -100, -100, -100])
    _is(C.check_batch_shapes([(x, y), (x, pad)], n_items=5), True)
    _is(C.check_batch_shapes([(x, y), (x, pad)], n_items=7), False, "2 are never seen")


def test_steady_compiles() -> None:
    _is(C.check_steady_compiles([3, 1, 0, 0], warm=2), True)
    _is(C.check_steady_compiles([3, 1, 0, 2, 0], warm=2), False, "2 programs", "step(s) 3")
    _is(C.check_steady_compiles([3, None, 0], warm=1), False, "not counted")
    _is(C.check_steady_compiles([None, None, None], warm=1), None, "does not count compiles")
    _is(C.check_steady_compiles([3], warm=2), False, "only 1 steps")


def test_buckets() -> None:
    _is(C.check_buckets([120, 250, 301], [128, 256], budget=2), False, "301-frame batch fits no bucket")
    _is(C.check_buckets([120, 250, 301], [128, 256, 384], budget=2), False, "3 compiles; the budget is 2", "301-frame")
    _is(C.check_buckets([120, 250, 301], [128, 320], budget=2), True, "2 compiles")
    _is(C.check_buckets([100, 300], [300], budget=1, max_waste=0.2), False, "padding")
    _is(C.check_buckets([100, 300], [304], budget=1, max_waste=0.6), True)
    with pytest.raises(ValueError, match="lengths"):
        C.check_buckets([0], [8], budget=1)


def test_prompt_buckets() -> None:
    _is(C.check_prompt_buckets([4, 11, 40], ([8, 16], 32), 3, budget=3), False, "40-token prompt fits no bucket")
    _is(C.check_prompt_buckets([4, 11, 40], ([8, 16, 48], 48), 3, budget=3), False, "cannot hold")
    _is(C.check_prompt_buckets([4, 11, 40], ([8, 16, 48], 51), 3, budget=3), True, "3 prefill")
    _is(C.check_prompt_buckets([4, 11, 40], ([8, 16, 48], 51), 3, budget=2), False, "budget is 2")
    _is(C.check_prompt_buckets([4], "nonsense", 3, budget=1), False, "answer must be")


def _topp_static(logits: torch.Tensor, top_p: float, gen: torch.Generator) -> torch.Tensor:
    probs = torch.softmax(logits, -1)
    sp, idx = probs.sort(-1, descending=True)
    drop = sp.cumsum(-1) - sp >= top_p
    sp = sp.masked_fill(drop, 0.0)
    choice = torch.multinomial(sp / sp.sum(-1, keepdim=True), 1, generator=gen)
    return idx.gather(-1, choice)


def _topp_dynamic(logits: torch.Tensor, top_p: float, gen: torch.Generator) -> torch.Tensor:
    probs = torch.softmax(logits, -1)
    sp, idx = probs.sort(-1, descending=True)
    keep = (sp.cumsum(-1) - sp < top_p).nonzero()[:, 1]  # the CUDA habit: a data-dependent number of tokens
    return idx[:, keep][:, :1]


def _argmax_all(logits: torch.Tensor, top_p: float, gen: torch.Generator) -> torch.Tensor:
    return torch.randint(0, logits.shape[-1], (logits.shape[0], 1), generator=gen)


def test_static_sampler() -> None:
    g = torch.Generator().manual_seed(0)
    logits = [torch.randn(2, 32, generator=g) * 3 for _ in range(3)]
    _is(C.check_static_sampler(_topp_static, logits, 0.9), True, "nucleus")
    _is(C.check_static_sampler(_topp_dynamic, logits, 0.9), False, "aten::nonzero")
    _is(C.check_static_sampler(_argmax_all, logits, 0.5), False, "outside the top-p nucleus")


def test_rewrite() -> None:
    a = torch.randn(6, 6, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    a = a @ a.T + 6 * torch.eye(6, dtype=torch.float64)
    b = torch.ones(6, 1, dtype=torch.float64)

    def ref(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.cholesky_solve(b, torch.linalg.cholesky(a))

    _is(C.check_rewrite(ref, ref, (a, b)), False, "on tpu", "linalg_cholesky_ex")
    _is(C.check_rewrite(lambda a, b: torch.linalg.solve(a, b), ref, (a, b)), True, "every op runs")
    _is(C.check_rewrite(lambda a, b: b, ref, (a, b)), False, "max |error|")


def test_padded_unique() -> None:
    g = torch.Generator().manual_seed(0)
    batches = [torch.randint(0, 3, (12, 2), generator=g) for _ in range(3)]

    def padded(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        key = x[:, 0] * 3 + x[:, 1]
        first = (key[:, None] == key[None, :]).float().argmax(0) == torch.arange(len(x))
        order = torch.argsort((~first).to(torch.int8), stable=True)
        return x[order], first.sum()

    _is(C.check_padded_unique(padded, batches), True, "one output shape")
    _is(C.check_padded_unique(lambda x: (torch.unique(x, dim=0), torch.tensor(0)), batches), False)
    u = torch.unique

    def unique_counted(x: torch.Tensor) -> tuple[torch.Tensor, int]:
        r = u(x, dim=0)
        return r, len(r)

    _is(C.check_padded_unique(unique_counted, batches), False, "output shapes")


def test_view_culprits_and_fix() -> None:
    ts, sig, lat = torch.arange(5.0), torch.linspace(1, 0, 6), torch.zeros(4)
    calls = [{"latents": lat, "timestep": ts[i], "sigma": sig[i]} for i in range(5)]
    _is(C.check_view_culprits(calls, ["timestep", "sigma"]), True)
    _is(C.check_view_culprits(calls, "timestep"), False, "missed sigma")
    _is(C.check_view_culprits(calls, ["timestep", "sigma", "latents"]), False, "latents keeps one offset")
    fixed = [{k: v.clone() for k, v in c.items()} for c in calls]
    _is(C.check_offsets_fixed(fixed, calls), True)
    _is(C.check_offsets_fixed(calls, calls), False, "still moves")
    wrong = [{**c, "sigma": c["sigma"] + 1} for c in fixed]
    _is(C.check_offsets_fixed(wrong, calls), False, "differs")


def test_finite_attention() -> None:
    from xlaport.numerics.attention import FP16_LOGITS_SCALE, _qkv

    q, k, v = (x.detach() for x in _qkv(torch.device("cpu"), torch.float32, FP16_LOGITS_SCALE))
    ref = torch.softmax(q @ k.transpose(-1, -2) / 32**0.5, -1) @ v
    q, k, v = q.half(), k.half(), v.half()

    def naive(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return torch.softmax(q @ k.transpose(-1, -2) / 32**0.5, -1) @ v

    def scaled_first(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return torch.softmax((q / 32**0.5) @ k.transpose(-1, -2), -1) @ v

    _is(C.check_finite_attention(naive, (q, k, v), ref, atol=1e-2), False, "non-finite")
    _is(C.check_finite_attention(scaled_first, (q, k, v), ref, atol=1e-2), True, "torch.float16")
    _is(C.check_finite_attention(lambda q, k, v: v * 0, (q, k, v), ref, atol=1e-2), False, "from the fp32 reference")


def test_masked_softmax() -> None:
    from xlaport.numerics.attention import safe_softmax

    s = torch.randn(3, 5, generator=torch.Generator().manual_seed(0))
    keep = torch.tensor([[1, 1, 0, 0, 1], [0, 0, 0, 0, 0], [1, 0, 0, 0, 0]], dtype=torch.bool)
    _is(C.check_masked_softmax(safe_softmax, s, keep), True, "1 fully masked")
    _is(C.check_masked_softmax(lambda s, k: torch.softmax(s.masked_fill(~k, float("-inf")), -1), s, keep), False)
    _is(C.check_masked_softmax(lambda s, k: torch.softmax(s.masked_fill(~k, -1e4), -1), s, keep), False, "must give 0")


def test_kernel_port_and_block_shape() -> None:
    g = torch.Generator().manual_seed(0)
    x, w = torch.randn(4, 8, generator=g), torch.randn(8, generator=g)

    def ref(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.rms_norm(x, (8,), w, 1e-6)

    def port(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w

    _is(C.check_kernel_port(port, ref, (x, w), 1e-5), True)
    _is(C.check_kernel_port(lambda x, w: port(x, w.detach()), ref, (x, w), 1e-5), False, "no gradient for input 1")
    _is(C.check_kernel_port(lambda x, w: x * w, ref, (x, w), 1e-5), False, "forward")
    _is(C.check_block_shape((8, 96), (24, 96)), True, "grid (3, 1)")
    _is(C.check_block_shape((10, 96), (24, 96)), False, "dim 0: block 10")
    _is(C.check_block_shape((8, 64), (24, 96)), False, "multiple of 128")


def test_cpu_checkpoint() -> None:
    _is(C.check_cpu_checkpoint({"model": {"w": torch.zeros(2)}, "step": 3}), True, "all 1 tensors")
    _is(C.check_cpu_checkpoint({"w": torch.zeros(2, device="meta")}), False, "on meta")
    _is(C.check_cpu_checkpoint({"step": 3}), False, "no tensors")


def test_cost_checks() -> None:
    want = usd_per_million_tokens(1000, 2.7, 0.5)
    _is(C.check_usd_per_million_tokens(want, 1000, 2.7, 0.5), True)
    _is(C.check_usd_per_million_tokens(want / 2, 1000, 2.7, 0.5), False, "idle hours are paid")
    _is(C.check_usd_per_million_tokens(want / 1e6, 1000, 2.7, 0.5), False, "a million")
    cur, new = Side("h100_sxm", 4.0, 0.4), Side("tpu_v6e", 2.7, 0.35)
    m = Migration(kernels=3, person_weeks_per_kernel=2, port_person_weeks=8, usd_per_person_week=5000)
    p = break_even_current_usd_per_chip_hour(1e21, cur, new, m, 24)
    _is(C.check_break_even_price(p, 1e21, cur, new, m, 24), True)
    _is(C.check_break_even_price(p * 1.5, 1e21, cur, new, m, 24), False, "still pays", "lower")
    _is(C.check_break_even_price(p * 0.5, 1e21, cur, new, m, 24), False, "higher")


def test_scan_clean() -> None:
    _is(C.check_scan_clean("import torch\nx = torch.zeros(2).cuda()\n", ["cuda-device"]), False, "line 2 cuda-device")
    _is(C.check_scan_clean("import torch\nx = torch.zeros(2)\n", ["cuda-device"]), True)
    _is(C.check_scan_clean("def f(:\n", ["cuda-device"]), False, "no longer parses")
    with pytest.raises(ValueError, match="unknown scan rule"):
        C.check_scan_clean("", ["no-such-rule"])


# ------------------------------------------------------------------ every chapter: >= 2 checked exercises
EXERCISE = re.compile(r"^```\{exercise\}.*?^:label:\s*(\S+)", re.S | re.M)
SOLUTION = re.compile(r"^```\{solution-start\}\s+(\S+)", re.M)
CHECK_CALL = re.compile(r"\bcheck_\w+\(")


def exercises(nb: dict) -> dict[str, dict[str, bool]]:
    """label -> {reader cell calls a check on `answer`, solution cells call a check and assert it passed}."""
    out: dict[str, dict[str, bool]] = {}
    state: tuple[str, str] | None = None  # (label, "reader" | "solution")
    for cell in nb["cells"]:
        src = "".join(cell["source"])
        if cell["cell_type"] == "markdown":
            if m := EXERCISE.search(src):
                state = (m.group(1), "reader")
                out[m.group(1)] = {"reader": False, "solution": False, "dropdown": False}
            elif m := SOLUTION.search(src):
                state = (m.group(1), "solution") if m.group(1) in out else None
                if state:
                    out[m.group(1)]["dropdown"] = ":class: dropdown" in src
            elif "{solution-end}" in src:
                state = None
            continue
        if state is None or not CHECK_CALL.search(src):
            continue
        label, part = state
        if part == "reader" and re.search(r"^answer = None", src, re.M):
            out[label]["reader"] = True
        if part == "solution" and re.search(r"^assert \w+\.passed", src, re.M):
            out[label]["solution"] = True
    return out


CHAPTERS = sorted(p for p in (ROOT / "notebooks").glob("*.ipynb") if p.stem != "capstone")
# Chapters still being written by their own issue; each gets its exercises once its last cell is settled.
PENDING = {"beyond_forward", "distributed"}


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_every_chapter_has_two_checked_exercises(path: Path) -> None:
    if path.stem in PENDING:
        pytest.skip(f"{path.stem}: exercises pending (chapter still being written)")
    nb = json.loads(path.read_text())
    found = exercises(nb)
    assert len(found) >= 2, f"{path.stem}: {len(found)} exercise(s); every chapter needs at least 2"
    for label, parts in found.items():
        assert parts["reader"], f"{path.stem}/{label}: no `answer = None` cell calling its check after the exercise"
        assert parts["solution"], f"{path.stem}/{label}: the solution does not run its check and assert it passed"
        assert parts["dropdown"], f"{path.stem}/{label}: the solution is not folded (`:class: dropdown`)"
    text = json.dumps(nb)
    assert ":::{admonition} Exercise" not in text, f"{path.stem}: an old prose-only exercise admonition is left"


def test_exercise_scanner_catches_an_unchecked_solution() -> None:
    nb = {
        "cells": [
            {"cell_type": "markdown", "source": ["```{exercise} T\n:label: a\n```\nDo it."]},
            {"cell_type": "code", "source": ["answer = None\nprint(check_x(answer))"]},
            {"cell_type": "markdown", "source": ["```{solution-start} a\n:class: dropdown\n```"]},
            {"cell_type": "code", "source": ["solution = 1\nprint(check_x(solution))"]},
            {"cell_type": "markdown", "source": ["```{solution-end}\n```"]},
        ]
    }
    assert exercises(nb) == {"a": {"reader": True, "solution": False, "dropdown": True}}
