"""Checked exercises: one checker per chapter exercise, each returning a :class:`~xlaport.exercises.checks.Check`.

>>> from xlaport.exercises import check_buckets
>>> print(check_buckets([120, 250, 301], [128, 256], budget=2))
fail: buckets: the 301-frame batch fits no bucket (the largest is 256)

A reader runs a checker on their own answer in the chapter (``None`` prints "not attempted"); CI runs the same
checker on the solution folded under each exercise and asserts that it passes.
"""

from __future__ import annotations

from .checks import (
    NOT_ATTEMPTED,
    Check,
    check_batch_shapes,
    check_block_shape,
    check_break_even_price,
    check_buckets,
    check_cpu_checkpoint,
    check_finite_attention,
    check_kernel_port,
    check_masked_softmax,
    check_offsets_fixed,
    check_padded_unique,
    check_prompt_buckets,
    check_rewrite,
    check_scan_clean,
    check_static_sampler,
    check_steady_compiles,
    check_usd_per_million_tokens,
    check_view_culprits,
)

__all__ = [
    "Check",
    "NOT_ATTEMPTED",
    "check_batch_shapes",
    "check_block_shape",
    "check_break_even_price",
    "check_buckets",
    "check_cpu_checkpoint",
    "check_finite_attention",
    "check_kernel_port",
    "check_masked_softmax",
    "check_offsets_fixed",
    "check_padded_unique",
    "check_prompt_buckets",
    "check_rewrite",
    "check_scan_clean",
    "check_static_sampler",
    "check_steady_compiles",
    "check_usd_per_million_tokens",
    "check_view_culprits",
]
