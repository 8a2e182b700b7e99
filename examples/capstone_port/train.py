"""Train TinyLM on any target: python train.py --target tpu (or neuron, cuda, cpu, auto)."""

from __future__ import annotations

import argparse

import torch
import torch.distributed as dist
from batching import make_loader
from tinylm import TinyLM, lm_loss

import xlaport


def train(t: xlaport.Target, batches: list[torch.Tensor], lr: float = 3e-4, seed: int = 0) -> dict:
    """One step per batch on target t: losses (read once, at the end) and programs compiled per step."""
    torch.manual_seed(seed)
    model = TinyLM().to(t.device)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, capturable=t.device.type != "cpu")  # step count on the device
    losses, compiled = [], []
    for tokens in batches:
        before = t.compiles()
        tokens = tokens.to(t.device)
        with t.autocast():
            logits = model(tokens[:, :-1])
        loss = lm_loss(logits.float(), tokens[:, 1:])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        t.sync()
        compiled.append(None if before is None else t.compiles() - before)
        losses.append(loss.detach())
    return {"losses": [float(x) for x in torch.stack(losses).cpu()], "compiled": compiled, "model": model}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--target", default="auto")
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    if dist.is_torchelastic_launched():
        dist.init_process_group()
    t = xlaport.target(args.target)
    print(t.banner())
    loader = make_loader([64, 128], batch_size=args.batch_size, seed=args.seed)
    batches = [b for _, b in zip(range(args.steps), loader)]
    out = train(t, batches, seed=args.seed)
    print(f"loss {out['losses'][0]:.3f} -> {out['losses'][-1]:.3f}")
    torch.save({k: v.cpu() for k, v in out["model"].state_dict().items()}, "tinylm.pt")


if __name__ == "__main__":
    main()
