"""Greedy generation with TinyLM into a preallocated buffer: one program per step, whatever the length."""

from __future__ import annotations

import torch
from tinylm import VOCAB, TinyLM

import xlaport


@torch.no_grad()
def generate(model: TinyLM, prompt: torch.Tensor, max_new_tokens: int, temperatures: torch.Tensor) -> torch.Tensor:
    B, T = prompt.shape
    tokens = torch.zeros(B, T + max_new_tokens, dtype=prompt.dtype, device=prompt.device)
    tokens[:, :T] = prompt
    pos = torch.tensor([T], device=prompt.device)
    for _ in range(max_new_tokens):
        logits = model(tokens)  # causal: the slots after pos do not change the logits at pos - 1
        last = logits.index_select(1, pos - 1).squeeze(1) / temperatures.index_select(0, pos - T)
        tokens.index_copy_(1, pos, last.argmax(-1, keepdim=True))
        pos = pos + 1
    return tokens


def main() -> None:
    t = xlaport.target("auto")
    model = TinyLM().eval()
    model.load_state_dict(torch.load("tinylm.pt", map_location="cpu"))
    model = model.to(t.device)
    prompt = torch.randint(1, VOCAB, (1, 12), generator=torch.Generator().manual_seed(0)).to(t.device)
    temperatures = torch.linspace(1.0, 0.7, 48).to(t.device)
    print(generate(model, prompt, 48, temperatures).cpu()[0, 12:].tolist())


if __name__ == "__main__":
    main()
