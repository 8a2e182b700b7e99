"""The xlaport command line: help, the target subcommand, and one-line errors with exit status 2."""

from __future__ import annotations

import subprocess
import sys

import pytest

from xlaport.cli import main


def test_no_command_prints_help_and_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert "usage: xlaport" in capsys.readouterr().out


def test_help_lists_subcommands(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        main(["--help"])
    assert e.value.code == 0
    assert "target" in capsys.readouterr().out


def test_target_cpu_rules(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["target", "cpu"]) == 0
    assert "target=cpu" in capsys.readouterr().out


def test_bad_target_name_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        main(["target", "gpu"])
    assert e.value.code == 2
    assert "invalid choice" in capsys.readouterr().err


def test_console_script_installed() -> None:
    out = subprocess.run([sys.executable, "-m", "xlaport.cli", "target", "cpu", "--rules"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "target=cpu" in out.stdout
