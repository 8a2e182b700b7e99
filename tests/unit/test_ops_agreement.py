"""The emulator and the static report give one answer per op: an exhaustive audit over the installed op registry.

For every ``aten::`` op PyTorch has registered, :func:`xlaport.ops.route.decide` (the static verdict) and the
emulated ``tpu`` target (the kernels :func:`xlaport.ops.emulate_missing_ops` puts on the XLA key, read back from
the dispatcher's own table) must agree on which ops TorchTPU raises on. Ops whose route depends on their inputs
(composite kernels other than a structured op's) cannot be decided by name: they are counted, and the emulator
decides those that reach its XLA key at each call. The neuron table's semantics get the same audit.
"""

from __future__ import annotations

import json

import torch

from conftest import Runner
from xlaport import ops
from xlaport.ops.route import composite_key, decide, structured_delegate

AUDIT = r"""
import json, os, collections
import torch
from xlaport.ops import support_table
from xlaport.ops.route import decide, composite_key

names = sorted(n for n in torch._C._dispatch_get_all_op_names() if n.startswith("aten::"))
support_table("xla")  # imports torch_xla: the XLA key's kernels as torch_xla registers them


def xla_entry(n):
    return next((ln for ln in torch._C._dispatch_dump_table(n).splitlines() if ln.startswith("XLA:")), "")


before = {n: xla_entry(n) for n in names}
import xlaport
from xlaport import ops
xlaport.target("tpu")
ours = os.path.join("xlaport", "ops", "fallback.py")
after = {n: xla_entry(n) for n in names}
replaced = sorted(n for n in names if ours in after[n] and ours not in before[n])
plan = ops.emulation_plan()
tpu = support_table("tpu")
static = {n: decide(n, tpu) for n in names}
print("AUDIT", json.dumps({
    "n_ops": len(names),
    "replaced": replaced,
    "plan": plan,
    "static_raises": sorted(n for n, d in static.items() if d.status == "raises"),
    "unknown": sorted(n for n, d in static.items() if d.status == "unknown"),
    "unknown_keys": dict(collections.Counter(composite_key(n, "PrivateUse1") for n, d in static.items()
                                             if d.status == "unknown")),
    "statuses": dict(collections.Counter(d.status for d in static.values())),
    "xla_composite": sorted(n for n in names if composite_key(n, "XLA") is not None),
    "had_xla_kernel": sorted(n for n in plan if "[kernel]" in before[n]),
}))

# What the hooks do when called, one op of each kind.
t = xlaport.target("tpu")
x = torch.randn(1, 2, 4, 4)
up = torch.nn.functional.interpolate(x.to(t.device), size=(6, 6), mode="bicubic")
ref = torch.nn.functional.interpolate(x, size=(6, 6), mode="bicubic")
print("BICUBIC", bool(torch.allclose(up.cpu(), ref, atol=1e-5)))
for label, f in (
    ("unique_dim", lambda: torch.unique(torch.tensor([[1, 2], [1, 2]]).to(t.device), dim=0)),
    ("cholesky_ex", lambda: torch.linalg.cholesky(torch.eye(3).to(t.device))),
    ("cholesky", lambda: torch.cholesky(torch.eye(3).to(t.device))),
    ("pixel_shuffle", lambda: torch.nn.functional.pixel_shuffle(torch.randn(1, 4, 2, 2).to(t.device), 2).cpu()),
):
    try:
        f()
        print("CALL", label, "runs")
    except NotImplementedError as e:
        print("CALL", label, "raises", str(e).split("'")[1])
"""


def test_emulator_raises_exactly_where_the_static_verdict_says(fresh_python: Runner) -> None:
    out = fresh_python(AUDIT, timeout=900).stdout
    audit = json.loads(out.split("AUDIT ", 1)[1].splitlines()[0])
    plan = audit["plan"]
    raise_hooks = {n for n, m in plan.items() if m == "raise"}
    decide_hooks = {n for n, m in plan.items() if m == "decide"}
    static_raises = set(audit["static_raises"])
    unknown = set(audit["unknown"])
    # the dispatcher's own table: the XLA kernels that are now ours are exactly the emulator's plan
    assert set(audit["replaced"]) == set(plan), sorted(set(audit["replaced"]) ^ set(plan))[:10]
    # the agreement: every op the static verdict says raises is made to raise, and nothing else is
    assert raise_hooks == static_raises, (
        sorted(raise_hooks - static_raises)[:10],
        sorted(static_raises - raise_hooks)[:10],
    )
    # the undecidable ones: composites that need their inputs; those that reach the XLA key are decided per call
    assert decide_hooks <= unknown and not (decide_hooks & static_raises)
    assert decide_hooks == {n for n in unknown if n not in set(audit["xla_composite"])}
    assert sum(audit["unknown_keys"].values()) == len(unknown) > 0
    assert None not in audit["unknown_keys"]  # an op without any composite is always decidable
    # what the audit measured (the numbers the book's emulation page quotes come from a run of it)
    assert audit["n_ops"] > 2500 and len(static_raises) > 300
    # ops TorchTPU runs through a structured composite are not hooked (the old rule made these raise)
    for op in ("aten::upsample_bicubic2d", "aten::linalg_qr", "aten::linalg_lu", "aten::mm"):
        assert op not in plan, op
    # ops torch_xla has a kernel for but TorchTPU does not: the emulator raises anyway
    assert "aten::cholesky" in raise_hooks and "aten::cholesky" in audit["had_xla_kernel"]
    assert "BICUBIC True" in out
    assert "CALL unique_dim raises aten::unique_dim" in out
    assert "CALL cholesky_ex raises aten::linalg_cholesky_ex.L" in out
    assert "CALL cholesky raises aten::cholesky" in out
    assert "CALL pixel_shuffle runs" in out
    print(
        f"{audit['n_ops']} aten ops: {audit['statuses']}; emulator raises on {len(raise_hooks)}, decides "
        f"{len(decide_hooks)} per call; undecidable by name: {len(unknown)} {audit['unknown_keys']}"
    )


# ---------------------------------------------------------------- the route itself (no torch_xla)
def test_structured_route_is_known_by_name() -> None:
    tpu = ops.support_table("tpu")
    assert structured_delegate("aten::upsample_bicubic2d") == "aten::upsample_bicubic2d.out"
    assert structured_delegate("aten::add_.Tensor") == "aten::add.out"
    d = decide("aten::upsample_bicubic2d", tpu)
    assert d.status == "decomposed" and "upsample_bicubic2d.out" in d.how and d.runs
    d = decide("aten::linalg_cholesky_ex", tpu)
    assert d.status == "raises" and d.missing == ("aten::linalg_cholesky_ex.L",)
    assert decide("aten::linalg_cholesky_ex", tpu, fallback_on=True).status == "falls back"
    assert decide("aten::unique_dim", tpu).status == "raises"
    assert decide("aten::sort", tpu).status in ("supported", "decomposed", "unknown")


def test_a_non_structured_composite_is_decided_by_its_inputs() -> None:
    tpu = ops.support_table("tpu")
    op = "aten::pixel_shuffle"
    assert composite_key(op, "PrivateUse1") == "CompositeExplicitAutogradNonFunctional"
    assert structured_delegate(op) is None
    assert decide(op, tpu).status == "unknown"
    x = torch.empty(1, 4, 2, 2, device="meta")
    assert decide(op, tpu, ((x, 2), {})).runs


def test_neuron_table_semantics() -> None:
    """The neuron table: listed names cover every overload, nothing raises, unlisted ops are unknown, not missing."""
    neuron = ops.support_table("neuron")
    names = [n for n in torch._C._dispatch_get_all_op_names() if n.startswith("aten::")]
    bases = {n.partition(".")[0] for n in names}
    # every listed name is a real ATen op but one: AWS's list predates PyTorch's removal of _s_where (now where.self)
    assert neuron.kernels - bases == {"aten::_s_where"}, sorted(neuron.kernels - bases)
    verdicts = {n: decide(n, neuron) for n in names}
    assert not [n for n, d in verdicts.items() if d.status in ("raises", "falls back")]  # incomplete: never "missing"
    for n, d in verdicts.items():
        if n.partition(".")[0] in neuron.kernels:
            assert d.status == "supported", n  # a listed name covers every overload
    # PrivateUse1's structured route applies on neuron as on tpu: mm's .out is listed, so is mm
    assert decide("aten::mm", neuron).status == "supported"
    assert decide("aten::bmm.out", neuron).status == "supported"
    unlisted = decide("aten::unique_dim", neuron)
    assert unlisted.status == "unknown" and "falls back to CPU" in unlisted.how
