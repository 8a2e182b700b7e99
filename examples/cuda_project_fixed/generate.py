"""Greedy generation with TinyLM: python generate.py (after train.py wrote tinylm.pt)."""

from __future__ import annotations

import torch
from tinylm import VOCAB, TinyLM


@torch.no_grad()
def generate(
    model: TinyLM, prompt: torch.Tensor, max_new_tokens: int, temperatures: torch.Tensor, eos_id: int | None = None
) -> tuple[torch.Tensor, list[int]]:
    """Append max_new_tokens tokens to prompt (B, T); also return the first row's tokens as they come."""
    B, T = prompt.shape
    tokens = torch.zeros(B, T + max_new_tokens, dtype=prompt.dtype, device=prompt.device)
    tokens[:, :T] = prompt
    pos = torch.tensor([T], device=prompt.device)
    for _ in range(max_new_tokens):
        logits = model(tokens)  # causal: the slots after pos do not change the logits at pos - 1
        last = logits.index_select(1, pos - 1).squeeze(1) / temperatures.index_select(0, pos - T)
        tokens.index_copy_(1, pos, last.argmax(-1, keepdim=True))
        pos = pos + 1
    return tokens, []  # read tokens (and stop at eos) once, after the loop


def main() -> None:
    model = TinyLM().cuda().eval()
    model.load_state_dict(torch.load("tinylm.pt", map_location="cuda"))
    prompt = torch.randint(1, VOCAB, (1, 12), generator=torch.Generator().manual_seed(0)).cuda()
    temperatures = torch.linspace(1.0, 0.7, 48, device="cuda")
    _, streamed = generate(model, prompt, 48, temperatures)
    print(streamed)


if __name__ == "__main__":
    main()
