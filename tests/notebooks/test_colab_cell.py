"""The Colab setup cells: generated from one place, current in every chapter, and right on each kind of runtime."""

from __future__ import annotations

import builtins
import glob
import importlib.util
import io
import json
import os
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import pytest
import yaml

from conftest import script
from xlaport import detect, pages
from xlaport.scan import output

ROOT = Path(__file__).resolve().parents[2]
colab_cell = script("colab_cell")

URL = colab_cell.repository_url()
CHAPTERS = sorted((ROOT / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_every_chapter_opens_with_the_generated_cells(path: Path) -> None:
    nb = json.loads(path.read_text())
    want = colab_cell.cells()
    got = nb["cells"][1:3]
    assert [c["source"] for c in got] == [c["source"] for c in want], (
        f"{path.name}: Colab setup cells are stale (run: python scripts/colab_cell.py)"
    )
    assert [c["metadata"] for c in got] == [c["metadata"] for c in want]
    tagged = [i for i, c in enumerate(nb["cells"]) if colab_cell.TAG in c["metadata"].get("tags", [])]
    assert tagged == [1, 2], f"{path.name}: setup cells at {tagged}, expected right after the title"


def test_check_mode_catches_a_stale_cell(tmp_path: Path) -> None:
    nb = json.loads(CHAPTERS[0].read_text())
    nb["cells"][2]["source"] = [s.replace(URL, "https://github.com/someone/else") for s in nb["cells"][2]["source"]]
    stale = tmp_path / "stale.ipynb"
    stale.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")
    assert colab_cell.main(["--check", str(stale)]) == 1
    assert colab_cell.main([str(stale)]) == 0  # rewrites it
    assert colab_cell.main(["--check", str(stale)]) == 0


def test_the_url_is_written_in_one_place() -> None:
    """Only pyproject.toml holds the URL by hand; the other copies are checked against it here."""
    assert yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]["url"] == URL
    assert output._INFO_URI == URL
    by_hand = []
    for p in [*ROOT.glob("*.*"), *(ROOT / "src").rglob("*.py"), *(ROOT / "book").rglob("*.md")]:
        if p.is_file() and p.name not in {"pyproject.toml", "_config.yml"} and URL in p.read_text(errors="ignore"):
            by_hand.append(str(p.relative_to(ROOT)))
    assert pages.REPOSITORY == URL
    # Checked copies: the toolkit's (xlaport.pages: the pages a report links to, the reader editions' Colab links,
    # the SARIF tool URI), and the pre-commit and workflow snippets a team pastes from the toolkit page (code blocks,
    # where no substitution reaches). A new URL in pyproject.toml fails here until they follow it.
    expected = ["book/toolkit.md", "src/xlaport/pages.py"]
    assert sorted(by_hand) == expected, f"repository URL typed by hand in {by_hand} (expected copies: {expected})"


def test_pins_and_vendor_match_their_sources() -> None:
    pins = dict(p.split("==") for p in colab_cell.emulator_pins())
    reqs = (ROOT / "requirements.txt").read_text()
    for name, version in pins.items():
        assert f"{name}=={version}\n" in reqs
    import torch

    assert torch.__version__.split("+")[0] == pins["torch"], "the Colab emulator pins a torch other than this one"
    assert int(colab_cell.GOOGLE_PCI_VENDOR, 16) == detect.GOOGLE_PCI_VENDOR
    assert f'== "{colab_cell.GOOGLE_PCI_VENDOR}"' in "".join(colab_cell.cells()[1]["source"])
    assert colab_cell.GOOGLE_PCI_VENDOR == "0x1ae0"  # as sysfs writes a vendor id: lower case, four digits


def _run_cell(
    monkeypatch: pytest.MonkeyPatch, *, colab: bool, installed: bool, vendors: dict[str, str]
) -> list[list[str]]:
    """Execute the generated code cell with Colab, the installed toolkit and the PCI devices faked."""
    calls: list[list[str]] = []
    killed: list[int] = []
    if colab:
        monkeypatch.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))
    else:
        monkeypatch.delitem(sys.modules, "google.colab", raising=False)
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: object() if installed else None)
    monkeypatch.setattr(glob, "glob", lambda pattern: list(vendors))
    real_open = builtins.open
    monkeypatch.setattr(builtins, "open", lambda p, *a, **k: io.StringIO(vendors[p]) if p in vendors else real_open(p))
    monkeypatch.setattr(subprocess, "run", lambda argv, check: calls.append(argv))
    monkeypatch.setattr(os, "kill", lambda pid, sig: killed.append(sig))
    code = "".join(colab_cell.cells()[1]["source"])
    exec(compile(code, "colab-setup", "exec"), {"__name__": "__main__"})
    assert len(killed) == (1 if calls else 0), "the runtime restarts exactly when something was installed"
    return calls


def test_cell_does_nothing_outside_colab_or_when_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _run_cell(monkeypatch, colab=False, installed=False, vendors={}) == []
    assert _run_cell(monkeypatch, colab=True, installed=True, vendors={}) == []


def test_cpu_runtime_installs_the_pinned_emulator(monkeypatch: pytest.MonkeyPatch) -> None:
    vendors = {"/sys/bus/pci/devices/0000:00:04.0/vendor": "0x8086\n"}
    clone, argv = _run_cell(monkeypatch, colab=True, installed=False, vendors=vendors)
    assert clone == ["git", "clone", "-q", "--depth", "1", URL, "/content/xlaport"]
    assert argv[-2:] == ["-e", "/content/xlaport"], "the toolkit from the clone, whose examples/ chapters read"
    assert argv[argv.index("-q") + 1 : -2] == colab_cell.emulator_pins()


def test_tpu_runtime_installs_requirements_tpu(monkeypatch: pytest.MonkeyPatch) -> None:
    vendors: dict[str, Any] = {
        "/sys/bus/pci/devices/0000:00:04.0/vendor": "0x8086\n",
        "/sys/bus/pci/devices/0000:00:05.0/vendor": "0x1ae0\n",
    }
    _, argv = _run_cell(monkeypatch, colab=True, installed=False, vendors=vendors)
    assert argv[argv.index("-r") + 1] == "/content/xlaport/requirements-tpu.txt"
    assert not any("torch_xla" in a for a in argv), "a TPU runtime must not get torch_xla (it pins another torch)"
    assert (ROOT / "requirements-tpu.txt").is_file()
