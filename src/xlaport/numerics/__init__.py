"""Where numbers go inf/NaN on the way to a TPU, and how to find the op that did it.

Modules: :mod:`~xlaport.numerics.nonfinite` (``NonFiniteFinder``: the first op that produced an
inf/NaN, forward or backward, eager or compiled) and :mod:`~xlaport.numerics.attention` (minimal
reproductions of attention inf/NaN in low precision and under compile, with their fixes, and
TorchTPU's SDPA path rule).
"""

from __future__ import annotations

from .nonfinite import NonFinite, NonFiniteFinder, assert_finite, is_finite, nonfinite_grads, nonfinite_state

__all__ = ["NonFinite", "NonFiniteFinder", "assert_finite", "is_finite", "nonfinite_grads", "nonfinite_state"]
