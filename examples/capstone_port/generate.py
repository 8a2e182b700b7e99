"""Greedy generation with TinyLM into a preallocated buffer: one program per step, whatever the length; it streams
the first row's tokens as they come and stops at an end-of-sequence token, as the CUDA version does."""

from __future__ import annotations

import torch
from tinylm import VOCAB, TinyLM

import xlaport


@torch.no_grad()
def generate(
    model: TinyLM, prompt: torch.Tensor, max_new_tokens: int, temperatures: torch.Tensor, eos_id: int | None = None
) -> tuple[torch.Tensor, list[int]]:
    """Append up to max_new_tokens tokens to prompt (B, T), stopping once every row has produced eos_id; also return
    the first row's tokens as they come. Every step runs the same program (the buffer's shape never changes); one
    small read per step brings the streamed token and the stop flag to the host together."""
    B, T = prompt.shape
    tokens = torch.zeros(B, T + max_new_tokens, dtype=prompt.dtype, device=prompt.device)
    tokens[:, :T] = prompt
    pos = torch.tensor([T], device=prompt.device)
    eos = torch.tensor(-1 if eos_id is None else eos_id, device=prompt.device)
    streamed = []
    for _ in range(max_new_tokens):
        logits = model(tokens)  # causal: the slots after pos do not change the logits at pos - 1
        last = logits.index_select(1, pos - 1).squeeze(1) / temperatures.index_select(0, pos - T)
        next_tok = last.argmax(-1, keepdim=True)
        tokens.index_copy_(1, pos, next_tok)
        pos = pos + 1
        # streaming needs the token on the host each step, as the CUDA version's .item(): one read, with the stop flag
        first, stop = torch.stack([next_tok[0, 0], (next_tok == eos).all().to(next_tok.dtype)]).tolist()  # xlaport: ignore[host-sync-in-loop]
        streamed.append(int(first))
        if stop:
            break
    return tokens[:, : T + len(streamed)], streamed


def main() -> None:
    t = xlaport.target("auto")
    model = TinyLM().eval()
    model.load_state_dict(torch.load("tinylm.pt", map_location="cpu"))
    model = model.to(t.device)
    prompt = torch.randint(1, VOCAB, (1, 12), generator=torch.Generator().manual_seed(0)).to(t.device)
    temperatures = torch.linspace(1.0, 0.7, 48).to(t.device)
    _, streamed = generate(model, prompt, 48, temperatures)
    print(streamed)


if __name__ == "__main__":
    main()
