"""xlaport.workloads: the tokenizer and texts made in memory, what an adapter run trains, the serving programs."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from xlaport.workloads.corpus import synthetic_texts, word_tokenizer
from xlaport.workloads.lora import frozen_digests, is_adapter, moved, trainable


def test_word_tokenizer_maps_words_and_pads() -> None:
    tok = word_tokenizer(10)
    assert tok.pad_token_id == 0 and tok.unk_token_id == 1
    assert tok("w0 w7 zz")["input_ids"] == [2, 9, 1]
    batch = tok.pad([{"input_ids": [2, 3]}, {"input_ids": [4]}], return_tensors="pt")
    assert batch["input_ids"].tolist() == [[2, 3], [4, 0]] and batch["attention_mask"].tolist() == [[1, 1], [1, 0]]


def test_synthetic_texts_are_seeded_and_avoid_a_multiple() -> None:
    a = synthetic_texts(40, (10, 70), seed=3, avoid_multiple_of=32)
    assert a == synthetic_texts(40, (10, 70), seed=3, avoid_multiple_of=32)
    assert a != synthetic_texts(40, (10, 70), seed=4, avoid_multiple_of=32)
    lengths = [len(t.split()) for t in a]
    assert min(lengths) >= 10 and max(lengths) <= 70 and all(n % 32 for n in lengths)


@pytest.mark.parametrize(
    "kwargs, words",
    [
        ({"n": 0, "lengths": (1, 5)}, "n must be"),
        ({"n": 3, "lengths": (5, 1)}, "longest length"),
        ({"n": 3, "lengths": 5}, "tuple"),
        ({"n": 3, "lengths": (32, 32), "avoid_multiple_of": 32}, "every length"),
    ],
)
def test_synthetic_texts_refuse_bad_input(kwargs: dict, words: str) -> None:
    with pytest.raises(ValueError, match=words):
        synthetic_texts(**kwargs)


class Adapted(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.base = nn.Linear(8, 4)
        self.lora_A = nn.Linear(8, 2, bias=False)
        self.lora_B = nn.Linear(2, 4, bias=False)
        self.base.requires_grad_(False)


def test_trainable_counts_adapters_and_names_the_rest() -> None:
    m = Adapted()
    r = trainable(m)
    assert (r.trainable, r.total, r.adapter) == (16 + 8, 36 + 24, 24) and r.adapters_only
    assert r.fraction == pytest.approx(24 / 60)
    m.base.bias.requires_grad_(True)
    r = trainable(m)
    assert not r.adapters_only and r.outside_adapters == ["base.bias"]
    assert is_adapter("model.layers.0.q_proj.lora_A.default.weight") and not is_adapter("model.norm.weight")
    with pytest.raises(ValueError, match="torch module"):
        trainable("model")


def test_frozen_digests_see_a_changed_frozen_weight_in_bf16() -> None:
    m = Adapted().to(torch.bfloat16)
    before = frozen_digests(m)
    assert set(before) == {"base.weight", "base.bias"}
    with torch.no_grad():
        m.lora_A.weight.add_(1)  # an adapter may move
    assert moved(before, frozen_digests(m)) == []
    with torch.no_grad():
        m.base.weight[0, 0] += 1
    assert moved(before, frozen_digests(m)) == ["base.weight"]
    with pytest.raises(ValueError, match="digest maps"):
        moved(before, None)  # type: ignore[arg-type]


def test_slot_server_matches_the_full_forward_pass() -> None:
    from xlaport.models import GPT
    from xlaport.workloads.serving import SlotCache, decode, prefill

    torch.manual_seed(0)
    model = GPT(vocab=32, max_len=24, d=16, heads=2, layers=2).eval()
    cache = SlotCache.empty(model, slots=3, max_len=24)
    assert cache.slots == 3 and cache.max_len == 24 and cache.nbytes == 2 * 2 * 3 * 2 * 24 * 8 * 4
    prompts = {0: [5, 6, 7], 2: [9, 1, 4, 4, 2]}
    tokens, positions = torch.zeros(3, dtype=torch.long), torch.zeros(3, dtype=torch.long)
    seqs = {}
    with torch.no_grad():
        for slot, p in prompts.items():
            padded = torch.tensor([p + [0] * (8 - len(p))])  # a bucket of 8
            first = prefill(model, cache, padded, torch.tensor([len(p)]), torch.tensor([slot]))
            seqs[slot] = [*p, int(first[0])]
            tokens[slot], positions[slot] = int(first[0]), len(p)
        for _ in range(4):
            nxt = decode(model, cache, tokens, positions)
            for slot in prompts:
                seqs[slot].append(int(nxt[slot]))
                tokens[slot], positions[slot] = nxt[slot], positions[slot] + 1
        for slot, p in prompts.items():  # greedy decoding of the whole sequence, no cache
            ids = list(p)
            for _ in range(5):
                ids.append(int(model(torch.tensor([ids]))[0, -1].argmax()))
            assert seqs[slot] == ids


def test_serving_helpers_refuse_bad_input() -> None:
    from xlaport.models import GPT
    from xlaport.workloads.serving import SlotCache, power_of_two_buckets

    assert power_of_two_buckets(16, 100) == [16, 32, 64, 100] and power_of_two_buckets(16, 16) == [16]
    with pytest.raises(ValueError, match="largest"):
        power_of_two_buckets(16, 8)
    model = GPT(vocab=8, max_len=8, d=8, heads=2, layers=1)
    with pytest.raises(ValueError, match="exceeds the model"):
        SlotCache.empty(model, slots=2, max_len=16)
    with pytest.raises(ValueError, match="slots"):
        SlotCache.empty(model, slots=0, max_len=8)


HLO = """HloModule m

%add (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
}

ENTRY %main (p0: s8[192,64], p1: bf16[192,1], p2: bf16[8,64]) -> (bf16[8,192]) {
  %p0 = s8[192,64]{1,0} parameter(0)
  %p1 = bf16[192,1]{1,0} parameter(1)
  %p2 = bf16[8,64]{1,0} parameter(2)
  %c = bf16[192,64]{1,0} convert(s8[192,64]{1,0} %p0)
  %d = bf16[8,192]{1,0} dot(bf16[8,64]{1,0} %p2, bf16[192,64]{1,0} %c), lhs_contracting_dims={1}
}
"""


def test_program_types_reads_the_entry_inputs_and_products() -> None:
    from xlaport.workloads.quantize import program_types

    k = program_types(HLO)
    assert k.parameters == {"s8": 192 * 64, "bf16": 2 * (192 + 8 * 64)}  # the lambda's f32[] inputs are not counted
    assert k.parameter_counts == {"s8": 1, "bf16": 2} and k.dots == {("bf16", "bf16"): 1}
    with pytest.raises(ValueError, match="no known size"):
        program_types(HLO.replace("s8[192,64]{1,0} parameter", "s4[192,64]{1,0} parameter"))
    with pytest.raises(ValueError, match="ENTRY"):
        program_types("not hlo")


def test_stored_bytes_counts_what_a_quantized_weight_holds() -> None:
    from torchao.quantization import Int8WeightOnlyConfig, quantize_

    from xlaport.workloads.quantize import stored_bytes

    m = nn.Sequential(nn.Linear(64, 32)).to(torch.bfloat16)
    assert stored_bytes(m) == (64 * 32 + 32) * 2
    quantize_(m, Int8WeightOnlyConfig(version=2))
    torch.set_float32_matmul_precision("highest")  # quantize_ changes it (see the quantization chapter)
    assert stored_bytes(m) == 64 * 32 + 32 * 2 + 32 * 2  # int8 data, a bf16 scale per row, the bf16 bias
    with pytest.raises(ValueError, match="torch module"):
        stored_bytes([1, 2])
