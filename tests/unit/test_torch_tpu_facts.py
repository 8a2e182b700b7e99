"""The texts and tables the project quotes from the torch_tpu wheel equal what the wheel holds.

``reference/data/torch_tpu-0.2.0-facts.json`` is written by ``scripts/torch_tpu_facts.py`` from the wheel
(read as a zip, never imported). Here the project's own copies (``profiles.toml``, ``xlaport.detect``, the
emulator's storage-offset guard) are compared with it, and the negative tests show that a change on either
side is caught. Set ``TORCH_TPU_WHEEL=/path/to/torch_tpu-0.2.0-...whl`` to also re-extract the facts from
the wheel and compare them with the committed file.
"""

from __future__ import annotations

import ast
import copy
import json
import os
import re
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import xlaport
from conftest import script
from xlaport import detect
from xlaport.profiles import profile
from xlaport.reference import data_text

ROOT = Path(__file__).resolve().parents[2]
FACTS_FILE = "torch_tpu-0.2.0-facts.json"
GUARDS_PY = Path(xlaport.__file__).parent / "recompile" / "guards.py"
# The wheel names PCI id 0x0076 "TPU v7"; Google sells that chip as TPU7x, and this project calls it v7x.
GENERATION_NAMES = {"TPU v7": "v7x"}

Json = dict[str, Any]


def load_facts() -> Json:
    return json.loads(data_text(FACTS_FILE))


def tpu_rules(profiles_toml: str) -> dict[str, Json]:
    return {r["id"]: r for r in tomllib.loads(profiles_toml)["tpu"]["rules"]}


def generation(wheel_name: str) -> str:
    return GENERATION_NAMES.get(wheel_name, wheel_name.removeprefix("TPU "))


def min_torch(requires: str) -> str:
    """'torch>=2.11.0,<=2.15.0' -> '2.11'."""
    m = re.search(r">=\s*(\d+)\.(\d+)", requires)
    assert m, requires
    return f"{m.group(1)}.{m.group(2)}"


def emulator_guard(source: str) -> Json:
    """What xlaport's storage-offset guard installs, read from recompile/guards.py."""
    fn = next(
        n
        for n in ast.walk(ast.parse(source))
        if isinstance(n, ast.FunctionDef) and n.name == "install_storage_offset_guards"
    )
    attrs = [n for n in ast.walk(fn) if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)]
    ops = [
        k.value.value
        for c in ast.walk(fn)
        if isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute) and c.func.attr == "find_nodes"
        for k in c.keywords
        if k.arg == "op" and isinstance(k.value, ast.Constant)
    ]
    return {
        "guard_builder": sorted({a.attr for a in attrs if a.value.id == "GuardBuilder"}),
        "tensor_property": sorted({a.attr for a in attrs if a.value.id == "TensorProperty"}),
        "guards": ops,
    }


def mismatches(
    facts: Json,
    rules: dict[str, Json],
    pci: dict[int, str],
    vendor: int,
    guard: Json,
    sha_of: dict[str, str],
    requires_torch: str,
) -> list[str]:
    """Every place where the project's copy of a wheel fact differs from the extracted one."""
    out: list[str] = []

    def expect(what: str, ours: object, wheel: object) -> None:
        if ours != wheel:
            out.append(f"{what}: project has {ours!r}, wheel has {wheel!r}")

    for name, sha in sha_of.items():
        expect(f"sha256 of the wheel behind {name}", sha, facts["sha256"])
    f = facts["facts"]

    d = f["compile_dynamic_true"]
    reject = rules.get("compile-dynamic-true", {})
    expect("compile-dynamic-true error", reject.get("error"), d["raises"])
    expect("compile-dynamic-true message", reject.get("message"), d["message"])

    c = f["compile_defaults"]
    expect("compile-backend value", rules.get("compile-backend", {}).get("value"), c["backend"]["name"])
    expect("compile-static value", rules.get("compile-static", {}).get("value"), c["injected"]["kwargs"]["dynamic"])

    g = f["storage_offset_guard"]
    rule = rules.get("storage-offset-guard", {})
    expect("storage-offset-guard key", rule.get("key"), g["tensor_property"].lower())
    expect("storage-offset-guard summary names the guard", g["guard_builder"] in rule.get("summary", ""), True)
    for part in (g["function"], g["file"].removeprefix("torch_tpu/")):
        expect(f"storage-offset-guard source names {part}", part in rule.get("source", ""), True)
    expect("emulator guard builder", guard["guard_builder"], [g["guard_builder"]])
    expect("emulator guard property", guard["tensor_property"], [g["tensor_property"]])
    expect("emulator guards", guard["guards"], [g["guards"]])

    p = f["tpu_pci_ids"]
    expect("Google PCI vendor id", vendor, int(p["vendor_id"], 16))
    expect(
        "TPU PCI device ids",
        {f"0x{k:04x}": v for k, v in sorted(pci.items())},
        {f"0x{int(k, 16):04x}": generation(v) for k, v in p["device_ids"].items()},
    )

    lg = f["legacy_device_apis"]
    rule = rules.get("legacy-device-apis", {})
    expect("legacy-device-apis error", rule.get("error"), lg["raises"])
    expect("legacy-device-apis message", rule.get("message"), lg["message_template"])
    expect("legacy-device-apis opt-out", rule.get("opt_out_env"), lg["opt_out_env"])
    floor = min_torch(requires_torch)
    apis = lg["apis"]
    expect(
        f"legacy-device-apis names (internal from torch {floor})",
        sorted(rule.get("names", [])),
        sorted(n for n, a in apis.items() if a["internal_from_torch"] == floor),
    )
    expect(
        "legacy-device-apis names_from_torch_2_13",
        sorted(rule.get("names_from_torch_2_13", [])),
        sorted(n for n, a in apis.items() if a["internal_from_torch"] == "2.13"),
    )
    expect("legacy-device-apis prefer", rule.get("prefer"), {n: a["prefer"] for n, a in apis.items()})

    m = f["missing_op"]
    rule = rules.get("missing-op", {})
    expect("missing-op message", rule.get("message"), m["prefix"] + "{op}" + m["error_suffix"])
    expect("missing-op warning", rule.get("warning"), m["prefix"] + "{op}" + m["warning_suffix"])

    sdpa = rules.get("sdpa-paths", {})
    expect("sdpa-paths flash_dtypes", sdpa.get("flash_dtypes"), f["sdpa_flash"]["flash_dtypes"])
    head = re.search(r"less than (\d+) or divisible by (\d+)$", f["sdpa_flash"]["head_dim_condition"])
    expect("sdpa head-dim condition has the shape this test reads", bool(head), True)
    if head:
        below, multiple = int(head.group(1)), int(head.group(2))
        expect("sdpa-paths flash_head_dim_below", sdpa.get("flash_head_dim_below"), below)
        expect("sdpa-paths flash_head_dim_multiple_of", sdpa.get("flash_head_dim_multiple_of"), multiple)
        expect(
            "sdpa-paths summary states the head-dim condition",
            f"head dim < {below} or a multiple of {multiple}" in sdpa.get("summary", ""),
            True,
        )

    expect(
        "precision-graph-break message",
        rules.get("precision-graph-break", {}).get("message"),
        f["precision_graph_break"]["message"],
    )
    return out


def project_side() -> Json:
    """The project's copies, as the tests compare them (each argument of :func:`mismatches` but facts)."""
    surface = json.loads(data_text("torch_tpu-0.2.0-api-surface.json"))
    return {
        "rules": tpu_rules(data_text("profiles.toml")),
        "pci": dict(detect.TPU_PCI_DEVICES),
        "vendor": detect.GOOGLE_PCI_VENDOR,
        "guard": emulator_guard(GUARDS_PY.read_text()),
        "sha_of": {
            name: json.loads(data_text(name))["sha256"]
            for name in ("torch_tpu-0.2.0-ops.json", "torch_tpu-0.2.0-api-surface.json")
        },
        "requires_torch": surface["requires_torch"],
    }


def test_facts_name_their_wheel_and_files() -> None:
    facts = load_facts()
    ops = json.loads(data_text("torch_tpu-0.2.0-ops.json"))
    assert (facts["wheel"], facts["sha256"]) == (ops["wheel"], ops["sha256"])
    assert re.fullmatch(r"[0-9a-f]{64}", facts["sha256"])
    assert (ROOT / facts["generated_by"]).is_file()

    def files(node: object) -> list[str]:
        if isinstance(node, dict):
            own = [node["file"]] if "file" in node else list(node.get("files", []))
            return own + [f for k, v in node.items() if k not in ("file", "files") for f in files(v)]
        return []

    for name, fact in facts["facts"].items():
        found = files(fact)
        assert found and all(f.startswith("torch_tpu/") for f in found), (name, found)


def test_project_data_equals_the_wheel() -> None:
    assert mismatches(load_facts(), **project_side()) == []


def test_rules_checked_here_exist_in_the_loaded_profile() -> None:
    """The comparison reads profiles.toml directly; the toolkit's loader must see the same rules."""
    p = profile("tpu")
    for rule_id in (
        "compile-dynamic-true",
        "legacy-device-apis",
        "storage-offset-guard",
        "missing-op",
        "sdpa-paths",
        "precision-graph-break",
    ):
        assert p.rule(rule_id).source  # KeyError if a rule was deleted: no silent skip
    legacy = p.rule("legacy-device-apis")
    facts = load_facts()["facts"]["legacy_device_apis"]
    for name in legacy.extra["names"]:
        expected = facts["message_template"].format(
            name=facts["apis"][name]["object"], prefer=facts["apis"][name]["prefer"]
        )
        assert (
            legacy.message.format(name=facts["apis"][name]["object"], prefer=legacy.extra["prefer"][name]) == expected
        )


def test_v4_is_in_the_wheel_table_but_not_announced() -> None:
    ids = load_facts()["facts"]["tpu_pci_ids"]["device_ids"]
    assert ids["0x005e"] == "TPU v4"
    assert "v4" in detect.TPU_PCI_DEVICES.values() and "v4" not in detect.TORCHTPU_ANNOUNCED


def _set(path: tuple[str, ...], value: object) -> Callable[[Json], None]:
    def mutate(d: Json) -> None:
        for k in path[:-1]:
            d = d[k]
        d[path[-1]] = value

    return mutate


# Drift on the wheel side: the facts JSON as a newer wheel would write it.
WHEEL_DRIFT = {
    "refusal text": _set(("facts", "compile_dynamic_true", "message"), "dynamic=True is not supported."),
    "refusal type": _set(("facts", "compile_dynamic_true", "raises"), "ValueError"),
    "backend name": _set(("facts", "compile_defaults", "backend", "name"), "tpu2"),
    "injected dynamic": _set(("facts", "compile_defaults", "injected", "kwargs", "dynamic"), None),
    "guard builder": _set(("facts", "storage_offset_guard", "guard_builder"), "TENSOR_MATCH"),
    "guard property": _set(("facts", "storage_offset_guard", "tensor_property"), "STRIDE"),
    "new PCI id": _set(("facts", "tpu_pci_ids", "device_ids", "0x0083"), "TPU v8"),
    "vendor id": _set(("facts", "tpu_pci_ids", "vendor_id"), "0x1ae1"),
    "legacy message": _set(("facts", "legacy_device_apis", "message_template"), "{name} is internal. Use {prefer}."),
    "opt-out env": _set(("facts", "legacy_device_apis", "opt_out_env"), "TORCH_TPU_LEGACY"),
    "prefer": _set(("facts", "legacy_device_apis", "apis", "set_device", "prefer"), "torch.accelerator.set_device"),
    "newly internal": _set(
        ("facts", "legacy_device_apis", "apis", "manual_seed"), {"prefer": "x", "internal_from_torch": "2.11"}
    ),
    "missing-op suffix": _set(("facts", "missing_op", "error_suffix"), "' is not implemented for TPU."),
    "flash dtypes": _set(("facts", "sdpa_flash", "flash_dtypes"), ["bfloat16"]),
    "flash head dim": _set(
        ("facts", "sdpa_flash", "head_dim_condition"), "- Head dimension (dim - 1) is less than 256 or divisible by 128"
    ),
    "precision traceable": _set(("facts", "precision_graph_break", "message"), "`precision` is traceable."),
    "another wheel": _set(("sha256",), "0" * 64),
}

# Drift on the project side: (textual edit of profiles.toml, or a change to another copy).
PROJECT_DRIFT: dict[str, Callable[[Json], None]] = {
    "refusal text": lambda s: s["rules"]["compile-dynamic-true"].update(message="dynamic=True refused"),
    "refusal rule deleted": lambda s: s["rules"].pop("compile-dynamic-true"),
    "legacy message backticks": lambda s: s["rules"]["legacy-device-apis"].update(
        message="`{name}` is internal to TorchTPU and can only be called by the PyTorch framework (torch and "
        "torch_tpu). Use torch.accelerator.{name} instead."
    ),
    "legacy name dropped": lambda s: s["rules"]["legacy-device-apis"]["names"].remove("current_stream"),
    "guard key": lambda s: s["rules"]["storage-offset-guard"].update(key="stride"),
    "emulator guard": lambda s: s.update(
        guard=emulator_guard(GUARDS_PY.read_text().replace("EQUALS_MATCH", "ID_MATCH"))
    ),
    "v4 dropped from detect": lambda s: s["pci"].pop(0x005E),
    "v7x renamed": lambda s: s["pci"].update({0x0076: "v7"}),
    "ops data from another wheel": lambda s: s["sha_of"].update({"torch_tpu-0.2.0-ops.json": "1" * 64}),
    "missing-op warning": lambda s: s["rules"]["missing-op"].update(warning="operator '{op}' falls back to CPU"),
    "head dim as the capstone once had it": lambda s: s["rules"]["sdpa-paths"].update(
        summary="head dim < 128", flash_head_dim_multiple_of=None
    ),
    "precision rule deleted": lambda s: s["rules"].pop("precision-graph-break"),
}


@pytest.mark.parametrize("change", WHEEL_DRIFT, ids=list(WHEEL_DRIFT))
def test_a_changed_wheel_is_caught(change: str) -> None:
    facts = copy.deepcopy(load_facts())
    WHEEL_DRIFT[change](facts)
    assert mismatches(facts, **project_side()), f"{change}: drift on the wheel side went unnoticed"


@pytest.mark.parametrize("change", PROJECT_DRIFT, ids=list(PROJECT_DRIFT))
def test_a_changed_project_copy_is_caught(change: str) -> None:
    side = copy.deepcopy(project_side())
    PROJECT_DRIFT[change](side)
    assert mismatches(load_facts(), **side), f"{change}: drift on the project side went unnoticed"


def test_a_modified_copy_of_profiles_toml_is_caught(tmp_path: Path) -> None:
    """The same check on a file: a copy of profiles.toml with the refusal text edited fails it."""
    text = data_text("profiles.toml")
    edited = text.replace(
        "Please run torch.compile() with dynamic=None", "Please run torch.compile() with dynamic=False"
    )
    assert edited != text
    (tmp_path / "profiles.toml").write_text(edited)
    side = project_side() | {"rules": tpu_rules((tmp_path / "profiles.toml").read_text())}
    assert any("compile-dynamic-true message" in m for m in mismatches(load_facts(), **side))


@pytest.mark.skipif(not os.environ.get("TORCH_TPU_WHEEL"), reason="set TORCH_TPU_WHEEL to re-extract from the wheel")
def test_committed_facts_equal_a_fresh_extraction() -> None:
    wheel = Path(os.environ["TORCH_TPU_WHEEL"])
    fresh, committed = script("torch_tpu_facts").build(wheel), load_facts()
    assert fresh.pop("checked") and committed.pop("checked")  # the day of each read; everything else must agree
    assert fresh == committed


def test_the_facts_carry_the_day_the_wheel_was_read() -> None:
    checked = load_facts().get("checked")
    assert isinstance(checked, str) and re.fullmatch(r"\d{4}-\d{2}-\d{2}", checked), checked


def test_the_book_quotes_the_wheel_where_it_quotes_it() -> None:
    """Prose that quotes a wheel fact quotes it as the wheel has it (beyond_forward's precision line)."""
    facts = load_facts()["facts"]
    cells = json.loads((ROOT / "notebooks" / "beyond_forward.ipynb").read_text())["cells"]
    text = " ".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    quoted = re.findall(r'"(is not yet traceable)"', text)
    assert quoted, "beyond_forward no longer quotes torch.tpu.precision's graph break"
    assert all(q in facts["precision_graph_break"]["message"] for q in quoted)
