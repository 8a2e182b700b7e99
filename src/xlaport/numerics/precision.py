"""TorchTPU's float32 matmul precision, and the same rule applied to the emulated ``tpu`` target.

On a TPU the matrix unit multiplies bfloat16 inputs and accumulates in float32. A float32 matmul or
convolution at the default precision therefore runs as **one bf16 pass**: both inputs are rounded to
bfloat16 (8 significant bits instead of 24), the products are summed in float32. ``HIGH`` and ``HIGHEST``
split each input into two or three bfloat16 pieces and run 3 or 6 passes. TorchTPU maps
``torch.set_float32_matmul_precision`` onto these modes (``"medium"`` -> DEFAULT, ``"high"`` -> HIGH,
``"highest"`` -> HIGHEST) and offers ``torch.tpu.precision(Precision.X)`` as a context manager (rule
``matmul-precision`` of the ``tpu`` profile, with its sources). XLA:CPU computes float32 matmuls in full
float32, so without this module the emulator hides a numerical difference every port meets.

>>> from xlaport.numerics import precision
>>> t = xlaport.target("tpu")
>>> with precision.emulate(t):                 # the tpu profile's default: one bf16 pass
...     y = model(x.to(t.device))
>>> with precision.emulate(t, "highest"):      # or torch.set_float32_matmul_precision("highest") inside
...     y_full = model(x.to(t.device))

How the emulation works: while :func:`emulate` is active, kernels registered for the ``XLA`` dispatch key
wrap torch_xla's own ``mm``, ``bmm``, ``addmm``, ``baddbmm``, ``dot``, ``mv``, ``_convolution``,
``convolution_overrideable`` and the convolution backward ops (``einsum``, which torch_xla lowers in its
autograd kernel, runs PyTorch's composite einsum instead, whose ``bmm`` calls reach the wrappers). For float32 operands they round the inputs
to bfloat16 and back (``default``), or run the three products ``hi*hi + hi*lo + lo*hi`` of a two-piece
bfloat16 split (``high``); ``highest`` leaves XLA's float32 arithmetic alone. The rounding is traced into
the XLA graph, so lazy mode and ``torch.compile(backend="openxla")`` both see it; a compiled program keeps
the precision it was traced with. How this differs from the hardware:

- ``highest`` here is IEEE float32 on the CPU; the TPU's 6-pass mode drops the three smallest cross terms
  of a three-piece split, so it is close to float32 but not bit-identical.
- Products of bf16 pieces are exact in float32 on both, but the sums run in a different order (the MXU's
  systolic accumulation and tiling against XLA:CPU's dot), so results agree to float32 rounding, not bit
  for bit; and TorchTPU itself warns that the lowering of these modes "may vary across different hardwares".
- Only float32 operands are rounded (float16 inputs, which a TPU also rounds to bf16, are left alone), and
  matmul-like ops XLA:CPU does not route through the kernels above (a CPU fallback) run in float32.

:func:`emulated_matmul` computes the same modes for any two tensors (and the 6-pass algorithm too), so
the CPU can show what each mode does without torch_xla; :func:`needed_tolerance` and
:data:`HF_TOLERANCES` say what an equivalence test needs.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

__all__ = [
    "MODES",
    "PASSES",
    "TORCH_NAMES",
    "HF_TOLERANCES",
    "HF_TOLERANCE_SOURCE",
    "rule",
    "default_mode",
    "emulate",
    "mode",
    "current_mode",
    "round_bf16",
    "split_bf16",
    "emulated_matmul",
    "Comparison",
    "compare",
    "describe",
    "needed_tolerance",
    "tolerance_for",
    "emulated_ops",
]

MODES: tuple[str, ...] = ("default", "high", "highest")
PASSES: dict[str, int] = {"default": 1, "high": 3, "highest": 6}
# torch.set_float32_matmul_precision names -> TorchTPU modes (torch_tpu 0.2.0 wheel, _loader.py)
TORCH_NAMES: dict[str, str] = {"medium": "default", "high": "high", "highest": "highest"}
_MODE_TO_TORCH = {v: k for k, v in TORCH_NAMES.items()}
_TORCH_TPU_ERROR = "expected to be one of 'highest', 'high', or 'medium', got '{value}'"

# (atol, rtol) of Hugging Face's eager-vs-SDPA equivalence test on CPU, per dtype.
HF_TOLERANCES: dict[str, tuple[float, float]] = {"float32": (1e-6, 1e-4), "bfloat16": (1e-2, 1e-2)}
HF_TOLERANCE_SOURCE = (
    "huggingface/transformers, tests/test_modeling_common.py, _test_eager_matches_sdpa_inference "
    "(atols/rtols for ('cpu', False, dtype)), https://github.com/huggingface/transformers/blob/main/tests/"
    "test_modeling_common.py"
)


# --------------------------------------------------------------------------- the rule
def _profile_of(target: Any) -> Any:
    from ..profiles import Profile, profile

    if isinstance(target, Profile):
        return target
    if isinstance(target, str):
        return profile(target)
    p = getattr(target, "profile", None)
    if p is None:
        raise ValueError(f"expected a Target, a Profile or a target name, got {type(target).__name__}")
    return p


def rule(target: Any) -> Any:
    """The ``matmul_precision`` rule of ``target`` (a Target, Profile or name), or None if it has none."""
    rules = _profile_of(target).of_kind("matmul_precision")
    return rules[0] if rules else None


def default_mode(target: Any) -> str | None:
    """The precision mode float32 matmuls get on ``target`` by default (``"default"`` on tpu), or None."""
    r = rule(target)
    return None if r is None else str(r.value)


def _check_mode(m: str) -> str:
    if not isinstance(m, str) or m.lower() not in MODES:
        raise ValueError(f"unknown matmul precision {m!r}; choose one of: {', '.join(MODES)}")
    return m.lower()


# --------------------------------------------------------------------------- arithmetic
def round_bf16(x: torch.Tensor) -> torch.Tensor:
    """``x`` rounded to bfloat16 (round to nearest even) and returned in its own dtype."""
    return x.to(torch.bfloat16).to(x.dtype)


def split_bf16(x: torch.Tensor, pieces: int) -> list[torch.Tensor]:
    """``x`` as a sum of ``pieces`` bfloat16-representable tensors (largest first), in ``x``'s dtype."""
    if pieces not in (1, 2, 3):
        raise ValueError(f"pieces must be 1, 2 or 3, got {pieces!r}")
    out, rest = [], x
    for _ in range(pieces):
        part = round_bf16(rest)
        out.append(part)
        rest = rest - part
    return out


def emulated_matmul(a: torch.Tensor, b: torch.Tensor, mode: str | int) -> torch.Tensor:
    """``a @ b`` as a TPU computes it at ``mode`` (``"default"``, ``"high"``, ``"highest"``, or 1/3/6 passes).

    ``"highest"`` is plain float32 (what the emulator does); ``6`` runs the 6-pass bf16 algorithm itself
    (three pieces per input, the six largest cross products), which is what the hardware does for HIGHEST.
    """
    if isinstance(mode, int) and not isinstance(mode, bool):
        if mode not in (1, 3, 6):
            raise ValueError(f"passes must be 1, 3 or 6, got {mode!r}")
        passes = mode
    else:
        m = _check_mode(str(mode))
        if m == "highest":
            return a @ b
        passes = PASSES[m]
    if passes == 1:
        return round_bf16(a) @ round_bf16(b)
    if passes == 3:
        ah, al = split_bf16(a, 2)
        bh, bl = split_bf16(b, 2)
        return (ah @ bl + al @ bh) + ah @ bh
    a0, a1, a2 = split_bf16(a, 3)
    b0, b1, b2 = split_bf16(b, 3)
    small = (a0 @ b2 + a2 @ b0) + a1 @ b1
    return (small + (a0 @ b1 + a1 @ b0)) + a0 @ b0


# --------------------------------------------------------------------------- tolerances
@dataclass(frozen=True)
class Comparison:
    """How far ``actual`` is from ``expected`` (from :func:`compare`)."""

    max_abs: float
    max_rel: float
    tol_needed: float  # the smallest t with allclose(actual, expected, atol=t, rtol=t)
    rel_l2: float  # ||actual - expected|| / ||expected||
    finite: bool
    diff: torch.Tensor | None = field(default=None, repr=False, compare=False)
    ref: torch.Tensor | None = field(default=None, repr=False, compare=False)

    def passes(self, atol: float, rtol: float) -> bool:
        """``torch.allclose``-style check: finite, and ``|a - e| <= atol + rtol * |e|`` everywhere."""
        if not self.finite or self.diff is None or self.ref is None:
            return False
        return bool((self.diff <= atol + rtol * self.ref.abs()).all())

    def as_dict(self) -> dict[str, float | bool]:
        return {k: getattr(self, k) for k in ("max_abs", "max_rel", "tol_needed", "rel_l2", "finite")}


def compare(actual: torch.Tensor, expected: torch.Tensor) -> Comparison:
    """Compare two tensors (on the CPU, in float64): max abs/rel error, the tolerance needed, relative L2."""
    if not isinstance(actual, torch.Tensor) or not isinstance(expected, torch.Tensor):
        raise ValueError("compare needs two tensors")
    if actual.shape != expected.shape:
        raise ValueError(f"compare: shapes differ, {tuple(actual.shape)} vs {tuple(expected.shape)}")
    a = actual.detach().to("cpu", torch.float64)
    e = expected.detach().to("cpu", torch.float64)
    finite = bool(torch.isfinite(a).all()) and bool(torch.isfinite(e).all())
    if not finite:
        nan = float("nan")
        return Comparison(nan, nan, nan, nan, False)
    if a.numel() == 0:
        return Comparison(0.0, 0.0, 0.0, 0.0, True, a, e)
    diff = (a - e).abs()
    norm = float(e.norm())
    return Comparison(
        max_abs=float(diff.max()),
        max_rel=float((diff / e.abs().clamp_min(1e-30)).max()),
        tol_needed=float((diff / (1 + e.abs())).max()),
        rel_l2=float(diff.norm()) / norm if norm > 0 else float(diff.norm()),
        finite=True,
        diff=diff,
        ref=e,
    )


# How the emulator computes each mode's float32 matmul (emulated_matmul and the XLA kernels of emulate()).
EMULATED_AS: dict[str, str] = {"default": "rounded inputs", "high": "3 bf16 products", "highest": "float32"}


def describe(mode: str, c: Comparison) -> str:
    """One line on what ``mode`` did to a result: passes, how the emulator computes it, the largest difference
    and the tolerance it needs, and whether Hugging Face's float32 and bfloat16 equivalence tests pass."""
    mode = _check_mode(mode)
    verdicts = ", ".join(
        f"HF {dtype} test {'passes' if c.passes(*HF_TOLERANCES[dtype]) else 'FAILS'}"
        for dtype in ("float32", "bfloat16")
    )
    n = PASSES[mode]
    return (
        f"{mode:8s} ({n} pass{'es' if n > 1 else ''}, emulated as {EMULATED_AS[mode]}): max |diff| {c.max_abs:.1e}, "
        f"tolerance needed {c.tol_needed:.1e}, {verdicts}"
    )


def needed_tolerance(actual: torch.Tensor, expected: torch.Tensor) -> float:
    """The smallest ``t`` for which ``torch.allclose(actual, expected, atol=t, rtol=t)`` holds."""
    return compare(actual, expected).tol_needed


def tolerance_for(mode: str | None) -> tuple[float, float]:
    """(atol, rtol) an HF-style equivalence test needs at ``mode``: float32's at high/highest/None, bf16's at default.

    One bf16 pass rounds every matmul input to bfloat16, so its outputs carry bfloat16 input error and the
    test needs Hugging Face's bfloat16 tolerance; 3 and 6 passes keep 16 and 24 bits, within float32's.
    """
    if mode is None:
        return HF_TOLERANCES["float32"]
    return HF_TOLERANCES["bfloat16" if _check_mode(mode) == "default" else "float32"]


# --------------------------------------------------------------------------- the emulation
class _State(threading.local):
    inside = False


_TLS = _State()
_EMU: dict[str, Any] = {"lib": None, "ops": (), "mode": None, "depth": 0, "patched": None}


def current_mode() -> str | None:
    """The mode the emulator applies now (None: not emulating, plain float32)."""
    return _EMU["mode"]


def emulated_ops() -> tuple[str, ...]:
    """The ATen ops whose XLA kernels the emulation wraps (empty before the first :func:`emulate`)."""
    return _EMU["ops"]


def _bilinear(call: Callable[[list[Any]], Any], args: list[Any], i: int, j: int, combine: Any = None) -> Any:
    """Run ``call`` at the current mode, where ``args[i]`` and ``args[j]`` are the matmul operands."""
    mode = _EMU["mode"]
    x, y = args[i], args[j]
    if mode in (None, "highest") or not (_is_f32(x) and _is_f32(y)):
        return call(args)
    if mode == "default":
        a = list(args)
        a[i], a[j] = round_bf16(x), round_bf16(y)
        return call(a)
    xh, xl = split_bf16(x, 2)
    yh, yl = split_bf16(y, 2)
    parts = []
    for p, q in ((xh, yl), (xl, yh), (xh, yh)):
        a = list(args)
        a[i], a[j] = p, q
        parts.append(a)
    if combine is not None:
        return combine(parts)
    return (call(parts[0]) + call(parts[1])) + call(parts[2])


def _is_f32(x: Any) -> bool:
    return isinstance(x, torch.Tensor) and x.dtype == torch.float32


def _affine(product: Callable[[Any, Any], Any]) -> Callable[[list[Any]], Any]:
    """combine for addmm/baddbmm: beta*self + alpha*(sum of the three products), bias added once."""

    def combine(parts: list[list[Any]]) -> Any:
        first = parts[0]
        beta = first[3] if len(first) > 3 else 1
        alpha = first[4] if len(first) > 4 else 1
        total = (product(parts[0][1], parts[0][2]) + product(parts[1][1], parts[1][2])) + product(
            parts[2][1], parts[2][2]
        )
        return beta * first[0] + alpha * total if beta != 0 else alpha * total

    return combine


def _conv_backward(call: Callable[[list[Any]], Any], args: list[Any], mask_at: int) -> Any:
    """convolution_backward(_overrideable): grad_input is bilinear in (grad, weight), grad_weight in (input, grad)."""
    mode = _EMU["mode"]
    go, x, w = args[0], args[1], args[2]
    if mode in (None, "highest") or not (_is_f32(go) and _is_f32(x) and _is_f32(w)):
        return call(args)
    if mode == "default":
        a = list(args)
        a[0], a[1], a[2] = round_bf16(go), round_bf16(x), round_bf16(w)
        return call(a)
    mask = list(args[mask_at])
    gh, gl = split_bf16(go, 2)
    xh, xl = split_bf16(x, 2)
    wh, wl = split_bf16(w, 2)
    no_bias = [mask[0], mask[1], False]
    outs = []
    for g_, x_, w_ in ((gh, xh, wh), (gl, xh, wh), (gh, xl, wl)):
        a = list(args)
        a[0], a[1], a[2], a[mask_at] = g_, x_, w_, no_bias
        outs.append(call(a))
    gi = gw = gb = None
    if mask[0]:
        gi = (outs[1][0] + outs[2][0]) + outs[0][0]
    if mask[1]:
        gw = (outs[1][1] + outs[2][1]) + outs[0][1]
    if len(mask) > 2 and mask[2]:  # the bias gradient is a sum, not a matmul: from the full-precision grad
        a = list(args)
        a[mask_at] = [False, False, True]
        gb = call(a)[2]
    return gi, gw, gb


_DECOMPOSE_UNDER_AUTOGRAD: tuple[str, ...] = ("einsum",)


# op -> how to run it given (call, args)
_WRAPPERS: dict[str, Callable[[Callable[[list[Any]], Any], list[Any]], Any]] = {
    "mm": lambda call, a: _bilinear(call, a, 0, 1),
    "bmm": lambda call, a: _bilinear(call, a, 0, 1),
    "dot": lambda call, a: _bilinear(call, a, 0, 1),
    "mv": lambda call, a: _bilinear(call, a, 0, 1),
    "addmm": lambda call, a: _bilinear(call, a, 1, 2, _affine(torch.mm)),
    "baddbmm": lambda call, a: _bilinear(call, a, 1, 2, _affine(torch.bmm)),
    "_convolution": lambda call, a: _bilinear_conv(call, a),
    "convolution_overrideable": lambda call, a: _bilinear_conv(call, a),
    "convolution_backward": lambda call, a: _conv_backward(call, a, 10),
    "convolution_backward_overrideable": lambda call, a: _conv_backward(call, a, 9),
}


def _bilinear_conv(call: Callable[[list[Any]], Any], args: list[Any]) -> Any:
    """Convolution forward: operands (input, weight); the bias (args[2]) is added once, in float32."""
    bias = args[2]

    def combine(parts: list[list[Any]]) -> Any:
        outs = []
        for p in parts:
            a = list(p)
            a[2] = None
            outs.append(call(a))
        total = (outs[0] + outs[1]) + outs[2]
        if bias is None:
            return total
        shape = [1, -1] + [1] * (total.dim() - 2)
        return total + bias.reshape(shape)

    return _bilinear(call, args, 0, 1, combine)


def _install() -> tuple[str, ...]:
    """Register the wrapping kernels on the XLA key (once per process). Needs torch_xla loaded."""
    if _EMU["lib"] is not None:
        return _EMU["ops"]
    if "torch_xla" not in sys.modules:
        raise RuntimeError("the matmul-precision emulation needs torch_xla loaded (use xlaport.target('tpu') first)")
    import warnings

    lib = torch.library.Library("aten", "IMPL")
    covered = []
    for name, wrap in _WRAPPERS.items():
        full = f"aten::{name}"
        if not torch._C._dispatch_has_kernel_for_dispatch_key(full, "XLA"):
            continue
        original = torch._C._dispatch_get_computed_kernel_for_dispatch_key(full, "XLA")

        def kernel(keyset: Any, *args: Any, _orig: Any = original, _wrap: Any = wrap, **kwargs: Any) -> Any:
            if _TLS.inside or _EMU["mode"] in (None, "highest"):
                return _orig.call_boxed(keyset, *args, **kwargs)

            def call(a: Sequence[Any]) -> Any:
                return _orig.call_boxed(keyset, *a, **kwargs)

            _TLS.inside = True
            try:
                return _wrap(call, list(args))
            finally:
                _TLS.inside = False

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "Overriding a previously registered kernel": that is the point
            lib.impl(name, kernel, "XLA", with_keyset=True)
        covered.append(full)
    # torch_xla lowers einsum in its own autograd kernel (AutogradXLA), below which no matmul op is dispatched:
    # while a reduced mode is on, run PyTorch's composite einsum instead, whose bmm calls reach the kernels above.
    for name in _DECOMPOSE_UNDER_AUTOGRAD:
        full = f"aten::{name}"
        if not torch._C._dispatch_has_kernel_for_dispatch_key(full, "AutogradXLA"):
            continue
        original = torch._C._dispatch_get_computed_kernel_for_dispatch_key(full, "AutogradXLA")
        overload = getattr(torch.ops.aten, name).default

        def autograd_kernel(keyset: Any, *args: Any, _orig: Any = original, _op: Any = overload, **kw: Any) -> Any:
            if _TLS.inside or _EMU["mode"] in (None, "highest"):
                return _orig.call_boxed(keyset, *args, **kw)
            return _op.decompose(*args, **kw)  # PyTorch's CompositeImplicitAutograd kernel

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            lib.impl(name, autograd_kernel, "AutogradXLA", with_keyset=True)
        covered.append(full)
    _EMU["lib"], _EMU["ops"] = lib, tuple(covered)
    return _EMU["ops"]


def _patch_torch() -> None:
    """Mirror TorchTPU: torch.set/get_float32_matmul_precision read and set the emulated mode."""
    if _EMU["patched"] is not None:
        return
    orig_set, orig_get = torch.set_float32_matmul_precision, torch.get_float32_matmul_precision

    def set_precision(precision: str) -> None:
        if precision not in TORCH_NAMES:
            raise ValueError(_TORCH_TPU_ERROR.format(value=precision))
        _EMU["mode"] = TORCH_NAMES[precision]

    def get_precision() -> str:
        m = _EMU["mode"]
        return _MODE_TO_TORCH[m] if m is not None else orig_get()

    set_precision.__doc__ = orig_set.__doc__
    get_precision.__doc__ = orig_get.__doc__
    torch.set_float32_matmul_precision = set_precision
    torch.get_float32_matmul_precision = get_precision
    _EMU["patched"] = (orig_set, orig_get)


def _unpatch_torch() -> None:
    if _EMU["patched"] is not None:
        torch.set_float32_matmul_precision, torch.get_float32_matmul_precision = _EMU["patched"]
        _EMU["patched"] = None


@contextlib.contextmanager
def emulate(target: Any, mode: str | None = None) -> Iterator[str | None]:
    """Apply ``target``'s float32 matmul precision rule to the work inside the block; yields the mode.

    ``mode`` (``"default"``, ``"high"``, ``"highest"``) overrides the profile's default. Inside the block,
    ``torch.set_float32_matmul_precision("highest"|"high"|"medium")`` switches the mode as on TorchTPU and
    :func:`mode` sets it for a nested block. A target without the rule (neuron, cpu, cuda) is left alone
    (yields None). On a real TPU nothing is emulated: a given ``mode`` enters ``torch.tpu.precision``.
    """
    r = rule(target)
    chosen = None if mode is None else _check_mode(mode)
    if r is None:
        if chosen is not None:
            name = getattr(target, "name", target)
            raise ValueError(f"target {name!r} has no matmul_precision rule; its float32 matmuls are not rounded")
        yield None
        return
    device = getattr(target, "device", None)
    if device is not None and device.type == "tpu" and not getattr(target, "emulated", True):
        tpu = getattr(torch, "tpu", None)  # registered by torch_tpu, which xlaport.targets imported
        if chosen is None or tpu is None:
            yield chosen or str(r.value)
            return
        with tpu.precision(getattr(tpu.Precision, chosen.upper())):
            yield chosen
        return
    if device is not None and device.type != "xla":
        raise ValueError(f"the matmul-precision emulation runs on the XLA device, not {device.type!r}")
    _install()
    saved = _EMU["mode"]
    _EMU["mode"] = chosen or str(r.value)
    _EMU["depth"] += 1
    _patch_torch()
    try:
        yield _EMU["mode"]
    finally:
        _EMU["mode"] = saved
        _EMU["depth"] -= 1
        if _EMU["depth"] == 0:
            _unpatch_torch()


@contextlib.contextmanager
def mode(m: str) -> Iterator[str]:
    """Inside :func:`emulate`: run a block at mode ``m``, as ``torch.tpu.precision(Precision.M)`` does."""
    chosen = _check_mode(m)
    if _EMU["depth"] == 0:
        raise ValueError("precision.mode() works inside precision.emulate(target); nothing is emulated now")
    saved = _EMU["mode"]
    _EMU["mode"] = chosen
    try:
        yield chosen
    finally:
        _EMU["mode"] = saved
