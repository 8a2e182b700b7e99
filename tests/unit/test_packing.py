"""Sequence packing: rows, position ids that restart, the block-diagonal causal mask, and losses equal to unpacked."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from xlaport.recompile.packing import (
    block_causal_mask,
    document_losses,
    pack,
    pack_documents,
    padded_doc_ids,
    position_ids,
)
from xlaport.zoo import get


def docs_of(lengths: list[int], seed: int = 0, vocab: int = 256) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return [torch.randint(4, vocab, (n,), generator=g) for n in lengths]


def test_next_fit_keeps_order_first_fit_packs_tighter() -> None:
    lengths = [6, 5, 3, 4, 2]
    assert pack(lengths, 8, "next_fit") == [[0], [1, 2], [3, 4]]
    assert pack(lengths, 8, "first_fit") == [[0, 4], [1, 2], [3]]
    for strategy in ("next_fit", "first_fit"):
        rows = pack(lengths, 8, strategy)
        assert sorted(i for r in rows for i in r) == list(range(len(lengths)))
        assert all(sum(lengths[i] for i in r) <= 8 for r in rows)


def test_pack_refuses_bad_input() -> None:
    with pytest.raises(ValueError, match="more than row_len=8"):
        pack([3, 9], 8)
    with pytest.raises(ValueError, match="unknown packing strategy"):
        pack([3], 8, "best_fit")
    with pytest.raises(ValueError, match="row_len must be a positive whole number"):
        pack([3], 0)
    with pytest.raises(ValueError, match="no documents"):
        pack_documents([], 8, 1)
    with pytest.raises(ValueError, match="1-D tensor"):
        pack_documents([torch.zeros(2, 2, dtype=torch.long)], 8, 1)


def test_position_ids_restart_per_document() -> None:
    doc = torch.tensor([[0, 0, 0, 1, 1, 2, -1, -1], [3, 3, 3, 3, 3, 3, 3, 3]])
    assert position_ids(doc).tolist() == [[0, 1, 2, 0, 1, 0, 0, 1], list(range(8))]


def test_block_causal_mask_by_hand() -> None:
    doc = torch.tensor([[0, 0, 1, 1, 1, -1]])
    m = block_causal_mask(doc)
    assert m.shape == (1, 1, 6, 6) and m.dtype == torch.bool
    expected = torch.tensor(
        [
            [1, 0, 0, 0, 0, 0],
            [1, 1, 0, 0, 0, 0],
            [0, 0, 1, 0, 0, 0],
            [0, 0, 1, 1, 0, 0],
            [0, 0, 1, 1, 1, 0],
            [0, 0, 0, 0, 0, 1],
        ],
        dtype=torch.bool,
    )
    assert torch.equal(m[0, 0], expected)
    assert m.any(-1).all(), "a fully masked row would make softmax 0/0"


def test_packed_rows_have_one_shape_and_labels_stop_at_document_starts() -> None:
    lengths = [5, 17, 9, 30, 3, 12, 21, 8]
    docs = docs_of(lengths)
    batches = pack_documents(docs, 40, 2)
    assert {b.shape for b in batches} == {(2, 40)}
    assert sum(b.useful for b in batches) == sum(lengths)
    seen = sorted(d for b in batches for row in b.documents for d in row)
    assert seen == list(range(len(docs)))
    for b in batches:
        for r, row in enumerate(b.documents):
            at = 0
            for d in row:
                n = lengths[d]
                assert torch.equal(b.input_ids[r, at : at + n], docs[d])
                assert (b.doc_ids[r, at : at + n] == d).all()
                assert b.position_ids[r, at : at + n].tolist() == list(range(n))
                assert b.labels[r, at] == -100, "the first token of a document must not be a target"
                assert torch.equal(b.labels[r, at + 1 : at + n], docs[d][1:])
                at += n
            assert (b.labels[r, at:] == -100).all() and (b.doc_ids[r, at:] == -1).all()
        assert 0 < b.share <= 1
    assert b.model_inputs().keys() == {"input_ids", "position_ids", "attention_mask", "labels"}


def test_masked_attention_equals_attention_per_document() -> None:
    torch.manual_seed(0)
    lengths = [3, 4, 1]
    doc = torch.tensor([[0, 0, 0, 1, 1, 1, 1, 2]])
    q, k, v = (torch.randn(1, 2, 8, 4) for _ in range(3))
    packed = F.scaled_dot_product_attention(q, k, v, attn_mask=block_causal_mask(doc))
    at = 0
    for n in lengths:
        s = slice(at, at + n)
        alone = F.scaled_dot_product_attention(q[:, :, s], k[:, :, s], v[:, :, s], is_causal=True)
        torch.testing.assert_close(packed[:, :, s], alone, atol=1e-6, rtol=1e-5)
        at += n


def test_document_losses_by_hand() -> None:
    logits = torch.zeros(1, 4, 3)
    logits[0, 0, 1] = 2.0  # position 0 predicts label 1 (token at position 1)
    labels = torch.tensor([[-100, 1, -100, 2]])
    doc = torch.tensor([[0, 0, 1, 1]])
    got = document_losses(logits, labels, doc, n_docs=2)
    expect0 = F.cross_entropy(logits[0, 0:1], torch.tensor([1]))
    expect1 = F.cross_entropy(logits[0, 2:3], torch.tensor([2]))
    torch.testing.assert_close(got, torch.stack([expect0, expect1]))
    with pytest.raises(ValueError, match="document_losses needs"):
        document_losses(logits[0], labels, doc)


@pytest.mark.parametrize("name", ["llama", "gpt_neox"])
def test_hf_model_loss_per_document_equals_unpacked(name: str) -> None:
    """A Hugging Face causal LM gives every document the same loss packed (restarting positions, block mask) as
    alone in an ordinary padded batch; the token-weighted batch loss and its gradients agree too."""
    spec = get(name)
    lengths = [5, 17, 9, 30, 3, 12, 21, 8]
    docs = docs_of(lengths, vocab=int(spec.config["vocab_size"]))
    model = spec.build(seed=0)
    ref = spec.build(seed=0)
    batches = pack_documents(docs, 40, 2)
    packed = torch.full((len(docs),), float("nan"))
    model.zero_grad()
    tokens = sum(n - 1 for n in lengths)
    for b in batches:
        out = model(**b.model_inputs())
        per_doc = document_losses(out.logits, b.labels, b.doc_ids, n_docs=len(docs))
        for row in b.documents:
            for d in row:
                packed[d] = per_doc[d].detach()
        n_pred = int((b.labels != -100).sum())
        (out.loss * n_pred / tokens).backward()  # HF's loss is the mean over this batch's predicted tokens
    width = max(lengths)
    ids = torch.zeros(len(docs), width, dtype=torch.long)
    mask = torch.zeros_like(ids)
    for i, d in enumerate(docs):
        ids[i, : len(d)] = d
        mask[i, : len(d)] = 1
    labels = ids.masked_fill(mask == 0, -100)
    ref.zero_grad()
    out = ref(input_ids=ids, attention_mask=mask, labels=labels)
    unpacked = document_losses(out.logits, labels, padded_doc_ids(lengths, width), n_docs=len(docs))
    out.loss.backward()
    torch.testing.assert_close(packed, unpacked.detach(), atol=1e-5, rtol=1e-5)
    for (pn, p), (_, r) in zip(model.named_parameters(), ref.named_parameters()):
        torch.testing.assert_close(p.grad, r.grad, atol=1e-6, rtol=1e-4, msg=lambda m, pn=pn: f"{pn}: {m}")
