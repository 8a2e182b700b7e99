#!/usr/bin/env python
"""Regenerate ``src/xlaport/reference/data/torch_tpu-0.2.0-ops.json`` from the torch_tpu 0.2.0 wheel.

Maintainer script (it downloads; tests and notebooks never call it):

    python scripts/torch_tpu_ops.py                  # pip download torch_tpu==0.2.0 from PyPI
    python scripts/torch_tpu_ops.py --wheel PATH.whl # use a wheel you already have

What it reads, and how an op counts as having a TorchTPU kernel
----------------------------------------------------------------
TorchTPU registers its ATen kernels in the per-torch-version glue libraries
``torch_tpu/csrc/common/glue_2_1x_0/libpywrap_2_1x_0_common.so``. The script
extracts the printable strings of each (like ``strings -n 4``) and collects two
kinds of evidence per ATen operator overload known to the installed torch:

* ``symbol``: a kernel function ``torch_tpu::Aten<CamelName><CamelOverload>`` (case ignored)
  (mangled ``_ZN9torch_tpu<len>Aten...``), e.g. ``AtenMmOut`` for ``aten::mm.out``,
  ``AtenCopy_`` for ``aten::copy_``;
* ``string``: the registration name as a whole string, e.g. ``abs.out`` or
  ``_unique2`` (the argument of ``m.impl("...")``). Strings prefixed with
  ``aten::`` are not counted: in this binary they belong to the autocast policy
  lists, not to kernels.

An op with either kind of evidence is recorded as having a TPU kernel. Ops that
reach the TPU only through a PyTorch composite kernel (``mm`` -> ``mm.out``) are
not listed here: :mod:`xlaport.ops` resolves them with the dispatcher's own rules.
Symbols that match no op of the installed torch (newer ops) are kept under
``unmatched_symbols``. The op universe is the installed torch's operator registry,
so the torch version is recorded too.
"""

from __future__ import annotations

import argparse
import datetime
import json
import re
import sys
import tempfile
import zipfile
from pathlib import Path

from xlaport.wheels import download, sha256

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "src" / "xlaport" / "reference" / "data" / "torch_tpu-0.2.0-ops.json"
PACKAGE, VERSION = "torch_tpu", "0.2.0"
GLUE_RE = re.compile(r"torch_tpu/csrc/common/glue_(\d+_\d+_\d+)/libpywrap_\1_common\.so$")
SYMBOL_RE = re.compile(rb"_ZN9torch_tpu(\d+)(Aten[A-Za-z0-9_]+)")
PRINTABLE_RE = re.compile(rb"[\x20-\x7e]{4,}")
MESSAGE_MARKERS = (
    b"is not implemented for TPU. Please file a feature request",
    b"is not implemented for TPU. Falling back to CPU",
)


def camel(op: str) -> str:
    """``aten::linalg_inv_ex.inverse`` -> ``LinalgInvExInverse``; ``aten::copy_`` -> ``Copy_``."""
    name, _, overload = op.removeprefix("aten::").partition(".")
    trailing = "_" if name.endswith("_") else ""
    parts = [p for p in name.split("_") if p]
    out = "".join(p[0].upper() + p[1:] for p in parts) + trailing
    out += "".join(p[0].upper() + p[1:] for p in overload.split("_") if p)
    return out


def symbol_keys(op: str) -> set[str]:
    """Lower-cased symbol spellings of ``op``: TorchTPU writes ``AtenFillScalar_`` for ``fill_.Scalar``
    and splits words its own way (``AtenBinCount``, ``AtenIsNan``), so case is ignored."""
    c = camel(op)
    keys = {c.lower()}
    name, _, overload = op.removeprefix("aten::").partition(".")
    if name.endswith("_") and overload:
        keys.add(camel(f"{name.rstrip('_')}.{overload}").lower() + "_")
    return keys


def scan_glue(data: bytes) -> tuple[set[str], set[str], list[str]]:
    """(kernel symbol names, whole printable strings, fallback message fragments) of one .so."""
    symbols = set()
    for m in SYMBOL_RE.finditer(data):
        n = int(m.group(1))
        name = m.group(2)[:n].decode()
        if len(name) == n:
            symbols.add(name)
    strings = {m.group(0).decode() for m in PRINTABLE_RE.finditer(data)}
    messages = sorted(s for s in strings if any(k.decode() in s for k in MESSAGE_MARKERS))
    return symbols, strings, messages


def aten_op_names() -> list[str]:
    import torch

    return sorted(n for n in torch._C._dispatch_get_all_op_names() if n.startswith("aten::"))


def build(wheel: Path) -> dict:
    import torch

    ops = aten_op_names()
    by_camel: dict[str, list[str]] = {}
    for op in ops:
        for key in symbol_keys(op):
            by_camel.setdefault(key, []).append(op)
    evidence: dict[str, dict[str, set[str]]] = {}
    glue_versions: list[str] = []
    all_symbols: set[str] = set()
    messages: set[str] = set()
    counts: dict[str, dict[str, int]] = {}
    with zipfile.ZipFile(wheel) as z:
        glues = sorted(n for n in z.namelist() if GLUE_RE.search(n))
        if not glues:
            raise SystemExit(f"{wheel.name}: no glue library matching {GLUE_RE.pattern}")
        for member in glues:
            ver = GLUE_RE.search(member).group(1)  # type: ignore[union-attr]
            glue_versions.append(ver)
            symbols, strings, msgs = scan_glue(z.read(member))
            all_symbols |= symbols
            messages.update(msgs)
            n_sym = n_str = 0
            for sym in symbols:
                for op in by_camel.get(sym.removeprefix("Aten").lower(), []):
                    evidence.setdefault(op, {}).setdefault("symbol", set()).add(ver)
                    n_sym += 1
            for op in ops:
                if op.removeprefix("aten::") in strings:
                    evidence.setdefault(op, {}).setdefault("string", set()).add(ver)
                    n_str += 1
            counts[ver] = {"kernel_symbols": len(symbols), "ops_by_symbol": n_sym, "ops_by_string": n_str}
    unmatched = sorted(s for s in all_symbols if s.removeprefix("Aten").lower() not in by_camel)
    table = {}
    for op in sorted(evidence):
        ev = evidence[op]
        row: dict[str, object] = {"evidence": sorted(ev)}
        seen_in = set().union(*ev.values())
        if seen_in != set(glue_versions):
            row["glue"] = sorted(seen_in)
        table[op] = row
    return {
        "package": PACKAGE,
        "version": VERSION,
        "wheel": wheel.name,
        "sha256": sha256(wheel),
        "source": f"https://pypi.org/project/{PACKAGE}/{VERSION}/",
        "checked": datetime.date.today().isoformat(),  # the day the wheel was read
        "generated_by": "scripts/torch_tpu_ops.py",
        "glue_libraries": [f"torch_tpu/csrc/common/glue_{v}/libpywrap_{v}_common.so" for v in glue_versions],
        "per_glue": counts,
        "op_registry": f"torch {torch.__version__} (torch._C._dispatch_get_all_op_names)",
        "method": (
            "An ATen op overload has a TorchTPU kernel when a glue library holds the kernel function symbol "
            "torch_tpu::Aten<CamelName><CamelOverload> or the registration name as a whole string; "
            "'aten::'-prefixed strings (autocast lists) are not counted. Symbols are matched ignoring case, so one "
            "symbol can match two ops that differ only by a leading underscore; both are then recorded."
        ),
        "missing_op_messages": sorted(messages),
        "n_ops": len(table),
        "ops": table,
        "unmatched_symbols": unmatched,
        "n_kernel_symbols": len(all_symbols),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--wheel", type=Path, help="a torch_tpu 0.2.0 wheel already on disk (default: pip download it)")
    ap.add_argument(
        "--out", type=Path, default=DEFAULT_OUT, help=f"output JSON (default: {DEFAULT_OUT.relative_to(ROOT)})"
    )
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        wheel = args.wheel if args.wheel else download(PACKAGE, VERSION, Path(tmp))
        if not wheel.is_file():
            ap.error(f"no such wheel: {wheel}")
        data = build(wheel)
    args.out.write_text(json.dumps(data, indent=1, sort_keys=False) + "\n")
    print(
        f"wrote {args.out}: {data['n_ops']} ops with a TorchTPU kernel, {len(data['unmatched_symbols'])} unmatched symbols, sha256 {data['sha256'][:16]}…"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
