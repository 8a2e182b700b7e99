"""xlaport.notebook: glue shows nothing under a cell, and PyTorch's log lines carry no machine paths."""

from __future__ import annotations

import logging

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
