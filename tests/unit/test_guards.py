"""TorchTPU's storage-offset guard on the emulated tpu target (xlaport.guards).

A view with a new storage offset recompiles under emulated ``tpu`` and does not under
stock Dynamo on CPU; the recompile reason names the storage offset.
"""

from __future__ import annotations

import logging
import textwrap
from collections.abc import Iterator

import pytest
import torch

from conftest import Runner
from xlaport.profiles import profile
from xlaport.recompile import guards


def _euler(lat: torch.Tensor, sigma: torch.Tensor, sigma_next: torch.Tensor) -> torch.Tensor:
    return lat + (sigma_next - sigma) * torch.tanh(lat)


class _Reasons(logging.Handler):
    """Collect the guard-failure text Dynamo logs on each recompile (TORCH_LOGS=recompiles)."""

    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@pytest.fixture
def reasons() -> Iterator[_Reasons]:
    torch._logging.set_logs(recompiles=True)
    h = _Reasons()
    logger = logging.getLogger("torch._dynamo.guards.__recompiles")
    logger.addHandler(h)
    old = logger.propagate
    logger.propagate = False  # keep the test output quiet
    try:
        yield h
    finally:
        logger.removeHandler(h)
        logger.propagate = old
        torch._logging.set_logs()


# ----------------------------------------------------------------------------- profile
def test_profile_has_the_rule_with_its_source() -> None:
    rule = profile("tpu").rule(guards.RULE_ID)
    assert rule.kind == "guard"
    assert rule.key == "storage_offset"
    assert "_guard_input_storage_offsets" in rule.source and "_internal/compile/_backend.py" in rule.source
    for other in ("cpu", "cuda", "neuron"):
        assert not profile(other).has(guards.RULE_ID), other


# ----------------------------------------------------------------------------- CPU, real storage
def test_cpu_stock_dynamo_does_not_recompile_on_offset(fresh_python: Runner) -> None:
    """Plain torch.compile on CPU, in a process that never imports torch_xla: 1 compile for 6 offsets."""
    code = textwrap.dedent(
        """
        import sys, torch
        n = 0
        def counting(gm, example_inputs):
            global n
            n += 1
            return gm.forward
        def euler(lat, sigma, sigma_next):
            return lat + (sigma_next - sigma) * torch.tanh(lat)
        f = torch.compile(euler, backend=counting, dynamic=False)
        sigmas = torch.linspace(1, 0, 7)
        lat = torch.ones(2, 3)
        for i in range(6):
            lat = f(lat, sigmas[i], sigmas[i + 1])
        assert "torch_xla" not in sys.modules
        print("compiles", n)
        """
    )
    out = fresh_python(code, unset=["PJRT_DEVICE"])
    assert out.stdout.split()[-2:] == ["compiles", "1"], out.stdout


def test_wrapped_backend_recompiles_per_offset_on_cpu(reasons: _Reasons) -> None:
    torch._dynamo.reset()
    backend = guards.with_storage_offset_guards(lambda gm, ex: gm.forward)
    f = torch.compile(_euler, backend=backend, dynamic=False)
    sigmas = torch.linspace(1, 0, 6)
    lat = torch.ones(2, 3)
    for i in range(5):
        lat = f(lat, sigmas[i], sigmas[i + 1])
    assert backend.compiles == 5  # offsets (0,1), (1,2), ... are all new
    for i in range(5):  # the same offsets again: every one is cached
        f(lat, sigmas[i], sigmas[i + 1])
    assert backend.compiles == 5
    assert backend.guards == 5 * 3  # one guard per tensor input per compiled graph
    assert len(reasons.messages) == 4
    assert "sigma.storage_offset() == 3" in reasons.messages[-1]
    assert guards.storage_offset_reason(reasons.messages[-1]) == ("sigma", 3)
    # equal values at a new offset still recompile: the guard is on the offset, not the data
    same = torch.full((9,), 0.5)
    f(lat, same[7], same[8])
    assert backend.compiles == 6
    torch._dynamo.reset()


def test_no_recompile_for_fresh_tensors(reasons: _Reasons) -> None:
    torch._dynamo.reset()
    backend = guards.with_storage_offset_guards("eager")
    f = torch.compile(_euler, backend=backend, dynamic=False)
    lat = torch.ones(2, 3)
    for i in range(4):
        lat = f(lat, torch.tensor(1.0 - i / 4), torch.tensor(1.0 - (i + 1) / 4))
    assert backend.compiles == 1
    assert reasons.messages == []
    torch._dynamo.reset()


def test_install_outside_a_compile_is_a_no_op() -> None:
    gm = torch.fx.symbolic_trace(lambda x: x + 1)
    assert guards.install_storage_offset_guards(gm) == 0


# ----------------------------------------------------------------------------- bad input, parsing
def test_bad_input_gives_one_line_errors() -> None:
    with pytest.raises(ValueError, match="unknown Dynamo backend 'no-such-backend'"):
        guards.with_storage_offset_guards("no-such-backend")
    with pytest.raises(ValueError, match="backend must be"):
        guards.with_storage_offset_guards(42)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="expected a tensor"):
        guards.logical_storage_offset([1, 2])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="recompile reason string"):
        guards.storage_offset_reason(None)  # type: ignore[arg-type]


def test_reason_parsing() -> None:
    assert guards.storage_offset_reason("- 0/2: L['sigma_next'].storage_offset() == 12  # x") == ("L['sigma_next']", 12)
    assert guards.storage_offset_reason("0/0: tensor 'mel' size mismatch at index 2. expected 8, actual 9") is None


# ----------------------------------------------------------------------------- XLA (emulated tpu)
def _xla() -> torch.device:
    pytest.importorskip("torch_xla")
    from xlaport.targets import xla_device

    return xla_device()


def test_logical_offsets_of_xla_views_match_cpu() -> None:
    dev = _xla()
    base, lat = torch.linspace(1, 0, 21), torch.randn(5, 4, 8, 8, generator=torch.Generator().manual_seed(0))
    views = [
        lambda s, x: s[3],
        lambda s, x: s[3:5],
        lambda s, x: s[2:12:3][1],
        lambda s, x: s.view(3, 7)[1, 2:4],
        lambda s, x: s.view(3, 7).t()[2],
        lambda s, x: s.unbind(0)[4],
        lambda s, x: s.split(5)[2],
        lambda s, x: list(s)[6],
        lambda s, x: s[3].expand(4),
        lambda s, x: s.as_strided((2,), (3,), 4),
        lambda s, x: s.view(3, 7).diagonal(1),
        lambda s, x: x[:, 1],
        lambda s, x: x.permute(0, 2, 3, 1)[1],
        lambda s, x: x[2].reshape(-1)[5:],
        lambda s, x: s[3:4].squeeze(0),
        lambda s, x: s,
    ]
    xs, xl = base.to(dev), lat.to(dev)
    assert xs[3].storage_offset() == 0  # what torch_xla itself reports: no storage
    got = [guards.logical_storage_offset(v(xs, xl)) for v in views]
    want = [v(base, lat).storage_offset() for v in views]
    assert got == want
    assert guards.logical_storage_offset(xs[3].clone()) == 0
    # the recompile monitor's shape key sees the same offsets, so it can name a baked slice index
    from xlaport.recompile import describe_key_change, shape_key

    assert describe_key_change(shape_key(xs[3]), shape_key(xs[4])) == (
        "storage_offset",
        "input 0 storage offset 3 -> 4",
    )


def test_emulated_tpu_recompiles_per_offset_and_names_it(reasons: _Reasons) -> None:
    dev = _xla()
    from xlaport.targets import target

    torch._dynamo.reset()
    t = target("tpu")
    assert t.emulated and t.device == dev
    f = t.compile(_euler)
    sigmas = torch.linspace(1, 0, 5).to(dev)
    lat = torch.ones(2, 3).to(dev)
    for i in range(4):
        lat = f(lat, sigmas[i], sigmas[i + 1])
    f(lat, sigmas[1], sigmas[2])  # an offset seen before: cached
    t.sync()
    assert len(reasons.messages) == 3, reasons.messages
    assert all("storage_offset()" in m for m in reasons.messages)
    assert guards.storage_offset_reason(reasons.messages[-1]) == ("sigma", 2)
    # the same function through plain openxla (no TorchTPU rule) compiles once
    torch._dynamo.reset()
    reasons.messages.clear()
    g = torch.compile(_euler, backend="openxla", dynamic=False)
    for i in range(4):
        lat = g(lat, sigmas[i], sigmas[i + 1])
    t.sync()
    assert reasons.messages == []
    torch._dynamo.reset()
