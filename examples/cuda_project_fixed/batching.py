"""Synthetic documents of many lengths, batched the usual way: each batch padded to its longest document."""

from __future__ import annotations

import torch
from tinylm import MAX_LEN, PAD_ID, VOCAB
from torch.nn.utils.rnn import pad_sequence
from torch.utils.data import DataLoader, Dataset


class Documents(Dataset):
    def __init__(self, n: int, seed: int = 0) -> None:
        g = torch.Generator().manual_seed(seed)
        lengths = torch.randint(8, MAX_LEN + 1, (n,), generator=g)
        self.docs = [torch.randint(1, VOCAB, (int(n_tok),), generator=g) for n_tok in lengths]

    def __len__(self) -> int:
        return len(self.docs)

    def __getitem__(self, i: int) -> torch.Tensor:
        return self.docs[i]


def collate(docs: list[torch.Tensor]) -> torch.Tensor:
    """Pad to the longest document in this batch: every batch has its own length."""
    return pad_sequence(docs, batch_first=True, padding_value=PAD_ID)


def make_loader(batch_size: int = 16, n_docs: int = 4096, seed: int = 0) -> DataLoader:
    return DataLoader(
        Documents(n_docs, seed),
        batch_size=batch_size,
        shuffle=True,
        collate_fn=collate,
        pin_memory=True,
        num_workers=2,
        generator=torch.Generator().manual_seed(seed),
    )
