"""The book's "API mapping" page: ``torch.cuda.*`` calls and what they become on ``torch.accelerator``, TorchTPU
and TorchNeuron, rendered from the table that :mod:`xlaport.api_mapping` loads and checks.

The table and its queries (``rows()``, ``lookup()``, ``surface()``, ...) are :mod:`xlaport.api_mapping`, below
this package, so that the scanner reads the table without importing the pages; this module only renders it.
"""

from __future__ import annotations

from ..api_mapping import STATUSES, Cell, Row, meta, reference_torch, rows, surface
from .cite import source_md

__all__ = ["render"]


def _esc(s: str) -> str:
    return s.replace("|", "\\|")


def _code(s: str) -> str:
    return f"`{_esc(s)}`" if s else "–"


def _cell(c: Cell) -> str:
    parts = [_code(c.spelling) if c.spelling else "", f"**{c.status}**"]
    if c.note:
        parts.append(_esc(c.note))
    return "<br>".join(p for p in parts if p)


def render() -> str:
    """The book's "API mapping" page (MyST markdown), rendered from reference/data/api_mapping.toml."""
    m, surf = meta(), surface()
    all_rows = rows()
    counts = {s: sum(r.tpu.status == s for r in all_rows) for s in STATUSES}
    lines = [
        "# API mapping: `torch.cuda` to `torch.accelerator`, TorchTPU and TorchNeuron",
        "",
        f"**Each `torch.cuda` call below is paired with its device-neutral `torch.accelerator` spelling, what "
        f"{m['tpu_package']} does with `torch.tpu`, and what {m['neuron_package']} documents.** "
        "Prefer the `torch.accelerator` column: it is the spelling both backends accept, and on TorchTPU "
        "several `torch.tpu` device calls raise and point there.",
        "",
        f"The TorchTPU column is checked by the test suite against the public API surface of the wheel "
        f"`{surf['wheel']}` (sha256 `{surf['sha256']}`), read from its Python source without importing it "
        f"(`scripts/torch_tpu_api_surface.py`). Statuses describe torch {reference_torch(surf)}, the newest "
        f"torch that wheel accepts (`{surf.get('requires_torch')}`); the opt-out "
        f"`{surf.get('legacy_api_opt_out_env')}=1` turns the `raises` rows into one-time warnings. Of "
        f"{len(all_rows)} rows, TorchTPU status: " + ", ".join(f"{s} {n}" for s, n in counts.items() if n) + ".",
        "",
        f"The TorchNeuron column is taken from the [AWS Neuron documentation]({m['neuron_docs']}); where it "
        "says nothing, the row says **undocumented**.",
        "",
        "Statuses:",
        "",
    ]
    lines += [f"- **{s}**: {d}" for s, d in STATUSES.items()]
    groups: dict[str, list[Row]] = {}
    for r in all_rows:
        groups.setdefault(r.group, []).append(r)
    for group, rs in groups.items():
        lines += [
            "",
            f"## {group}",
            "",
            "| CUDA | `torch.accelerator` | TorchTPU 0.2.0 | TorchNeuron | Sources |",
            "|---|---|---|---|---|",
        ]
        for r in rs:
            acc = _code(r.accelerator) + (
                f"<br>(torch ≥ {r.accelerator_since})" if r.accelerator and r.accelerator_since else ""
            )
            src = (
                f"TPU: {source_md(r.tpu.source, in_table=True)} (read {r.tpu.checked})<br>"
                f"Neuron: {source_md(r.neuron.source, in_table=True)} (read {r.neuron.checked})"
            )
            lines.append(f"| {_code(r.cuda)} | {acc} | {_cell(r.tpu)} | {_cell(r.neuron)} | {src} |")
    lines += ["", '"wheel" in a source means the torch_tpu 0.2.0 wheel, at the file named.', ""]
    return "\n".join(lines)
