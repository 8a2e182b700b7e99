"""The exercise checkers (pass, fail and not-attempted cases) and the count of checked exercises per chapter."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import torch

import xlaport.exercises as C
from xlaport.distributed.mesh import fsdp_bytes_per_device

ROOT = Path(__file__).resolve().parents[2]


def _is(check: C.Check, passed: bool | None, *words: str) -> None:
    assert check.passed is passed, str(check)
    for w in words:
        assert w in check.message, f"{w!r} not in {check.message!r}"


def test_not_attempted_prints_so() -> None:
    c = C.check_buckets(None, budget=1)
    _is(c, None)
    assert str(c).startswith("buckets: not attempted") and not bool(c)


def test_the_guard_handles_no_answer_a_value_and_a_raise() -> None:
    """``guarded`` answers for every checker: None is not attempted, a value where a function is asked for fails with
    the checker's form, and an exception from inside the check is a fail that names it."""

    @C.common.guarded("demo", must_be="a function f(x)")
    def check_demo(f: Any, scale: int = 1) -> C.common.Verdict:
        return C.common.passes(f"f(2) = {f(2) * scale}")

    _is(check_demo(None), None)
    _is(check_demo(3), False, "answer must be a function f(x)")
    _is(check_demo(lambda x: x, scale=3), True, "f(2) = 6")
    _is(check_demo(lambda x: 1 / 0), False, "could not check this answer: it raised ZeroDivisionError")
    assert check_demo.__name__ == "check_demo"


def test_chapter_modules_are_found_and_match_the_notebooks() -> None:
    """Each chapter module is found without a list to edit: it is named after a notebook, exports checkers, and what
    it exports is importable from the package; every checker a notebook imports is there."""
    stems = {p.stem.removeprefix("01_") for p in (ROOT / "notebooks").glob("*.ipynb")}
    names = {m.__name__.rsplit(".", 1)[1] for m in C.CHAPTER_MODULES}
    assert names <= stems, f"not a chapter (add it to SUPPORT_MODULES?): {sorted(names - stems)}"
    for m in C.CHAPTER_MODULES:
        assert any(n.startswith("check_") for n in m.__all__), m.__name__
        for n in m.__all__:
            assert getattr(C, n) is getattr(m, n) and n in C.__all__
    imported = set()
    for p in (ROOT / "notebooks").glob("*.ipynb"):
        for cell in json.loads(p.read_text())["cells"]:
            for line in re.findall(r"from xlaport\.exercises import ([^#\n]+)", "".join(cell["source"])):
                imported |= {n.strip() for n in line.split(",")}
    assert imported and imported <= set(C.__all__), sorted(imported - set(C.__all__))


def test_batch_shapes() -> None:
    x, y = torch.zeros(4, 3), torch.tensor([1, 2, 3, 4])
    _is(C.check_batch_shapes([(x, y), (x, y)], n_items=8), True, "one program", "all 8")
    _is(C.check_batch_shapes([(x, y), (x[:1], y[:1])]), False, "2 input shapes", "batch 1")
    pad = torch.tensor([1, -100, -100, -100])
    _is(C.check_batch_shapes([(x, y), (x, pad)], n_items=5), True)
    _is(C.check_batch_shapes([(x, y), (x, pad)], n_items=7), False, "2 are never seen")


def test_chapter_argument_errors_raise() -> None:
    """A bad argument from the chapter (not the reader's answer) raises a one-line ValueError."""
    with pytest.raises(ValueError, match="budget"):
        C.check_buckets(None, budget=0)
    with pytest.raises(ValueError, match="max_waste"):
        C.check_buckets(None, budget=2, max_waste=1.5)
    with pytest.raises(ValueError, match="tokens_per_batch"):
        C.check_packing(None, (512, 64), 0.1)
    with pytest.raises(ValueError, match="max_waste"):
        C.check_packing(None, (64, 512), 1.5)
    with pytest.raises(ValueError, match="usable"):
        C.check_fewest_chips(None, usable=0)
    with pytest.raises(ValueError, match="original"):
        C.check_offsets_fixed(None, [])
    with pytest.raises(ValueError, match="reference"):
        C.check_rewrite(None, None)  # type: ignore[arg-type]


def test_hidden_data_is_not_the_chapters() -> None:
    """The checks run the reader's code on data the chapters never print: lengths past recompile_storms' 300-frame
    cap, id pairs past op_fallbacks' id_range of 16, head sizes other than attention_numerics' 32."""
    assert all(max(job) > 300 for job in C.recompile_storms.hidden_batch_lengths())
    assert max(int(b.max()) for b in C.op_fallbacks.hidden_pair_batches()) >= 16
    assert {q.shape[-1] for q, _, _ in C.attention_numerics.hidden_attention_inputs()} == {16, 64}
    assert (24, 96) not in [(rows, dim) for rows, dim in C.custom_kernels.HIDDEN_ARRAYS[1:]]
    assert ("tpu_v6e", 4096, 2) not in C.predict_before_renting.HIDDEN_LAYERS


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


def test_scan_clean() -> None:
    _is(C.check_scan_clean("import torch\nx = torch.zeros(2).cuda()\n", ["cuda-device"]), False, "line 2 cuda-device")
    _is(C.check_scan_clean("import torch\nx = torch.zeros(2)\n", ["cuda-device"]), True)
    _is(C.check_scan_clean("def f(:\n", ["cuda-device"]), False, "no longer parses")
    with pytest.raises(ValueError, match="unknown scan rule"):
        C.check_scan_clean("", ["no-such-rule"])


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
    _is(C.check_tied_weights(lambda m, d: (m.tie_weights(), m)[1], _Tied, cpu), True, "encoder.tokens.weight")
    # untying by the chapter model's names breaks on the model the check adds, which has other names
    _is(C.check_tied_weights(lambda m, d: _untie(m, d).tie_weights(), _Tied, cpu), False, "no attribute 'head'")
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
        import copy
        dmodel = copy.deepcopy(model).to(t.device)
        tol = precision.HF_TOLERANCES["float32"]
        def highest(m, x):
            torch.set_float32_matmul_precision("highest")
            return m(x)
        print("DEFAULT", check_matmul_precision(lambda m, x: m(x), model, dmodel, x, t, tol))
        print("HIGHEST", check_matmul_precision(highest, model, dmodel, x, t, tol))
        print("ONCPU", check_matmul_precision(lambda m, x: m(x).cpu(), model, dmodel, x, t, tol))
        print("COPIED", check_matmul_precision(lambda m, x: ref.to(t.device), model, dmodel, x, t, tol))
        print("GARBAGE", check_matmul_precision(lambda m, x: None, model, dmodel, x, t, tol))
        print("NONE", check_matmul_precision(None, model, dmodel, x, t, tol))
        try:
            check_matmul_precision(None, model, dmodel, x, xlaport.profile("neuron"), tol)
        except ValueError as e:
            print("NORULE", e)
    """
    out = {
        line.split(" ", 1)[0]: line for line in fresh_python(code, fork=True).stdout.splitlines() if line[:1].isupper()
    }
    assert out["PLAIN"].startswith("PLAIN fail") and "2 tensors" in out["PLAIN"], out["PLAIN"]
    assert out["RETIE"].startswith("RETIE pass") and "on xla" in out["RETIE"], out["RETIE"]
    assert out["DEFAULT"].startswith("DEFAULT fail") and "'default' is the target's default" in out["DEFAULT"]
    assert out["HIGHEST"].startswith("HIGHEST pass") and "6 passes" in out["HIGHEST"], out["HIGHEST"]
    assert out["ONCPU"].startswith("ONCPU fail") and "came from cpu" in out["ONCPU"], out["ONCPU"]
    assert out["COPIED"].startswith("COPIED fail") and "never shows" in out["COPIED"], out["COPIED"]  # copied logits
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


def test_fsdp_accounting() -> None:
    shapes = {"embed": (1000, 100), "w1": (100, 100), "w2": (100, 400), "bias": (100,)}
    # 100,000 + 10,000 + 40,000 + 100 = 150,100 parameters
    assert fsdp_bytes_per_device(shapes, 1) == 150_100 * 4
    assert fsdp_bytes_per_device(shapes, 4) == (250 * 100 + 25 * 100 + 100 * 100 + 25) * 4
    assert fsdp_bytes_per_device({"odd": (10,)}, 4) == 3 * 4  # uneven: shards of ceil(10 / 4)


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


# ------------------------------------------------------------------ exercises keep the chapter's names
def _bound_names(src: str) -> set[str]:
    """Names a cell binds at top level (assignments, loop targets, defs, classes; not imports, which rebind a name to
    the same module, and not the variables of comprehensions or lambdas, which are local)."""
    import ast

    code = "\n".join(line for line in src.splitlines() if not line.lstrip().startswith(("%", "!")))
    out: set[str] = set()

    class Visitor(ast.NodeVisitor):
        def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
            out.add(node.name)

        def visit_ClassDef(self, node: ast.ClassDef) -> None:
            out.add(node.name)

        def visit_Name(self, node: ast.Name) -> None:
            if isinstance(node.ctx, ast.Store):
                out.add(node.id)

        def skip(self, node: ast.AST) -> None:
            return None

        visit_Lambda = visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = skip

    Visitor().visit(ast.parse(code))
    return out


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_exercise_cells_do_not_rebind_chapter_names(path: Path) -> None:
    """Cells after '## Exercises' bind only names of their own, so running them (in any order) never changes the data
    or functions the chapter's own cells use."""
    chapter: set[str] = set()
    clashes: dict[int, list[str]] = {}
    in_exercises = False
    for i, cell in enumerate(json.loads(path.read_text())["cells"]):
        src = "".join(cell["source"])
        if cell["cell_type"] == "markdown":
            in_exercises = in_exercises or bool(re.search(r"^## Exercises", src, re.M))
            continue
        names = _bound_names(src)
        if not in_exercises:
            chapter |= names
        elif names & chapter:
            clashes[i] = sorted(names & chapter)
    assert not clashes, f"{path.stem}: exercise cells rebind chapter names (cell: names): {clashes}"


def test_the_rebinding_check_sees_a_rebinding() -> None:
    assert _bound_names("batches = [1]\nfor x in y:\n    pass\ndef f():\n    z = 1\n") == {"batches", "x", "f"}
    assert _bound_names("import math\nn = [i for i in range(3)]\n") == {"n"}
