"""xlaport.perf.xla_trace: torch_xla's profiler trace read into compile, execute, transfer, op and annotation events.

Written events check the overlap arithmetic and the classification; a real profile, taken in a fresh process on
XLA:CPU, checks what the reader is promised: the first step compiles and later ones do not, every step's annotation
is there, and the compiled program's HLO operations appear one by one inside its execution.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from xlaport.perf.xla_trace import Event, busy, classify, read_trace, self_times, within


def _ev(a: float, b: float, kind: str = "execute") -> Event:
    return Event("e", "lane", a, b - a, kind)


def test_busy_counts_overlaps_once_and_clips_to_the_window() -> None:
    events = [_ev(0, 10), _ev(5, 15), _ev(20, 30)]
    assert busy(events) == 25
    assert busy(events, 8, 25) == 7 + 5
    assert busy([]) == 0
    assert [e.start_us for e in within(events, _ev(4, 21, "annotation"))] == [5, 20]


def test_self_time_takes_nested_events_out_of_their_parent() -> None:
    call, inner, after = (
        Event("call.1", "t", 0, 10, "op"),
        Event("dot.2", "t", 2, 6, "op"),
        Event("f", "t", 12, 3, "op"),
    )
    other_lane = Event("dot.3", "u", 1, 4, "op")
    got = {e.name: t for e, t in self_times([call, inner, after, other_lane])}
    assert got == {"call.1": 4, "dot.2": 6, "f": 3, "dot.3": 4}
    assert sum(got.values()) == busy([call, after]) + 4


@pytest.mark.parametrize(
    ("name", "lane", "args", "kind"),
    [
        ("XLAGraphExecutor::Compile", "python", None, "compile"),
        ("PjRtComputationClient::TransferToDevice", "tf_pytorchxla/1", None, "transfer"),
        ("dot.219", "tf_XLAEigen/1", {"hlo_op": "dot.219"}, "op"),
        ("ThunkExecutor::Execute", "tf_XLAEigen/1", None, "execute"),
        ("ThunkExecutor::Execute (wait for completion)", "tf_XLAPjRtCpuClient/1", None, "other"),
        ("SyncTensorsGraph", "python", None, "host"),
        ("train_step", "python", None, "annotation"),
    ],
)
def test_classify(name: str, lane: str, args: dict | None, kind: str) -> None:
    assert classify(name, lane, args, annotations=("train_step",)) == kind


def test_missing_output_gets_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no profiler output"):
        read_trace(tmp_path / "nowhere")
    with pytest.raises(ValueError, match="wrote no trace"):
        read_trace(tmp_path)


PROFILE = """
import json, sys, tempfile
import torch, torch_xla
import torch_xla.debug.profiler as xp
from xlaport.perf.xla_trace import read_trace
out = tempfile.mkdtemp()
server = xp.start_server(9229)
dev = torch_xla.device()
model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.GELU(), torch.nn.Linear(256, 64)).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
xp.start_trace(out)
for step in range(3):
    with xp.StepTrace("train_step"):
        model(torch.randn(32, 64).to(dev)).pow(2).mean().backward(); opt.step(); opt.zero_grad()
torch_xla.sync(wait=True)
xp.stop_trace()
events = read_trace(out, annotations=("train_step",))
steps = [e for e in events if e.kind == "annotation"]
print(json.dumps({
    "steps": len(steps),
    "compiles": [sum(1 for e in events if e.kind == "compile" and s.start_us <= e.start_us < s.end_us) for s in steps],
    "ops": sorted({e.name.split(".")[0] for e in events if e.kind == "op"}),
    "executes": sum(1 for e in events if e.kind == "execute"),
}))
"""


def test_a_real_profile_shows_the_first_step_compiling_and_the_program_op_by_op(fresh_python) -> None:
    got = json.loads(fresh_python(PROFILE).stdout.strip().splitlines()[-1])
    assert got["steps"] == 3
    assert got["compiles"][0] > 0 and got["compiles"][2] == 0, got["compiles"]
    assert "dot" in got["ops"], got["ops"]  # the matrix products, one event per HLO operation
    assert got["executes"] > 0
