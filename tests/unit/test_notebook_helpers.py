"""xlaport.notebook: glue shows nothing under a cell, and PyTorch's log lines carry no machine paths."""

from __future__ import annotations

import logging
import re
from typing import Any

import pytest

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
