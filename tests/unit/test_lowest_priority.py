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


def test_restore_puts_the_session_back_to_normal_priority(tmp_path: Path) -> None:
    """make test restores the unit tests' session once the chapters are done: beside busy loops at nice 0 the tests
    at nice 19 got about 1% of a core each. Raising a priority needs root; elsewhere --restore is a no-op."""
    pidfile = tmp_path / "units.sid"
    proc = subprocess.Popen(
        [str(SCRIPT), "--pidfile", str(pidfile), "bash", "-c", "sleep 20 & wait"], stdout=subprocess.PIPE, text=True
    )
    try:
        for _ in range(100):
            if pidfile.exists() and pidfile.read_text().strip():
                break
            subprocess.run(["sleep", "0.1"], check=True)
        sid = pidfile.read_text().strip()

        def nices() -> set[str]:
            ps = subprocess.run(["ps", "-eo", "sid=,ni="], capture_output=True, text=True, check=True).stdout
            return {n for s, n in (line.split() for line in ps.splitlines()) if s == sid}

        assert nices() == {"19"}
        out = subprocess.run([str(SCRIPT), "--restore", str(pidfile)], capture_output=True, text=True, timeout=30)
        assert out.returncode == 0 and not out.stderr
        if os.geteuid() == 0:
            assert nices() == {"0"}
    finally:
        proc.kill()
        subprocess.run(["pkill", "-s", sid], check=False) if "sid" in locals() else None
    assert subprocess.run([str(SCRIPT), "--restore", str(tmp_path / "missing")], timeout=30).returncode == 0
