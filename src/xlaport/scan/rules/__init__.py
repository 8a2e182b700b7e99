"""The scanner's rules: one module per rule, found by listing this package.

Each module (``cuda_device.py``, ``host_sync_in_loop.py``, ...) holds one rule the way Fixit's and ruff's do:
its :class:`~xlaport.scan.rule.Rule` as ``RULE`` (id, severity, category, why, fix, chapter, and ``invalid`` /
``valid`` examples the tests run), a docstring saying what it finds, its message texts, and its checks,
registered with :func:`xlaport.scan.registry.check` (on Python syntax nodes, called by the one walk of each
file, :mod:`xlaport.scan.walker`) or :func:`~xlaport.scan.registry.file_check` (on whole CUDA sources,
requirements files and ``pyproject.toml``). Adding a rule is adding a module here. What several rules share
is in :mod:`._common`. ``xlaport scan --explain RULE`` and the book's rule page (:func:`render_page`) are
written from the same text.

Where the API-mapping table (``reference/data/api_mapping.toml``) has a row for the ``torch.cuda`` call a
finding names, the finding's fix is taken from that row (:func:`mapping_fix`), and a call TorchTPU 0.2.0 makes
raise (or lacks) is an ``error``.
"""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
import re
from functools import cache

from ..registry import CHECKS, FILE_CHECKS
from ..rule import KERNEL_DOCS, SEVERITIES, Rule, severity_rank

__all__ = [
    "KERNEL_DOCS",
    "RULES",
    "SEVERITIES",
    "Rule",
    "checked_rules",
    "mapping_fix",
    "mapping_row",
    "render_page",
    "rule",
    "rule_ids",
    "severity_rank",
]


def _collect() -> tuple[Rule, ...]:
    found = []
    for m in pkgutil.iter_modules(__path__):
        if m.name.startswith("_"):
            continue
        mod = importlib.import_module(f"{__name__}.{m.name}")
        r = getattr(mod, "RULE", None)
        if not isinstance(r, Rule):
            raise RuntimeError(f"{mod.__name__} holds no RULE")
        if m.name != r.id.replace("-", "_"):
            raise RuntimeError(f"{mod.__name__} holds rule {r.id!r}: a rule's module is named after it")
        doc = (mod.__doc__ or "").split("\n\n", 1)
        found.append(dataclasses.replace(r, finds=doc[1].strip() if len(doc) > 1 else ""))
    return tuple(sorted(found, key=lambda r: (r.position, r.id)))


#: every rule, in the order the scanner lists them
RULES: tuple[Rule, ...] = _collect()

_BY_ID = {r.id: r for r in RULES}


def rule(rule_id: str) -> Rule:
    """The rule named ``rule_id``; ValueError listing the ids otherwise."""
    try:
        return _BY_ID[rule_id]
    except (KeyError, TypeError):
        raise ValueError(f"unknown rule {rule_id!r}; rules: {', '.join(_BY_ID)}") from None


def rule_ids() -> tuple[str, ...]:
    return tuple(_BY_ID)


# --------------------------------------------------------------------------- fixes from the API mapping
@cache
def _mapping_index() -> dict[str, object]:
    """``torch.cuda.X`` (and ``torch.backends.*``) -> its API-mapping row, case-sensitive."""
    from ...api_mapping import rows

    out: dict[str, object] = {}
    for r in rows():
        for name in re.findall(r"torch\.(?:cuda|backends)\.[A-Za-z_][\w.]*", r.cuda):
            out.setdefault(name.rstrip("."), r)
    return out


def mapping_row(qualname: str) -> object | None:
    """The API-mapping row for ``qualname`` (e.g. ``torch.cuda.synchronize``), or None."""
    idx = _mapping_index()
    if qualname in idx:
        return idx[qualname]
    from ...api_mapping import lookup

    # fall back to the table's own search (substring, case-insensitive), keeping only a whole-name match
    for r in lookup(qualname):
        if re.search(re.escape(qualname) + r"(?![\w.])", r.cuda):
            return r
    return None


@cache
def mapping_fix(qualname: str) -> tuple[str, str] | None:
    """(fix text, TorchTPU status) for a ``torch.cuda`` name from the API-mapping table, or None."""
    r = mapping_row(qualname)
    if r is None:
        return None
    acc = getattr(r, "accelerator", "")
    tpu, neuron = r.tpu, r.neuron  # type: ignore[attr-defined]
    parts = []
    if acc:
        parts.append(f"`{acc}`")
    tpu_part = f"TorchTPU: `{tpu.spelling}` ({tpu.status})" if tpu.spelling else f"TorchTPU: {tpu.status}"
    neuron_part = (
        f"TorchNeuron: `{neuron.spelling}` ({neuron.status})" if neuron.spelling else f"TorchNeuron: {neuron.status}"
    )
    parts += [tpu_part, neuron_part]
    return "; ".join(parts), tpu.status


def checked_rules() -> dict[str, set[str]]:
    """Rule id -> names of what it has a check on: syntax-node types, and file kinds as ``file:<kind>``."""
    out: dict[str, set[str]] = {}
    for t, pairs in CHECKS.items():
        for rid, _ in pairs:
            out.setdefault(rid, set()).add(t.__name__)
    for kind, fpairs in FILE_CHECKS.items():
        for rid, _ in fpairs:
            out.setdefault(rid, set()).add(f"file:{kind}")
    return out


def render_page() -> str:
    """The book's page of rules (MyST markdown), from the rule modules' own text and examples."""
    out = [
        "# Scanner rules",
        "",
        "`xlaport scan PATH` reads a project's Python files, CUDA sources and requirements without running "
        "anything, and reports each line to change or check before the code runs well on a TPU VM or a Trainium "
        "host: the file and line, the rule, what the line does there, and the fix. This page is every rule it "
        "applies; `xlaport scan --explain RULE` prints the same text in a terminal.",
        "",
        "- **Severity.** `error`: raises or cannot run there as written; `warning`: runs, but recompiles, waits "
        "for the device or does nothing useful; `note`: the scanner could not look into the file. "
        "`xlaport scan --fail-on error` (the default) exits 1 when an error is found.",
        "- **Kind.** The effort class `xlaport doctor` prices the finding under.",
        "- **Silencing.** `# xlaport: ignore[RULE]` at the end of a line, `# xlaport: ignore-file[RULE]` for a "
        'file, or `ignore = ["RULE"]` under `[tool.xlaport]` in the project\'s `pyproject.toml` '
        "({doc}`/book/toolkit`).",
        "",
        "Each rule's examples are run by the test suite: the first is reported, the second (where there is one) "
        "is not.",
        "",
        "| rule | severity | kind |",
        "|---|---|---|",
    ]
    out += [f"| {{ref}}`{r.id} <scan-rule-{r.id}>` | {r.severity} | {r.category} |" for r in RULES]
    for r in RULES:
        out += ["", f"(scan-rule-{r.id})=", f"## `{r.id}`", "", f"**{r.title}.** {r.severity}, {r.category}.", ""]
        if r.finds:
            out += [" ".join(r.finds.split()), ""]
        out += [f"**Why.** {r.why}", "", f"**Fix.** {r.fix}", ""]
        lang = "text" if r.example_file else "python"
        where = f" (in a file named `{r.example_file}`)" if r.example_file else ""
        for title, snippets in (("Reported", r.invalid), ("Not reported", r.valid)):
            if snippets:
                out += [f"{title}{where}:", "", f"```{lang}", snippets[0].rstrip("\n"), "```", ""]
        if r.docs:
            out.append("Chapters: " + ", ".join(f"{{doc}}`/{d}`" for d in r.docs) + ".")
    return "\n".join(out).rstrip("\n") + "\n"
