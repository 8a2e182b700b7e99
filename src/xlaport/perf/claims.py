"""The launch figures in ``hardware.toml`` against physics: what each would require of the chip.

* FLUX.1 at 122.51 ms per step on one v6e: the MFU that implies for diffusers' ``FluxTransformer2DModel``
  (built on ``meta`` from the published FLUX.1 [dev] configuration) at the FluxPipeline defaults
  (1024 × 1024, 512 text tokens, one transformer call per step) and at other sizes and batches.
* Qwen 3 8B at 52% MFU on 8,192 TPU7x chips: the tokens per second per chip that implies.
* 2.01 cents per million tokens on v6e: the tokens per second per chip that price implies, against
  the memory-bound decode ceiling of an 8B model at a range of batch sizes and the compute-bound
  prefill ceiling.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .. import cost, xla_cpu
from .inference import decode_sweep, decoder_from_config, largest_batch
from .machine import chip
from .roofline import band
from .trace import StepTrace, trace_step

__all__ = ["flux_transformer", "flux_trace", "flux_claim", "qwen3_mfu_claim", "price_claim"]

_FLUX_ARGS = (
    "patch_size",
    "in_channels",
    "num_layers",
    "num_single_layers",
    "attention_head_dim",
    "num_attention_heads",
    "joint_attention_dim",
    "pooled_projection_dim",
    "guidance_embeds",
)


def flux_transformer(dtype: str = "bfloat16") -> Any:
    """diffusers' ``FluxTransformer2DModel`` on ``meta`` from the published FLUX.1 [dev] configuration."""
    import logging

    import torch

    # diffusers imports torch_xla when it is installed; on its CPU client, as xlaport.targets sets it, so that
    # torch_xla neither looks for a TPU nor logs that it defaulted
    xla_cpu.configure()
    from diffusers import FluxTransformer2DModel

    cfg = cost.model_config("flux1_dev_transformer")
    kw: dict[str, Any] = {k: cfg[k] for k in _FLUX_ARGS}
    kw["axes_dims_rope"] = tuple(cfg["axes_dims_rope"])
    logging.getLogger("diffusers").setLevel(logging.ERROR)
    with torch.device("meta"):
        model: Any = FluxTransformer2DModel(**kw)
        return model.to(getattr(torch, dtype))


def flux_trace(model: Any, height: int = 1024, width: int = 1024, batch: int = 1) -> StepTrace:
    """One denoising step (one transformer forward) at ``height`` × ``width`` pixels."""
    import torch

    cfg = cost.model_config("flux1_dev_transformer")
    f = int(cfg["vae_scale_factor"]) * 2  # VAE downsampling, then 2x2 latent packing
    if height % f or width % f:
        raise ValueError(f"height and width must be multiples of {f}")
    n_img, n_txt = (height // f) * (width // f), int(cfg["max_sequence_length"])
    dt = next(model.parameters()).dtype

    def z(*shape: int) -> torch.Tensor:
        return torch.zeros(shape, device="meta", dtype=dt)

    extra = dict(
        encoder_hidden_states=z(batch, n_txt, int(cfg["joint_attention_dim"])),
        pooled_projections=z(batch, int(cfg["pooled_projection_dim"])),
        timestep=z(batch),
        img_ids=z(n_img, 3),
        txt_ids=z(n_txt, 3),
        guidance=z(batch),
        return_dict=False,
    )

    class Step(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.m = model

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.m(hidden_states=x, **extra)[0]

    return trace_step(Step(), (z(batch, n_img, int(cfg["in_channels"])),), "inference", tokens=batch * n_img)


def flux_claim(
    sizes: Sequence[tuple[int, int]] = ((1024, 1024), (768, 768), (512, 512)),
    batches: Sequence[int] = (1, 2),
    model: Any = None,
) -> list[dict[str, Any]]:
    """Per size and batch: FLOPs per step, the v6e roofline floor and the MFU that 122.51 ms implies."""
    c = cost.claim("launch_flux_ms_per_step")
    m = chip(str(c.extra["chip"]))
    claimed_s = c.value / 1e3
    model = model if model is not None else flux_transformer()
    rows = []
    for h, w in sizes:
        for b in batches:
            tr = flux_trace(model, h, w, b)
            bd = band(tr, m)
            mfu = tr.flop / (claimed_s * m.peak_flop_per_s)
            rows.append(
                {
                    "height": h,
                    "width": w,
                    "batch": b,
                    "flop": tr.flop,
                    "params": tr.params,
                    "floor_s": bd.low_s,
                    "floor_bound": bd.low_bound,
                    "unfused_s": bd.high_s,
                    "implied_mfu": mfu,
                    "consistent": claimed_s >= bd.low_s,
                }
            )
    return rows


def qwen3_mfu_claim(seq_lens: Sequence[int] = (2048, 4096, 8192)) -> list[dict[str, Any]]:
    """Tokens/s per chip (and for all chips) that 52% MFU on 8,192 TPU7x means for Qwen3-8B training."""
    c = cost.claim("launch_qwen3_8b_mfu")
    cfg = cost.model_config(str(c.extra["model"]))
    total, embed = cost.decoder_params(**cfg)
    peak = cost.chip(str(c.extra["chip"])).peak_bf16_flop_per_s
    n_chips = int(c.extra["chips"])
    rows = []
    for t in seq_lens:
        fpt = cost.flop_per_token(
            total - embed,
            "training",
            n_layers=cfg["num_hidden_layers"],
            n_heads=cfg["num_attention_heads"],
            head_dim=cfg["head_dim"],
            seq_len=t,
        )
        per_chip = cost.tokens_per_s(c.value, fpt, peak)
        rows.append(
            {
                "seq_len": t,
                "flop_per_token": fpt,
                "tokens_per_s_per_chip": per_chip,
                "tokens_per_s_total": per_chip * n_chips,
            }
        )
    return rows


def price_claim(
    contexts: Sequence[int] = (2048, 8192),
    batches: Sequence[int] = (1, 8, 32, 64, 128, 256),
    model: str = "qwen3_8b",
) -> dict[str, Any]:
    """What 2.01 cents per million tokens on v6e needs per chip, against decode and prefill ceilings."""
    c = cost.claim("launch_qwen35_vllm_usd_per_mtok")
    m = chip(str(c.extra["chip"]))
    price = m.usd_per_hour
    assert price is not None
    needed = cost.tokens_per_s_per_chip_for_usd_per_million_tokens(c.value, price)
    shape = decoder_from_config(model)
    sweeps = []
    for ctx in contexts:
        for st in decode_sweep(shape, m, ctx, tuple(batches)):
            sweeps.append(
                {
                    "context": ctx,
                    "batch": st.batch,
                    "tokens_per_s": st.tokens_per_s,
                    "bound": st.bound,
                    "fits": st.fits,
                    "ratio_needed": needed / st.tokens_per_s,
                }
            )
    prefill = m.peak_flop_per_s / (2 * shape.params)  # tokens/s at 100% MFU, attention left out
    return {
        "usd_per_million_tokens": c.value,
        "usd_per_chip_hour": price,
        "needed_tokens_per_s_per_chip": needed,
        "decode": sweeps,
        "max_batch": {ctx: largest_batch(shape, m, 1, ctx) for ctx in contexts},
        "prefill_ceiling_tokens_per_s": prefill,
        "weights_gb": shape.params * 2 / 1e9,
        "hbm_gb": m.hbm_bytes / 1e9,
    }
