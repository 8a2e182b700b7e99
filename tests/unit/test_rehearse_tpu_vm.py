"""scripts/rehearse_tpu_vm.py: the guard every rehearsal process runs (network blocked but loopback, libtpu noted)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import script

rehearse = script("rehearse_tpu_vm")

PROBE = """
import socket
srv = socket.socket(); srv.bind(("127.0.0.1", 0)); srv.listen(1)
c = socket.socket(); c.connect(srv.getsockname()); print("LOOPBACK ok")
try:
    socket.socket().connect(("10.255.255.1", 80))
    print("OUTSIDE connected")
except OSError as e:
    print("OUTSIDE refused", e.errno)
print("CONNECT_EX", socket.socket().connect_ex(("192.0.2.1", 443)))
"""


def test_the_guard_blocks_all_but_loopback_and_reports(tmp_path: Path) -> None:
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "sitecustomize.py").write_text(rehearse.GUARD)
    (tmp_path / "log").mkdir()
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "site"), "XLAPORT_REHEARSAL_LOG": str(tmp_path / "log")}
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "LOOPBACK ok" in out.stdout and "OUTSIDE refused 101" in out.stdout and "CONNECT_EX 101" in out.stdout
    (record,) = [json.loads(p.read_text()) for p in (tmp_path / "log").glob("*.json")]
    assert record["n_refused"] == 2 and record["libtpu"] is False


def test_it_refuses_to_run_without_the_switch(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv(rehearse.SWITCH, raising=False)
    assert rehearse.main([]) == 2
    assert "TORCH_DEVICE_BACKEND_AUTOLOAD=0" in capsys.readouterr().err


def test_errors_are_summarised_in_one_line() -> None:
    err = "Traceback...\n  File x\nModuleNotFoundError: No module named 'torch_xla'\n"
    assert rehearse._first_error(err) == "ModuleNotFoundError: No module named 'torch_xla'"


def test_a_chapters_seconds_are_its_cells_not_the_wait_for_the_lock(tmp_path: Path) -> None:
    nb = tmp_path / "ch.ipynb"
    cells = [{"metadata": {"papermill": {"duration": d}}} for d in (1.5, None, 2.0)]
    nb.write_text(json.dumps({"cells": cells}))
    assert rehearse._executed_seconds(rehearse._read_notebook(nb), 99.0) == 3.5
    assert rehearse._read_notebook(tmp_path / "missing.ipynb") == {}
    assert rehearse._executed_seconds(rehearse._read_notebook(tmp_path / "missing.ipynb"), 99.0) == 99.0


def test_the_environment_names_the_tpu_packages() -> None:
    env = rehearse.environment()
    assert set(env) == {"python", "torch", "torch_tpu", "libtpu", "transformers", "numpy"}
    assert env["torch"] != "not installed"


def test_the_no_switch_rehearsal_fails_a_chapter_whose_libtpu_asked_the_metadata_server() -> None:
    # libtpu 0.0.52's own lines, off Google Cloud, when nothing kept it from asking
    asked = (
        "E0000 env_var_utils.cc:96] Failed to convert value for key 'CHIPS_PER_HOST_BOUNDS' in 'tpu-env' to string: "
        "INTERNAL: Failed to fetch URL after 30 tries (http status: 403)\nlearning/45eac/tfrc/runtime/gcp_metadata_utils.cc:137"
    )
    kept = (
        "W0000 tpu_hooks.cc:233] TpuDeviceGuardImpl::deviceCount: PjRt backend unavailable: No jellyfish device found."
    )
    assert rehearse.metadata_queried(asked) and not rehearse.metadata_queried(kept)
    row = {"libtpu_loaded": True, "metadata_queried": False}
    assert rehearse.failed_guard(row, switch=True)  # with the switch libtpu must not even load
    assert not rehearse.failed_guard(row, switch=False)  # autoloaded it loads; it must not ask
    assert rehearse.failed_guard({**row, "metadata_queried": True}, switch=False)


def test_the_no_switch_rehearsal_needs_no_switch(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv(rehearse.SWITCH, raising=False)
    assert rehearse.main(["--no-switch", "-k", "no chapter has this name"]) == 0
    assert "0 of 0 chapters" in capsys.readouterr().out
