"""The exercise checkers (pass, fail and not-attempted cases) and the count of checked exercises per chapter."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import torch

import xlaport.exercises as C
from xlaport.cost import Migration, Side, break_even_current_usd_per_chip_hour, usd_per_million_tokens
from xlaport.distributed.mesh import fsdp_bytes_per_device

ROOT = Path(__file__).resolve().parents[2]


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


def test_buckets() -> None:
    _is(C.check_buckets([120, 250, 301], [128, 256], budget=2), False, "301-frame batch fits no bucket")
    _is(C.check_buckets([120, 250, 301], [128, 256, 384], budget=2), False, "3 compiles; the budget is 2", "301-frame")
    _is(C.check_buckets([120, 250, 301], [128, 320], budget=2), True, "2 compiles")
    _is(C.check_buckets([100, 300], [300], budget=1, max_waste=0.2), False, "padding")
    _is(C.check_buckets([100, 300], [304], budget=1, max_waste=0.6), True)
    with pytest.raises(ValueError, match="lengths"):
        C.check_buckets([0], [8], budget=1)


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


def test_packing() -> None:
    lens = [100, 90, 60, 50, 40, 30, 25]  # 395 tokens
    _is(C.check_packing(lens, None, (64, 512), 0.1), None)
    _is(C.check_packing(lens, (64, 2), (64, 512), 0.1), False, "100-token document does not fit a row of 64")
    _is(C.check_packing(lens, (100, 1), (128, 512), 0.1), False, "100 tokens per batch", "128 to 512")
    # first fit into rows of 100: [100] [90] [60, 40] [50, 30] [25]: 5 rows, 105 positions of slack
    _is(C.check_packing(lens, (100, 2), (128, 512), 0.3), False, "34%", "105 at the ends of 5 rows", "1 empty row")
    _is(C.check_packing(lens, (100, 5), (128, 512), 0.25), True, "one shape (5, 100)", "21% padding")
    _is(C.check_packing(lens, "big", (64, 512), 0.1), False, "answer must be")
    with pytest.raises(ValueError, match="tokens_per_batch"):
        C.check_packing(lens, (100, 1), (512, 64), 0.1)
    with pytest.raises(ValueError, match="max_waste"):
        C.check_packing(lens, (100, 1), (64, 512), 1.5)


class _Tied(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = torch.nn.Embedding(10, 4)
        self.head = torch.nn.Linear(4, 10, bias=False)
        self.tie_weights()

    def tie_weights(self) -> None:
        self.head.weight = self.embed.weight


def _untie(model: _Tied, device: object) -> _Tied:  # what .to() does on an XLA device: a second tensor
    model.head.weight = torch.nn.Parameter(model.head.weight.detach().clone())
    return model


def test_tied_weights_on_cpu() -> None:
    cpu = torch.device("cpu")
    _is(C.check_tied_weights(None, _Tied, cpu), None)
    _is(C.check_tied_weights(lambda m, d: m.to(d), _Tied, cpu), True, "embed.weight = head.weight")
    _is(C.check_tied_weights(lambda m, d: None, _Tied, cpu), True)  # moved in place
    _is(C.check_tied_weights(_untie, _Tied, cpu), False, "are 2 tensors", "tie_weights")
    _is(C.check_tied_weights(lambda m, d: _untie(m, d).tie_weights(), _Tied, cpu), True)
    _is(C.check_tied_weights(lambda m, d: m, _Tied, torch.device("meta")), False, "is on cpu, not meta")
    _is(C.check_tied_weights(lambda m, d: 1 / 0, _Tied, cpu), False, "ZeroDivisionError")
    with pytest.raises(ValueError, match="no tied weights"):
        C.check_tied_weights(None, lambda: torch.nn.Linear(2, 2), cpu)


def test_tied_weights_and_matmul_precision_on_xla(fresh_python: Any) -> None:
    code = """
        import torch, xlaport
        from xlaport.exercises import check_matmul_precision, check_tied_weights
        from xlaport.numerics import precision

        t = xlaport.target("tpu")
        class Tied(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.embed, self.head = torch.nn.Embedding(10, 4), torch.nn.Linear(4, 10, bias=False)
                self.tie_weights()
            def tie_weights(self):
                self.head.weight = self.embed.weight
        def retie(m, d):
            m = m.to(d)
            m.tie_weights()
            return m
        print("PLAIN", check_tied_weights(lambda m, d: m.to(d), Tied, t.device))
        print("RETIE", check_tied_weights(retie, Tied, t.device))

        g = torch.Generator().manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.Linear(256, 64))
        x = torch.randn(32, 256, generator=g)
        with torch.no_grad():
            ref = model(x)
        dmodel, dx = model.to(t.device), x.to(t.device)
        tol = precision.HF_TOLERANCES["float32"]
        def highest(m, x):
            torch.set_float32_matmul_precision("highest")
            return m(x)
        print("DEFAULT", check_matmul_precision(lambda m, x: m(x), dmodel, dx, ref, t, tol))
        print("HIGHEST", check_matmul_precision(highest, dmodel, dx, ref, t, tol))
        print("ONCPU", check_matmul_precision(lambda m, x: m(x).cpu(), dmodel, dx, ref, t, tol))
        print("COPIED", check_matmul_precision(lambda m, x: ref, dmodel, dx, ref, t, tol))
        print("GARBAGE", check_matmul_precision(lambda m, x: None, dmodel, dx, ref, t, tol))
        print("NONE", check_matmul_precision(None, dmodel, dx, ref, t, tol))
        try:
            check_matmul_precision(None, dmodel, dx, ref, xlaport.profile("neuron"), tol)
        except ValueError as e:
            print("NORULE", e)
    """
    out = {line.split(" ", 1)[0]: line for line in fresh_python(code).stdout.splitlines() if line[:1].isupper()}
    assert out["PLAIN"].startswith("PLAIN fail") and "2 tensors" in out["PLAIN"], out["PLAIN"]
    assert out["RETIE"].startswith("RETIE pass") and "on xla" in out["RETIE"], out["RETIE"]
    assert out["DEFAULT"].startswith("DEFAULT fail") and "'default' is the target's default" in out["DEFAULT"]
    assert out["HIGHEST"].startswith("HIGHEST pass") and "6 passes" in out["HIGHEST"], out["HIGHEST"]
    assert out["ONCPU"].startswith("ONCPU fail") and "came from cpu" in out["ONCPU"], out["ONCPU"]
    assert out["COPIED"].startswith("COPIED fail") and "came from cpu" in out["COPIED"], out["COPIED"]  # the reference
    assert out["GARBAGE"].startswith("GARBAGE fail"), out["GARBAGE"]
    assert "not attempted" in out["NONE"] and "no matmul_precision rule" in out["NORULE"]


def _overlap(dm: Any, x: torch.Tensor, w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    side = dm.Stream()
    with dm.stream(side):
        y = x @ w
    total = x.sum()
    side.synchronize()
    return y, total


def test_stream_port() -> None:
    g = torch.Generator().manual_seed(0)
    xs = (torch.randn(4, 3, generator=g), torch.randn(3, 5, generator=g))
    _is(C.check_stream_port(None, _overlap, xs), None)
    _is(C.check_stream_port(_overlap, _overlap, xs), False, "`stream` does nothing on tpu", "delete it")
    _is(C.check_stream_port(lambda dm, x, w: (x @ w, x.sum()), _overlap, xs), True, "no stream call left")
    _is(C.check_stream_port(lambda dm, x, w: (x @ w, x.sum() + 1), _overlap, xs), False, "output 1 differs")
    _is(C.check_stream_port(lambda dm, x, w: (x @ w,), _overlap, xs), False, "1 output,")
    polled = C.check_stream_port(lambda dm, x, w: (dm.Stream().query(), (x @ w, x.sum()))[1], _overlap, xs)
    _is(polled, False, "`Stream.query` raises NotImplementedError on tpu")
    _is(C.check_stream_port(lambda dm, x, w: (dm.Stream(), (x @ w, x.sum()))[1], _overlap, xs), True, "left: Stream")
    _is(C.check_stream_port(_overlap, _overlap, xs, target="cpu"), True)  # no stream rules: everything runs
    _is(C.check_stream_port(lambda dm, x, w: (w @ w, x.sum()), _overlap, xs), False, "raised RuntimeError")
    with pytest.raises(ValueError, match="must return a tensor"):
        C.check_stream_port(None, lambda dm, x, w: 3, xs)


def test_fsdp_chips() -> None:
    shapes = {"embed": (1000, 100), "w1": (100, 100), "w2": (100, 400), "bias": (100,)}
    # 100,000 + 10,000 + 40,000 + 100 = 150,100 parameters; 16 bytes each sharded, the embedding gathered (400 kB)
    assert fsdp_bytes_per_device(shapes, 1) == 150_100 * 4
    assert fsdp_bytes_per_device(shapes, 4) == (250 * 100 + 25 * 100 + 100 * 100 + 25) * 4
    assert fsdp_bytes_per_device({"odd": (10,)}, 4) == 3 * 4  # uneven: shards of ceil(10 / 4)
    need = {n: fsdp_bytes_per_device(shapes, n, 16) + 400_000 for n in (1, 2, 4, 8)}
    budget = (need[4] + need[2]) / 2  # 4 chips fit, 2 do not
    _is(C.check_fsdp_chips(None, shapes, budget, batch=8), None)
    _is(C.check_fsdp_chips(4, shapes, budget, batch=8), True, "4 chips", "2 chips would need")
    _is(C.check_fsdp_chips(2, shapes, budget, batch=8), False, "on 2 chips", "gathered whole", "the budget is")
    _is(C.check_fsdp_chips(8, shapes, budget, batch=8), False, "but 4 chips fit too")
    _is(C.check_fsdp_chips(3, shapes, budget, batch=8), False, "does not split evenly over 3")
    _is(C.check_fsdp_chips(2.5, shapes, budget, batch=8), False, "whole number")
    _is(C.check_fsdp_chips("many", shapes, budget, batch=8), False, "whole number")
    with pytest.raises(ValueError, match="budget_bytes"):
        C.check_fsdp_chips(4, shapes, 0, batch=8)
    with pytest.raises(ValueError, match="dimensions must be positive"):
        C.check_fsdp_chips(4, {"w": (0, 3)}, budget, batch=8)


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


def test_the_chapter_list_is_not_empty() -> None:
    assert {"beyond_forward", "distributed", "recompile_storms"} <= {p.stem for p in CHAPTERS}


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_every_chapter_has_two_checked_exercises(path: Path) -> None:
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
