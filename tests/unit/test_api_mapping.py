"""The API mapping: every TorchTPU row agrees with the torch_tpu 0.2.0 wheel's recorded surface,
every torch.accelerator spelling exists in the installed torch, the page renders, the CLI answers.

The surface file is written by scripts/torch_tpu_api_surface.py from the wheel; nothing here downloads.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

from xlaport import api_mapping
from xlaport.cli import main
from xlaport.reference import api_mapping as mapping_page

ROOT = Path(__file__).resolve().parents[2]
ROWS = api_mapping.rows()


def _ver(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", v)[:2])


def _call_name(spelling: str) -> str:
    """'with torch.accelerator.device_index(i):' -> 'torch.accelerator.device_index'."""
    m = re.search(r"(torch(?:\.[A-Za-z_][A-Za-z0-9_]*)+)", spelling)
    assert m, f"no torch.* name in {spelling!r}"
    return m.group(1)


def test_surface_file_describes_the_wheel() -> None:
    s = api_mapping.surface()
    assert s["package"] == "torch_tpu" and s["version"] == "0.2.0"
    assert re.fullmatch(r"[0-9a-f]{64}", s["sha256"]), "sha256 missing or malformed"
    assert s["wheel"].startswith("torch_tpu-0.2.0-") and s["wheel"].endswith(".whl")
    assert (ROOT / s["generated_by"]).is_file(), "the script that writes the surface file is missing"
    assert "synchronize" in s["modules"]["torch.tpu"]["exports"]
    assert s["device_module_stages"], "no lifecycle stages recorded"


@pytest.mark.parametrize("row", ROWS, ids=[r.cuda for r in ROWS])
def test_tpu_row_matches_wheel_surface(row: api_mapping.Row) -> None:
    derived = api_mapping.tpu_status_from_surface(row.tpu.spelling, message=row.tpu_message)
    if derived is None:
        # Spellings outside torch.tpu (torch.autocast('tpu', ...)) rest on the AMP hook the wheel exports.
        assert row.tpu.spelling.startswith("torch.autocast("), f"cannot check {row.tpu.spelling!r} against the wheel"
        assert "get_amp_supported_dtype" in api_mapping.surface()["modules"]["torch.tpu"]["exports"]
        return
    assert derived == row.tpu.status, f"{row.cuda}: table says {row.tpu.status}, the wheel's surface says {derived}"
    assert "wheel" in row.tpu.source, f"{row.cuda}: TorchTPU source does not name the wheel"


@pytest.mark.parametrize("row", [r for r in ROWS if r.tpu.status == "raises"], ids=lambda r: r.cuda)
def test_raising_tpu_calls_point_to_the_accelerator_column(row: api_mapping.Row) -> None:
    name = _call_name(row.tpu.spelling).removeprefix("torch.tpu.")
    prefer = api_mapping.surface()["device_module_stages"][name]["prefer"]
    assert prefer == _call_name(row.accelerator), f"{row.cuda}: wheel prefers {prefer}, table says {row.accelerator}"


@pytest.mark.parametrize("row", [r for r in ROWS if r.accelerator], ids=lambda r: r.cuda)
def test_accelerator_spelling_exists_in_installed_torch(row: api_mapping.Row) -> None:
    if row.accelerator_since and _ver(torch.__version__) < _ver(row.accelerator_since):
        pytest.skip(f"{row.accelerator} needs torch >= {row.accelerator_since}")
    obj = torch
    for part in _call_name(row.accelerator).split(".")[1:]:
        assert hasattr(obj, part), f"{row.accelerator}: torch {torch.__version__} has no {part!r}"
        obj = getattr(obj, part)
    assert callable(obj)


def test_every_cell_has_a_known_status_and_a_source() -> None:
    assert len(ROWS) >= 20
    for r in ROWS:
        for c in (r.tpu, r.neuron):
            assert c.status in api_mapping.STATUSES and c.source.strip()
        assert r.cuda.startswith(("torch.cuda", "with torch.cuda", "torch.backends.cuda"))
    assert {r.tpu.status for r in ROWS} >= {"works", "raises", "placeholder", "absent", "warns"}


def _fake_surface() -> dict:
    return {
        "requires_torch": "torch>=2.11.0,<=2.15.0",
        "modules": {"torch.tpu": {"exports": ["synchronize", "initial_seed", "Stream", "manual_seed"]}},
        "device_module_stages": {
            "synchronize": {
                "stage": "internal_or_experimental",
                "internal_from_torch": "2.11",
                "prefer": "torch.accelerator.synchronize",
            },
            "initial_seed": {"stage": "internal_or_experimental", "internal_from_torch": "2.13", "prefer": "x"},
            "Stream": {"stage": "experimental"},
            "manual_seed": {"stage": "experimental"},
        },
        "streams": {"TpuStream": {"raises_not_implemented": ["query"], "no_op": [], "non_functional": []}},
        "not_implemented_messages": ["foo is not implemented for TPU."],
    }


def test_status_derivation_rules() -> None:
    s = _fake_surface()
    assert api_mapping.reference_torch(s) == "2.15"
    assert api_mapping.tpu_status_from_surface("torch.tpu.synchronize()", s) == "raises"
    assert api_mapping.tpu_status_from_surface("torch.tpu.initial_seed()", s, torch_version="2.12") == "works"
    assert api_mapping.tpu_status_from_surface("torch.tpu.initial_seed()", s, torch_version="2.13") == "raises"
    assert api_mapping.tpu_status_from_surface("torch.tpu.Stream()", s) == "placeholder"
    assert api_mapping.tpu_status_from_surface("torch.tpu.manual_seed(0)", s) == "works"
    assert api_mapping.tpu_status_from_surface("torch.tpu.max_memory_allocated()", s) == "absent"
    assert api_mapping.tpu_status_from_surface("torch.autocast('tpu')", s) is None
    assert api_mapping.tpu_status_from_surface("x", s, message="foo is not implemented for TPU.") == "warns"
    assert api_mapping.tpu_status_from_surface("x", s, message="bar") is None


def test_bad_table_is_a_one_line_value_error(monkeypatch: pytest.MonkeyPatch) -> None:
    bad = (
        '[[row]]\ngroup="g"\ncuda="torch.cuda.x()"\naccelerator=""\ntpu="t"\ntpu_status="maybe"\ntpu_source="s"\n'
        'neuron=""\nneuron_status="works"\nneuron_source="s"\n'
    )
    real = api_mapping._data  # the table is loaded by xlaport.api_mapping
    monkeypatch.setattr(api_mapping, "_data", lambda name: bad if name == "api_mapping.toml" else real(name))
    api_mapping._load.cache_clear()
    try:
        with pytest.raises(ValueError, match="unknown tpu_status 'maybe'") as e:
            api_mapping.rows()
        assert "\n" not in str(e.value)
    finally:
        monkeypatch.undo()
        api_mapping._load.cache_clear()
    assert api_mapping.rows() == ROWS


def test_markdown_page() -> None:
    page = mapping_page.render()
    assert page.startswith("# API mapping")
    assert api_mapping.surface()["sha256"] in page
    for r in ROWS:
        assert r.cuda.replace("|", "\\|") in page
    groups = {r.group for r in ROWS}
    assert page.count("| CUDA | `torch.accelerator` |") == len(groups)
    assert "None" not in page
    assert all(line.count("|") - line.count("\\|") == 6 for line in page.splitlines() if line.startswith("| `"))


def test_lookup() -> None:
    assert [r.tpu.status for r in api_mapping.lookup("synchronize")] == ["raises"]
    with pytest.raises(ValueError):
        api_mapping.lookup("  ")


def test_cli(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["api-map", "device_count"]) == 0
    out = capsys.readouterr().out
    assert "torch.accelerator.device_count()" in out and "[raises]" in out
    assert main(["api-map", "--status", "placeholder"]) == 0
    assert "torch.tpu.Stream()" in capsys.readouterr().out
    assert main(["api-map", "no_such_call_xyz"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("xlaport api-map: error:") and err.count("\n") == 1
    with pytest.raises(SystemExit) as e:
        main(["api-map", "--help"])
    assert e.value.code == 0
