"""A model to a per-chip estimate: load it on ``meta``, trace one step, and put the roofline, the
memory fit and the cost side by side for every chip.

Models come as ``module:factory`` / ``path/file.py:factory`` (the factory returns an ``nn.Module``,
or ``(module, inputs)``; it is called under ``torch.device("meta")``), as a transformers config (a
``config.json`` path or a dict with ``model_type``), or as the name of a model in the data file
(``qwen3_8b``). Nothing is downloaded and no weight is allocated.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .. import cost
from ..validate import integer
from .machine import Machine, chip
from .memory import Fit, fewest_chips
from .pricing import StepCost, step_cost
from .roofline import Band, band, regimes
from .trace import Mode, StepTrace, trace_step

if TYPE_CHECKING:
    import torch

    from .calibrate import Calibration

__all__ = [
    "DTYPES",
    "ChipEstimate",
    "Estimate",
    "Expected",
    "expected_step",
    "load_model",
    "example_inputs",
    "estimate",
    "estimate_trace",
    "checkpointed",
    "INFERENCE_MODES",
    "InferenceChip",
    "InferenceEstimate",
    "decoder_of",
    "estimate_inference",
]

DTYPES = ("bfloat16", "float16", "float32")


def _torch_dtype(name: str) -> Any:
    import torch

    if name not in DTYPES:
        raise ValueError(f"dtype must be one of {', '.join(DTYPES)}, got {name!r}")
    return getattr(torch, name)


def _hf_model(cfg: dict[str, Any]) -> Any:
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    if not isinstance(cfg, dict):
        raise ValueError(f"a transformers config is a JSON object with model_type, not a {type(cfg).__name__}")
    d = {k: v for k, v in cfg.items() if k not in ("name", "source", "date", "evidence", "published_params")}
    model_type = d.pop("model_type", None)
    if not model_type:
        raise ValueError("a transformers config needs model_type (e.g. 'qwen3', 'llama')")
    try:
        config = AutoConfig.for_model(model_type, **d)
    except (ValueError, KeyError, TypeError) as e:
        raise ValueError(f"transformers cannot build a config of type {model_type!r}: {_first_line(e, 120)}") from None
    try:
        with torch.device("meta"):
            return AutoModelForCausalLM.from_config(config, attn_implementation="sdpa")
    except (ValueError, KeyError, TypeError, RuntimeError, AttributeError) as e:
        raise ValueError(
            f"transformers cannot build a causal LM from this {model_type!r} config: {_first_line(e, 120)}"
        ) from None


def load_model(spec: str | dict[str, Any]) -> tuple[Any, tuple[Any, ...] | None]:
    """(module on meta, inputs or None) from a ``module:factory`` entry, a config path/dict or a data-file model name."""
    import torch

    if isinstance(spec, dict):
        return _hf_model(spec), None
    if not isinstance(spec, str) or not spec:
        raise ValueError("model must be MODULE:FACTORY, FILE.py:FACTORY, a config.json path or a known model name")
    if spec.endswith(".json"):
        if not os.path.isfile(spec):
            raise ValueError(f"no such config file: {spec}")
        try:
            with open(spec, encoding="utf-8") as fh:
                return _hf_model(json.load(fh)), None
        except json.JSONDecodeError as e:
            raise ValueError(f"{spec} is not valid JSON: {e.msg} (line {e.lineno})") from None
    if ":" not in spec:
        try:
            cfg = cost.model_config(spec)
        except ValueError:
            raise ValueError(
                f"model {spec!r} is neither MODULE:FACTORY, a config.json nor a known model "
                f"({', '.join(_known_models())})"
            ) from None
        return _hf_model(cfg), None
    where, _, name = spec.rpartition(":")
    try:
        if where.endswith(".py"):
            if not os.path.isfile(where):
                raise ValueError(f"no such file: {where}")
            s = importlib.util.spec_from_file_location(f"_xlaport_estimate_{abs(hash(where))}", where)
            if s is None or s.loader is None:
                raise ValueError(f"cannot load {where}")
            mod = importlib.util.module_from_spec(s)
            s.loader.exec_module(mod)
        else:
            mod = importlib.import_module(where)
    except ImportError as e:
        raise ValueError(f"cannot import {where!r}: {e}") from None
    except SyntaxError as e:
        raise ValueError(f"cannot load {where}: SyntaxError: {e.msg} (line {e.lineno})") from None
    except ValueError:
        raise
    except Exception as e:  # the reader's module raised while it was imported
        raise ValueError(f"importing {where} raised {type(e).__name__}: {_first_line(e)}") from None
    fn = getattr(mod, name, None)
    if not callable(fn):
        raise ValueError(f"{where} has no callable {name!r}")
    required = _required_parameters(fn)
    if required:
        raise ValueError(
            f"{spec}: the factory needs arguments ({', '.join(required)}); give a function that takes none and returns "
            "an nn.Module or (module, inputs)"
        )
    try:
        with torch.device("meta"):
            got = fn()
    except Exception as e:  # the reader's own code: one line, whatever it raised
        raise ValueError(f"{spec}() raised {type(e).__name__}: {_first_line(e)}") from None
    if isinstance(got, tuple) and len(got) == 2 and isinstance(got[0], torch.nn.Module):
        return got[0], tuple(got[1]) if isinstance(got[1], (tuple, list)) else (got[1],)
    if not isinstance(got, torch.nn.Module):
        raise ValueError(f"{spec} returned {type(got).__name__}, expected an nn.Module or (module, inputs)")
    return got, None


def _required_parameters(fn: Any) -> list[str]:
    """Names of the parameters ``fn`` cannot be called without (empty where its signature cannot be read)."""
    import inspect

    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return []
    return [
        p.name
        for p in sig.parameters.values()
        if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    ]


def _first_line(e: BaseException, limit: int = 160) -> str:
    text = (str(e).strip().splitlines() or [""])[0]
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _untraceable(e: BaseException, model: object, batch: int, seq_len: int) -> ValueError:
    """One line for a step that cannot be traced on the meta device, saying what to change."""
    text = str(e)
    name = model if isinstance(model, str) else type(model).__name__
    if "overflow" in text.lower():
        return ValueError(
            f"--batch {batch} × --seq-len {seq_len} is too large to trace: a tensor of the step would hold more elements "
            "than an int64 can count; give a smaller batch or sequence length"
        )
    if "nonzero" in text or "data-dependent" in text.lower() or "DataDependentOutputException" in type(e).__name__:
        return ValueError(
            f"cannot trace {name} on the meta device: an op whose output size depends on the data (torch.nonzero, "
            "boolean indexing) has no shape there; for a transformers mixture of experts set "
            '"experts_implementation": "grouped_mm" in its config'
        )
    return ValueError(f"cannot trace one step of {name} on the meta device: {type(e).__name__}: {_first_line(e)}")


def _known_models() -> list[str]:
    from ..cost.facts import _raw

    return [k for k, v in _raw()["models"].items() if "model_type" in v]


def example_inputs(model: Any, batch: int, seq_len: int, shapes: Sequence[str] = ()) -> tuple[Any, ...]:
    """Meta inputs: token ids ``(batch, seq_len)`` for a model with ``config.vocab_size``, else ``shapes``
    (``8x3x32x32`` float, ``8x64:int64``)."""
    import torch

    b = integer("batch", batch, minimum=1)
    s = integer("seq_len", seq_len, minimum=1)
    if shapes:
        out = []
        for spec in shapes:
            dims, _, dt = spec.partition(":")
            try:
                size = tuple(int(x) for x in dims.lower().split("x"))
            except ValueError:
                raise ValueError(f"bad input shape {spec!r}; expected e.g. 8x64 or 8x64:int64") from None
            if not size or min(size) < 1:
                raise ValueError(f"bad input shape {spec!r}; sizes must be positive")
            dtype = getattr(torch, dt or "float32", None)
            if not isinstance(dtype, torch.dtype):
                raise ValueError(f"bad dtype in input {spec!r}")
            out.append(torch.zeros(size, dtype=dtype, device="meta"))
        return tuple(out)
    vocab = getattr(getattr(model, "config", None), "vocab_size", None) or getattr(model, "vocab_size", None)
    if vocab is None:
        raise ValueError("the model has no config.vocab_size: give its inputs with --input (e.g. 8x3x32x32)")
    return (torch.zeros((b, s), dtype=torch.long, device="meta"),)


@dataclass(frozen=True)
class Expected:
    """The step time a published run of the same kind would suggest: the roofline floor over the fraction of it
    that fitted published runs of the same chip family, stack and regime reached (:mod:`xlaport.perf.calibrate`)."""

    floor_s: float  # the band's fast end: every matmul at peak, perfect fusion and overlap
    expected_s: float
    interval_s: tuple[float, float]  # (fast, slow)
    stack: str  # the published stack the fraction comes from
    level: str  # where the fit found its runs (e.g. "tpu/MaxText/dense", or a fallback)
    rests_on: tuple[str, ...]  # the published runs behind it


# The published training stack whose runs stand for each chip family (no TorchTPU or TorchNeuron training run has
# been published yet: TPU rests on MaxText, which is JAX; Trainium has no published training run at all).
CALIBRATION_STACK = {"tpu": "MaxText", "cuda": "torchtitan", "neuron": "NxD"}


def expected_step(trace: StepTrace, m: Machine, b: Band, cal: Calibration | None = None) -> Expected | None:
    """The calibrated step for a training trace (None for inference: not calibrated yet). ``cal``: a fit to reuse
    (:func:`xlaport.perf.calibrate.fit` of the published runs when not given)."""
    if trace.mode != "training" or not b.flop:
        return None
    from . import calibrate

    family = str(cost.chip(m.id).family)
    stack = CALIBRATION_STACK.get(family, "")
    regime = "moe" if any(o.name in ("_grouped_mm", "_scaled_grouped_mm") for o in trace.ops) else "dense"
    t, (fast, slow), ids, level = calibrate.predict(
        cal or calibrate.fit(), family, stack, "training", regime, b.compute_s
    )
    floor = b.low_s
    return Expected(floor, max(t, floor), (max(fast, floor), max(slow, floor)), stack, level, tuple(ids))


@dataclass(frozen=True)
class ChipEstimate:
    machine: Machine
    chips: int
    fit: Fit
    band: Band
    mfu: tuple[float, float]  # (slow end, fast end)
    cost: StepCost | None
    regimes: list[dict[str, Any]]
    expected: Expected | None = None

    def row(self) -> dict[str, Any]:
        r: dict[str, Any] = {
            "chip": self.machine.id,
            "name": self.machine.name,
            "chips": self.chips,
            "fewest_chips": self.fit.chips,
            "fits": self.chips >= self.fit.chips and self.fit.sample_fits,
            "sample_fits": self.fit.sample_fits,
            "step_s": [self.band.low_s, self.band.high_s],
            "low_bound": self.band.low_bound,
            "mfu": [self.mfu[0], self.mfu[1]],
            "collective_s": self.band.collective_s,
            "floor_step_s": self.band.low_s,
            "expected_step_s": None if self.expected is None else self.expected.expected_s,
            "interval_step_s": None if self.expected is None else list(self.expected.interval_s),
            "calibrated_on": None
            if self.expected is None
            else {"stack": self.expected.stack, "level": self.expected.level, "runs": list(self.expected.rests_on)},
        }
        if self.cost is not None:
            r["usd_per_chip_hour"] = self.cost.usd_per_chip_hour
            r["usd_per_step"] = list(self.cost.usd_per_step)
            if self.cost.usd_per_million_tokens:
                r["usd_per_million_tokens"] = sorted(self.cost.usd_per_million_tokens)
            if self.cost.usd_per_item:
                r["usd_per_item"] = list(self.cost.usd_per_item)
        return r


@dataclass(frozen=True)
class Estimate:
    trace: StepTrace
    chips: list[ChipEstimate]

    def to_dict(self) -> dict[str, Any]:
        return {"trace": self.trace.summary(), "chips": [c.row() for c in self.chips]}


def estimate_trace(
    trace: StepTrace,
    chip_ids: Sequence[str] | None = None,
    chips: int | None = None,
    *,
    steps_per_item: float = 1.0,
    price_term: str = "on_demand",
    tensor: int = 1,
) -> Estimate:
    """Per chip: the fewest chips that hold the step, the band on ``chips`` (default: that fewest, rounded up to a
    multiple of ``tensor``), ``tensor``-way tensor/sequence parallel, MFU and cost."""
    from . import calibrate

    cal = calibrate.fit() if trace.mode == "training" else None  # one fit for every chip
    out = []
    for cid in chip_ids or cost.chip_names():
        m = chip(cid, price_term=price_term)
        fit = fewest_chips(trace, m)
        t = integer("tensor", tensor, minimum=1)
        n = integer("chips", chips, minimum=1) if chips is not None else -(-fit.chips // t) * t
        b = band(trace, m, n, t)
        c = None
        if m.usd_per_hour is not None:
            c = step_cost(b, m.usd_per_hour, items=trace.items, tokens=trace.tokens, steps_per_item=steps_per_item)
        e = expected_step(trace, m, b, cal)
        out.append(ChipEstimate(m, n, fit, b, b.mfu(m.peak_flop_per_s), c, regimes(trace, m, n, t), e))
    return Estimate(trace, out)


def estimate(
    model: str | dict[str, Any] | torch.nn.Module,
    *,
    mode: Mode = "training",
    batch: int = 1,
    seq_len: int = 2048,
    dtype: str = "bfloat16",
    inputs: Sequence[str] = (),
    chip_ids: Sequence[str] | None = None,
    chips: int | None = None,
    optimizer: str = "adamw",
    checkpointing: str = "full",
    tensor: int = 1,
) -> Estimate:
    """Load (or take) a model on meta, trace one step at ``batch`` × ``seq_len`` in ``dtype``, estimate every chip
    (training: with ``checkpointing`` of activations, :func:`checkpointed`)."""
    import torch

    given = None
    if isinstance(model, torch.nn.Module):
        m = model
    else:
        m, given = load_model(model)
    m = m.to(_torch_dtype(dtype))
    try:
        args = given if given is not None and not inputs else example_inputs(m, batch, seq_len, inputs)
        trace = trace_step(m, args, mode, optimizer=optimizer)
    except (RuntimeError, NotImplementedError, OverflowError, TypeError, IndexError) as e:
        raise _untraceable(e, model, batch, seq_len) from None
    cfg = getattr(m, "config", None)
    layers, hidden = getattr(cfg, "num_hidden_layers", None), getattr(cfg, "hidden_size", None)
    if isinstance(layers, int) and isinstance(hidden, int):
        import dataclasses

        trace = dataclasses.replace(trace, layers=layers, hidden=hidden)
    if mode == "training":
        trace = checkpointed(trace, m, checkpointing)
    return estimate_trace(trace, chip_ids, chips, tensor=tensor)


CHECKPOINTING = ("full", "none")


def checkpointed(trace: StepTrace, model: Any, policy: str = "full") -> StepTrace:
    """The training trace with the activations ``policy`` keeps: ``none``, every saved tensor (as traced);
    ``full``, each layer's input (``tokens × hidden``) plus one layer's own activations while it is recomputed,
    the rest recomputed in backward (one more forward of FLOPs, which the calibrated fraction carries: the
    published runs checkpoint). A model with no ``config.num_hidden_layers`` / ``hidden_size`` keeps all."""
    import dataclasses

    if policy not in CHECKPOINTING:
        raise ValueError(f"checkpointing must be one of {', '.join(CHECKPOINTING)}, got {policy!r}")
    cfg = getattr(model, "config", None)
    layers, hidden = getattr(cfg, "num_hidden_layers", None), getattr(cfg, "hidden_size", None)
    if policy == "none" or not (layers and hidden and trace.tokens):
        return trace
    elem = trace.param_bytes / trace.params if trace.params else 2.0
    kept = trace.tokens * hidden * layers * elem + trace.activation_bytes / layers
    if kept >= trace.activation_bytes:
        return trace
    note = f"full activation checkpointing: {layers} layer inputs kept, the rest recomputed"
    return dataclasses.replace(trace, activation_bytes=kept, notes=[*trace.notes, note])


# ---------------------------------------------------------------------------------------------------------------
# Inference of a decoder LM: prefill, decode, serving (tensor-parallel, with a KV cache), calibrated on published
# serving runs.

INFERENCE_MODES = ("prefill", "decode", "serving")
# "int8": int8 weights multiplied in bf16 (weight-only, as torchao's Int8WeightOnlyConfig): half the bytes, the bf16 peak
PRECISIONS = ("bf16", "fp8", "int8")
# the published inference stack whose runs stand for each chip family
INFERENCE_STACK = {"tpu": "vLLM", "cuda": "TensorRT-LLM", "neuron": "NxD"}


def decoder_of(model: Any) -> Any:
    """The :class:`xlaport.perf.inference.Decoder` of a transformers causal LM built on meta: its parameters counted,
    the experts' share taken off for the active count of a mixture of experts."""
    from .inference import decoder

    cfg = getattr(model, "config", None)
    need = ("num_hidden_layers", "hidden_size", "num_attention_heads")
    if cfg is None or any(getattr(cfg, k, None) is None for k in need):
        raise ValueError(
            "prefill, decode and serving need a decoder LM given as a transformers config or a known model name "
            "(layers, hidden size and heads); trace another model with --mode inference"
        )
    total = float(sum(p.numel() for p in model.parameters()))
    experts = float(sum(p.numel() for n, p in model.named_parameters() if ".experts." in n))
    n_exp = getattr(cfg, "num_local_experts", None) or getattr(cfg, "num_experts", None)
    k = getattr(cfg, "num_experts_per_tok", None)
    active = total - experts * (1 - k / n_exp) if experts and n_exp and k else total
    emb = getattr(cfg, "vocab_size", 0) or 0
    return decoder(
        total,
        int(cfg.num_hidden_layers),
        int(cfg.hidden_size),
        int(cfg.num_attention_heads),
        int(getattr(cfg, "num_key_value_heads", None) or cfg.num_attention_heads),
        active=active,
        head_dim=getattr(cfg, "head_dim", None),
        vocab=int(emb),
        name=str(getattr(cfg, "name_or_path", "") or ""),
    )


@dataclass(frozen=True)
class InferenceChip:
    """One chip's estimate of an inference workload; times per step (prefill: the whole prefill, decode: one token
    for every sequence, serving: one output token of the batch)."""

    machine: Machine
    chips: int
    fits: bool
    floor_s: float
    tokens_per_step: int  # tokens a step yields (prefill: prompts x input; decode: batch; serving: concurrency)
    expected: Expected | None
    concurrency: int = 0  # serving: the requests served together

    def row(self) -> dict[str, Any]:
        e = self.expected
        r: dict[str, Any] = {
            "chip": self.machine.id,
            "name": self.machine.name,
            "chips": self.chips,
            "fits": self.fits,
            "floor_step_s": self.floor_s,
            "expected_step_s": None if e is None else e.expected_s,
            "interval_step_s": None if e is None else list(e.interval_s),
            "calibrated_on": None if e is None else {"stack": e.stack, "level": e.level, "runs": list(e.rests_on)},
        }
        if self.concurrency:
            r["concurrency"] = self.concurrency
        t = e.expected_s if e is not None else self.floor_s
        r["tokens_per_s_per_chip"] = self.tokens_per_step / t / self.chips
        if self.machine.usd_per_hour is not None:
            r["usd_per_chip_hour"] = self.machine.usd_per_hour
            r["usd_per_million_tokens"] = self.machine.usd_per_hour / 3600 / r["tokens_per_s_per_chip"] * 1e6
        return r


@dataclass(frozen=True)
class InferenceEstimate:
    mode: str
    model: Any  # the Decoder
    settings: dict[str, Any]
    chips: list[InferenceChip]

    def to_dict(self) -> dict[str, Any]:
        m = self.model
        return {
            "mode": self.mode,
            "model": {"params": m.params, "active": m.active, "layers": m.layers, "hidden": m.hidden},
            "settings": dict(self.settings),
            "chips": [c.row() for c in self.chips],
        }


def _tp_chips(model: Any, m: Machine, context: int, batch: int, wb: float, kvb: float, serve: bool = False) -> int:
    """The fewest chips, a power of two (tensor-parallel degrees are), whose HBM holds the weights and the caches;
    for serving, also with the weights in at most half of it, so the caches of a real batch fit beside them (on
    the fewest chips that barely hold the weights, a server runs a handful of requests at a far higher cost)."""
    from .inference import USABLE, weights_fit

    n = 1
    while n < 1 << 16 and (
        not weights_fit(model, m, n, batch, context, weight_bytes=wb, kv_bytes=kvb)
        or (serve and model.params * wb > 0.5 * USABLE * m.hbm_bytes * n)
    ):
        n *= 2
    return n


def estimate_inference(
    model: str | dict[str, Any] | Any,
    mode: str = "serving",
    *,
    batch: int = 1,
    seq_len: int = 2048,
    input_len: int = 1024,
    output_len: int = 1024,
    concurrency: int | None = None,
    precision: str = "bf16",
    chip_ids: Sequence[str] | None = None,
    chips: int | None = None,
    price_term: str = "on_demand",
) -> InferenceEstimate:
    """Per chip: the floor, the calibrated expected step and its interval, tokens per second per chip and cost per
    million tokens of a decoder LM's ``mode`` (``prefill`` of ``batch`` prompts of ``seq_len``; ``decode`` of one
    token for ``batch`` sequences at ``seq_len`` context; ``serving`` of ``concurrency`` requests of ``input_len``
    in and ``output_len`` out, default as many as fit). ``chips``: the tensor-parallel degree (default: the fewest,
    a power of two, that hold weights and caches). ``precision``: ``bf16``; ``fp8`` (one byte per weight, the chip's
    fp8 peak where the table has one); ``int8`` (one byte per weight, weight-only: multiplied at the bf16 peak)."""
    from . import calibrate
    from .inference import decode_s, largest_batch, prefill_s, serving

    if mode not in INFERENCE_MODES:
        raise ValueError(f"mode must be one of {', '.join(INFERENCE_MODES)}, got {mode!r}")
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, got {precision!r}")
    b, s = integer("batch", batch, minimum=1), integer("seq_len", seq_len, minimum=1)
    i, o = integer("input_len", input_len, minimum=1), integer("output_len", output_len, minimum=1)
    c = integer("concurrency", concurrency, minimum=1) if concurrency is not None else None
    import torch

    if isinstance(model, torch.nn.Module):
        dec = decoder_of(model)
    else:
        mod, _ = load_model(model)
        dec = decoder_of(mod)
    wb = 1.0 if precision in ("fp8", "int8") else 2.0
    cal = calibrate.fit()
    out = []
    for cid in chip_ids or cost.chip_names():
        m = chip(cid, price_term=price_term)
        facts = cost.chip(cid).facts
        peak = facts["peak_fp8_dense"].value if precision == "fp8" and "peak_fp8_dense" in facts else m.peak_flop_per_s
        ctx = i + o if mode == "serving" else s
        rows = (c or 1) if mode == "serving" else b
        n = (
            integer("chips", chips, minimum=1)
            if chips is not None
            else _tp_chips(dec, m, ctx, rows, wb, 2.0, serve=mode == "serving")
        )
        kw: dict[str, Any] = {"weight_bytes": wb, "peak_flop_per_s": peak}
        conc = 0
        if mode == "prefill":
            t, tokens = prefill_s(dec, m, n, b, s, **kw), b * s
            fits = largest_batch(dec, m, n, s, weight_bytes=wb) >= b
        elif mode == "decode":
            t, tokens = decode_s(dec, m, n, b, s, **kw), b
            fits = largest_batch(dec, m, n, s, weight_bytes=wb) >= b
        else:
            sv = serving(dec, m, n, i, o, c, **kw)
            t, tokens, fits, conc = sv.seconds / o, sv.concurrency, sv.fits, sv.concurrency
        family = str(cost.chip(cid).family)
        stack = INFERENCE_STACK.get(family, "")
        regime = mode + (" moe" if dec.moe else "")
        try:
            per_token = t / tokens * n if mode == "serving" else t  # serving is calibrated per output token per chip
            e, (fast, slow), ids, level = calibrate.predict(cal, family, stack, mode, regime, per_token)
            scale = t / per_token
            exp = Expected(t, max(e * scale, t), (max(fast * scale, t), max(slow * scale, t)), stack, level, tuple(ids))
        except ValueError:
            exp = None
        out.append(InferenceChip(m, n, fits, t, tokens, exp, conc))
    settings: dict[str, Any] = {"precision": precision}
    settings.update(
        {"batch": b, "seq_len": s} if mode != "serving" else {"input_len": i, "output_len": o, "concurrency": c}
    )
    return InferenceEstimate(mode, dec, settings, out)
