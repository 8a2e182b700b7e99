"""The model zoo: tiny Hugging Face ``transformers`` architectures built from configs, with random weights.

Each :class:`ModelSpec` names a ``transformers`` config class and model class and a small config (two
layers, width 64, vocabulary 256, dropout off), the shape of its inputs, and the axis along which real data
varies. :meth:`ModelSpec.build` constructs the model from the config alone: nothing is downloaded (no
``from_pretrained``, no tokenizer, no hub call), which ``tests/unit/test_zoo.py`` checks with the network blocked.
This module imports neither torch nor transformers, so ``xlaport zoo --list`` answers at once.

>>> from xlaport.zoo import registry
>>> registry.names()
('llama', 'mistral', ...)
>>> spec = registry.get("llama")
>>> model = spec.build(seed=0)                       # LlamaForCausalLM with random weights
>>> batch, useful = spec.batch([12, 30], pad_to=32, generator=torch.Generator().manual_seed(0))
>>> loss = model(**batch).loss
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

__all__ = ["ModelSpec", "REGISTRY", "FAMILIES", "TASKS", "names", "get", "parse_overrides", "PAD", "FIRST_TOKEN"]

FAMILIES: tuple[str, ...] = ("decoder", "moe", "encoder", "encoder-decoder", "speech", "vision")
TASKS: tuple[str, ...] = ("causal-lm", "masked-lm", "seq2seq", "speech-seq2seq", "image-classification")
PAD, BOS, EOS, MASK = 0, 1, 2, 3  # special token ids every text config here uses
FIRST_TOKEN = 4  # random tokens are drawn from [FIRST_TOKEN, vocab)
VOCAB = 256

_DECODER = dict(
    vocab_size=VOCAB,
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=2,
    num_attention_heads=4,
    max_position_embeddings=128,
    pad_token_id=PAD,
    bos_token_id=BOS,
    eos_token_id=EOS,
    use_cache=False,
    attention_dropout=0.0,
)
_ENCODER = dict(
    vocab_size=VOCAB,
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=2,
    num_attention_heads=4,
    max_position_embeddings=130,
    pad_token_id=PAD,
    hidden_dropout_prob=0.0,
    attention_probs_dropout_prob=0.0,
)
_SEQ2SEQ = dict(
    vocab_size=VOCAB,
    d_model=64,
    encoder_layers=2,
    decoder_layers=2,
    encoder_attention_heads=4,
    decoder_attention_heads=4,
    encoder_ffn_dim=128,
    decoder_ffn_dim=128,
    pad_token_id=PAD,
    bos_token_id=BOS,
    eos_token_id=EOS,
    decoder_start_token_id=BOS,
    dropout=0.0,
    attention_dropout=0.0,
    activation_dropout=0.0,
    use_cache=False,
)


@dataclass(frozen=True)
class ModelSpec:
    """One architecture of the zoo: what to build, how to feed it, and which input axis varies."""

    name: str
    family: str
    task: str
    config_class: str
    model_class: str
    config: Mapping[str, Any]
    summary: str
    layer_keys: tuple[str, ...] = ("num_hidden_layers",)

    # ----------------------------------------------------------------- building
    def with_overrides(self, overrides: Mapping[str, Any]) -> ModelSpec:
        """A copy whose config has ``overrides`` applied; ValueError for a key the config does not know."""
        if not overrides:
            return self
        unknown = [k for k in overrides if k not in self.config and not self._config_knows(k)]
        if unknown:
            raise ValueError(f"model {self.name!r}: {self.config_class} has no field {unknown[0]!r}")
        return replace(self, config={**self.config, **overrides})

    def with_layers(self, n: int) -> ModelSpec:
        """A copy with ``n`` layers (in the encoder and the decoder, for encoder-decoders)."""
        if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= 12:
            raise ValueError(f"layers must be a whole number from 1 to 12, got {n!r}")
        return replace(self, config={**self.config, **{k: n for k in self.layer_keys}})

    def for_fixed_len(self, n: int) -> ModelSpec:
        """A copy whose native input size is the fixed shape ``n`` (image models: the image side), so that a
        fixed-shape batch needs no resizing inside the model; other models are returned as they are."""
        if self.task != "image-classification":
            return self
        side = self.grid_for(n) * int(self.config["patch_size"])
        return replace(self, config={**self.config, "image_size": side})

    @property
    def layers(self) -> int:
        return int(self.config[self.layer_keys[0]])

    def _config_knows(self, key: str) -> bool:
        import transformers

        cls = getattr(transformers, self.config_class)
        return hasattr(cls(), key)

    def make_config(self) -> Any:
        """The ``transformers`` config object (ValueError, one line, if transformers rejects it)."""
        import transformers

        cls = getattr(transformers, self.config_class)
        try:
            cfg = cls(**self.config)
        except Exception as e:  # transformers raises ValueError/AssertionError/TypeError for bad configs
            raise ValueError(f"model {self.name!r}: {self.config_class} rejected the config: {_one_line(e)}") from None
        cfg._attn_implementation = "sdpa"
        return cfg

    def build(self, seed: int = 0) -> Any:
        """The model with random weights drawn after ``torch.manual_seed(seed)``, in train mode, on the CPU."""
        import torch
        import transformers

        cfg = self.make_config()
        torch.manual_seed(seed)
        try:
            model = getattr(transformers, self.model_class)(cfg)
        except Exception as e:
            raise ValueError(f"model {self.name!r}: {self.model_class} could not be built: {_one_line(e)}") from None
        model.train()
        return model

    # ----------------------------------------------------------------- inputs
    @property
    def varies(self) -> str:
        """What the varied-length run varies: tokens of the text, decoder tokens, or image patches."""
        return {
            "speech-seq2seq": "decoder tokens (the encoder always reads a fixed window)",
            "image-classification": "image patches (the resolution changes from batch to batch)",
            "seq2seq": "encoder and decoder tokens",
        }.get(self.task, "tokens")

    def batch(
        self, lengths: Sequence[int], pad_to: int | None = None, *, generator: Any = None
    ) -> tuple[dict[str, Any], int]:
        """Inputs (with labels) for one batch of items of the given ``lengths``, padded to ``pad_to``.

        ``pad_to`` defaults to the longest length. Returns ``(inputs, useful)``: the keyword arguments for
        the model, and the number of useful positions along the varying axis (real tokens, or patches of
        the native images), the figure throughput is counted in.
        """
        import torch

        ls = [int(n) for n in lengths]
        if not ls or min(ls) < 2:
            raise ValueError(f"lengths must be whole numbers >= 2, got {list(lengths)!r}")
        width = max(ls) if pad_to is None else int(pad_to)
        if width < max(ls):
            raise ValueError(f"pad_to={width} is shorter than the longest item ({max(ls)})")
        gen = generator if generator is not None else torch.Generator().manual_seed(0)
        vocab = int(self.config.get("vocab_size", VOCAB))

        def tokens(n: int, width: int) -> tuple[Any, Any]:
            ids = torch.full((width,), PAD, dtype=torch.long)
            ids[:n] = torch.randint(FIRST_TOKEN, vocab, (n,), generator=gen)
            mask = torch.zeros(width, dtype=torch.long)
            mask[:n] = 1
            return ids, mask

        if self.task in ("causal-lm", "masked-lm"):
            rows = [tokens(n, width) for n in ls]
            ids = torch.stack([r[0] for r in rows])
            mask = torch.stack([r[1] for r in rows])
            labels = ids.masked_fill(mask == 0, -100)
            return {"input_ids": ids, "attention_mask": mask, "labels": labels}, sum(ls)
        if self.task == "seq2seq":
            dec = [max(2, n // 2) for n in ls]
            enc_rows = [tokens(n, width) for n in ls]
            dec_rows = [tokens(n, max(2, width // 2)) for n in dec]
            ids = torch.stack([r[0] for r in enc_rows])
            mask = torch.stack([r[1] for r in enc_rows])
            dids = torch.stack([r[0] for r in dec_rows])
            dmask = torch.stack([r[1] for r in dec_rows])
            labels = dids.masked_fill(dmask == 0, -100)
            return {"input_ids": ids, "attention_mask": mask, "labels": labels}, sum(ls) + sum(dec)
        if self.task == "speech-seq2seq":
            frames = 2 * int(self.config["max_source_positions"])
            mels = int(self.config["num_mel_bins"])
            feats = torch.randn(len(ls), mels, frames, generator=gen)
            rows = [tokens(n, width) for n in ls]
            ids = torch.stack([r[0] for r in rows])
            mask = torch.stack([r[1] for r in rows])
            labels = ids.masked_fill(mask == 0, -100)
            return {"input_features": feats, "labels": labels}, sum(ls)
        if self.task == "image-classification":
            patch = int(self.config["patch_size"])
            grid = self.grid_for(width)
            images = []
            useful = 0
            for n in ls:
                g = self.grid_for(n)
                useful += g * g
                img = torch.randn(1, int(self.config.get("num_channels", 3)), g * patch, g * patch, generator=gen)
                if g != grid:  # a fixed-shape pipeline resizes every image to the one resolution it compiled
                    img = torch.nn.functional.interpolate(img, size=(grid * patch, grid * patch), mode="bilinear")
                images.append(img[0])
            labels = torch.randint(0, int(self.config.get("num_labels", 2)), (len(ls),), generator=gen)
            return {"pixel_values": torch.stack(images), "labels": labels, "interpolate_pos_encoding": True}, useful
        raise ValueError(f"model {self.name!r}: unknown task {self.task!r}")  # pragma: no cover

    def grid_for(self, length: int) -> int:
        """Image models: patches per side for an item of ``length`` patches (at least 2 per side)."""
        return max(2, round(math.sqrt(int(length))))

    def output(self, out: Any) -> Any:
        """The tensor the equivalence check compares: the logits."""
        return out.logits

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "family": self.family,
            "task": self.task,
            "config_class": self.config_class,
            "model_class": self.model_class,
            "config": dict(self.config),
            "summary": self.summary,
            "varies": self.varies,
        }


def _one_line(e: BaseException) -> str:
    """``Type: message`` on one line (a multi-line message is joined), at most 300 characters."""
    text = " ".join(line.strip() for line in str(e).strip().splitlines() if line.strip())
    return (f"{type(e).__name__}: {text}" if text else type(e).__name__)[:300]


def _spec(
    name: str,
    family: str,
    task: str,
    cfg: str,
    cls: str,
    config: Mapping[str, Any],
    summary: str,
    layer_keys: tuple[str, ...] = ("num_hidden_layers",),
) -> ModelSpec:
    return ModelSpec(name, family, task, cfg, cls, dict(config), summary, layer_keys)


_SPECS: tuple[ModelSpec, ...] = (
    _spec(
        "llama",
        "decoder",
        "causal-lm",
        "LlamaConfig",
        "LlamaForCausalLM",
        {**_DECODER, "num_key_value_heads": 2},
        "Llama: RMSNorm, rotary positions, SwiGLU, grouped-query attention",
    ),
    _spec(
        "mistral",
        "decoder",
        "causal-lm",
        "MistralConfig",
        "MistralForCausalLM",
        {**_DECODER, "num_key_value_heads": 2, "sliding_window": None},
        "Mistral: Llama-style with grouped-query attention",
    ),
    _spec(
        "qwen2",
        "decoder",
        "causal-lm",
        "Qwen2Config",
        "Qwen2ForCausalLM",
        {**_DECODER, "num_key_value_heads": 2},
        "Qwen2: Llama-style with biases on the q/k/v projections",
    ),
    _spec(
        "gemma",
        "decoder",
        "causal-lm",
        "GemmaConfig",
        "GemmaForCausalLM",
        {**_DECODER, "num_key_value_heads": 2, "head_dim": 16},
        "Gemma: GeGLU, scaled embeddings, tied output layer",
    ),
    _spec(
        "gpt2",
        "decoder",
        "causal-lm",
        "GPT2Config",
        "GPT2LMHeadModel",
        dict(
            vocab_size=VOCAB,
            n_embd=64,
            n_layer=2,
            n_head=4,
            n_positions=128,
            bos_token_id=BOS,
            eos_token_id=EOS,
            pad_token_id=PAD,
            resid_pdrop=0.0,
            embd_pdrop=0.0,
            attn_pdrop=0.0,
            use_cache=False,
        ),
        "GPT-2: learned positions, LayerNorm, Conv1D projections",
        ("n_layer",),
    ),
    _spec(
        "gpt_neox",
        "decoder",
        "causal-lm",
        "GPTNeoXConfig",
        "GPTNeoXForCausalLM",
        {**_DECODER, "hidden_dropout": 0.0, "rotary_pct": 0.5},
        "GPT-NeoX (Pythia): parallel attention and MLP, partial rotary",
    ),
    _spec(
        "opt",
        "decoder",
        "causal-lm",
        "OPTConfig",
        "OPTForCausalLM",
        dict(
            vocab_size=VOCAB,
            hidden_size=64,
            ffn_dim=128,
            num_hidden_layers=2,
            num_attention_heads=4,
            max_position_embeddings=128,
            word_embed_proj_dim=64,
            pad_token_id=PAD,
            bos_token_id=BOS,
            eos_token_id=EOS,
            dropout=0.0,
            attention_dropout=0.0,
            use_cache=False,
        ),
        "OPT: learned positions offset by the padding mask (a cumulative sum)",
    ),
    _spec(
        "mixtral",
        "moe",
        "causal-lm",
        "MixtralConfig",
        "MixtralForCausalLM",
        {**_DECODER, "num_key_value_heads": 2, "num_local_experts": 4, "num_experts_per_tok": 2},
        "Mixtral: sparse mixture of experts, top-2 of 4 experts per token",
    ),
    _spec(
        "qwen2_moe",
        "moe",
        "causal-lm",
        "Qwen2MoeConfig",
        "Qwen2MoeForCausalLM",
        {
            **_DECODER,
            "num_key_value_heads": 2,
            "num_experts": 4,
            "num_experts_per_tok": 2,
            "moe_intermediate_size": 64,
            "shared_expert_intermediate_size": 64,
        },
        "Qwen2-MoE: top-2 of 4 experts plus a gated shared expert",
    ),
    _spec(
        "bert",
        "encoder",
        "masked-lm",
        "BertConfig",
        "BertForMaskedLM",
        _ENCODER,
        "BERT: bidirectional encoder, masked-language-model head",
    ),
    _spec(
        "roberta",
        "encoder",
        "masked-lm",
        "RobertaConfig",
        "RobertaForMaskedLM",
        {**_ENCODER, "bos_token_id": BOS, "eos_token_id": EOS},
        "RoBERTa: BERT with positions counted from the padding mask",
    ),
    _spec(
        "distilbert",
        "encoder",
        "masked-lm",
        "DistilBertConfig",
        "DistilBertForMaskedLM",
        dict(
            vocab_size=VOCAB,
            dim=64,
            hidden_dim=128,
            n_layers=2,
            n_heads=4,
            max_position_embeddings=128,
            pad_token_id=PAD,
            dropout=0.0,
            attention_dropout=0.0,
        ),
        "DistilBERT: a distilled BERT without token types",
        ("n_layers",),
    ),
    _spec(
        "t5",
        "encoder-decoder",
        "seq2seq",
        "T5Config",
        "T5ForConditionalGeneration",
        dict(
            vocab_size=VOCAB,
            d_model=64,
            d_kv=16,
            d_ff=128,
            num_layers=2,
            num_decoder_layers=2,
            num_heads=4,
            pad_token_id=PAD,
            eos_token_id=EOS,
            decoder_start_token_id=PAD,
            dropout_rate=0.0,
            use_cache=False,
        ),
        "T5: encoder-decoder with relative position buckets",
        ("num_layers", "num_decoder_layers"),
    ),
    _spec(
        "bart",
        "encoder-decoder",
        "seq2seq",
        "BartConfig",
        "BartForConditionalGeneration",
        {**_SEQ2SEQ, "max_position_embeddings": 128},
        "BART: encoder-decoder with learned positions",
        ("encoder_layers", "decoder_layers"),
    ),
    _spec(
        "whisper",
        "speech",
        "speech-seq2seq",
        "WhisperConfig",
        "WhisperForConditionalGeneration",
        {**_SEQ2SEQ, "num_mel_bins": 16, "max_source_positions": 32, "max_target_positions": 128},
        "Whisper: conv stem over a fixed window of log-mel frames, then an encoder-decoder",
        ("encoder_layers", "decoder_layers"),
    ),
    _spec(
        "vit",
        "vision",
        "image-classification",
        "ViTConfig",
        "ViTForImageClassification",
        dict(
            hidden_size=64,
            num_hidden_layers=2,
            num_attention_heads=4,
            intermediate_size=128,
            image_size=32,
            patch_size=8,
            num_labels=10,
            hidden_dropout_prob=0.0,
            attention_probs_dropout_prob=0.0,
        ),
        "ViT: patch embedding (a strided conv), class token, encoder",
    ),
)

# Each text model gets a vocabulary of its own (256, 264, 272, ...). Two models with the same architecture and
# sizes (Llama and Mistral here) trace the same graphs, and in one process the second would reuse the programs the
# first compiled; a vocabulary size of its own gives each model its own embedding and output shapes, so its
# training step compiles as in a fresh job. (Small programs that depend only on the batch shape, such as a
# padding-mask check, can still be shared; `xlaport zoo` runs each model in a process of its own.)
_SPECS = tuple(
    replace(s, config={**s.config, "vocab_size": VOCAB + 8 * i}) if "vocab_size" in s.config else s
    for i, s in enumerate(_SPECS)
)
REGISTRY: dict[str, ModelSpec] = {s.name: s for s in _SPECS}


def names(family: str | None = None) -> tuple[str, ...]:
    """The registry's model names, optionally of one family (``"decoder"``, ``"moe"``, ...)."""
    if family is None:
        return tuple(REGISTRY)
    if family not in FAMILIES:
        raise ValueError(f"unknown family {family!r}; choose one of: {', '.join(FAMILIES)}")
    return tuple(n for n, s in REGISTRY.items() if s.family == family)


def get(name: str) -> ModelSpec:
    """The spec called ``name``; ValueError (one line, with the valid names) for anything else."""
    if not isinstance(name, str) or name not in REGISTRY:
        raise ValueError(f"unknown model {name!r}; choose from: {', '.join(REGISTRY)}")
    return REGISTRY[name]


def parse_overrides(items: Sequence[str]) -> dict[str, Any]:
    """``["num_hidden_layers=1", "hidden_act=gelu"]`` -> a dict with ints, floats, booleans and strings."""
    out: dict[str, Any] = {}
    for item in items:
        key, sep, raw = str(item).partition("=")
        key = key.strip()
        if not sep or not key.isidentifier():
            raise ValueError(f"config override must look like KEY=VALUE (e.g. num_hidden_layers=1), got {item!r}")
        out[key] = _parse_value(raw.strip())
    return out


def _parse_value(raw: str) -> Any:
    low = raw.lower()
    if low in ("true", "false"):
        return low == "true"
    if low in ("none", "null"):
        return None
    for conv in (int, float):
        try:
            return conv(raw)
        except ValueError:
            pass
    return raw
