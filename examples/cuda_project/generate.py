"""Greedy generation with TinyLM: python generate.py (after train.py wrote tinylm.pt)."""

from __future__ import annotations

import torch
from tinylm import VOCAB, TinyLM


@torch.no_grad()
def generate(
    model: TinyLM, prompt: torch.Tensor, max_new_tokens: int, temperatures: torch.Tensor, eos_id: int | None = None
) -> tuple[torch.Tensor, list[int]]:
    """Append max_new_tokens tokens to prompt (B, T); also return the first row's tokens as they come."""
    tokens = prompt
    streamed = []
    for step in range(max_new_tokens):
        logits = model(tokens)
        logits = logits[:, -1] / temperatures[step]
        next_tok = logits.argmax(-1, keepdim=True)
        tokens = torch.cat([tokens, next_tok], dim=1)
        streamed.append(next_tok[0].item())
        if eos_id is not None and (next_tok == eos_id).all():
            break
    return tokens, streamed


def main() -> None:
    model = TinyLM().cuda().eval()
    model.load_state_dict(torch.load("tinylm.pt", map_location="cuda"))
    prompt = torch.randint(1, VOCAB, (1, 12), generator=torch.Generator().manual_seed(0)).cuda()
    temperatures = torch.linspace(1.0, 0.7, 48, device="cuda")
    _, streamed = generate(model, prompt, 48, temperatures)
    print(streamed)


if __name__ == "__main__":
    main()
