"""xlaport.perf.compiled_memory: the memory XLA assigned a compiled program, read from its buffer assignment.

A written example checks the parser's categories; a real training step, compiled by XLA:CPU in a fresh process with
the dump switched on, checks what the mechanism promises: the first step returns AdamW's two new moments (twice the
parameters' bytes), later steps are handed them as inputs, and the temporary block grows with the batch.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from xlaport.perf.compiled_memory import ProgramMemory, program_memory, read_memory
from xlaport.xla_cpu import dump_flags, new_dump_dir

WRITTEN = """BufferAssignment:
allocation 0: size 4096, parameter 1, shape |f32[32,32]| at ShapeIndex {}, maybe-live-out:
 value: <1 p1 @0> (size=4096,offset=0): f32[32,32]{1,0}
allocation 1: size 4096, maybe-live-out:
allocation 2: size 1000, preallocated-temp:
allocation 3: size 16, output shape is |(f32[32,32], f32[32,32])|, maybe-live-out:
allocation 4: size 4, constant:
allocation 5: size 8, thread-local:

Total bytes used: 9220 (9.0KiB)
"""


def test_allocations_are_sorted_into_inputs_new_outputs_temporaries_and_the_rest() -> None:
    m = program_memory(WRITTEN, "m")
    assert (m.input_bytes, m.new_output_bytes, m.temp_bytes, m.other_bytes) == (4096, 4096, 1000, 28)
    assert m.total_bytes == 9220 and m.allocations == 6


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("no assignment here", "not an XLA buffer assignment"),
        (WRITTEN.replace("Total bytes used: 9220", "Total bytes used: 9000"), "add up to 9220 bytes, XLA reports 9000"),
        (b"bytes", "reads a buffer assignment's text"),
    ],
)
def test_bad_input_gets_one_clear_error(text: object, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        program_memory(text)  # type: ignore[arg-type]


def test_a_missing_directory_is_named(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no XLA dump directory"):
        read_memory(tmp_path / "nowhere")


STEP = """
import json, sys
import torch, torch_xla
from xlaport.perf.compiled_memory import read_memory
batch, dump = int(sys.argv[1]), sys.argv[2]
torch.manual_seed(0)
dev = torch_xla.device()
model = torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.GELU(), torch.nn.Linear(1024, 256)).to(dev)
opt = torch.optim.AdamW(model.parameters())
for _ in range(3):
    x = torch.randn(batch, 256, device=dev)
    model(x).pow(2).mean().backward(); opt.step(); opt.zero_grad(); torch_xla.sync()
params = sum(p.numel() * 4 for p in model.parameters())
mems = [vars(m) for m in read_memory(dump).values()]
print(json.dumps({"params": params, "programs": mems}))
"""


def _run(fresh_python, batch: int) -> dict:
    dump = new_dump_dir()
    code = STEP.replace("sys.argv[1]", repr(str(batch))).replace("sys.argv[2]", repr(dump))
    out = fresh_python(code, env={"XLA_FLAGS": dump_flags(dump, "--xla_backend_optimization_level=0")})
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_a_real_training_step_holds_weights_and_adams_moments_and_temporaries_grow_with_the_batch(fresh_python) -> None:
    small, large = _run(fresh_python, 8), _run(fresh_python, 256)
    params = small["params"]
    steady_temp = {}
    for batch, run in ((8, small), (256, large)):
        steps = [p for p in run["programs"] if p["input_bytes"] >= params]  # the training-step programs
        assert len(steps) >= 2, run["programs"]
        first, later = steps[0], steps[-1]
        assert first["new_output_bytes"] >= 2 * params, first  # AdamW's exp_avg and exp_avg_sq, created by step 0
        assert later["input_bytes"] >= 3 * params, later  # weights and both moments handed in from then on
        assert all(ProgramMemory(**p) for p in run["programs"])  # every program's allocations add up
        steady_temp[batch] = later["temp_bytes"]
    assert steady_temp[256] > steady_temp[8], steady_temp  # activations kept for the backward grow with the batch
