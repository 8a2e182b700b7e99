#!/usr/bin/env python
"""Record the public ``torch.tpu`` API surface of the torch_tpu wheel into a committed data file.

Maintainer script (downloads; tests never call it). Steps:

1. ``pip download --no-deps torch_tpu==<version>`` from PyPI into a temporary directory
   (or use ``--wheel PATH`` for a wheel you already have);
2. read, **without importing torch_tpu** (importing it on a machine without a TPU can start
   libtpu, which asks a cloud metadata server for its topology), the wheel's Python source
   with :mod:`ast`:

   - ``torch_tpu/_internal/public_api.py``: the ``_PUBLIC_MODULES`` table, i.e. every public
     module under ``torch.tpu`` and the names it exports;
   - ``torch_tpu/_internal/device/_device_module.py``: the lifecycle decorator on each
     ``torch.tpu`` device-module attribute (``internal_or_experimental`` with the torch version
     from which it becomes internal and the ``torch.accelerator`` call it prefers,
     ``experimental``, ``deprecated``), and the single-underscore methods served through the
     module's private fallback;
   - ``torch_tpu/_internal/stream/streams.py``: which stream/event methods raise
     ``NotImplementedError`` and which are documented no-ops or non-functional;

3. collect the "... is not implemented for TPU" messages from the wheel's torch-2.13 glue
   library (printable strings, like ``strings``);
4. write ``src/xlaport/reference/data/torch_tpu-<version>-api-surface.json`` with the wheel's file
   name, version and sha256.

Usage: ``python scripts/torch_tpu_api_surface.py [--version 0.2.0] [--wheel PATH] [--out FILE]``
"""

from __future__ import annotations

import argparse
import ast
import datetime
import json
import re
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

from xlaport.wheels import download, sha256

ROOT = Path(__file__).resolve().parents[1]
PUBLIC_API = "torch_tpu/_internal/public_api.py"
DEVICE_MODULE = "torch_tpu/_internal/device/_device_module.py"
STREAMS = "torch_tpu/_internal/stream/streams.py"
GLUE_SO = "torch_tpu/csrc/common/glue_2_13_0/libpywrap_2_13_0_common.so"
DEVICE_CLASSES = ("_DeviceModuleMeta", "_DeviceModule", "TpuDeviceModule")


def _const(node: ast.AST) -> Any:
    try:
        return ast.literal_eval(node)
    except ValueError:
        return None


def public_modules(src: str) -> dict[str, dict[str, Any]]:
    """``_PUBLIC_MODULES`` from public_api.py: module name -> exports and private fallback."""
    tree = ast.parse(src)
    table = None
    for node in ast.walk(tree):
        target = (
            node.target
            if isinstance(node, ast.AnnAssign)
            else (node.targets[0] if isinstance(node, ast.Assign) else None)
        )
        if isinstance(target, ast.Name) and target.id == "_PUBLIC_MODULES":
            table = node.value
    if not isinstance(table, ast.Dict):
        raise SystemExit(f"{PUBLIC_API}: no _PUBLIC_MODULES dict literal found (the wheel's layout changed)")
    out: dict[str, dict[str, Any]] = {}
    for key, spec in zip(table.keys, table.values):
        name = _const(key)
        if not isinstance(name, str) or not isinstance(spec, ast.Call):
            continue
        kw = {k.arg: k.value for k in spec.keywords}
        exports = kw.get("exports")
        names = sorted(_const(k) for k in exports.keys) if isinstance(exports, ast.Dict) else []
        properties = []
        if isinstance(exports, ast.Dict):
            for k, v in zip(exports.keys, exports.values):
                if isinstance(v, ast.Call) and getattr(v.func, "id", None) == "Property":
                    properties.append(_const(k))
        out[name] = {
            "exports": names,
            "properties": sorted(properties),
            "private_fallback": "private_fallback" in kw,
        }
    return out


def _decorator_stage(dec: ast.expr) -> dict[str, Any] | None:
    call = dec if isinstance(dec, ast.Call) else None
    func = call.func if call else dec
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    if name == "internal_or_experimental" and call is not None:
        info: dict[str, Any] = {"stage": "internal_or_experimental"}
        for k in call.keywords:
            if k.arg == "prefer":
                info["prefer"] = _const(k.value)
            elif k.arg == "internal_when" and isinstance(k.value, ast.Compare):
                ver = _const(k.value.comparators[0])
                info["internal_from_torch"] = ".".join(map(str, ver)) if isinstance(ver, tuple) else None
        return info
    if name in ("experimental", "deprecated"):
        return {"stage": name}
    return None


def device_module(src: str) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """Lifecycle stage of every public attribute of the TPU device module, and its private methods."""
    tree = ast.parse(src)
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    stages: dict[str, dict[str, Any]] = {}
    private: set[str] = set()
    for cname in DEVICE_CLASSES:
        cls = classes.get(cname)
        if cls is None:
            raise SystemExit(f"{DEVICE_MODULE}: class {cname} not found (the wheel's layout changed)")
        for node in cls.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if node.name.startswith("__"):
                    continue
                if node.name.startswith("_"):
                    private.add(node.name)
                    continue
                stage = next((s for s in map(_decorator_stage, node.decorator_list) if s), {"stage": "stable"})
                stages.setdefault(node.name, stage)
            elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Name):
                for tgt in node.targets:
                    if isinstance(tgt, ast.Name) and not tgt.id.startswith("_"):
                        ref = classes.get(node.value.id)
                        stage = None
                        if ref is not None:
                            stage = next((s for s in map(_decorator_stage, ref.decorator_list) if s), None)
                        stages.setdefault(tgt.id, {**(stage or {"stage": "stable"}), "alias_of": node.value.id})
    return dict(sorted(stages.items())), sorted(private)


def _raises_not_implemented(fn: ast.FunctionDef) -> bool:
    for node in ast.walk(fn):
        if isinstance(node, ast.Raise) and node.exc is not None:
            exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            if getattr(exc, "id", None) == "NotImplementedError":
                return True
    return False


def streams(src_streams: str, src_device: str) -> dict[str, dict[str, list[str]]]:
    """Stream/event methods that raise NotImplementedError, or whose docstring says no-op / non-functional."""
    out: dict[str, dict[str, list[str]]] = {}
    trees = [ast.parse(src_streams), ast.parse(src_device)]
    for tree in trees:
        for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
            if cls.name not in ("TpuStream", "TpuEvent", "TpuStreamContext"):
                continue
            entry = {"raises_not_implemented": [], "no_op": [], "non_functional": []}
            doc = (ast.get_docstring(cls) or "").lower()
            if "non-functional" in doc:
                entry["non_functional"].append("<class>")
            if "dummy" in doc:
                entry["no_op"].append("<class: dummy methods>")
            for fn in (n for n in cls.body if isinstance(n, ast.FunctionDef)):
                fdoc = (ast.get_docstring(fn) or "").lower()
                if _raises_not_implemented(fn):
                    entry["raises_not_implemented"].append(fn.name)
                if "no-op" in fdoc:
                    entry["no_op"].append(fn.name)
                if "non-functional" in fdoc:
                    entry["non_functional"].append(fn.name)
            out[cls.name] = {k: sorted(v) for k, v in entry.items()}
    return out


def not_implemented_strings(blob: bytes) -> list[str]:
    found = {m.group().decode("ascii").strip() for m in re.finditer(rb"[\x20-\x7e]{6,}", blob)}
    return sorted(s for s in found if "not implemented for TPU" in s)


def metadata(zf: zipfile.ZipFile) -> dict[str, Any]:
    name = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
    text = zf.read(name).decode()
    requires = [line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("Requires-Dist:")]
    python = next(
        (line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("Requires-Python:")), None
    )
    return {"requires_python": python, "requires_torch": next((r for r in requires if r.startswith("torch")), None)}


def surface(wheel: Path) -> dict[str, Any]:
    with zipfile.ZipFile(wheel) as zf:
        read = lambda p: zf.read(p).decode()
        version = wheel.name.split("-")[1]
        stages, private = device_module(read(DEVICE_MODULE))
        return {
            "package": "torch_tpu",
            "version": version,
            "wheel": wheel.name,
            "sha256": sha256(wheel),
            "checked": datetime.date.today().isoformat(),  # the day the wheel was read
            "generated_by": "scripts/torch_tpu_api_surface.py",
            "read_from": [PUBLIC_API, DEVICE_MODULE, STREAMS, GLUE_SO],
            **metadata(zf),
            "legacy_api_opt_out_env": "TORCH_TPU_ALLOW_LEGACY_DEVICE_APIS"
            if "TORCH_TPU_ALLOW_LEGACY_DEVICE_APIS" in read(DEVICE_MODULE)
            else None,
            "modules": public_modules(read(PUBLIC_API)),
            "device_module_stages": stages,
            "device_module_private": private,
            "streams": streams(read(STREAMS), read(DEVICE_MODULE)),
            "not_implemented_messages": not_implemented_strings(zf.read(GLUE_SO)),
        }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--version", default="0.2.0", help="torch_tpu version to download (default: 0.2.0)")
    ap.add_argument("--wheel", type=Path, help="use this wheel instead of downloading one")
    ap.add_argument(
        "--out",
        type=Path,
        help="output JSON (default: src/xlaport/reference/data/torch_tpu-<version>-api-surface.json)",
    )
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="torch_tpu_wheel_") as tmp:
        wheel = args.wheel if args.wheel else download("torch_tpu", args.version, Path(tmp))
        if not wheel.is_file():
            print(f"error: no such wheel: {wheel}", file=sys.stderr)
            return 2
        data = surface(wheel)
    out = args.out or ROOT / "src" / "xlaport" / "reference" / "data" / f"torch_tpu-{data['version']}-api-surface.json"
    out.write_text(json.dumps(data, indent=1, sort_keys=False) + "\n")
    n = len(data["modules"].get("torch.tpu", {}).get("exports", []))
    print(
        f"wrote {out.relative_to(ROOT) if out.is_relative_to(ROOT) else out}: torch_tpu {data['version']} "
        f"sha256 {data['sha256'][:12]}..., {n} torch.tpu exports, {len(data['modules'])} public modules"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
