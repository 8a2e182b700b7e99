"""The rules ``xlaport scan`` applies: each with an id, a severity, a one-line why, the fix and the chapter.

Rules are data (:data:`RULES`); each rule's detection is one function per node type in
:mod:`xlaport.scan.checks`, all applied in one walk of each file's syntax tree (:mod:`xlaport.scan.walker`). Where the API-mapping table (``reference/data/api_mapping.toml``) has a
row for the ``torch.cuda`` call a finding names, the finding's fix is taken from that row
(:func:`mapping_fix`), and a call TorchTPU 0.2.0 makes raise (or lacks) is an ``error``.

Severities, from worst: ``error`` (raises or cannot run on TPU/Trainium as written), ``warning`` (runs,
but recompiles, syncs the host, or does nothing useful there), ``note`` (the scanner could not look).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

__all__ = [
    "SEVERITIES",
    "Rule",
    "RULES",
    "rule",
    "rule_ids",
    "severity_rank",
    "mapping_fix",
    "KERNEL_DOCS",
]

SEVERITIES: tuple[str, ...] = ("error", "warning", "note")
KERNEL_DOCS: tuple[str, ...] = ("notebooks/custom_kernels", "book/generated/kernel_concepts")


def severity_rank(level: str) -> int:
    """2 for error, 1 for warning, 0 for note (higher is worse)."""
    try:
        return len(SEVERITIES) - 1 - SEVERITIES.index(level)
    except ValueError:
        raise ValueError(f"unknown severity {level!r}; use one of {', '.join(SEVERITIES)}") from None


@dataclass(frozen=True)
class Rule:
    """One thing the scanner looks for.

    ``category`` is the effort class the doctor prices it under; ``chapter`` the book page (a Sphinx
    docname such as ``notebooks/recompile_storms``) that teaches the fix; ``see_also`` more pages.
    """

    id: str
    title: str
    severity: str
    category: str
    why: str
    fix: str
    chapter: str
    see_also: tuple[str, ...] = ()

    @property
    def docs(self) -> tuple[str, ...]:
        return (self.chapter, *self.see_also) if self.chapter else self.see_also


RULES: tuple[Rule, ...] = (
    Rule(
        "cuda-device",
        "CUDA device string or .cuda()",
        "error",
        "device",
        '`.cuda()`, `"cuda"` and `"cuda:N"` name a device that does not exist on a TPU or Trainium host.',
        "Place tensors on one device object: `t = xlaport.target(...)` and `.to(t.device)`, or "
        "`torch.accelerator.current_accelerator()`, which names `tpu` or `neuron` there.",
        "notebooks/port_training",
        ("notebooks/01_first_steps",),
    ),
    Rule(
        "cuda-api",
        "torch.cuda / torch.backends.cuda call",
        "warning",
        "device",
        "`torch.cuda.*` reports on or drives a CUDA device; TorchTPU and TorchNeuron answer through "
        "`torch.accelerator` (several `torch.tpu` device calls raise and point there).",
        "Use the `torch.accelerator` spelling from the API-mapping table; delete cuDNN/TF32 switches.",
        "book/generated/api_mapping",
        ("notebooks/port_training",),
    ),
    Rule(
        "cuda-amp",
        "fp16 autocast or GradScaler",
        "warning",
        "amp",
        "fp16 autocast needs a `GradScaler` against underflow; TPU and Trainium compute in bf16, which keeps "
        "fp32's exponent range, so the scaler only adds work.",
        "`torch.autocast(t.device.type, dtype=torch.bfloat16)` (or `t.autocast()`), `loss.backward()` and "
        "`opt.step()` without a scaler.",
        "notebooks/port_training",
    ),
    Rule(
        "cuda-streams",
        "CUDA streams, events or graphs",
        "warning",
        "streams",
        "Streams, events and CUDA graphs schedule work on a GPU; TorchTPU's are placeholders and XLA already "
        "compiles the whole step into one program.",
        "Drop the side stream and the graph capture; time with `t.sync()` around the step, and let the "
        "compiled step overlap its own copies.",
        "notebooks/port_training",
        ("book/generated/api_mapping",),
    ),
    Rule(
        "nccl-backend",
        "NCCL process group",
        "error",
        "distributed",
        "`nccl` is NVIDIA's collective library; it is not there on TPU or Trainium hosts.",
        'TorchTPU: `init_process_group("tpu_dist")`; TorchNeuron: `init_process_group("neuron")`; keep '
        "the rest of the DDP/FSDP code.",
        "book/support_matrix",
    ),
    Rule(
        "cuda-only-dependency",
        "CUDA-only dependency",
        "error",
        "dependency",
        "The package ships CUDA kernels or CUDA bindings and has no TPU or Trainium build.",
        "Replace it with the PyTorch built-in named in the finding, or guard it as optional.",
        "book/support_matrix",
        ("book/pitfalls",),
    ),
    Rule(
        "triton-kernel",
        "Triton kernel",
        "error",
        "kernel",
        "Triton compiles for NVIDIA and AMD GPUs only; there is no Triton-to-Pallas translator.",
        "Rewrite the kernel in Pallas (TorchTPU, `torch.tpu.pallas.jax_op`) or NKI (TorchNeuron, `@nki.jit` "
        "with `@nki_op`), or use the plain PyTorch ops it fuses.",
        KERNEL_DOCS[0],
        KERNEL_DOCS[1:],
    ),
    Rule(
        "cuda-extension",
        "CUDA C++ extension",
        "error",
        "kernel",
        "`load_inline`, `CUDAExtension`, CuPy and PyCUDA kernels compile CUDA C++, which TPU and Trainium do not run.",
        "Rewrite the kernel in Pallas or NKI, or express it with PyTorch ops the compiler fuses.",
        KERNEL_DOCS[0],
        KERNEL_DOCS[1:],
    ),
    Rule(
        "cuda-source",
        "CUDA source file",
        "error",
        "kernel",
        "`.cu`/`.cuh` files are CUDA C++ kernels; each `__global__` function needs a rewrite.",
        "Rewrite the kernels in Pallas or NKI, or replace them with PyTorch ops.",
        KERNEL_DOCS[0],
        KERNEL_DOCS[1:],
    ),
    Rule(
        "dynamic-shape-op",
        "Data-dependent output shape",
        "warning",
        "dynamic-shape",
        "`nonzero`, `unique`, `masked_select`, `argwhere` and one-argument `where` return as many elements as "
        "the data hold: a host sync, and a new program for each new count (or a CPU fallback).",
        "Keep the shape static: a mask and `torch.where`/`masked_fill`, a masked mean, or pad to a fixed "
        "size (`nonzero_static`, the padded `unique` of the fallbacks chapter).",
        "notebooks/op_fallbacks",
        ("notebooks/recompile_storms",),
    ),
    Rule(
        "boolean-mask-index",
        "Boolean-mask indexing",
        "warning",
        "dynamic-shape",
        "`x[mask]` returns one element per true entry: its shape depends on the data.",
        "Multiply by the mask or use `torch.where(mask, x, 0)` and divide by `mask.sum()`; assignments "
        "`x[mask] = v` are fine.",
        "notebooks/recompile_storms",
        ("notebooks/op_fallbacks",),
    ),
    Rule(
        "variable-length-batch",
        "Batches padded to their longest",
        "warning",
        "recompile",
        '`pad_sequence` and tokenizers\' `padding=True`/`"longest"` give every batch its own length: one new '
        "program per length on TPU/Trainium.",
        "Pad to a few bucket lengths (`xlaport.recompile.buckets`) or to one maximum length, with the mask.",
        "notebooks/recompile_storms",
    ),
    Rule(
        "host-sync-in-loop",
        "Host sync inside a loop",
        "warning",
        "host-sync",
        "`.item()`, `.tolist()`, `.numpy()`, `float(t)` and `print(t)` wait for the device and copy to the "
        "host, once per iteration; on XLA each one also cuts the lazy graph.",
        "Keep values on the device inside the loop (stack losses, log every N steps) and read them once after it.",
        "notebooks/01_first_steps",
        ("notebooks/port_training",),
    ),
    Rule(
        "tensor-condition",
        "Python branch on a tensor",
        "warning",
        "host-sync",
        "`if tensor:` (or a comparison of a tensor) needs the value on the host: a sync, and under "
        "`torch.compile` a graph break.",
        "Compute both sides and select with `torch.where`, or move the check out of the step.",
        "notebooks/01_first_steps",
        ("notebooks/recompile_storms",),
    ),
    Rule(
        "growing-cache",
        "Tensor that grows in a loop",
        "warning",
        "recompile",
        "A tensor concatenated onto itself, or built each step from a Python list the loop appends to, changes "
        "shape every step: one new program per length on TPU/Trainium, where compiled steps are static.",
        "Preallocate to the maximum length and write in place (`index_copy_` at a position held in a device "
        "tensor), with a mask over the unused slots.",
        "notebooks/port_inference",
        ("notebooks/recompile_storms",),
    ),
    Rule(
        "view-offset-in-loop",
        "Tensor indexed by the loop variable",
        "warning",
        "recompile",
        "`sigmas[i]` inside a denoise or generation loop is a view at a new storage offset each step, and "
        "the index is a Python constant: a new program per step.",
        "Index with a device tensor (`index_select`), or `.clone()` the element so the compiled step sees offset 0.",
        "notebooks/sd3_view_offsets",
    ),
    Rule(
        "syntax-error",
        "File does not parse",
        "note",
        "unparsed",
        "The file is not Python 3 (often Python 2), so no other rule could look at it.",
        "Port it to Python 3 first (TorchTPU 0.2.0 needs Python 3.11+), or exclude it in `[tool.xlaport]`.",
        "",
    ),
)

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
    from ..reference.api_mapping import rows

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
    from ..reference.api_mapping import lookup

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
