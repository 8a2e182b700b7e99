"""Checked exercises: one module of checkers per chapter, each checker returning a :class:`~xlaport.exercises.common.Check`.

>>> from xlaport.exercises import check_buckets
>>> print(check_buckets(lambda lengths, budget: [128, 256], budget=2))  # doctest: +ELLIPSIS
fail: buckets: on a job with batches of ...: the ...-frame batch fits no bucket (the largest is 256)

A reader passes their own answer, a function, to a checker in the chapter (``None`` prints "not attempted"); the
checker runs it on data the chapter never shows (its ``hidden_*`` functions and tables), so a value copied from the
page fails and code that does the right thing passes. CI runs the same checker on the solution folded under each
exercise and asserts that it passes.

Layout: ``common`` holds :class:`Check` and the helpers every checker uses; each chapter's checkers live in a module
named after the chapter's notebook (``first_steps``, ``port_training``, ...). A new chapter adds one module and one
import and one entry in :data:`CHAPTER_MODULES`.
"""

from __future__ import annotations

from . import (
    attention_numerics,
    audit_your_code,
    beyond_forward,
    checkpoints,
    custom_kernels,
    distributed,
    fine_tuning,
    first_steps,
    input_pipelines,
    memory_fit,
    op_fallbacks,
    port_inference,
    port_training,
    predict_before_renting,
    pricing_math,
    profiling,
    quantized_inference,
    recompile_storms,
    sd3_view_offsets,
    serving,
)
from .attention_numerics import *  # noqa: F403
from .audit_your_code import *  # noqa: F403
from .beyond_forward import *  # noqa: F403
from .checkpoints import *  # noqa: F403
from .common import NOT_ATTEMPTED, Check
from .custom_kernels import *  # noqa: F403
from .distributed import *  # noqa: F403
from .fine_tuning import *  # noqa: F403
from .first_steps import *  # noqa: F403
from .input_pipelines import *  # noqa: F403
from .memory_fit import *  # noqa: F403
from .op_fallbacks import *  # noqa: F403
from .port_inference import *  # noqa: F403
from .port_training import *  # noqa: F403
from .predict_before_renting import *  # noqa: F403
from .pricing_math import *  # noqa: F403
from .profiling import *  # noqa: F403
from .quantized_inference import *  # noqa: F403
from .recompile_storms import *  # noqa: F403
from .sd3_view_offsets import *  # noqa: F403
from .serving import *  # noqa: F403
from .workspace import reveal

#: The chapter modules, in the book's order; each lists its checkers in its ``__all__``.
CHAPTER_MODULES = (
    first_steps,
    port_training,
    port_inference,
    recompile_storms,
    sd3_view_offsets,
    op_fallbacks,
    attention_numerics,
    custom_kernels,
    pricing_math,
    predict_before_renting,
    audit_your_code,
    beyond_forward,
    distributed,
    memory_fit,
    profiling,
    input_pipelines,
    checkpoints,
    fine_tuning,
    serving,
    quantized_inference,
)

__all__ = ["CHAPTER_MODULES", "Check", "NOT_ATTEMPTED", "reveal"]
__all__ += first_steps.__all__
__all__ += port_training.__all__
__all__ += port_inference.__all__
__all__ += recompile_storms.__all__
__all__ += sd3_view_offsets.__all__
__all__ += op_fallbacks.__all__
__all__ += attention_numerics.__all__
__all__ += custom_kernels.__all__
__all__ += pricing_math.__all__
__all__ += predict_before_renting.__all__
__all__ += audit_your_code.__all__
__all__ += beyond_forward.__all__
__all__ += distributed.__all__
__all__ += memory_fit.__all__
__all__ += profiling.__all__
__all__ += input_pipelines.__all__
__all__ += checkpoints.__all__
__all__ += fine_tuning.__all__
__all__ += serving.__all__
__all__ += quantized_inference.__all__
