"""scripts/lowest_priority.sh: what make test runs beside the chapters gets only the CPU they leave idle."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from conftest import ROOT

SCRIPT = ROOT / "scripts" / "lowest_priority.sh"


def _run(command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(SCRIPT), "bash", "-c", command], capture_output=True, text=True, timeout=30)


def test_the_command_runs_at_nice_19_in_a_session_and_cpu_group_of_its_own() -> None:
    out = _run("echo nice $(ps -o ni= -p $$) sid $(ps -o sid= -p $$); cat /proc/self/autogroup 2>/dev/null || true")
    assert out.returncode == 0, out.stderr
    words = out.stdout.split()
    assert words[:2] == ["nice", "19"], out.stdout
    assert int(words[3]) != os.getsid(0), "the command ran in the caller's session"
    if Path("/proc/self/autogroup").exists():  # Linux with autogroup: the session's group is niced too
        assert out.stdout.rstrip().endswith("nice 19"), out.stdout


def test_nested_it_still_starts_a_session_of_its_own() -> None:
    """make test's unit tests themselves run under the script; a call inside them gets its own session again."""
    out = subprocess.run(
        [str(SCRIPT), str(SCRIPT), "bash", "-c", "echo $(ps -o sid= -p $PPID) $(ps -o sid= -p $$)"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    outer, inner = out.stdout.split()
    assert outer != inner, out.stdout


def test_the_exit_status_and_output_are_the_commands() -> None:
    out = _run("echo out; echo err >&2; exit 3")
    assert (out.returncode, out.stdout, out.stderr) == (3, "out\n", "err\n")
