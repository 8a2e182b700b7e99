"""Train TinyLM on one GPU, or several with `torchrun --nproc-per-node N train.py`."""

from __future__ import annotations

import argparse
import os

import torch
import torch.distributed as dist
from batching import make_loader
from tinylm import TinyLM, lm_loss
from torch.nn.parallel import DistributedDataParallel as DDP

try:
    from apex.optimizers import FusedAdam  # a fused optimizer, when apex was built on this machine
except ImportError:
    FusedAdam = None


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()

    distributed = int(os.environ.get("WORLD_SIZE", "1")) > 1
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if distributed:
        dist.init_process_group(backend="nccl")
        torch.cuda.set_device(local_rank)
    device = torch.device("cuda", local_rank)
    torch.backends.cudnn.benchmark = True
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.manual_seed(args.seed)
    torch.cuda.manual_seed_all(args.seed)

    model = TinyLM().cuda()
    if distributed:
        model = DDP(model, device_ids=[local_rank])
    if FusedAdam is not None:
        opt = FusedAdam(model.parameters(), lr=3e-4)
    else:
        opt = torch.optim.AdamW(model.parameters(), lr=3e-4, fused=True)
    loader = make_loader(batch_size=args.batch_size, seed=args.seed)

    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for step, tokens in enumerate(loader):
        tokens = tokens.to(device, non_blocking=True)
        with torch.autocast(device.type, dtype=torch.bfloat16):
            logits = model(tokens[:, :-1])
            loss = lm_loss(logits.float(), tokens[:, 1:])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step % 10 == 0:
            print(f"step {step}: loss {loss.item():.3f}")
        if step + 1 == args.steps:
            break
    end.record()
    torch.cuda.synchronize()
    print(f"{start.elapsed_time(end) / 1000:.1f} s, peak memory {torch.cuda.max_memory_allocated() / 2**20:.0f} MiB")
    if not distributed or dist.get_rank() == 0:
        torch.save(model.state_dict(), "tinylm.pt")


if __name__ == "__main__":
    main()
