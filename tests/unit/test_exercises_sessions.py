"""Sessions 1 and 2's checkers run the reader's code on data the chapters never show: the reference answer passes,
and each wrong-but-plausible answer a learner writes fails with a message that names the mistake."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils._pytree import tree_map
from torch.utils.data import DataLoader

import xlaport.exercises as X
from conftest import run_python


def _is(check: X.Check, passed: bool | None, *words: str) -> None:
    assert check.passed is passed, str(check)
    for w in words:
        assert w in check.message, f"{w!r} not in {check.message!r}"


# ------------------------------------------------------------------ first_steps: padded batches
def _windows(images: Any, labels: Any, batch_size: int, generator: Any) -> list:
    order = torch.randperm(len(labels), generator=generator)
    return [
        (images[order[i : i + batch_size]], labels[order[i : i + batch_size]]) for i in range(len(labels) // batch_size)
    ]


def _with_remainder(images: Any, labels: Any, batch_size: int, generator: Any) -> list:
    order = torch.randperm(len(labels), generator=generator)
    return [
        (images[order[i : i + batch_size]], labels[order[i : i + batch_size]])
        for i in range(0, len(labels), batch_size)
    ]


def _first_repeated(images: Any, labels: Any, batch_size: int, generator: Any) -> list:
    n = -(-len(labels) // batch_size)
    return [(images[:batch_size], labels[:batch_size])] * n


def _x_padded_not_y(images: Any, labels: Any, batch_size: int, generator: Any) -> list:
    out = _with_remainder(images, labels, batch_size, generator)
    x, y = out[-1]
    out[-1] = (torch.cat([x, torch.zeros(batch_size - len(x), *x.shape[1:])]), y)
    return out


def _pad_label_zero(images: Any, labels: Any, batch_size: int, generator: Any) -> list:
    out = _with_remainder(images, labels, batch_size, generator)
    x, y = out[-1]
    k = batch_size - len(x)
    out[-1] = (torch.cat([x, torch.zeros(k, *x.shape[1:])]), torch.cat([y, torch.zeros(k, dtype=y.dtype)]))
    return out


def _one_batch(images: Any, labels: Any, batch_size: int, generator: Any) -> list:
    return [(images, labels)]


WRONG_PADDED = {
    "the chapter's batch list, not a function": ([(torch.zeros(64, 1, 8, 8), torch.zeros(64))], "your function"),
    "batches + [remainder]": (_with_remainder, "2 input shapes"),
    "overlapping windows order[i:i+bs]": (_windows, "times in one pass"),
    "the first batch repeated": (_first_repeated, "times in one pass"),
    "x padded but y not": (_x_padded_not_y, "pad the labels too"),
    "padding labelled 0, not -100": (_pad_label_zero, "label them -100"),
    "one batch of everything": (_one_batch, "the batch size asked for"),
    "raises": (lambda *a: 1 / 0, "raised ZeroDivisionError"),
}


@pytest.mark.parametrize("wrong", list(WRONG_PADDED), ids=list(WRONG_PADDED))
def test_padded_batches_rejects(wrong: str) -> None:
    answer, words = WRONG_PADDED[wrong]
    _is(X.check_padded_batches(answer), False, words)


def make_batches(images: Any, labels: Any, batch_size: int, generator: Any) -> list:
    """The reference: shuffle, cut, pad the last batch with blank images labelled -100."""
    order = torch.randperm(len(labels), generator=generator)
    out = []
    for i in range(0, len(labels), batch_size):
        x, y = images[order[i : i + batch_size]], labels[order[i : i + batch_size]]
        k = batch_size - len(y)
        if k:
            x = torch.cat([x, torch.zeros(k, *x.shape[1:])])
            y = torch.cat([y, torch.full((k,), -100, dtype=y.dtype)])
        out.append((x, y))
    return out


def test_padded_batches_reference_passes() -> None:
    _is(X.check_padded_batches(make_batches), True, "every image once")
    _is(X.check_padded_batches(None), None)


# ------------------------------------------------------------------ first_steps: compiles after warm-up
def _train_on(t: Any, batches: Any, steps: int, *, count: bool = True, reach_all: bool = True) -> dict:
    """The reference loop (a tiny model: fast to compile): batches and steps come in as arguments."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Flatten(), nn.Linear(64, 10)).to(t.device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    dev = [(x.to(t.device), y.to(t.device)) for x, y in batches]
    n = len(batches) if reach_all else len(batches) - 1
    compiled = []
    for step in range(steps):
        xb, yb = dev[step % n]
        before = t.compiles()
        loss = F.cross_entropy(model(xb), yb)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        t.sync()
        compiled.append(None if before is None else t.compiles() - before)
    return {"compiled": compiled if count else [0] * steps}


def train_on(t: Any, batches: Any, steps: int) -> dict:
    return _train_on(t, batches, steps)


def _loop_that_changes_shape(t: Any, batches: Any, steps: int) -> dict:
    # a plausible mistake: trimming padding rows out of each batch before the step (a new shape at the padded one)
    trimmed = [(x[y != -100], y[y != -100]) for x, y in batches]
    return _train_on(t, trimmed, steps) | {"read": [batches[i] for i in range(len(batches))]}


WRONG_STEADY = {
    "a typed-in list": ([0] * 31, "your function"),
    "the printout's list": ([6, 1, *[0] * 29], "your function"),
    "zeros without running": (lambda t, b, s: [0] * s, "never read batch 0"),
    "a run that never reaches the last batch": (
        lambda t, b, s: _train_on(t, b, s, reach_all=False),
        "does the loop reach every batch",
    ),
    "counts typed in after a real run": (lambda t, b, s: _train_on(t, b, s, count=False), "the run compiled"),
    "too few steps": (lambda t, b, s: _train_on(t, b, s - 2), "counts for the 7 steps"),
    "a loop that drops the padding rows": (_loop_that_changes_shape, "the padded batch, which has"),
}


# ------------------------------------------------------------------ port_training: a loader of one shape
def make_loader(dataset: Any, batch_size: int, generator: Any) -> Any:
    return DataLoader(dataset, batch_size=batch_size, shuffle=True, drop_last=True, generator=generator)


def _y_not_padded(dataset: Any, batch_size: int, generator: Any) -> list:
    out = list(DataLoader(dataset, batch_size=batch_size, shuffle=True, generator=generator))
    x, y = out[-1]
    out[-1] = (torch.cat([x, x[:1].expand(batch_size - len(x), -1)]), y)
    return out


def _chapter_batches() -> list:
    return [(torch.zeros(16, 32, dtype=torch.int32), torch.zeros(16, 32, dtype=torch.int32))] * 24


WRONG_LOADER = {
    "the chapter's batch list": (_chapter_batches(), "your function"),
    "no drop_last": (lambda d, b, g: DataLoader(d, batch_size=b, shuffle=True, generator=g), "2 input shapes"),
    "a single batch": (lambda d, b, g: DataLoader(d, batch_size=len(d), shuffle=True, generator=g), "asked for"),
    "x padded but y not": (_y_not_padded, "pad both or neither"),
    "not shuffled": (lambda d, b, g: DataLoader(d, batch_size=b, drop_last=True), "not shuffled"),
    "generator ignored": (lambda d, b, g: DataLoader(d, batch_size=b, shuffle=True, drop_last=True), "same generator"),
    "a fixed batch size of 24": (lambda d, b, g: make_loader(d, 24, g), "asked for"),
}


@pytest.mark.parametrize("wrong", list(WRONG_LOADER), ids=list(WRONG_LOADER))
def test_loader_rejects(wrong: str) -> None:
    answer, words = WRONG_LOADER[wrong]
    _is(X.check_loader(answer), False, words)


def test_loader_reference_passes() -> None:
    _is(X.check_loader(make_loader), True, "one shape per loader")
    _is(X.check_loader(None), None)


# ------------------------------------------------------------------ port_training: a portable checkpoint
def _cpu(v: Any) -> Any:
    return v.detach().cpu() if isinstance(v, torch.Tensor) else v


def portable(model: Any, opt: Any) -> dict:
    return tree_map(_cpu, {"model": model.state_dict(), "opt": opt.state_dict()})


WRONG_CHECKPOINT = {
    "the dict, not a function": ({"model": {}}, "your function"),
    "device state dicts": (lambda m, o: {"model": m.state_dict(), "opt": o.state_dict()}, "on xla"),
    "the module itself": (lambda m, o: {"model": m, "opt": tree_map(_cpu, o.state_dict())}, "whole nn.Module"),
    "the model moved to the CPU, optimizer left": (
        lambda m, o: {"model": tree_map(_cpu, m.state_dict()), "opt": o.state_dict()},
        "the optimizer's too",
    ),
    "weights only, no optimizer": (lambda m, o: {"model": tree_map(_cpu, m.state_dict())}, "no optimizer state"),
    "a fresh model's weights": (
        lambda m, o: portable(nn.Sequential(nn.Linear(5, 7), nn.ReLU(), nn.Linear(7, 3)), o),
        "differs from the model's",
    ),
    "the optimizer object": (lambda m, o: {"model": tree_map(_cpu, m.state_dict()), "opt": o}, "optimizer object"),
}


# ------------------------------------------------------------------ port_inference: prompt buckets
def choose_buckets(prompt_lengths: list, new_tokens: int, budget: int) -> tuple:
    """The reference: powers of two up to the longest prompt, merged from the small end to fit the budget."""
    pow2 = sorted({1 << (n - 1).bit_length() for n in prompt_lengths})
    while len(pow2) > budget:
        pow2.pop(0)
    return pow2, pow2[-1] + new_tokens


WRONG_BUCKETS = {
    "the chapter's plan copied": (lambda p, n, b: ([8, 16, 32], 48), "fits no bucket"),
    "no buckets": (lambda p, n, b: ([], 10), "no buckets"),
    "([], 10) as a value": (([], 10), "your function"),
    "max_len without the new tokens": (lambda p, n, b: (choose_buckets(p, n, b)[0], max(p)), "cannot hold"),
    "one bucket per length": (lambda p, n, b: (sorted(set(p)), max(p) + n), "prefill programs"),
    "one huge bucket": (lambda p, n, b: ([4096], 4096 + n), "more than twice"),
    "a huge cache": (lambda p, n, b: (choose_buckets(p, n, b)[0], 100_000), "memory never used"),
    "a bare number": (lambda p, n, b: 64, "must return (buckets, max_len)"),
}


@pytest.mark.parametrize("wrong", list(WRONG_BUCKETS), ids=list(WRONG_BUCKETS))
def test_prompt_buckets_rejects(wrong: str) -> None:
    answer, words = WRONG_BUCKETS[wrong]
    _is(X.check_prompt_buckets(answer), False, words)


def test_prompt_buckets_reference_passes() -> None:
    _is(X.check_prompt_buckets(choose_buckets), True, "every prompt fits")


# ------------------------------------------------------------------ port_inference: a static top-p sampler
def top_p_sampler(logits: Any, top_p: float, generator: Any) -> Any:
    probs = torch.softmax(logits, -1)
    sorted_p, order = probs.sort(-1, descending=True)
    outside = sorted_p.cumsum(-1) - sorted_p >= top_p
    sorted_p = sorted_p.masked_fill(outside, 0.0)
    choice = torch.multinomial(sorted_p / sorted_p.sum(-1, keepdim=True), 1, generator=generator)
    return order.gather(-1, choice)


def _per_row_bool_index(logits: Any, top_p: float, generator: Any) -> Any:
    out = []
    for row in logits:
        p, o = torch.softmax(row, -1).sort(descending=True)
        keep = (p.cumsum(-1) - p) < top_p
        kept_p, kept_o = p[keep], o[keep]
        out.append(kept_o[torch.multinomial(kept_p / kept_p.sum(), 1, generator=generator)])
    return torch.stack(out)


def _nucleus_size_on_host(logits: Any, top_p: float, generator: Any) -> Any:
    out = []
    for row in logits:
        p, o = torch.softmax(row, -1).sort(descending=True)
        n = int(((p.cumsum(-1) - p) < top_p).sum())  # the nucleus size on the host: a sync every token
        out.append(o[:n][torch.multinomial(p[:n] / p[:n].sum(), 1, generator=generator)])
    return torch.stack(out)


def _cum_le(logits: Any, top_p: float, generator: Any) -> Any:
    p, o = torch.softmax(logits, -1).sort(-1, descending=True)
    p = p.masked_fill(p.cumsum(-1) > top_p, 0.0)  # drops the token that crosses top_p
    p[:, 0] = torch.where(p.sum(-1) == 0, 1.0, p[:, 0])
    return o.gather(-1, torch.multinomial(p / p.sum(-1, keepdim=True), 1, generator=generator))


WRONG_SAMPLER = {
    "greedy argmax": (lambda lg, p, g: lg.argmax(-1, keepdim=True), "argmax, not sampling"),
    "no top-p cut": (lambda lg, p, g: torch.multinomial(torch.softmax(lg, -1), 1, generator=g), "outside the top-p"),
    "per-row boolean index": (_per_row_bool_index, "aten::index with a boolean mask"),
    "a host sync for the nucleus size": (_nucleus_size_on_host, "host sync"),
    "cumsum <= top_p (the crossing token dropped)": (_cum_le, "crosses top_p"),
    "the generator ignored": (lambda lg, p, g: top_p_sampler(lg, p, None), "same generator seed"),
    "a (batch,) output": (lambda lg, p, g: top_p_sampler(lg, p, g)[:, 0], "(batch, 1)"),
    "probabilities, not ids": (lambda lg, p, g: torch.softmax(lg, -1)[:, :1], "integers"),
}


@pytest.mark.parametrize("wrong", list(WRONG_SAMPLER), ids=list(WRONG_SAMPLER))
def test_static_sampler_rejects(wrong: str) -> None:
    answer, words = WRONG_SAMPLER[wrong]
    _is(X.check_static_sampler(answer), False, words)


def test_static_sampler_reference_passes() -> None:
    _is(X.check_static_sampler(top_p_sampler), True, "inside the nucleus")


# ------------------------------------------------------------------ the two that run on the XLA device
# torch_xla changes Dynamo's global config on import and the device must exist before any backward pass, so these
# run once, in a fresh interpreter, and each test reads its verdict.
XLA_CODE = """
import json, sys
import xlaport
t = xlaport.target("tpu")  # before any backward pass
sys.path[:0] = [{unit!r}, {tests!r}]
import test_exercises_sessions as T
import xlaport.exercises as X
out = {{}}
put = lambda key, c: out.__setitem__(key, [c.passed, c.message])
put("steady:reference", X.check_steady_compiles(T.train_on, t, warm=2))
put("steady:none", X.check_steady_compiles(None, t, warm=2))
for k, (a, _) in T.WRONG_STEADY.items():
    put("steady:" + k, X.check_steady_compiles(a, t, warm=2))
put("checkpoint:reference", X.check_cpu_checkpoint(T.portable, t.device))
for k, (a, _) in T.WRONG_CHECKPOINT.items():
    put("checkpoint:" + k, X.check_cpu_checkpoint(a, t.device))
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def on_xla() -> dict[str, Any]:
    here = Path(__file__).resolve().parent
    out = run_python(XLA_CODE.format(unit=str(here), tests=str(here.parent)), timeout=600, fork=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _verdict(on_xla: dict[str, Any], key: str) -> X.Check:
    passed, message = on_xla[key]
    return X.Check(key, passed, message)


def test_steady_compiles_reference_passes(on_xla: dict[str, Any], fresh_python: Any) -> None:
    _is(_verdict(on_xla, "steady:reference"), True, "no program after the 2 warm-up steps, the padded batch included")
    _is(_verdict(on_xla, "steady:none"), None)


@pytest.mark.parametrize("wrong", list(WRONG_STEADY), ids=list(WRONG_STEADY))
def test_steady_compiles_rejects(wrong: str, on_xla: dict[str, Any], fresh_python: Any) -> None:
    _is(_verdict(on_xla, "steady:" + wrong), False, WRONG_STEADY[wrong][1])


def test_cpu_checkpoint_reference_passes(on_xla: dict[str, Any], fresh_python: Any) -> None:
    _is(_verdict(on_xla, "checkpoint:reference"), True, "all on the CPU", "weights_only=True")


@pytest.mark.parametrize("wrong", list(WRONG_CHECKPOINT), ids=list(WRONG_CHECKPOINT))
def test_cpu_checkpoint_rejects(wrong: str, on_xla: dict[str, Any], fresh_python: Any) -> None:
    _is(_verdict(on_xla, "checkpoint:" + wrong), False, WRONG_CHECKPOINT[wrong][1])


# ------------------------------------------------------------------ no answer makes a session 1-2 checker raise
class _NoCount:
    """A target that counts no compiles (as CUDA or the CPU): the checks still judge everything else."""

    device = torch.device("cpu")

    def compiles(self) -> None:
        return None


GARBAGE: dict[str, Any] = {
    "[]": [],
    "a string": "x",
    "3": 3,
    "an object": object(),
    "a dict": {"a": 1},
    "a tensor": torch.zeros(2),
    "a function returning None": lambda *a, **k: None,
    "a function returning a list": lambda *a, **k: [1, 2],
    "a function that raises": lambda *a, **k: 1 / 0,
}
CHECKERS: dict[str, Any] = {
    "padded batches": X.check_padded_batches,
    "compiles after warm-up": lambda a: X.check_steady_compiles(a, _NoCount(), warm=2),
    "loader": X.check_loader,
    "portable checkpoint": lambda a: X.check_cpu_checkpoint(a, torch.device("cpu")),
    "prompt buckets": X.check_prompt_buckets,
    "static top-p sampler": lambda a: X.check_static_sampler(a, draws=20),
}


@pytest.mark.parametrize("checker", list(CHECKERS))
def test_garbage_never_raises(checker: str) -> None:
    for name, answer in GARBAGE.items():
        c = CHECKERS[checker](answer)
        assert isinstance(c, X.Check) and c.passed is False and c.message, f"{checker} / {name}: {c}"
    assert CHECKERS[checker](None).passed is None
    assert "set `answer` in this cell" in str(CHECKERS[checker](None))
