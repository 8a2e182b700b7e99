"""``pip install xlaport`` without torch: the scanner, the static doctor and --help work; torch commands say what to install.

Builds the project's wheel with this venv's pip (no network, no build isolation), installs it with
``--no-deps`` into a fresh venv that has no torch (the project declares no dependencies: the scanner and
the static doctor need only the standard library), and runs the console script there.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.subprocess


@pytest.fixture(scope="module")
def bare_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("bare")
    wheels, venv = tmp / "wheels", tmp / "venv"
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--quiet"]
    # build from a copy, so setuptools' build/ folder never lands in the working tree
    src = tmp / "project"
    shutil.copytree(ROOT / "src", src / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    subprocess.run([*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", str(wheels), str(src)], check=True)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    whl = next(wheels.glob("xlaport-*.whl"))
    subprocess.run([*pip, "--python", str(venv / "bin" / "python"), "install", "--no-deps", str(whl)], check=True)
    return venv


def _run(venv: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(venv / "bin" / "xlaport"), *args], capture_output=True, text=True, cwd=cwd, timeout=120)


def test_no_torch_and_no_dependencies(bare_venv: Path) -> None:
    r = subprocess.run([str(bare_venv / "bin" / "python"), "-c", "import torch"], capture_output=True, text=True)
    assert r.returncode != 0 and "No module named 'torch'" in r.stderr


def test_help_scan_and_static_doctor_work_without_torch(bare_venv: Path, tmp_path: Path) -> None:
    assert _run(bare_venv, "--help").returncode == 0
    (tmp_path / "train.py").write_text("import torch\nx = torch.zeros(1).cuda()\n")
    r = _run(bare_venv, "scan", str(tmp_path))
    assert r.returncode == 1 and "cuda-device" in r.stdout, r.stderr
    r = _run(bare_venv, "doctor", str(tmp_path))
    assert r.returncode == 0 and "person-week" in r.stdout, r.stderr


@pytest.mark.parametrize("argv", [["target", "tpu"], ["doctor", ".", "--entry", "m.py:f"]])
def test_torch_commands_say_which_extra_in_one_line(bare_venv: Path, tmp_path: Path, argv: list[str]) -> None:
    r = _run(bare_venv, *argv, cwd=tmp_path)
    err = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(err) == 1, r.stderr
    assert 'pip install "xlaport[emulator]"' in err[0] and "torch" in err[0]
