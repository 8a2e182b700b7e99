#!/usr/bin/env python
"""Regenerate ``src/xlaport/reference/data/torch_tpu-0.2.0-facts.json`` from the torch_tpu 0.2.0 wheel.

Maintainer script (it downloads; tests and notebooks never call it):

    python scripts/torch_tpu_facts.py                  # pip download torch_tpu==0.2.0 from PyPI
    python scripts/torch_tpu_facts.py --wheel PATH.whl # use a wheel you already have
    python scripts/torch_tpu_facts.py --wheel PATH.whl --check   # compare with the committed file, write nothing

The book and ``profiles.toml`` quote a handful of texts and tables from the wheel: the ``dynamic=True``
refusal, the storage-offset guard, the PCI ids the loader scans for, the legacy ``torch.tpu`` device-API
error and its opt-out, the missing-op messages. This script reads each of them from the wheel **as a zip,
without importing torch_tpu** (importing it on a machine without a TPU can start libtpu, which asks a cloud
metadata server for its topology): Python files are parsed with :mod:`ast` and never executed, the glue
libraries are read as printable strings (like ``strings -n 6``). Each fact records the file inside the wheel
it comes from, and the file records the day the wheel was read (``checked``, today on every write; ``--check``
compares everything else). ``tests/unit/test_torch_tpu_facts.py`` compares the project's data with this file, and this file's
sha256 with the one ``scripts/torch_tpu_ops.py`` recorded, so both describe the same wheel.
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
DATA = ROOT / "src" / "xlaport" / "reference" / "data"
PACKAGE, VERSION = "torch_tpu", "0.2.0"
DEFAULT_OUT = DATA / f"{PACKAGE}-{VERSION}-facts.json"
OPS_JSON = DATA / f"{PACKAGE}-{VERSION}-ops.json"

BACKEND = "torch_tpu/_internal/compile/_backend.py"
COMPILE_INIT = "torch_tpu/_internal/compile/__init__.py"
LOADER = "torch_tpu/_loader.py"
HARDWARE = "torch_tpu/_internal/utils/hardware.py"
DEVICE_MODULE = "torch_tpu/_internal/device/_device_module.py"
ANNOTATIONS = "torch_tpu/_internal/utils/annotations.py"
GLUE_RE = re.compile(r"torch_tpu/csrc/common/glue_(\d+_\d+_\d+)/libpywrap_\1_common\.so$")
SDPA_GLUE = "torch_tpu/csrc/common/glue_2_13_0/libpywrap_2_13_0_common.so"
PRINTABLE_RE = re.compile(rb"[\x20-\x7e]{6,}")
MISSING_OP_PREFIX = "operator '"
MISSING_OP_MARKERS = {
    "error": "' is not implemented for TPU. Please file a feature request",
    "warning": "' is not implemented for TPU. Falling back to CPU",
}
SDPA_FLASH_HEADER = "TorchTPU only supports FLASH_ATTENTION SDPBackend"
SDPA_DTYPES_RE = re.compile(r"^- inputs are (\w+) or (\w+)")
SDPA_HEAD_DIM = "- Head dimension (dim - 1) is "
PRECISION = "torch_tpu/_internal/precision/precision.py"


class LayoutChanged(SystemExit):
    """The wheel no longer has the code shape this script reads: update the script, do not guess."""

    def __init__(self, file: str, what: str) -> None:
        super().__init__(f"{file}: {what} (the wheel's layout changed; update scripts/torch_tpu_facts.py)")


# ------------------------------------------------------------------ ast helpers
def template(node: ast.AST, file: str) -> str:
    """A string constant, or an f-string as a template with ``{expr}`` placeholders."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        parts = []
        for v in node.values:
            if isinstance(v, ast.Constant):
                parts.append(str(v.value))
            elif isinstance(v, ast.FormattedValue):
                parts.append("{" + ast.unparse(v.value) + "}")
        return "".join(parts)
    raise LayoutChanged(file, f"expected a string literal, found {ast.unparse(node)!r}")


def module_function(tree: ast.Module, name: str, file: str) -> ast.FunctionDef:
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return node
    raise LayoutChanged(file, f"no module-level function {name}")


def method(tree: ast.Module, cls: str, name: str, file: str) -> ast.FunctionDef:
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == cls:
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == name:
                    return item
    raise LayoutChanged(file, f"no method {cls}.{name}")


def assigned(tree: ast.Module, name: str, file: str) -> ast.expr:
    """The value assigned to module-level ``name`` (plain or annotated assignment)."""
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            return node.value
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and node.target.id == name
            and node.value is not None
        ):
            return node.value
    raise LayoutChanged(file, f"no module-level assignment to {name}")


def dict_literal(node: ast.expr, file: str) -> ast.Dict:
    """``{...}`` or ``immutabledict.immutabledict({...})`` (possibly parenthesised)."""
    if isinstance(node, ast.Call) and len(node.args) == 1:
        node = node.args[0]
    if not isinstance(node, ast.Dict):
        raise LayoutChanged(file, f"expected a dict literal, found {ast.unparse(node)[:60]!r}")
    return node


def calls(fn: ast.AST, name: str) -> list[ast.Call]:
    """Calls to ``name`` or ``<anything>.name`` inside ``fn``."""
    out = []
    for node in ast.walk(fn):
        if isinstance(node, ast.Call):
            f = node.func
            if (isinstance(f, ast.Name) and f.id == name) or (isinstance(f, ast.Attribute) and f.attr == name):
                out.append(node)
    return out


# ------------------------------------------------------------------ facts
def compile_dynamic_true(src: str) -> dict[str, Any]:
    """The refusal of ``torch.compile(..., dynamic=True)`` in ``TpuBackend.__call__``."""
    fn = method(ast.parse(src), "TpuBackend", "__call__", BACKEND)
    for node in ast.walk(fn):
        if not isinstance(node, ast.If):
            continue
        for stmt in node.body:
            if isinstance(stmt, ast.Raise) and isinstance(stmt.exc, ast.Call):
                exc = stmt.exc
                if isinstance(exc.func, ast.Name) and exc.func.id == "NotImplementedError" and exc.args:
                    message = template(exc.args[0], BACKEND)
                    if "dynamic=True" not in message:
                        continue
                    return {
                        "file": BACKEND,
                        "in": "TpuBackend.__call__",
                        "raises": "NotImplementedError",
                        "when": ast.unparse(node.test),
                        "message": message,
                    }
    raise LayoutChanged(BACKEND, "no NotImplementedError about dynamic=True in TpuBackend.__call__")


def compile_defaults(loader_src: str, init_src: str) -> dict[str, Any]:
    """The backend name torch_tpu registers and the ``dynamic`` value its torch.compile patch injects."""
    backend = None
    for call in calls(ast.parse(init_src), "register_backend"):
        kw = {k.arg: k.value for k in call.keywords}
        if isinstance(kw.get("name"), ast.Constant):
            backend = {"name": kw["name"].value, "compiler_fn": ast.unparse(kw["compiler_fn"])}  # type: ignore[union-attr]
    if backend is None:
        raise LayoutChanged(COMPILE_INIT, "no registry.register_backend(..., name=...) call")
    fn = module_function(ast.parse(loader_src), "_default_tpu_compile", LOADER)
    injected = {}
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            t = node.targets[0]
            if (
                isinstance(t, ast.Subscript)
                and isinstance(t.value, ast.Name)
                and t.value.id == "kwargs"
                and isinstance(t.slice, ast.Constant)
                and isinstance(node.value, ast.Constant)
            ):
                injected[t.slice.value] = node.value.value
    if "dynamic" not in injected:
        raise LayoutChanged(LOADER, "_default_tpu_compile no longer sets kwargs['dynamic'] to a constant")
    return {
        "backend": {"file": COMPILE_INIT, **backend},
        "injected": {"file": LOADER, "in": "_default_tpu_compile", "kwargs": injected},
    }


def storage_offset_guard(src: str) -> dict[str, Any]:
    """What ``_guard_input_storage_offsets`` guards, its docstring, and where the backend calls it."""
    tree = ast.parse(src)
    fn = module_function(tree, "_guard_input_storage_offsets", BACKEND)
    builders = {
        ast.unparse(c.args[0]).rsplit(".", 1)[-1] for c in calls(fn, "make_guard") if c.args
    }  # GuardBuilder.EQUALS_MATCH
    props = {
        n.attr
        for n in ast.walk(fn)
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Attribute) and n.value.attr == "TensorProperty"
    }
    nodes = [
        k.value.value
        for c in calls(fn, "find_nodes")
        for k in c.keywords
        if k.arg == "op" and isinstance(k.value, ast.Constant)
    ]
    if len(builders) != 1 or len(props) != 1 or nodes != ["placeholder"]:
        raise LayoutChanged(BACKEND, f"_guard_input_storage_offsets: guards {builders} on {props} of {nodes}")
    caller = method(tree, "TpuBackend", "__call__", BACKEND)
    if not calls(caller, "_guard_input_storage_offsets"):
        raise LayoutChanged(BACKEND, "TpuBackend.__call__ no longer calls _guard_input_storage_offsets")
    return {
        "file": BACKEND,
        "function": "_guard_input_storage_offsets",
        "called_from": "TpuBackend.__call__",
        "guards": "placeholder",
        "guard_builder": builders.pop(),
        "tensor_property": props.pop(),
        "docstring": ast.get_docstring(fn),
    }


def pci_ids(src: str, loader_src: str) -> dict[str, Any]:
    """Google's PCI vendor id and the TPU device ids the loader's PCI scan accepts, with the wheel's names."""
    tree = ast.parse(src)
    vendor = assigned(tree, "_GOOGLE_PCI_VENDOR_ID", HARDWARE)
    if not (isinstance(vendor, ast.Constant) and isinstance(vendor.value, str)):
        raise LayoutChanged(HARDWARE, "_GOOGLE_PCI_VENDOR_ID is not a string literal")
    topo = dict_literal(assigned(tree, "_TOPOLOGY_BY_TPU_PCI_DEVICE_ID", HARDWARE), HARDWARE)
    scanned = {ast.literal_eval(k): ast.unparse(v) for k, v in zip(topo.keys, topo.values) if k is not None}
    names = ast.literal_eval(dict_literal(assigned(tree, "_PCI_DEVICE_ID_TO_NAME", HARDWARE), HARDWARE))
    if set(names) != set(scanned):
        raise LayoutChanged(HARDWARE, f"scanned ids {sorted(scanned)} differ from named ids {sorted(names)}")
    scan = module_function(tree, "_scan_pci_tpus", HARDWARE)
    strings = {n.value for n in ast.walk(scan) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    if not {"/sys/bus/pci/devices", "/dev/vfio"} <= strings:
        raise LayoutChanged(HARDWARE, "_scan_pci_tpus no longer reads /sys/bus/pci/devices and /dev/vfio")
    if not calls(ast.parse(loader_src), "get_tpu_device_count"):
        raise LayoutChanged(LOADER, "the loader no longer gates on hardware.get_tpu_device_count()")
    return {
        "file": HARDWARE,
        "tables": ["_GOOGLE_PCI_VENDOR_ID", "_TOPOLOGY_BY_TPU_PCI_DEVICE_ID", "_PCI_DEVICE_ID_TO_NAME"],
        "vendor_id": vendor.value,
        "device_ids": dict(sorted(names.items())),
        "topology_tables": dict(sorted(scanned.items())),
        "scan": "_scan_pci_tpus: /sys/bus/pci/devices/*/{vendor,device}, counted only when /dev/vfio/<iommu_group> exists",
        "loader_gate": f"{LOADER}: load() initialises only when hardware.get_tpu_device_count() > 0",
    }


def _internal_when(dec: ast.Call) -> str | None:
    for k in dec.keywords:
        if k.arg == "internal_when" and isinstance(k.value, ast.Compare):
            ver = ast.literal_eval(k.value.comparators[0])
            return ".".join(map(str, ver))
    return None


def legacy_device_apis(device_src: str, annotations_src: str) -> dict[str, Any]:
    """The torch.tpu device APIs that raise once ``torch.accelerator`` has them, the error text and the opt-out."""
    dev = ast.parse(device_src)
    strict = assigned(dev, "_STRICT_INTERNAL_DEVICE_APIS", DEVICE_MODULE)
    env_calls = calls(strict, "get_bool_env_once")
    if not (isinstance(strict, ast.UnaryOp) and isinstance(strict.op, ast.Not) and env_calls):
        raise LayoutChanged(DEVICE_MODULE, "_STRICT_INTERNAL_DEVICE_APIS is not `not env.get_bool_env_once(...)`")
    env_var = ast.literal_eval(env_calls[0].args[0])
    default = {k.arg: ast.literal_eval(k.value) for k in env_calls[0].keywords}.get("default_value")

    decorated: dict[str, dict[str, Any]] = {}
    aliases: dict[str, str] = {}
    for cls in (n for n in dev.body if isinstance(n, ast.ClassDef)):
        targets: list[ast.FunctionDef | ast.ClassDef] = [cls]
        targets += [n for n in cls.body if isinstance(n, ast.FunctionDef)]
        for node in targets:
            for dec in node.decorator_list:
                if isinstance(dec, ast.Call) and ast.unparse(dec.func).endswith("internal_or_experimental"):
                    kw = {k.arg: k.value for k in dec.keywords}
                    if ast.unparse(kw.get("strict", ast.Constant(None))) != "_STRICT_INTERNAL_DEVICE_APIS":
                        continue
                    decorated[node.name] = {
                        "prefer": ast.literal_eval(kw["prefer"]),
                        "internal_from_torch": _internal_when(dec),
                    }
        for node in cls.body:
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name):
                for t in node.targets:
                    if isinstance(t, ast.Name) and not t.id.startswith("_"):
                        aliases[node.value.id] = t.id
    if not decorated:
        raise LayoutChanged(DEVICE_MODULE, "no @internal_or_experimental(strict=_STRICT_INTERNAL_DEVICE_APIS) API")
    apis = {}
    for obj, info in decorated.items():
        public = aliases.get(obj, obj)
        if public.startswith("_"):
            continue
        apis[public] = {"object": obj, **info}

    ann = ast.parse(annotations_src)
    wrapper = module_function(ann, "_create_warning_wrapper", ANNOTATIONS)
    raise_msg = raise_expr = None
    for node in ast.walk(wrapper):
        if isinstance(node, ast.If) and ast.unparse(node.test) == "raises":
            for stmt in node.body:
                if isinstance(stmt, ast.Assign) and ast.unparse(stmt.targets[0]) == "msg":
                    raise_msg = template(stmt.value, ANNOTATIONS)
                if isinstance(stmt, ast.Raise) and stmt.exc is not None:
                    raise_expr = ast.unparse(stmt.exc)
    if raise_msg is None or raise_expr != "RuntimeError(f'{msg} {reason}' if reason else msg)":
        raise LayoutChanged(ANNOTATIONS, f"_create_warning_wrapper raises {raise_expr!r}")
    deco = module_function(ann, "internal_or_experimental", ANNOTATIONS)
    reason = None
    for node in ast.walk(deco):
        if (
            isinstance(node, ast.Assign)
            and ast.unparse(node.targets[0]) == "reason"
            and isinstance(node.value, ast.IfExp)
        ):
            reason = template(node.value.body, ANNOTATIONS)
    if reason is None:
        raise LayoutChanged(ANNOTATIONS, "internal_or_experimental no longer builds `reason` from `prefer`")
    fmt = method(ann, "Stage", "format_warning_message", ANNOTATIONS)
    warn_msg = None
    for node in ast.walk(fmt):
        if isinstance(node, ast.If) and ast.unparse(node.test) == "self == Stage.INTERNAL":
            for stmt in node.body:
                if isinstance(stmt, ast.Assign) and ast.unparse(stmt.targets[0]) == "msg":
                    warn_msg = template(stmt.value, ANNOTATIONS)
    if warn_msg is None:
        raise LayoutChanged(ANNOTATIONS, "Stage.format_warning_message has no INTERNAL message")
    return {
        "files": [DEVICE_MODULE, ANNOTATIONS],
        "raises": "RuntimeError",
        "message_template": f"{raise_msg} {reason}",
        "placeholders": {
            "name": "__name__ of the decorated object (the method name; the class name for a context manager)",
            "prefer": "the torch.accelerator call passed as prefer=",
        },
        "opt_out_env": env_var,
        "opt_out_default": default,
        "opted_out": "strict=False: a one-time warning per process instead of the error",
        "opted_out_warning_template": f"{warn_msg} {reason}",
        "apis": dict(sorted(apis.items())),
    }


def glue_strings(blob: bytes) -> set[str]:
    return {m.group().decode("ascii") for m in PRINTABLE_RE.finditer(blob)}


def missing_op(zf: zipfile.ZipFile) -> dict[str, Any]:
    """The two messages of TorchTPU's boxed missing-op fallback, in every glue library."""
    glues = sorted(n for n in zf.namelist() if GLUE_RE.search(n))
    if not glues:
        raise LayoutChanged("torch_tpu/csrc/common", "no glue libraries")
    found: dict[str, set[str]] = {k: set() for k in MISSING_OP_MARKERS}
    for g in glues:
        strings = glue_strings(zf.read(g))
        if MISSING_OP_PREFIX not in strings:
            raise LayoutChanged(g, f"no string {MISSING_OP_PREFIX!r}")
        for key, marker in MISSING_OP_MARKERS.items():
            hits = {s for s in strings if s.endswith(marker)}
            if not hits:
                raise LayoutChanged(g, f"no string ending in {marker!r}")
            found[key] |= hits
    out: dict[str, Any] = {"files": glues, "prefix": MISSING_OP_PREFIX}
    for key, hits in found.items():
        if len(hits) != 1:
            raise LayoutChanged("glue libraries", f"{key} message differs between libraries: {sorted(hits)}")
        out[f"{key}_suffix"] = hits.pop()
    out["note"] = (
        "prefix and suffixes are separate strings in each library; the message is prefix + op name + suffix "
        "(the composition is TorchTPU's source, csrc/eager/tpu_aten_kernels.cc, not readable in the wheel)"
    )
    return out


def sdpa_flash(zf: zipfile.ZipFile) -> dict[str, Any]:
    """The FLASH_ATTENTION dtype condition of TorchTPU's SDPA backend choice."""
    strings = glue_strings(zf.read(SDPA_GLUE))
    header = [s for s in strings if s.startswith(SDPA_FLASH_HEADER)]
    dtypes = [m for s in strings if (m := SDPA_DTYPES_RE.match(s))]
    head_dim = [s for s in strings if s.startswith(SDPA_HEAD_DIM)]
    if len(header) != 1 or len(dtypes) != 1 or len(head_dim) != 1:
        raise LayoutChanged(SDPA_GLUE, f"SDPA strings: {header} / {[m.string for m in dtypes]} / {head_dim}")
    return {
        "file": SDPA_GLUE,
        "flash_header": header[0],
        "dtype_condition": dtypes[0].string,
        "flash_dtypes": list(dtypes[0].groups()),
        "head_dim_condition": head_dim[0],
    }


def precision_graph_break(src: str) -> dict[str, Any]:
    """The explicit Dynamo graph break at the top of ``torch.tpu.precision`` and its message."""
    fn = module_function(ast.parse(src), "precision", PRECISION)
    breaks = calls(fn, "graph_break")
    if len(breaks) != 1:
        raise LayoutChanged(PRECISION, f"precision() calls graph_break {len(breaks)} times, expected once")
    msg = {k.arg: k.value for k in breaks[0].keywords}.get("msg")
    if msg is None:
        raise LayoutChanged(PRECISION, "precision()'s graph_break has no msg=")
    return {
        "file": PRECISION,
        "function": "precision",
        "calls": "torch._dynamo.graph_break",
        "message": template(msg, PRECISION),
    }


def build(wheel: Path) -> dict[str, Any]:
    with zipfile.ZipFile(wheel) as zf:

        def read(name: str) -> str:
            try:
                return zf.read(name).decode()
            except KeyError:
                raise LayoutChanged(name, "file missing from the wheel") from None

        facts = {
            "compile_dynamic_true": compile_dynamic_true(read(BACKEND)),
            "compile_defaults": compile_defaults(read(LOADER), read(COMPILE_INIT)),
            "storage_offset_guard": storage_offset_guard(read(BACKEND)),
            "tpu_pci_ids": pci_ids(read(HARDWARE), read(LOADER)),
            "legacy_device_apis": legacy_device_apis(read(DEVICE_MODULE), read(ANNOTATIONS)),
            "missing_op": missing_op(zf),
            "sdpa_flash": sdpa_flash(zf),
            "precision_graph_break": precision_graph_break(read(PRECISION)),
        }
    return {
        "package": PACKAGE,
        "version": VERSION,
        "wheel": wheel.name,
        "sha256": sha256(wheel),
        "source": f"https://pypi.org/project/{PACKAGE}/{VERSION}/",
        "checked": datetime.date.today().isoformat(),
        "generated_by": "scripts/torch_tpu_facts.py",
        "method": (
            "The wheel is read as a zip archive; torch_tpu is never imported. Python files are parsed with ast "
            "and not executed; glue libraries are read as printable strings of 6+ characters (like strings -n 6). "
            "Each fact names the file inside the wheel it was read from."
        ),
        "facts": facts,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--wheel", type=Path, help="a torch_tpu 0.2.0 wheel already on disk (default: pip download it)")
    ap.add_argument(
        "--out", type=Path, default=DEFAULT_OUT, help=f"output JSON (default: {DEFAULT_OUT.relative_to(ROOT)})"
    )
    ap.add_argument("--check", action="store_true", help="compare with --out instead of writing it; exit 1 on drift")
    args = ap.parse_args(argv)
    if args.wheel is not None and not args.wheel.is_file():
        ap.error(f"no such wheel: {args.wheel}")
    with tempfile.TemporaryDirectory(prefix="torch_tpu_wheel_") as tmp:
        wheel = args.wheel if args.wheel else download(PACKAGE, VERSION, Path(tmp))
        data = build(wheel)
    recorded = json.loads(OPS_JSON.read_text())["sha256"]
    if data["sha256"] != recorded:
        print(
            f"error: {wheel.name} has sha256 {data['sha256']}, but {OPS_JSON.relative_to(ROOT)} was read from "
            f"{recorded}; regenerate the op and API-surface data from the same wheel first",
            file=sys.stderr,
        )
        return 2
    text = json.dumps(data, indent=1, ensure_ascii=False) + "\n"
    if args.check:
        old = json.loads(args.out.read_text()) if args.out.is_file() else {}
        if {k: v for k, v in old.items() if k != "checked"} != {k: v for k, v in data.items() if k != "checked"}:
            print(f"drift: {args.out} differs from what {wheel.name} gives; rerun without --check", file=sys.stderr)
            return 1
        print(f"ok: {args.out} matches {wheel.name} (sha256 {data['sha256'][:16]}…)")
        return 0
    args.out.write_text(text)
    pci = data["facts"]["tpu_pci_ids"]["device_ids"]
    print(
        f"wrote {args.out}: sha256 {data['sha256'][:16]}…, {len(data['facts'])} facts, "
        f"PCI ids {', '.join(f'{k}={v}' for k, v in pci.items())}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
