import torch
from xlaport.recompile.buckets import bucket_for, pad_to_length

BUCKETS = [32, 64, 128]


def collate(docs):
    length = bucket_for(max(len(d) for d in docs), BUCKETS)
    return torch.stack([pad_to_length(d, length, value=0) for d in docs])
