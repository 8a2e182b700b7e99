"""Synthetic documents of many lengths, each batch padded to the smallest bucket that holds it."""

from __future__ import annotations

import torch
from tinylm import MAX_LEN, PAD_ID, VOCAB
from torch.utils.data import DataLoader, Dataset

from xlaport.recompile.buckets import bucket_for, pad_to_length


class Documents(Dataset):
    def __init__(self, n: int, seed: int = 0) -> None:
        g = torch.Generator().manual_seed(seed)
        lengths = torch.randint(8, MAX_LEN + 1, (n,), generator=g)
        self.docs = [torch.randint(1, VOCAB, (int(n_tok),), generator=g) for n_tok in lengths]

    def __len__(self) -> int:
        return len(self.docs)

    def __getitem__(self, i: int) -> torch.Tensor:
        return self.docs[i]


class BucketCollate:
    def __init__(self, buckets: list[int]) -> None:
        self.buckets = sorted(buckets)

    def __call__(self, docs: list[torch.Tensor]) -> torch.Tensor:
        length = bucket_for(max(len(d) for d in docs), self.buckets)
        return torch.stack([pad_to_length(d, length, value=PAD_ID) for d in docs])


def make_loader(buckets: list[int], batch_size: int = 16, n_docs: int = 4096, seed: int = 0) -> DataLoader:
    return DataLoader(Documents(n_docs, seed), batch_size=batch_size, shuffle=True, drop_last=True,
                      collate_fn=BucketCollate(buckets), generator=torch.Generator().manual_seed(seed))
