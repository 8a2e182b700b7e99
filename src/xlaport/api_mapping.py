"""``torch.cuda.*`` calls and what they become on ``torch.accelerator``, TorchTPU and TorchNeuron.

The table is data (``reference/data/api_mapping.toml``): one row per CUDA call, and for each backend a
spelling, a status (:data:`STATUSES`) and a source. This module loads and queries it; the scanner's fixes
(:func:`xlaport.scan.mapping_fix`), ``xlaport api-map`` and the book's "API mapping" page
(:mod:`xlaport.reference.api_mapping`, which also re-exports this API) read it from here. The TorchTPU
column is checked against the public API surface of the torch_tpu wheel, recorded without importing
torch_tpu by ``scripts/torch_tpu_api_surface.py`` into ``reference/data/torch_tpu-<version>-api-surface.json``:
:func:`tpu_status_from_surface` derives the status a ``torch.tpu.*`` spelling must have from that file.

>>> from xlaport.api_mapping import rows, lookup
>>> [r.tpu.status for r in lookup("synchronize")]
['raises']
"""

from __future__ import annotations

import json
import re
import tomllib
from dataclasses import dataclass
from functools import cache
from typing import Any

from ._data import data_text

__all__ = [
    "STATUSES",
    "Cell",
    "Row",
    "rows",
    "meta",
    "surface",
    "lookup",
    "tpu_status_from_surface",
    "reference_torch",
]

STATUSES: dict[str, str] = {
    "works": "the call exists and does what the CUDA call does",
    "raises": "the call exists but raises, and the message names the call to use instead",
    "warns": "the call runs but only warns that it is not implemented",
    "placeholder": "the call exists so that other PyTorch code runs, but does nothing useful (dummy object, no-op)",
    "absent": "there is no such call on that backend",
    "undocumented": "the vendor documents no equivalent; nothing verified",
}
_BACKENDS = ("tpu", "neuron")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
# torch.tpu names whose objects are the streams module's placeholders (checked against the surface file).
_STREAM_OBJECTS = {
    "Stream": "TpuStream",
    "default_stream": "TpuStream",
    "current_stream": "TpuStream",
    "Event": "TpuEvent",
    "stream": "TpuStreamContext",
}


@dataclass(frozen=True)
class Cell:
    """One backend's answer for a CUDA call."""

    spelling: str
    status: str
    note: str
    source: str
    checked: str  # the day this cell was last read from its source (YYYY-MM-DD)


@dataclass(frozen=True)
class Row:
    group: str
    cuda: str
    accelerator: str
    accelerator_since: str | None
    tpu: Cell
    neuron: Cell
    tpu_message: str | None = None


def _data(name: str) -> str:
    return data_text(name)


@cache
def _load() -> tuple[dict[str, Any], tuple[Row, ...]]:
    raw = tomllib.loads(_data("api_mapping.toml"))
    out = []
    for i, r in enumerate(raw.get("row", [])):
        where = f"api_mapping.toml row {i + 1} ({r.get('cuda', '?')})"
        for key in ("group", "cuda", "accelerator"):
            if key not in r:
                raise ValueError(f"{where}: missing '{key}'")
        cells = {}
        for b in _BACKENDS:
            for key in (b, f"{b}_status", f"{b}_source"):
                if key not in r:
                    raise ValueError(f"{where}: missing '{key}'")
            if r[f"{b}_status"] not in STATUSES:
                raise ValueError(f"{where}: unknown {b}_status {r[f'{b}_status']!r}; use one of {', '.join(STATUSES)}")
            if not r[f"{b}_source"].strip():
                raise ValueError(f"{where}: empty {b}_source")
            if f"{b}_checked" not in r:
                raise ValueError(f"{where}: missing '{b}_checked' (the day the cell was last read from its source)")
            checked = str(r[f"{b}_checked"])
            if not _DATE.match(checked):
                raise ValueError(f"{where}: {b}_checked must be a date YYYY-MM-DD, got {checked!r}")
            cells[b] = Cell(r[b], r[f"{b}_status"], r.get(f"{b}_note", ""), r[f"{b}_source"], checked)
        out.append(
            Row(
                r["group"],
                r["cuda"],
                r["accelerator"],
                r.get("accelerator_since"),
                cells["tpu"],
                cells["neuron"],
                r.get("tpu_message"),
            )
        )
    return raw.get("meta", {}), tuple(out)


def rows() -> tuple[Row, ...]:
    """Every row of the mapping, in page order."""
    return _load()[1]


def meta() -> dict[str, Any]:
    return dict(_load()[0])


@cache
def surface() -> dict[str, Any]:
    """The recorded public API surface of the torch_tpu wheel (see scripts/torch_tpu_api_surface.py)."""
    return json.loads(_data(meta()["tpu_surface"]))


def lookup(query: str) -> list[Row]:
    """Rows whose CUDA call contains ``query`` (case-insensitive, e.g. ``"synchronize"``)."""
    if not isinstance(query, str) or not query.strip():
        raise ValueError("give part of a torch.cuda call to look up, e.g. 'synchronize'")
    q = query.strip().lower()
    return [r for r in rows() if q in r.cuda.lower()]


def _version_tuple(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", v)[:2])


def reference_torch(surf: dict[str, Any] | None = None) -> str:
    """The newest torch the wheel supports (its ``Requires-Dist`` upper bound): the table describes that."""
    surf = surf if surf is not None else surface()
    m = re.search(r"<=?\s*([\d.]+)", surf.get("requires_torch") or "")
    return ".".join(m.group(1).split(".")[:2]) if m else "0.0"


def _tpu_name(spelling: str) -> str | None:
    m = re.match(r"(?:with\s+)?torch\.tpu\.([A-Za-z_][A-Za-z0-9_]*)", spelling.strip())
    return m.group(1) if m else None


def tpu_status_from_surface(
    spelling: str, surf: dict[str, Any] | None = None, torch_version: str | None = None, message: str | None = None
) -> str | None:
    """The status a TorchTPU spelling has according to the wheel's recorded surface, or None if it
    cannot be decided from the surface (a spelling outside ``torch.tpu``, e.g. ``torch.autocast``).

    ``torch.tpu.X``: ``absent`` if the module does not export X; ``raises`` if X is internal from a
    torch version <= ``torch_version`` (default: :func:`reference_torch`); ``placeholder`` if X is a
    stream or event object; else ``works``. A spelling with a ``message`` is ``warns`` if the wheel
    carries that "not implemented for TPU" message.
    """
    surf = surf if surf is not None else surface()
    if message is not None:
        return "warns" if message in surf.get("not_implemented_messages", []) else None
    name = _tpu_name(spelling)
    if name is None:
        return None
    if name not in surf["modules"]["torch.tpu"]["exports"]:
        return "absent"
    stage = surf["device_module_stages"].get(name, {})
    ref = _version_tuple(torch_version or reference_torch(surf))
    if (
        stage.get("stage") == "internal_or_experimental"
        and stage.get("internal_from_torch")
        and _version_tuple(stage["internal_from_torch"]) <= ref
    ):
        return "raises"
    obj = _STREAM_OBJECTS.get(name)
    if obj is not None:
        info = surf["streams"].get(obj, {})
        if info.get("no_op") or info.get("non_functional") or info.get("raises_not_implemented"):
            return "placeholder"
    return "works"
