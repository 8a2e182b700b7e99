"""Sequence packing: documents concatenated into fixed-length rows, so every step has the same shape.

Padding each batch to its longest document gives a static-shape compiler (XLA, TorchTPU, TorchNeuron) a new
program for almost every batch; buckets cut that to a few programs and still spend compute on padding.
Packing fills rows of one fixed length with whole documents back to back, so there is **one shape** and
little padding. Two things keep the documents apart, so that each one trains as if it were alone:

- **position ids restart at 0** at the start of every document (rotary and learned position embeddings see
  the same positions as in an unpacked batch);
- a **block-diagonal causal attention mask**: a token attends to the earlier tokens of its own document only;
- and the label of each document's first token is ignored (``-100``), so no token learns to predict the start
  of the next, unrelated document.

>>> from xlaport.recompile.packing import pack_documents, document_losses
>>> batches = pack_documents(docs, row_len=128, rows_per_batch=4)     # every batch is (4, 128)
>>> b = batches[0]
>>> out = model(**b.model_inputs())                                    # input_ids, position_ids, 4-D mask, labels
>>> per_doc = document_losses(out.logits, b.labels, b.doc_ids, n_docs=len(docs))

``tests/unit/test_packing.py`` checks the masks and position ids, and that a Hugging Face Llama gives every
document the same loss packed as unpacked. The 4-D boolean mask (``True`` = may attend) is passed to the
model as ``attention_mask``; Hugging Face ``transformers`` uses a 4-D mask as given (its
``masking_utils``), and ``F.scaled_dot_product_attention`` reads ``True`` as "attend".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

__all__ = [
    "PackedBatch",
    "pack",
    "pack_documents",
    "position_ids",
    "block_causal_mask",
    "document_losses",
    "padded_doc_ids",
    "STRATEGIES",
]

STRATEGIES: tuple[str, ...] = ("next_fit", "first_fit")
IGNORE = -100


def _lengths(docs: Sequence[Any]) -> list[int]:
    out = []
    for i, d in enumerate(docs):
        n = int(d.numel()) if isinstance(d, torch.Tensor) else len(d)
        if isinstance(d, torch.Tensor) and d.dim() != 1:
            raise ValueError(f"document {i} must be a 1-D tensor of token ids, got shape {tuple(d.shape)}")
        if n < 1:
            raise ValueError(f"document {i} is empty")
        out.append(n)
    if not out:
        raise ValueError("no documents to pack")
    return out


def pack(lengths: Sequence[int], row_len: int, strategy: str = "next_fit") -> list[list[int]]:
    """Assign documents (by length) to rows of ``row_len`` tokens; returns the document indices of each row.

    ``next_fit`` keeps the data order (a new row starts when the next document does not fit);
    ``first_fit`` puts each document in the first row with room, which packs tighter and reorders a little.
    A document longer than ``row_len`` is an error: split it first, or raise ``row_len``.
    """
    if not isinstance(row_len, int) or isinstance(row_len, bool) or row_len < 1:
        raise ValueError(f"row_len must be a positive whole number, got {row_len!r}")
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown packing strategy {strategy!r}; choose one of: {', '.join(STRATEGIES)}")
    rows: list[list[int]] = []
    room: list[int] = []
    for i, n in enumerate(int(x) for x in lengths):
        if n < 1:
            raise ValueError(f"document {i} has length {n}; lengths must be >= 1")
        if n > row_len:
            raise ValueError(f"document {i} has {n} tokens, more than row_len={row_len}; split it or raise row_len")
        if strategy == "next_fit":
            target = len(rows) - 1 if rows and room[-1] >= n else None
        else:
            target = next((r for r, free in enumerate(room) if free >= n), None)
        if target is None:
            rows.append([])
            room.append(row_len)
            target = len(rows) - 1
        rows[target].append(i)
        room[target] -= n
    return rows


def position_ids(doc_ids: torch.Tensor) -> torch.Tensor:
    """Positions that restart at 0 wherever the document id changes along the last dimension.

    ``[[0, 0, 0, 1, 1, -1, -1]]`` -> ``[[0, 1, 2, 0, 1, 0, 1]]`` (padding, id -1, counts as one run).
    """
    if doc_ids.dim() != 2:
        raise ValueError(f"doc_ids must be (rows, length), got shape {tuple(doc_ids.shape)}")
    rows, length = doc_ids.shape
    idx = torch.arange(length, device=doc_ids.device).expand(rows, length)
    starts = torch.ones_like(doc_ids, dtype=torch.bool)
    starts[:, 1:] = doc_ids[:, 1:] != doc_ids[:, :-1]
    start_idx = torch.where(starts, idx, torch.zeros_like(idx))
    return idx - torch.cummax(start_idx, dim=1).values


def block_causal_mask(doc_ids: torch.Tensor) -> torch.Tensor:
    """(rows, 1, length, length) bool: position i may attend to j iff j <= i and both are in the same document."""
    if doc_ids.dim() != 2:
        raise ValueError(f"doc_ids must be (rows, length), got shape {tuple(doc_ids.shape)}")
    length = doc_ids.shape[1]
    same = doc_ids[:, :, None] == doc_ids[:, None, :]
    causal = torch.ones(length, length, dtype=torch.bool, device=doc_ids.device).tril()
    return (same & causal)[:, None]


@dataclass
class PackedBatch:
    """Rows of packed documents, all ``(rows, row_len)``. ``doc_ids`` is -1 on padding."""

    input_ids: torch.Tensor
    position_ids: torch.Tensor
    doc_ids: torch.Tensor
    labels: torch.Tensor
    attention_mask: torch.Tensor
    documents: list[list[int]] = field(default_factory=list)

    @property
    def shape(self) -> tuple[int, int]:
        return (int(self.input_ids.shape[0]), int(self.input_ids.shape[1]))

    @property
    def useful(self) -> int:
        """Tokens that belong to a document (not padding)."""
        return int((self.doc_ids >= 0).sum())

    @property
    def share(self) -> float:
        """Useful tokens / all positions."""
        return self.useful / self.input_ids.numel()

    def model_inputs(self) -> dict[str, torch.Tensor]:
        """Keyword arguments for a Hugging Face causal LM: ids, restarting positions, the 4-D mask, labels."""
        return {
            "input_ids": self.input_ids,
            "position_ids": self.position_ids,
            "attention_mask": self.attention_mask,
            "labels": self.labels,
        }

    def to(self, device: Any) -> PackedBatch:
        return PackedBatch(
            self.input_ids.to(device),
            self.position_ids.to(device),
            self.doc_ids.to(device),
            self.labels.to(device),
            self.attention_mask.to(device),
            [list(r) for r in self.documents],
        )


def pack_documents(
    documents: Sequence[torch.Tensor],
    row_len: int,
    rows_per_batch: int,
    *,
    strategy: str = "next_fit",
    pad_id: int = 0,
) -> list[PackedBatch]:
    """Pack 1-D token tensors into batches of ``rows_per_batch`` rows of ``row_len`` tokens.

    Every batch has the same shape; the last one is filled up with rows of padding. Padding has ``pad_id``,
    label -100 and document id -1. Document ids are the documents' indices in ``documents``.
    """
    lens = _lengths(documents)
    if not isinstance(rows_per_batch, int) or isinstance(rows_per_batch, bool) or rows_per_batch < 1:
        raise ValueError(f"rows_per_batch must be a positive whole number, got {rows_per_batch!r}")
    rows = pack(lens, row_len, strategy)
    while len(rows) % rows_per_batch:
        rows.append([])
    batches = []
    for b in range(0, len(rows), rows_per_batch):
        group = rows[b : b + rows_per_batch]
        ids = torch.full((len(group), row_len), pad_id, dtype=torch.long)
        docs = torch.full((len(group), row_len), -1, dtype=torch.long)
        labels = torch.full((len(group), row_len), IGNORE, dtype=torch.long)
        for r, members in enumerate(group):
            at = 0
            for d in members:
                tok = torch.as_tensor(documents[d], dtype=torch.long)
                n = tok.numel()
                ids[r, at : at + n] = tok
                docs[r, at : at + n] = d
                labels[r, at + 1 : at + n] = tok[1:]  # a document's first token has no earlier token to predict it
                at += n
        batches.append(PackedBatch(ids, position_ids(docs), docs, labels, block_causal_mask(docs), group))
    return batches


def padded_doc_ids(lengths: Sequence[int], width: int, first: int = 0) -> torch.Tensor:
    """Document ids for an ordinary padded batch (one document per row, ids ``first``, ``first+1``, ...)."""
    ls = [int(n) for n in lengths]
    if max(ls) > width:
        raise ValueError(f"a document of {max(ls)} tokens does not fit width {width}")
    out = torch.full((len(ls), width), -1, dtype=torch.long)
    for r, n in enumerate(ls):
        out[r, :n] = first + r
    return out


def document_losses(
    logits: torch.Tensor, labels: torch.Tensor, doc_ids: torch.Tensor, n_docs: int | None = None
) -> torch.Tensor:
    """Mean next-token cross-entropy of every document, from a packed (or padded) batch; shape ``(n_docs,)``.

    Causal-LM convention: the logits at position t predict the label at t + 1; labels of -100 are skipped.
    A document is identified by ``doc_ids`` at the predicted position. Documents with nothing to predict
    (one token) get NaN. Runs on any device; the result stays there.
    """
    if logits.dim() != 3 or labels.shape != logits.shape[:2] or doc_ids.shape != labels.shape:
        raise ValueError(
            "document_losses needs logits (rows, length, vocab) with labels and doc_ids (rows, length), got "
            f"{tuple(logits.shape)}, {tuple(labels.shape)}, {tuple(doc_ids.shape)}"
        )
    n = int(doc_ids.max()) + 1 if n_docs is None else int(n_docs)
    pred = logits[:, :-1].float()
    tgt = labels[:, 1:]
    docs = doc_ids[:, 1:]
    valid = tgt != IGNORE
    tok = torch.nn.functional.cross_entropy(
        pred.reshape(-1, pred.shape[-1]), tgt.clamp_min(0).reshape(-1), reduction="none"
    ).reshape(tgt.shape)
    tok = torch.where(valid, tok, torch.zeros_like(tok))
    idx = torch.where(valid, docs, torch.zeros_like(docs)).reshape(-1)
    sums = torch.zeros(n, dtype=tok.dtype, device=tok.device).index_add(0, idx, tok.reshape(-1))
    counts = torch.zeros(n, dtype=tok.dtype, device=tok.device).index_add(0, idx, valid.reshape(-1).to(tok.dtype))
    return sums / counts
