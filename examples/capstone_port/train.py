"""Train TinyLM on any target, on one device or several:

    python train.py --target tpu                                # one device (or neuron, cuda, cpu, auto)
    torchrun --nproc-per-node N train.py --target tpu           # N processes, data parallel, as the CUDA version
"""

from __future__ import annotations

import argparse

import torch
import torch.distributed as dist
from batching import make_loader
from tinylm import TinyLM, lm_loss
from torch.nn.parallel import DistributedDataParallel as DDP

import xlaport

# torch.distributed's backend per target: TorchTPU registers tpu_dist, TorchNeuron neuron; NCCL on CUDA, gloo on CPU.
BACKENDS = {"tpu": "tpu_dist", "neuron": "neuron", "cuda": "nccl", "cpu": "gloo"}


def process_group_backend(t: xlaport.Target) -> str:
    """The backend for target t's process group. The emulator is one process on one XLA:CPU device, with no
    collective backend for XLA tensors: check the distributed path on the cpu target (gloo) instead."""
    if t.emulated:
        raise ValueError(f"the emulated {t.name} target runs one process: run the data-parallel path on target 'cpu'")
    return BACKENDS.get(t.name, "gloo")


def train(
    t: xlaport.Target, batches: list[torch.Tensor], lr: float = 3e-4, seed: int = 0, *, distributed: bool = False
) -> dict:
    """One step per batch on target t (each rank passes its own batches when distributed): losses (read once, at
    the end; averaged over the ranks when distributed), programs compiled per step, and the model (unwrapped)."""
    torch.manual_seed(seed)  # the same initial weights on every rank, as DDP expects
    model = TinyLM().to(t.device)
    # DDP without device_ids: each process sees its own device (TorchTPU's distributed guide; CUDA keeps set_device)
    ddp = DDP(model) if distributed else model
    opt = torch.optim.AdamW(ddp.parameters(), lr=lr, capturable=t.device.type != "cpu")  # step count on the device
    losses, compiled = [], []
    for tokens in batches:
        before = t.compiles()
        tokens = tokens.to(t.device)
        with t.autocast():
            logits = ddp(tokens[:, :-1])
        loss = lm_loss(logits.float(), tokens[:, 1:])
        opt.zero_grad(set_to_none=True)
        loss.backward()  # DDP averages the gradients over the ranks here
        torch.nn.utils.clip_grad_norm_(ddp.parameters(), 1.0)
        opt.step()
        t.sync()
        compiled.append(None if before is None else t.compiles() - before)
        losses.append(loss.detach())
    stacked = torch.stack(losses)
    if distributed:  # every rank's loss, averaged: the loss of the global batch, as one process would see it
        dist.all_reduce(stacked)
        stacked = stacked / dist.get_world_size()
    return {"losses": [float(x) for x in stacked.cpu()], "compiled": compiled, "model": model}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--target", default="auto")
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    t = xlaport.target(args.target)
    distributed = dist.is_torchelastic_launched()
    if distributed:
        dist.init_process_group(backend=process_group_backend(t))
    rank = dist.get_rank() if distributed else 0
    print(t.banner())
    loader = make_loader([64, 128], batch_size=args.batch_size, seed=args.seed)
    batches = [b for _, b in zip(range(args.steps), loader)]
    # As the CUDA version: every rank draws the same seeded batches (shard them, e.g. with a DistributedSampler,
    # when each rank should see its own data); DDP keeps the ranks' weights identical either way.
    out = train(t, batches, seed=args.seed, distributed=distributed)
    print(f"loss {out['losses'][0]:.3f} -> {out['losses'][-1]:.3f}")
    if rank == 0:  # one copy of the weights, written once
        torch.save({k: v.cpu() for k, v in out["model"].state_dict().items()}, "tinylm.pt")
    if distributed:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
