"""xlaport.nonfinite: it names the op that made the first inf/NaN, forward and backward, eager and compiled.

CPU only (no torch_xla import here: it would change Dynamo's config for the whole test
process); the chapter notebook exercises the XLA device.
"""

from __future__ import annotations

import pytest
import torch
import torch._functorch.config
from torch import nn

from xlaport.numerics.nonfinite import NonFiniteFinder, assert_finite, is_finite, nonfinite_grads, nonfinite_state


class LogNet(nn.Module):
    """Linear -> log: NaN in the *forward* wherever the linear output is negative."""

    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(4, 4)
        self.act = Log()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.act(self.proj(x)).sum()


class Log(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.log(x)


class SqrtNet(nn.Module):
    """abs -> sqrt with one output unit planted at exactly 0: finite forward (sqrt(0) = 0),
    but d sqrt(x)/dx = inf at 0, and abs's backward turns inf * sign(0) into NaN."""

    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(4, 4)
        with torch.no_grad():
            self.proj.weight[0].zero_()
            self.proj.bias[0].zero_()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sqrt(torch.abs(self.proj(x))).sum()


def _x() -> torch.Tensor:
    torch.manual_seed(0)
    return torch.randn(8, 4)


def test_clean_run_reports_nothing() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
    finder = NonFiniteFinder(model)
    with finder:
        model(_x()).sum().backward()
    assert finder.first is None and finder.findings == []
    assert finder.checks > 5  # it did look at the forward and backward ops
    assert "all finite" in finder.report()


def test_planted_nan_in_forward_is_named() -> None:
    torch.manual_seed(0)
    model = LogNet()
    finder = NonFiniteFinder(model)
    with finder:
        model(_x()).backward()
    first = finder.first
    assert first is not None
    assert (first.op, first.phase, first.where, first.source) == ("aten.log.default", "forward", "act", "eager")
    assert first.inputs_finite and first.n_nan > 0
    assert finder.origin == first
    # what follows only passes the NaN on
    assert all(not f.inputs_finite for f in finder.findings[1:])
    # log's derivative 1/x is finite at negative x, so the backward stays clean
    assert not any(f.phase == "backward" for f in finder.findings)


def test_planted_inf_in_backward_is_named() -> None:
    torch.manual_seed(0)
    model = SqrtNet()
    finder = NonFiniteFinder(model)
    with finder:
        loss = model(_x())
        assert is_finite(loss)
        loss.backward()
    first = finder.first
    assert first is not None
    assert first.phase == "backward" and first.where == "SqrtBackward0"
    assert first.n_inf > 0 and first.inputs_finite
    assert not any(f.phase == "forward" for f in finder.findings)
    assert nonfinite_grads(model) == ["proj.weight", "proj.bias"]


def test_compiled_forward_and_backward_are_named() -> None:
    torch._dynamo.reset()
    finder = NonFiniteFinder()
    model = LogNet()
    torch.compile(model, backend=finder.backend())(_x()).backward()
    first = finder.first
    assert first is not None
    assert (first.op, first.phase, first.source) == ("aten.log.default", "forward", "compiled")
    assert "(act)" in first.where

    torch._dynamo.reset()
    finder.reset()
    model = SqrtNet()
    torch.compile(model, backend=finder.backend())(_x()).backward()
    first = finder.first
    assert first is not None and first.phase == "backward" and first.inputs_finite
    assert not any(f.phase == "forward" for f in finder.findings)


def test_compiled_backward_under_outer_autocast_is_caught() -> None:
    """pytorch/pytorch#153044 on CPU: the fp32 island's backward is traced under the outer fp16 autocast."""

    class Island(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.register_buffer("w", torch.ones(4, 4))
            self.lin = nn.Linear(4, 1)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = x @ self.w
            with torch.autocast("cpu", enabled=False):
                return self.lin(y.float())

    def run(setting: str) -> NonFiniteFinder:
        torch._dynamo.reset()
        torch.manual_seed(0)
        finder = NonFiniteFinder()
        model = Island()
        old = torch._functorch.config.backward_pass_autocast
        torch._functorch.config.backward_pass_autocast = setting
        try:
            with torch.autocast("cpu", dtype=torch.float16):
                y = torch.compile(model, backend=finder.backend())(torch.ones(1, 4))
            (y * 16384).sum().backward()
        finally:
            torch._functorch.config.backward_pass_autocast = old
        return finder

    bad = run("same_as_forward").first
    assert bad is not None and bad.phase == "backward" and bad.op == "aten.mm.default" and bad.dtype == "float16"
    assert "(lin)" in bad.where
    assert run("off").first is None


def test_bad_input_gives_one_line_errors() -> None:
    with pytest.raises(ValueError, match=r"torch\.nn\.Module"):
        NonFiniteFinder("model")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_checks"):
        NonFiniteFinder(max_checks=0)
    with pytest.raises(ValueError, match="at least one"):
        is_finite()
    with pytest.raises(ValueError, match="tensors"):
        is_finite([1.0])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="limit"):
        NonFiniteFinder().report(limit=0)
    finder = NonFiniteFinder()
    with finder:
        with pytest.raises(ValueError, match="already active"):
            finder.__enter__()
    with pytest.raises(ValueError, match="b"):
        assert_finite({"a": torch.ones(2), "b": torch.tensor([float("nan")])})
    with pytest.raises(ValueError, match="Module"):
        nonfinite_grads(torch.ones(2))  # type: ignore[arg-type]


def test_max_checks_bounds_recording() -> None:
    finder = NonFiniteFinder(max_checks=3)
    with finder:
        x = torch.ones(3)
        for _ in range(10):
            x = x * 2
    assert finder.checks == 3 and finder.truncated
    assert "stopped at max_checks" in finder.report()


def test_bad_input_from_model_state_is_named() -> None:
    """A constant that model.to(bfloat16) turned into -inf: the finder points at the buffer."""

    class Masked(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.proj = nn.Linear(4, 4)
            self.register_buffer("mask_min", torch.tensor(torch.finfo(torch.float32).min))

        def forward(self, x: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
            return (self.proj(x) + (1.0 - keep.to(x.dtype)) * self.mask_min).softmax(-1).sum()

    torch.manual_seed(0)
    model = Masked().to(torch.bfloat16)
    finder = NonFiniteFinder(model)
    with finder:
        model(_x().to(torch.bfloat16), torch.tensor([1, 1, 0, 0]))
    first = finder.first
    assert first is not None and first.op == "aten.mul.Tensor" and not first.inputs_finite
    assert nonfinite_state(model) == ["mask_min"]
    assert "mask_min" in finder.report()
