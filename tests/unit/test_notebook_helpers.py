"""xlaport.notebook: glue shows nothing under a cell, and PyTorch's log lines carry no machine paths."""

from __future__ import annotations

import logging
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import run_python
from xlaport import notebook


def test_glue_returns_nothing_so_a_cell_ending_with_it_shows_no_result() -> None:
    assert notebook.glue("x_for_test", 3.5) is None


def test_glue_rejects_an_empty_name() -> None:
    with pytest.raises(ValueError, match="non-empty"):
        notebook.glue("", 1)


@pytest.mark.parametrize(
    ("logged", "shown"),
    [
        ("function: 'scale' (/tmp/ipykernel_13130/1644709049.py:1)", "function: 'scale' (<cell>:1)"),
        ("function: 'forward' (/work/main/src/xlaport/models/dit.py:88)", "function: 'forward' (dit.py:88)"),
        ("no path here: 8 recompiles", "no path here: 8 recompiles"),
    ],
)
def test_torch_log_records_lose_machine_paths(logged: str, shown: str, caplog: pytest.LogCaptureFixture) -> None:
    notebook.reader_friendly_logs()
    with caplog.at_level(logging.WARNING, logger="torch._dynamo.xlaport_test"):
        logging.getLogger("torch._dynamo.xlaport_test").warning("%s", logged)
    assert caplog.records[-1].getMessage() == shown


def test_other_loggers_are_left_alone(caplog: pytest.LogCaptureFixture) -> None:
    notebook.reader_friendly_logs()
    with caplog.at_level(logging.WARNING, logger="xlaport_test"):
        logging.getLogger("xlaport_test").warning("%s", "/work/main/a.py")
    assert caplog.records[-1].getMessage() == "/work/main/a.py"


def test_call_sites_in_notebook_cells_are_named_cell() -> None:
    from xlaport.ops.trace import _IPYKERNEL_FILE

    assert _IPYKERNEL_FILE.search("/tmp/ipykernel_14616/2997899862.py")
    assert not _IPYKERNEL_FILE.search("/work/main/src/xlaport/models/dit.py")


@pytest.mark.parametrize("order", ["torch first", "notebook first"])
def test_torch_log_lines_carry_no_time_stamp_or_process_id(fresh_python: Any, order: str) -> None:
    imports = (
        "import torch\nimport xlaport.notebook" if order == "torch first" else "import xlaport.notebook\nimport torch"
    )
    out = fresh_python(
        imports
        + """
@torch.compile(backend="eager", dynamic=False)
def f(x):
    return x * 2
for n in range(1, 11):
    f(torch.ones(n))
""",
        unset=["TORCH_LOGS_FORMAT"],
    )
    assert "WARNING torch._dynamo.convert_frame: torch._dynamo hit config.recompile_limit" in out.stderr, out.stderr
    assert not re.search(r"(?m)^[IWEF]\d{4} \d\d:\d\d:\d\d", out.stderr), out.stderr


def test_plural() -> None:
    assert [notebook.plural(n, "op") for n in (0, 1, 2)] == ["0 ops", "1 op", "2 ops"]
    assert notebook.plural(2, "pass", "passes") == "2 passes" and notebook.plural(1, "pass", "passes") == "1 pass"
    assert notebook.plural(12000, "token") == "12,000 tokens"
    for bad in (1.5, True, "3"):
        with pytest.raises(ValueError, match="whole numbers"):
            notebook.plural(bad, "op")  # type: ignore[arg-type]


def test_sci() -> None:
    assert notebook.sci(0.0) == "0" and notebook.sci(-0.0) == "0"
    assert notebook.sci(2.345e-7) == "2.3e-07" and notebook.sci(2.345e-7, 0) == "2e-07"
    with pytest.raises(ValueError, match="digits"):
        notebook.sci(1.0, -1)


@pytest.fixture
def glued(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    monkeypatch.setattr(notebook, "glue", lambda name, value, display=False: seen.__setitem__(name, value))
    return seen


def test_glue_many_glues_each_keyword(glued: dict[str, Any]) -> None:
    notebook.glue_many(n_ops=3, gap=0.25)
    assert glued == {"n_ops": 3, "gap": 0.25}
    with pytest.raises(ValueError, match="at least one"):
        notebook.glue_many()


def test_glue_fields_of_a_dataclass_a_dict_and_a_named_tuple(glued: dict[str, Any]) -> None:
    from dataclasses import dataclass
    from typing import NamedTuple

    @dataclass
    class Result:
        steps: int
        wall_s: float
        name: str
        passed: bool
        losses: list[float]

        @property
        def per_step(self) -> float:
            return self.wall_s / self.steps

    r = Result(4, 2.0, "pad", True, [1.0])
    notebook.glue_fields(r, "pad_")
    assert glued == {"pad_steps": 4, "pad_wall_s": 2.0, "pad_name": "pad"}  # no bools, no lists
    glued.clear()
    notebook.glue_fields(r, "pad_", names=["per_step", "losses"], first_loss=r.losses[0])
    assert glued == {"pad_per_step": 0.5, "pad_losses": [1.0], "pad_first_loss": 1.0}
    glued.clear()
    notebook.glue_fields({"a": 1, "b": "x"}, "m_")
    notebook.glue_fields(NamedTuple("P", [("x", int)])(7))
    assert glued == {"m_a": 1, "m_b": "x", "x": 7}


def test_glue_fields_rejects_what_it_cannot_read() -> None:
    with pytest.raises(ValueError, match="dataclass, a mapping or a named tuple"):
        notebook.glue_fields([1, 2], "x_")
    with pytest.raises(ValueError, match="no field 'missing'"):
        notebook.glue_fields({"a": 1}, names=["missing"])
    with pytest.raises(ValueError, match="nothing to glue"):
        notebook.glue_fields({"a": [1]})


def test_markdown_table_from_dicts_and_sequences() -> None:
    t = notebook.markdown_table([{"op": "a|b", "n": 1}, {"op": "c", "n": 2}])
    assert t.data.splitlines() == ["| op | n |", "|---|---|", "| a\\|b | 1 |", "| c | 2 |"]
    t = notebook.markdown_table([("x", 1)], columns=["name", "count"])
    assert t.data.splitlines()[2] == "| x | 1 |"
    assert notebook.markdown_table([{"a": 1, "b": 2}], columns=["b"]).data.splitlines()[0] == "| b |"
    for rows, columns, message in (
        ([], None, "at least one row"),
        ([("x", 1)], None, "need columns"),
        ([("x", 1)], ["one"], "needs 1 values"),
        ([{"a": 1}], ["a", "b"], "lack column 'b'"),
    ):
        with pytest.raises(ValueError, match=message):
            notebook.markdown_table(rows, columns=columns)


def _project(root: Any, **files: str) -> Any:
    root.mkdir()
    for name, text in files.items():
        (root / name).write_text(text)
    return root


def test_load_project_imports_two_copies_of_a_project_fresh(tmp_path: Any) -> None:
    a = _project(tmp_path / "a", **{"base.py": "VALUE = 1\n", "top.py": "from base import VALUE\n"})
    b = _project(tmp_path / "b", **{"base.py": "VALUE = 2\n", "top.py": "from base import VALUE\n"})
    old, new = notebook.load_project(a, "top"), notebook.load_project(b, "top")
    assert (old.top.VALUE, old.base.VALUE, new.top.VALUE, new.base.VALUE) == (1, 1, 2, 2)
    assert str(b) not in __import__("sys").path
    with pytest.raises(ValueError, match="name modules of a to import"):
        notebook.load_project(a, "nothere")
    with pytest.raises(ValueError, match="not a folder"):
        notebook.load_project(tmp_path / "none", "top")


def test_scratch_copy_and_show_diff(tmp_path: Any) -> None:
    a = _project(tmp_path / "proj", **{"m.py": "x = 1\ny = 2\n", "same.txt": "s\n", "gone.txt": "g\n"})
    copy = notebook.scratch_copy(a)
    assert copy.name == "proj" and copy != a and (copy / "m.py").read_text() == "x = 1\ny = 2\n"
    (copy / "m.py").write_text("x = 1\ny = 3\n")
    (copy / "gone.txt").unlink()
    (copy / "new.txt").write_text("n\n")
    text = notebook.show_diff(a, copy).data
    assert "--- a/m.py\n+++ b/m.py" in text and "-y = 2\n+y = 3" in text
    assert "a/gone.txt" in text and "+n" in text and "same.txt" not in text and str(tmp_path) not in text
    assert notebook.show_diff(a, a).data == "No changes."
    with pytest.raises(ValueError, match="in neither folder"):
        notebook.show_diff(a, copy, names=["nope.py"])
    with pytest.raises(ValueError, match="not a folder"):
        notebook.scratch_copy(tmp_path / "none")


# Tables the chapters display, built next to the results they render (xlaport.distributed).
def test_stream_tables_and_trial() -> None:
    import xlaport
    from xlaport.distributed import streams

    tpu = xlaport.profile("tpu")
    rules = streams.rules_table(tpu).splitlines()
    assert rules[:2] == ["| rule | calls | what happens | source |", "|---|---|---|---|"]
    assert len(rules) == 2 + len(streams.rules_for(tpu)) and all(r.count(" | ") == 3 for r in rules[2:])
    trial = streams.Trial(streams.EmulatedStreams(tpu))
    side = trial.line("side = torch.cuda.Stream()", "Stream", lambda: trial.dm.Stream())
    assert trial.line("if side.query(): ...", "Stream.query", lambda: side.query()) is None  # it raised
    assert [r["call"] for r in trial.rows] == ["Stream", "Stream.query"]
    counts = trial.counts()
    assert counts["raises"] == 1 and sum(counts.values()) == 2
    table = trial.table("tpu").splitlines()
    assert table[0].startswith("| CUDA line | on `tpu` (") and "raises `NotImplementedError`" in table[3]
    with pytest.raises(ValueError, match="unknown stream call"):
        trial.line("x", "Stream.nope", lambda: None)
    with pytest.raises(ValueError, match="no stream lines"):
        streams.Trial(trial.dm).table("tpu")


def test_layout_collectives_and_support_tables() -> None:
    import xlaport
    from xlaport.distributed import hlo, support_table
    from xlaport.distributed.mesh import layout_table

    shards = [{"name": "0.weight", "shape": [8, 4], "spec": "{devices=[2,1]0,1}", "shard_shapes": [[4, 4], [4, 4]],
               "bytes": [64, 64]}]  # fmt: skip
    text = layout_table(shards, {"0.weight": {"type": "DTensor", "local": [4, 4]}}).splitlines()
    assert "shard per device (2 devices)" in text[0] and text[2] == (
        "| `0.weight` | (8, 4) | DTensor (4, 4) | `{devices=[2,1]0,1}` | (4, 4) | 64, 64 |"
    )
    with pytest.raises(ValueError, match="no FSDP2 shard"):
        layout_table(shards, {})
    step = hlo.Collectives("m", (hlo.Collective("all-gather", "ag.1", "f32[8,4]{1,0}", is_async=True),))
    assert step.table(["parameter `0.weight`"]).splitlines()[2] == (
        "| all-gather | `f32[8,4]{1,0}` | parameter `0.weight` | yes |"
    )
    with pytest.raises(ValueError, match="1 collectives"):
        step.table([])
    support = support_table(xlaport.profile("tpu"), xlaport.profile("neuron"))
    features = xlaport.profile("tpu").of_kind("distributed")
    assert support.count("\n| ") == len(features) and "Sources:" in support
    with pytest.raises(ValueError, match="two xlaport profiles"):
        support_table("tpu", "neuron")


def test_new_dump_dir_is_removed_by_read_dump() -> None:
    from pathlib import Path

    from xlaport.distributed import hlo

    d = hlo.new_dump_dir()
    assert Path(d).is_dir() and hlo.read_dump(d, remove=True) == {} and not Path(d).exists()


def test_precision_describe_says_what_a_mode_did() -> None:
    import torch

    from xlaport.numerics import precision

    expected = torch.ones(4)
    close = precision.compare(expected + 1e-7, expected)
    far = precision.compare(expected + 5e-3, expected)
    assert precision.describe("highest", close) == (
        "highest  (6 passes, emulated as float32): max |diff| 1.2e-07, tolerance needed 6.0e-08, "
        "HF float32 test passes, HF bfloat16 test passes"
    )
    line = precision.describe("default", far)
    assert line.startswith("default  (1 pass, emulated as rounded inputs)") and "HF float32 test FAILS" in line
    with pytest.raises(ValueError, match="unknown matmul precision"):
        precision.describe("medium", close)


# ------------------------------------------------------------------ example(): the committed example projects
def test_example_is_found_from_any_working_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A reader edition runs wherever Jupyter or Colab starts it: the examples come from the toolkit's clone."""
    from xlaport.notebook import example

    monkeypatch.chdir(tmp_path)  # neither ./examples nor ../examples here
    project = example("cuda_project")
    assert project.is_dir() and (project / "tinylm.py").is_file()
    assert example("sd3_view_offsets/stock_dynamo.py").is_file()


@pytest.mark.parametrize("name", ["", "/etc", "../secrets", "a/../../b", "no_such_example", 3])
def test_example_refuses_in_one_line(name: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from xlaport.notebook import example

    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match=r"^example\(\): ") as err:
        example(name)  # type: ignore[arg-type]
    assert "\n" not in str(err.value)


def test_reader_friendly_logs_hide_the_emulators_own_start_up_lines(caplog: pytest.LogCaptureFixture) -> None:
    import logging

    from xlaport.notebook import reader_friendly_logs

    reader_friendly_logs()
    with caplog.at_level(logging.WARNING):
        logging.getLogger("torchao").warning("Skipping import of cpp extensions due to incompatible torch version")
        logging.warning("a warning a reader should see")
    assert [r.getMessage() for r in caplog.records] == ["a warning a reader should see"]


def test_pjrt_device_is_said_before_torch_xla_starts_where_there_is_no_tpu(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from xlaport import detect
    from xlaport.notebook import cpu_before_torch_xla

    monkeypatch.delitem(sys.modules, "torch_xla", raising=False)
    monkeypatch.setattr(detect, "neuron_devices", lambda dev="/dev": [])
    (tmp_path / "0000:00:04.0").mkdir()
    (tmp_path / "0000:00:04.0" / "vendor").write_text("0x8086\n")  # an Intel device, no TPU
    env: dict[str, str] = {}
    assert cpu_before_torch_xla(env, str(tmp_path)) and env == {"PJRT_DEVICE": "CPU"}
    given = {"PJRT_DEVICE": "TPU"}
    assert not cpu_before_torch_xla(given, str(tmp_path)) and given == {"PJRT_DEVICE": "TPU"}
    (tmp_path / "0000:00:05.0").mkdir()
    (tmp_path / "0000:00:05.0" / "vendor").write_text("0x1ae0\n")  # Google's: a TPU, whatever its device id
    env = {}
    assert not cpu_before_torch_xla(env, str(tmp_path)) and env == {}
    monkeypatch.setattr(detect, "neuron_devices", lambda dev="/dev": ["/dev/neuron0"])
    assert not cpu_before_torch_xla(env, "/nonexistent") and env == {}


def test_a_chapter_that_imports_torch_xla_indirectly_logs_no_default_device_line() -> None:
    out = run_python(
        """
        import os
        os.environ.pop("PJRT_DEVICE", None)
        import xlaport.notebook
        import torch_xla.runtime
        print("PJRT_DEVICE", os.environ["PJRT_DEVICE"])
        """,
        unset=["PJRT_DEVICE"],
    )
    assert "PJRT_DEVICE CPU" in out.stdout and "Defaulting" not in out.stderr, out.stderr[-500:]
