"""One step of a model traced on the ``meta`` device: FLOPs and bytes per ATen op, no memory, no weights.

:func:`trace_step` runs the forward (``mode="inference"``), or forward, backward and the optimizer
(``mode="training"``), under a dispatch mode that sees every ATen op. Per op it records

* **FLOPs**: PyTorch's own formulas (``torch.utils.flop_counter.flop_registry``: mm, addmm, bmm,
  convolution, ...), and this module's for the contractions that registry lacks (:data:`EXTRA_FLOPS`: the
  grouped matmuls of mixture-of-experts layers, ``_grouped_mm`` and ``_scaled_grouped_mm``; ``mv``, ``addmv``,
  ``dot``, ``addbmm``, ``_int_mm`` and the int8/int4 weight-packed matmuls). A contraction with no formula
  at all is never counted as zero in silence: it is listed in :attr:`StepTrace.uncounted`, and the estimate
  says its matrix FLOPs are missing. ``scaled_dot_product_attention`` is counted as the one fused kernel every backend
  dispatches it to (flash or memory-efficient attention): QK^T and PV forward, twice that backward, as
  PaLM's accounting does (the math path computes the result on ``meta`` without being counted). Ops
  without a formula (elementwise, softmax, norms) count one FLOP per output element as *vector* FLOPs,
  kept apart from the matrix FLOPs an MFU counts.
* **bytes, unfused**: every input and output tensor of the op read or written once (views move nothing);
  fused attention reads q, k, v and writes its output, never a score matrix. This is what eager mode
  moves: each op a round trip through memory.

Per step it adds a **fused lower bound** on bytes: what must cross HBM even with perfect fusion, i.e.
the parameters read (once forward, once backward), gradients written, the optimizer's state read and
written, the activations kept for backward written once and read once, and the inputs and outputs.
The optimizer is counted from its update rule (AdamW: parameter, gradient and two moments read, three
written) because its Python runs ``.item()`` on step counters, which ``meta`` cannot answer.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    import torch

__all__ = [
    "Mode",
    "OpCount",
    "StepTrace",
    "OPTIMIZERS",
    "op_class",
    "trace_step",
    "trace_call",
    "count_module",
]

Mode = Literal["inference", "training"]

# optimizer -> (state tensors per parameter, tensors read, tensors written, vector FLOPs per parameter)
OPTIMIZERS: dict[str, tuple[int, int, int, int]] = {
    "adamw": (2, 4, 3, 12),  # read p, g, m, v; write p, m, v
    "sgd": (0, 2, 1, 2),
    "sgd_momentum": (1, 3, 2, 4),
}

_MATMUL = {"mm", "addmm", "matmul", "linear", "_scaled_mm", "addmv", "mv", "dot", "vdot", "_int_mm"}
_MATMUL |= {"_grouped_mm", "_scaled_grouped_mm", "_weight_int8pack_mm", "_weight_int4pack_mm"}
_BMM = {"bmm", "baddbmm", "addbmm"}
_ATTENTION = {
    "_scaled_dot_product_flash_attention",
    "_scaled_dot_product_efficient_attention",
    "_scaled_dot_product_cudnn_attention",
    "_scaled_dot_product_flash_attention_for_cpu",
    "_flash_attention_forward",
    "_efficient_attention_forward",
    "_scaled_dot_product_flash_attention_backward",
    "_scaled_dot_product_efficient_attention_backward",
    "_scaled_dot_product_cudnn_attention_backward",
    "_scaled_dot_product_flash_attention_for_cpu_backward",
    "_flash_attention_backward",
    "_efficient_attention_backward",
}
_CONV = {"convolution", "convolution_backward", "_convolution", "conv2d", "conv1d"}
_SOFTMAX = {"_softmax", "_safe_softmax", "_softmax_backward_data", "_log_softmax", "_log_softmax_backward_data"}
_NORM = {
    "native_layer_norm",
    "native_layer_norm_backward",
    "native_group_norm",
    "native_group_norm_backward",
    "_fused_rms_norm",
    "_fused_rms_norm_backward",
    "rsqrt",
    "native_batch_norm",
    "native_batch_norm_backward",
}
_EMBED = {"embedding", "embedding_dense_backward", "index_select", "gather", "index", "index_put", "scatter_add"}
_LOSS = {"nll_loss_forward", "nll_loss_backward", "nll_loss2d_forward", "nll_loss2d_backward"}
_CREATE = {"empty", "zeros", "ones", "full", "arange", "scalar_tensor", "empty_strided", "zeros_like", "ones_like"}
_CREATE |= {"empty_like", "full_like", "new_empty", "new_zeros", "new_ones", "randn", "rand", "randint", "tril"}
_CREATE |= {"triu", "lift_fresh", "_to_copy", "copy_", "clone", "cat", "stack", "_unsafe_view", "contiguous"}


def _grouped_mm_flop(a: Any, b: Any) -> float:
    """2 x multiply-adds of ``torch._grouped_mm(a, b, offs)`` for each layout it takes: (M, K) x (G, K, N) routes
    each of M rows through one group's weight; (G, M, K) x (G, K, N) is a batched matmul; (M, K) x (K, N) with groups
    along K (a weight gradient) and (G, M, K) x (K, N) with groups along N each reduce every output once over K."""
    if a.dim() == 2 and b.dim() == 3:
        return 2.0 * a.shape[0] * a.shape[1] * b.shape[2]
    if a.dim() == 3 and b.dim() == 3:
        return 2.0 * a.shape[0] * a.shape[1] * a.shape[2] * b.shape[2]
    if a.dim() == 2 and b.dim() == 2:
        return 2.0 * a.shape[0] * a.shape[1] * b.shape[1]
    if a.dim() == 3 and b.dim() == 2:
        return 2.0 * a.shape[1] * a.shape[2] * b.shape[1]
    raise ValueError(f"_grouped_mm of a {a.dim()}-D and a {b.dim()}-D tensor")


def _mm_like(a: Any, b: Any) -> float:
    """2 x M x K x N for (..., M, K) x (K, N) or a matrix-vector product."""
    m = a.numel() // a.shape[-1] if a.dim() else 1
    n = b.shape[-1] if b.dim() == 2 else 1
    return 2.0 * m * a.shape[-1] * n


# Matrix FLOPs for contractions torch.utils.flop_counter has no formula for (torch 2.9): op name -> f(args, out).
EXTRA_FLOPS: dict[str, Callable[..., float]] = {
    "_grouped_mm": lambda args, out: _grouped_mm_flop(args[0], args[1]),
    "_scaled_grouped_mm": lambda args, out: _grouped_mm_flop(args[0], args[1]),
    "mv": lambda args, out: _mm_like(args[0], args[1]),
    "addmv": lambda args, out: _mm_like(args[1], args[2]),
    "dot": lambda args, out: 2.0 * args[0].numel(),
    "vdot": lambda args, out: 2.0 * args[0].numel(),
    "addbmm": lambda args, out: 2.0 * args[1].shape[0] * args[1].shape[1] * args[1].shape[2] * args[2].shape[2],
    "_int_mm": lambda args, out: _mm_like(args[0], args[1]),
    "_weight_int8pack_mm": lambda args, out: (
        2.0 * (args[0].numel() // args[0].shape[-1]) * args[0].shape[-1] * args[1].shape[0]
    ),
    "_weight_int4pack_mm": lambda args, out: 2.0 * out.numel() * args[0].shape[-1],
}

# A name that says "contraction": such an op with no formula in either table is reported, never counted as zero.
_CONTRACTION_WORDS = ("mm", "matmul", "conv", "einsum", "bmm", "attention", "linear", "tensordot")


def is_uncounted_contraction(name: str) -> bool:
    """Whether an op with no FLOP formula looks like a contraction (so its matrix FLOPs would be missing)."""
    return any(w in name for w in _CONTRACTION_WORDS)


def op_class(name: str) -> str:
    """The class an ATen op belongs to: ``matmul``, ``attention``, ``conv``, ``softmax``, ``norm``,
    ``embedding``, ``loss``, ``copy`` (creation, copies, concatenation) or ``elementwise``."""
    if name in _MATMUL:
        return "matmul"
    if name in _BMM or name in _ATTENTION:
        return "attention"
    if name in _CONV:
        return "conv"
    if name in _SOFTMAX:
        return "softmax"
    if name in _NORM:
        return "norm"
    if name in _EMBED:
        return "embedding"
    if name in _LOSS:
        return "loss"
    if name in _CREATE:
        return "copy"
    return "elementwise"


@dataclass
class OpCount:
    """One ATen op in one phase of the step, summed over its calls."""

    name: str
    phase: str  # forward / backward / optimizer
    op_class: str
    calls: int = 0
    flop: float = 0.0  # matrix FLOPs (what MFU counts)
    vector_flop: float = 0.0  # one per output element for ops without a formula
    bytes: float = 0.0  # unfused: inputs read + outputs written

    @property
    def intensity(self) -> float:
        """FLOPs per byte moved (matrix and vector FLOPs together)."""
        return (self.flop + self.vector_flop) / self.bytes if self.bytes else math.inf


@dataclass
class StepTrace:
    """What one step does: per-op counts and the step's memory facts (all in bytes of the traced dtype)."""

    mode: str
    dtype: str
    ops: list[OpCount]
    params: int  # parameters (elements)
    param_bytes: float
    grad_bytes: float
    optimizer_state_bytes: float
    activation_bytes: float  # saved for backward (training); 0 for inference
    io_bytes: float  # inputs and outputs of the step
    tokens: int  # tokens (or positions) the step processes; 0 if not a sequence model
    items: int  # samples in the batch
    optimizer: str = ""
    notes: list[str] = field(default_factory=list)
    # contractions with no FLOP formula (op name -> calls): their matrix FLOPs are missing from ``flop``
    uncounted: dict[str, int] = field(default_factory=dict)
    # a transformer's layers and hidden size, where the model says (config.num_hidden_layers, hidden_size): what
    # tensor parallelism's collectives and activation checkpointing are counted from; 0 where unknown
    layers: int = 0
    hidden: int = 0

    @property
    def flop(self) -> float:
        return sum(o.flop for o in self.ops)

    @property
    def vector_flop(self) -> float:
        return sum(o.vector_flop for o in self.ops)

    @property
    def bytes_unfused(self) -> float:
        return sum(o.bytes for o in self.ops)

    @property
    def bytes_fused(self) -> float:
        """Lower bound on HBM traffic: parameters (read forward, and again backward), gradients written,
        optimizer state read and written, activations kept for backward written and read, inputs/outputs."""
        reads = 2 if self.mode == "training" else 1
        return (
            reads * self.param_bytes
            + self.grad_bytes
            + 2 * self.optimizer_state_bytes
            + 2 * self.activation_bytes
            + self.io_bytes
        )

    @property
    def state_bytes(self) -> float:
        """Parameters, gradients and optimizer state: what FSDP shards."""
        return self.param_bytes + self.grad_bytes + self.optimizer_state_bytes

    def by_class(self) -> dict[str, dict[str, float]]:
        """FLOPs, vector FLOPs, bytes and calls per op class."""
        out: dict[str, dict[str, float]] = {}
        for o in self.ops:
            d = out.setdefault(o.op_class, {"flop": 0.0, "vector_flop": 0.0, "bytes": 0.0, "calls": 0.0})
            d["flop"] += o.flop
            d["vector_flop"] += o.vector_flop
            d["bytes"] += o.bytes
            d["calls"] += o.calls
        return out

    def summary(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "dtype": self.dtype,
            "params": self.params,
            "flop": self.flop,
            "vector_flop": self.vector_flop,
            "bytes_unfused": self.bytes_unfused,
            "bytes_fused": self.bytes_fused,
            "param_bytes": self.param_bytes,
            "activation_bytes": self.activation_bytes,
            "state_bytes": self.state_bytes,
            "tokens": self.tokens,
            "items": self.items,
            "ops": sum(o.calls for o in self.ops),
            "uncounted": dict(self.uncounted),
        }


def _nbytes(t: Any) -> float:
    import torch

    if isinstance(t, torch.Tensor):
        return float(t.numel() * t.element_size())
    return 0.0


def _tensors(x: Any) -> list[Any]:
    import torch
    from torch.utils._pytree import tree_leaves

    return [t for t in tree_leaves(x) if isinstance(t, torch.Tensor)]


def _make_mode() -> Any:
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils.flop_counter import flop_registry

    class _Counter(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.phase = "forward"
            self.suspended = 0
            self.ops: dict[tuple[str, str, str], OpCount] = {}
            self.uncounted: dict[str, int] = {}

        def record(self, name: str, cls: str, flop: float, moved: float) -> None:
            key = (name, self.phase, cls)
            rec = self.ops.get(key)
            if rec is None:
                rec = self.ops[key] = OpCount(name, self.phase, cls)
            rec.calls += 1
            rec.flop += flop
            rec.bytes += moved

        def __torch_dispatch__(self, func: Any, types: Any, args: Sequence[Any] = (), kwargs: Any = None) -> Any:
            kwargs = kwargs or {}
            out = func(*args, **kwargs)
            if self.suspended or getattr(func, "is_view", False):
                return out
            name = func._overloadpacket.__name__
            if name in ("detach", "alias", "lift_fresh", "_local_scalar_dense", "set_", "resize_"):
                return out
            cls = op_class(name)
            key = (name, self.phase, cls)
            rec = self.ops.get(key)
            if rec is None:
                rec = self.ops[key] = OpCount(name, self.phase, cls)
            rec.calls += 1
            ins = _tensors((args, kwargs))
            outs = _tensors(out)
            rec.bytes += sum(_nbytes(t) for t in ins) + sum(_nbytes(t) for t in outs)
            fn = flop_registry.get(func._overloadpacket)
            extra = EXTRA_FLOPS.get(name)
            if fn is not None:
                rec.flop += float(fn(*args, **kwargs, out_val=out))
            elif extra is not None:
                rec.flop += float(extra(args, out))
            elif is_uncounted_contraction(name):
                self.uncounted[name] = self.uncounted.get(name, 0) + 1
            elif op_class(name) not in ("copy", "embedding"):
                rec.vector_flop += float(sum(t.numel() for t in outs))
            return out

    return _Counter()


def _make_attention_mode(counter: Any, on_saved: Callable[[float], None]) -> Any:
    import torch
    import torch.nn.functional as F
    from torch.overrides import TorchFunctionMode

    class _FusedAttention(torch.autograd.Function):
        """``scaled_dot_product_attention`` as the one fused kernel every backend dispatches it to: forward reads
        q, k, v (and a mask) and writes the output; backward reads those and the output's gradient and writes the
        gradients of q, k, v. FLOPs: QK^T and PV forward, twice that backward (the PaLM convention); the math path
        computes the output on meta without being counted."""

        @staticmethod
        def forward(ctx: Any, q: Any, k: Any, v: Any, mask: Any, opts: dict[str, Any]) -> Any:
            counter.suspended += 1
            try:
                out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, **opts)
            finally:
                counter.suspended -= 1
            sq, d = q.shape[-2], q.shape[-1]
            heads_x_batch = q.numel() // (sq * d) if sq and d else 0
            flop = 2.0 * heads_x_batch * sq * k.shape[-2] * (d + v.shape[-1])
            moved = sum(_nbytes(t) for t in (q, k, v, out, mask))
            counter.record("scaled_dot_product_attention", "attention", flop, moved)
            ctx.save_for_backward(q, k, v, out)
            ctx.flop = flop
            if torch.is_grad_enabled() or any(t.requires_grad for t in (q, k, v)):
                on_saved(float(heads_x_batch * sq * 4))  # one float32 per row (the logsumexp) kept for backward
            return out

        @staticmethod
        def backward(ctx: Any, dout: Any) -> Any:
            q, k, v, out = ctx.saved_tensors
            counter.suspended += 1
            try:
                grads = [torch.zeros_like(t) if need else None for t, need in zip((q, k, v), ctx.needs_input_grad)]
            finally:
                counter.suspended -= 1
            moved = sum(_nbytes(t) for t in (q, k, v, out, dout)) + sum(_nbytes(g) for g in grads if g is not None)
            counter.record("scaled_dot_product_attention_backward", "attention", 2 * ctx.flop, moved)
            return (*grads, None, None)

    class _Attention(TorchFunctionMode):
        """Routes ``scaled_dot_product_attention`` through :class:`_FusedAttention`."""

        def __torch_function__(self, func: Any, types: Any, args: Sequence[Any] = (), kwargs: Any = None) -> Any:
            kwargs = dict(kwargs or {})
            if func is not F.scaled_dot_product_attention:
                return func(*args, **kwargs)
            names = ("query", "key", "value", "attn_mask")
            got = dict(zip(names, args))
            got.update({n: kwargs.pop(n) for n in names if n in kwargs})
            if len(args) > 4:
                return func(*args, **kwargs)  # dropout_p etc. positionally: leave it to the math path
            return _FusedAttention.apply(got["query"], got["key"], got["value"], got.get("attn_mask"), kwargs)

    return _Attention()


def count_module(model: torch.nn.Module) -> tuple[int, float]:
    """(parameters, parameter bytes) of a module, shared parameters counted once."""
    seen: set[int] = set()
    n, b = 0, 0.0
    for p in model.parameters():
        if id(p) in seen:
            continue
        seen.add(id(p))
        n += p.numel()
        b += p.numel() * p.element_size()
    return n, b


def _default_loss(out: Any, inputs: Sequence[Any]) -> Any:
    import torch
    import torch.nn.functional as F

    logits = getattr(out, "logits", None)
    if logits is None and isinstance(out, (tuple, list)) and out and isinstance(out[0], torch.Tensor):
        logits = out[0]
    if logits is None and isinstance(out, torch.Tensor):
        logits = out
    if logits is None:
        raise ValueError("the model's output has no tensor to take a loss of; pass loss_fn")
    ids = inputs[0] if inputs and isinstance(inputs[0], torch.Tensor) else None
    if ids is not None and not ids.is_floating_point() and logits.dim() == ids.dim() + 1:
        # a language model: next-token cross-entropy over the vocabulary
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), ids.reshape(-1))
    return logits.float().pow(2).mean()


def trace_step(
    model: torch.nn.Module,
    inputs: Sequence[Any],
    mode: Mode = "inference",
    *,
    loss_fn: Callable[[Any, Sequence[Any]], Any] | None = None,
    optimizer: str = "adamw",
    optimizer_state_dtype_bytes: int = 4,
    tokens: int | None = None,
) -> StepTrace:
    """Trace one step of ``model(*inputs)`` on ``meta`` (model and inputs must already be on ``meta``).

    ``mode="training"`` also runs the backward of ``loss_fn(output, inputs)`` (default: next-token
    cross-entropy for integer inputs and logits, else the mean square of the output) and adds the
    optimizer's update rule (``optimizer`` one of :data:`OPTIMIZERS`; its state kept in
    ``optimizer_state_dtype_bytes`` bytes per element, fp32 by default). ``tokens`` defaults to the
    number of elements of an integer first input (batch × sequence), else 0.
    """
    import torch

    if mode not in ("inference", "training"):
        raise ValueError(f"mode must be 'inference' or 'training', got {mode!r}")
    if optimizer not in OPTIMIZERS:
        raise ValueError(f"unknown optimizer {optimizer!r}; known: {', '.join(OPTIMIZERS)}")
    params = [p for p in model.parameters()]
    if any(p.device.type != "meta" for p in params):
        raise ValueError("trace_step needs the model on the meta device (build it under torch.device('meta'))")
    inputs = tuple(inputs)
    n_params, p_bytes = count_module(model)
    dtype = str(params[0].dtype).removeprefix("torch.") if params else "float32"
    first = inputs[0] if inputs and isinstance(inputs[0], torch.Tensor) else None
    if tokens is None:
        tokens = int(first.numel()) if first is not None and not first.is_floating_point() else 0
    items = int(first.shape[0]) if first is not None and first.dim() > 0 else 1

    counter = _make_mode()
    saved: list[float] = [0.0]
    seen_saved: set[int] = set()

    param_ids = {id(p) for p in params}

    def lse_saved(extra: float) -> None:
        saved[0] += extra

    def pack(t: torch.Tensor) -> torch.Tensor:
        # count each storage autograd keeps for backward once (views share their base's);
        # parameters and views of them are not activations
        base = t._base if t._base is not None else t
        key = id(base)
        if key not in seen_saved and key not in param_ids:
            seen_saved.add(key)
            saved[0] += _nbytes(base)
        return t

    train = mode == "training"
    was_training = model.training
    model.train(train)
    try:
        with counter, _make_attention_mode(counter, lse_saved if train else lambda _e: None):
            if train:
                with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
                    out = model(*inputs)
                    loss = (loss_fn or _default_loss)(out, inputs)
                counter.phase = "backward"
                loss.backward()
            else:
                with torch.no_grad():
                    out = model(*inputs)
    finally:
        model.train(was_training)
        for p in params:
            p.grad = None
    io = sum(_nbytes(t) for t in inputs) + sum(_nbytes(t) for t in _tensors(out))
    ops = list(counter.ops.values())
    grad_b = opt_b = 0.0
    notes: list[str] = []
    if train:
        n_state, reads, writes, vflop = OPTIMIZERS[optimizer]
        trainable = sum(p.numel() for p in {id(p): p for p in params if p.requires_grad}.values())
        elem = p_bytes / n_params if n_params else 4.0
        grad_b = trainable * elem
        opt_b = trainable * n_state * optimizer_state_dtype_bytes
        # read p and g in the parameter dtype, the moments in the state dtype; write p and the moments
        moved = trainable * (
            2 * elem + (reads - 2) * optimizer_state_dtype_bytes + elem + (writes - 1) * optimizer_state_dtype_bytes
        )
        ops.append(
            OpCount(
                f"{optimizer}_update",
                "optimizer",
                "optimizer",
                calls=1,
                flop=0.0,
                vector_flop=float(vflop * trainable),
                bytes=float(moved),
            )
        )
        notes.append(f"optimizer {optimizer} counted from its update rule (state {optimizer_state_dtype_bytes} B/elem)")
    return StepTrace(
        mode=mode,
        dtype=dtype,
        ops=ops,
        params=n_params,
        param_bytes=p_bytes,
        grad_bytes=grad_b,
        optimizer_state_bytes=opt_b,
        activation_bytes=saved[0] if train else 0.0,
        io_bytes=io,
        tokens=int(tokens),
        items=items,
        optimizer=optimizer if train else "",
        notes=notes,
        uncounted=dict(counter.uncounted),
    )


def trace_call(fn: Callable[..., Any], inputs: Sequence[Any], *, tokens: int = 0) -> StepTrace:
    """Count the ops of one call of any callable, as it runs (on whatever device its tensors are).

    For an entry point that is not a model: a step function that runs its own backward and optimizer is
    counted op by op, all in phase ``forward``. Parameters are those of ``fn`` if it is an ``nn.Module``,
    else of the ``nn.Module`` attributes of its object; the fused lower bound is those parameters read once
    plus the inputs and outputs (no saved activations, gradients or optimizer state are known).
    """
    import torch

    counter = _make_mode()
    with counter, _make_attention_mode(counter, lambda _e: None):
        out = fn(*inputs)
    owner = fn if isinstance(fn, torch.nn.Module) else getattr(fn, "__self__", fn)
    mods = [owner] if isinstance(owner, torch.nn.Module) else []
    mods += [v for v in vars(owner).values() if isinstance(v, torch.nn.Module)] if hasattr(owner, "__dict__") else []
    n_params, p_bytes = 0, 0.0
    seen: set[int] = set()
    for mod in mods:
        for prm in mod.parameters():
            if id(prm) not in seen:
                seen.add(id(prm))
                n_params += prm.numel()
                p_bytes += prm.numel() * prm.element_size()
    first = inputs[0] if inputs and isinstance(inputs[0], torch.Tensor) else None
    return StepTrace(
        mode="inference",
        dtype=str(first.dtype).removeprefix("torch.") if first is not None else "float32",
        ops=list(counter.ops.values()),
        params=n_params,
        param_bytes=p_bytes,
        grad_bytes=0.0,
        optimizer_state_bytes=0.0,
        activation_bytes=0.0,
        io_bytes=sum(_nbytes(t) for t in inputs) + sum(_nbytes(t) for t in _tensors(out)),
        tokens=int(tokens),
        items=int(first.shape[0]) if first is not None and first.dim() > 0 else 1,
        notes=["counted as run: phases not separated"],
        uncounted=dict(counter.uncounted),
    )
