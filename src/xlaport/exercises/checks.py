"""The checkers behind the chapters' exercises.

Each ``check_*`` takes the reader's answer (``None`` when the exercise has not been attempted) and whatever the
chapter measured, recomputes the effect the chapter teaches with the toolkit, and returns a :class:`Check`: passed or
not, and one line that names what is wrong (``"3 compiles; the budget is 2: the 301-frame batch got its own
bucket"``). Bad arguments from the chapter itself (not the reader's answer) raise a one-line ``ValueError``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..distributed.mesh import fsdp_bytes_per_device, largest_parameter
from ..text import plural, sci

__all__ = [
    "Check",
    "NOT_ATTEMPTED",
    "check_batch_shapes",
    "check_block_shape",
    "check_break_even_price",
    "check_buckets",
    "check_cpu_checkpoint",
    "check_finite_attention",
    "check_fsdp_chips",
    "check_kernel_port",
    "check_masked_softmax",
    "check_matmul_precision",
    "check_offsets_fixed",
    "check_packing",
    "check_padded_unique",
    "check_prompt_buckets",
    "check_rewrite",
    "check_scan_clean",
    "check_static_sampler",
    "check_steady_compiles",
    "check_stream_port",
    "check_tied_weights",
    "check_usd_per_million_tokens",
    "check_view_culprits",
]

NOT_ATTEMPTED = "not attempted: set `answer` in the cell above and run it again"


@dataclass(frozen=True)
class Check:
    """The outcome of one exercise check: ``passed`` is None when the reader gave no answer."""

    name: str
    passed: bool | None
    message: str

    def __bool__(self) -> bool:
        return bool(self.passed)

    @property
    def status(self) -> str:
        return "not attempted" if self.passed is None else ("pass" if self.passed else "fail")

    def __str__(self) -> str:
        if self.passed is None:
            return f"{self.name}: {self.message}"
        return f"{self.status}: {self.name}: {self.message}"


def _none(name: str) -> Check:
    return Check(name, None, NOT_ATTEMPTED)


def _ok(name: str, message: str) -> Check:
    return Check(name, True, message)


def _fail(name: str, message: str) -> Check:
    return Check(name, False, message)


def _ints(name: str, values: Any) -> list[int]:
    try:
        out = [int(v) for v in values]
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a list of whole numbers") from None
    if any(v < 1 for v in out):
        raise ValueError(f"{name} must be positive, got {out[:8]}")
    return out


# ------------------------------------------------------------------------------------------ shapes and compiles
def check_batch_shapes(
    batches: Sequence[tuple[Any, Any]] | None, n_items: int | None = None, ignore_index: int = -100
) -> Check:
    """One input shape for every batch (one program), and, if ``n_items`` is given, every item trained on once.

    Padding rows are those whose label is ``ignore_index`` (``F.cross_entropy`` skips them).
    """
    name = "batch shapes"
    if batches is None:
        return _none(name)
    batches = list(batches)
    if not batches:
        return _fail(name, "no batches")
    shapes = [tuple(x.shape) for x, _ in batches]
    distinct = sorted(set(shapes), key=shapes.index)
    if len(distinct) > 1:
        odd = next(i for i, s in enumerate(shapes) if s != shapes[0])
        return _fail(
            name,
            f"{len(distinct)} input shapes, so {len(distinct)} programs per step kind: batch {odd} is "
            f"{shapes[odd]}, the others {shapes[0]}; pad it or drop it",
        )
    if n_items is not None:
        real = sum(int((y != ignore_index).sum()) for _, y in batches)
        if real != n_items:
            return _fail(
                name, f"one shape {shapes[0]}, but {real} real items of {n_items}: {n_items - real} are never seen"
            )
    seen = "" if n_items is None else f", all {n_items} items seen"
    return _ok(name, f"{len(batches)} batches of one shape {shapes[0]}: one program{seen}")


def check_steady_compiles(compiled_per_step: Sequence[int | None] | None, warm: int, budget: int = 0) -> Check:
    """At most ``budget`` programs compiled after the first ``warm`` steps."""
    name = "compiles after warm-up"
    if compiled_per_step is None:
        return _none(name)
    steps = list(compiled_per_step)
    if len(steps) <= warm:
        return _fail(name, f"only {len(steps)} steps: run more than the {warm} warm-up steps")
    if all(c is None for c in steps):  # CUDA or CPU: nothing to check, and nothing wrong
        return Check(name, None, "this backend does not count compiles: run with target tpu or neuron to check")
    if any(c is None for c in steps):
        return _fail(name, "some steps were not counted: run every step on one XLA target (tpu or neuron)")
    late = {i: int(c) for i, c in enumerate(steps) if i >= warm and c}
    n = sum(late.values())
    if n > budget:
        where = ", ".join(str(i) for i in list(late)[:5])
        return _fail(
            name,
            f"{n} programs compiled after warm-up (budget {budget}), at {'step' if len(late) == 1 else 'steps'} {where}: a new input shape",
        )
    return _ok(name, f"{n} programs compiled after the {warm} warm-up steps (budget {budget})")


def check_buckets(
    lengths: Iterable[int], buckets: Sequence[int] | None, budget: int, max_waste: float | None = None
) -> Check:
    """Pad each batch length to the smallest bucket that holds it: at most ``budget`` programs, waste within bounds.

    ``max_waste`` is the largest allowed share of padded positions (0.2 = 20 %).
    """
    from ..recompile.buckets import padding_waste

    name = "buckets"
    lens = _ints("lengths", lengths)
    if buckets is None:
        return _none(name)
    try:
        bks = sorted(set(_ints("buckets", buckets)))
    except ValueError as e:
        return _fail(name, str(e))
    if not bks:
        return _fail(name, "no buckets")
    too_long = [n for n in lens if n > bks[-1]]
    if too_long:
        return _fail(name, f"the {max(too_long)}-frame batch fits no bucket (the largest is {bks[-1]})")
    used: dict[int, list[int]] = {}
    for n in lens:
        used.setdefault(next(b for b in bks if b >= n), []).append(n)
    compiles = len(used)
    if compiles > budget:
        lone = min(used.items(), key=lambda kv: (len(kv[1]), -kv[0]))  # the rarest bucket, the largest on a tie
        return _fail(
            name,
            f"{compiles} compiles; the budget is {budget}: the {max(lone[1])}-frame batch got its own bucket ({lone[0]})",
        )
    waste = padding_waste(lens, [next(b for b in bks if b >= n) for n in lens])
    if max_waste is not None and waste > max_waste:
        worst = max(used.items(), key=lambda kv: sum(kv[0] - n for n in kv[1]))
        return _fail(
            name,
            f"{compiles} compiles (budget {budget}) but {waste:.0%} of the padded frames are padding "
            f"(limit {max_waste:.0%}); most is wasted in bucket {worst[0]}",
        )
    return _ok(name, f"{compiles} compiles (budget {budget}), {waste:.0%} padding, buckets {bks}")


def check_prompt_buckets(
    prompt_lengths: Iterable[int], answer: tuple[Sequence[int], int] | None, new_tokens: int, budget: int
) -> Check:
    """``answer = (buckets, max_len)`` for a static KV cache: every prompt fits, the cache holds bucket + new tokens,
    and at most ``budget`` prefill programs (one per bucket used)."""
    name = "prompt buckets"
    lens = _ints("prompt_lengths", prompt_lengths)
    if answer is None:
        return _none(name)
    try:
        bks_raw, max_len = answer
        bks = sorted(set(_ints("buckets", bks_raw)))
        max_len = int(max_len)
    except (TypeError, ValueError):
        return _fail(name, "answer must be (buckets, max_len), e.g. ([8, 16], 32)")
    too_long = [n for n in lens if n > bks[-1]]
    if too_long:
        return _fail(name, f"the {max(too_long)}-token prompt fits no bucket (the largest is {bks[-1]})")
    if bks[-1] + new_tokens > max_len:
        return _fail(name, f"max_len {max_len} cannot hold the {bks[-1]}-token bucket plus {new_tokens} new tokens")
    used = sorted({next(b for b in bks if b >= n) for n in lens})
    if len(used) > budget:
        return _fail(name, f"{len(used)} prefill programs (buckets {used}); the budget is {budget}")
    return _ok(
        name, f"{plural(len(used), 'prefill program')} for buckets {used}, one decode program for a cache of {max_len}"
    )


# ------------------------------------------------------------------------------------------------ ops
_DATA_DEPENDENT = ("aten::nonzero", "aten::masked_select", "aten::_local_scalar_dense", "aten::unique")


def check_static_sampler(
    sampler: Callable[..., Any] | None, logits: Sequence[Any], top_p: float, seed: int = 0
) -> Check:
    """``sampler(logits (B, V), top_p, generator) -> (B, 1)`` token ids: one output shape, no host sync or
    data-dependent shape in its ops, and every token inside the nucleus (the fewest tokens whose probability
    reaches ``top_p``)."""
    import torch

    from ..ops.trace import aten_ops

    name = "static top-p sampler"
    if sampler is None:
        return _none(name)
    shapes = set()
    wrong_shape = None
    for i, lg in enumerate(logits):
        gen = torch.Generator().manual_seed(seed + i)
        try:
            out = sampler(lg, top_p, gen)
        except Exception as e:  # the reader's code: report, never raise
            return _fail(name, f"the sampler raised {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
        shapes.add(tuple(out.shape))
        if tuple(out.shape) != (lg.shape[0], 1):
            wrong_shape = tuple(out.shape)
            continue
        probs = torch.softmax(lg.float(), -1)
        sp, idx = probs.sort(-1, descending=True)
        cum = sp.cumsum(-1)
        for b in range(lg.shape[0]):
            n_keep = int((cum[b] < top_p).sum()) + 1
            nucleus = set(idx[b, :n_keep].tolist())
            tok = int(out[b, 0])
            if tok not in nucleus:
                return _fail(
                    name, f"row {b} of logits {i}: token {tok} is outside the top-p nucleus of {n_keep} tokens"
                )
    if len(shapes) > 1 or wrong_shape is not None:
        return _fail(name, f"output shapes {sorted(shapes)}: a static sampler returns (batch, 1) every time")
    trace = aten_ops(lambda lg: sampler(lg, top_p, torch.Generator().manual_seed(seed)), logits[0])
    bad = sorted({n for n in trace.names if n.startswith(_DATA_DEPENDENT)})
    if bad:
        return _fail(name, f"{', '.join(bad)}: a host sync or a data-dependent shape in every decode step")
    return _ok(
        name,
        f"one output shape {shapes.pop()}, every token in the nucleus, no host sync in {len(trace.names)} op calls",
    )


def check_rewrite(
    fn: Callable[..., Any] | None,
    reference: Callable[..., Any],
    inputs: Sequence[Any],
    targets: Sequence[str] = ("tpu", "neuron"),
    atol: float = 1e-4,
) -> Check:
    """``fn`` computes what ``reference`` does (within ``atol``) and no op it runs raises or falls back on ``targets``."""
    import torch

    from ..ops.coverage import coverage
    from ..ops.trace import aten_ops

    name = "rewrite"
    if fn is None:
        return _none(name)
    try:
        got, want = fn(*inputs), reference(*inputs)
    except Exception as e:
        return _fail(name, f"the rewrite raised {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
    if tuple(got.shape) != tuple(want.shape):
        return _fail(name, f"shape {tuple(got.shape)}, the reference gives {tuple(want.shape)}")
    err = float((got.double() - want.double()).abs().max())
    if not math.isfinite(err) or err > atol:
        return _fail(name, f"max |error| against the reference {err:.2e} > {atol:.0e}")
    trace = aten_ops(fn, *inputs)
    for target in targets:
        cov = coverage(trace, target)
        if not cov.ok:
            bad = cov.raises + cov.fallbacks
            return _fail(
                name, f"on {target}: {', '.join(bad)} {cov[bad[0]].status}; rewrite it with ops the target has"
            )
    del torch
    return _ok(name, f"matches the reference to {sci(err)}; every op runs on {' and '.join(targets)}")


def check_padded_unique(fn: Callable[..., Any] | None, batches: Sequence[Any], target: str = "tpu") -> Check:
    """``fn(pairs (n, 2)) -> (padded (n, 2), count)``: the first ``count`` rows are the distinct pairs, the shape
    never changes, and no op raises or falls back on ``target``."""
    import torch

    from ..ops.coverage import coverage
    from ..ops.trace import aten_ops

    name = "padded unique"
    if fn is None:
        return _none(name)
    shapes = set()
    for i, x in enumerate(batches):
        try:
            padded, count = fn(x)
        except Exception as e:
            return _fail(name, f"raised {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
        shapes.add(tuple(padded.shape))
        n = int(count)
        want = {tuple(r) for r in torch.unique(x, dim=0).tolist()}
        got = [tuple(r) for r in padded[:n].tolist()]
        if set(got) != want or len(got) != len(want):
            return _fail(name, f"batch {i}: {n} rows counted, {len(want)} distinct pairs expected")
    if len(shapes) > 1:
        return _fail(name, f"{len(shapes)} output shapes {sorted(shapes)}: each is a new program")
    cov = coverage(aten_ops(fn, batches[0]), target)
    if not cov.ok:
        bad = cov.raises + cov.fallbacks
        return _fail(name, f"on {target}: {', '.join(bad)} {cov[bad[0]].status}")
    return _ok(name, f"one output shape {shapes.pop()} for {len(batches)} batches; every op runs on {target}")


# ------------------------------------------------------------------------------------------------ views
def _offsets(calls: Sequence[Mapping[str, Any]]) -> dict[str, list[int]]:
    from ..recompile.guards import logical_storage_offset

    out: dict[str, list[int]] = {}
    for call in calls:
        for k, v in call.items():
            if hasattr(v, "storage_offset"):
                out.setdefault(k, []).append(logical_storage_offset(v))
    return out


def check_view_culprits(calls: Sequence[Mapping[str, Any]], answer: Iterable[str] | str | None) -> Check:
    """``answer``: the argument name(s) whose storage offset changes from step to step (what TorchTPU's guard
    recompiles on). ``calls``: one ``{argument: tensor}`` per denoising step."""
    name = "view culprits"
    if answer is None:
        return _none(name)
    named = {answer} if isinstance(answer, str) else set(answer)
    offs = _offsets(calls)
    moving = {k for k, v in offs.items() if len(set(v)) > 1}
    if named == moving:
        return _ok(name, f"{', '.join(sorted(moving))}: a new storage offset every step, so a recompile every step")
    missed, wrong = moving - named, named - moving
    parts = []
    if missed:
        parts.append(f"missed {', '.join(sorted(missed))} (offsets {offs[sorted(missed)[0]][:4]}...)")
    if wrong:
        parts.append(f"{', '.join(sorted(wrong))} keeps one offset")
    return _fail(name, "; ".join(parts))


def check_offsets_fixed(
    calls: Sequence[Mapping[str, Any]] | None, reference: Sequence[Mapping[str, Any]], atol: float = 0.0
) -> Check:
    """Every argument keeps one storage offset across steps, and the values equal the reference loop's."""
    name = "offsets fixed"
    if calls is None:
        return _none(name)
    if len(calls) != len(reference):
        return _fail(name, f"{len(calls)} steps, the loop has {len(reference)}")
    moving = {k: v for k, v in _offsets(calls).items() if len(set(v)) > 1}
    if moving:
        k, v = next(iter(moving.items()))
        return _fail(name, f"{k} still moves: storage offsets {v[:4]}... so each step recompiles")
    for i, (got, want) in enumerate(zip(calls, reference)):
        for k, w in want.items():
            if k not in got:
                return _fail(name, f"step {i}: argument {k!r} missing")
            err = float((got[k].cpu().double() - w.cpu().double()).abs().max())
            if err > atol:
                return _fail(name, f"step {i}: {k} differs from the original loop by {err:.2e}")
    return _ok(name, f"every argument keeps one storage offset over {len(calls)} steps; values unchanged")


# ------------------------------------------------------------------------------------------------ numerics
def _finite(*ts: Any) -> bool:
    return all(bool(t.isfinite().all()) for t in ts if t is not None)


def check_finite_attention(
    attend: Callable[..., Any] | None, inputs: Sequence[Any], reference: Any, atol: float
) -> Check:
    """``attend(q, k, v)`` in the inputs' dtype: finite forward and gradients, and within ``atol`` of ``reference``."""
    name = "finite attention"
    if attend is None:
        return _none(name)
    ins = [x.detach().clone().requires_grad_(True) for x in inputs]
    try:
        out = attend(*ins)
        out.float().sum().backward()
    except Exception as e:
        return _fail(name, f"raised {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
    if not _finite(out):
        return _fail(name, f"{int((~out.isfinite()).sum())} non-finite outputs in {out.dtype}")
    bad = [n for n, x in zip("qkv", ins) if not _finite(x.grad)]
    if bad:
        return _fail(name, f"forward finite, gradient of {', '.join(bad)} is not")
    err = float((out.detach().double() - reference.detach().double()).abs().max())
    if err > atol:
        return _fail(name, f"finite, but {err:.2e} from the fp32 reference (tolerance {atol:.0e})")
    return _ok(name, f"forward and gradients finite in {out.dtype}, {sci(err)} from the fp32 reference")


def check_masked_softmax(softmax: Callable[..., Any] | None, scores: Any, keep: Any) -> Check:
    """``softmax(scores, keep)``: rows with nothing kept give 0, the others match a softmax over the kept
    positions, forward and backward finite."""
    import torch

    name = "masked softmax"
    if softmax is None:
        return _none(name)
    s = scores.detach().clone().requires_grad_(True)
    try:
        p = softmax(s, keep)
        (p * torch.arange(p.shape[-1], dtype=p.dtype)).sum().backward()
    except Exception as e:
        return _fail(name, f"raised {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
    none_kept = ~keep.any(-1)
    if not _finite(p):
        return _fail(name, f"{plural(int(none_kept.sum()), 'fully masked row')} give non-finite probabilities")
    if not _finite(s.grad):
        return _fail(name, "forward finite, but the gradient through a fully masked row is NaN")
    if bool((p[none_kept.expand_as(p[..., 0])] != 0).any()):
        return _fail(name, "fully masked rows must give 0, not a distribution over masked keys")
    ref = torch.softmax(scores.float().masked_fill(~keep, float("-inf")), -1)
    rows = ~none_kept.expand_as(p[..., 0])
    err = float((p.detach().float()[rows] - ref[rows]).abs().max()) if bool(rows.any()) else 0.0
    if err > 1e-3:
        return _fail(name, f"rows with kept keys are {err:.2e} from a softmax over the kept positions")
    return _ok(
        name,
        f"{plural(int(none_kept.sum()), 'fully masked row')} give 0, gradients finite, other rows exact to {sci(err, 0)}",
    )


# ------------------------------------------------------------------------------------------------ kernels
def check_kernel_port(
    fn: Callable[..., Any] | None, reference: Callable[..., Any], inputs: Sequence[Any], tol: float
) -> Check:
    """A port of a kernel: forward and the gradient of every floating input within ``tol`` of the reference."""
    name = "kernel port"
    if fn is None:
        return _none(name)
    a = [x.detach().clone().requires_grad_(x.is_floating_point()) for x in inputs]
    b = [x.detach().clone().requires_grad_(x.is_floating_point()) for x in inputs]
    try:
        ya = fn(*a)
    except Exception as e:
        return _fail(name, f"raised {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
    yb = reference(*b)
    if tuple(ya.shape) != tuple(yb.shape):
        return _fail(name, f"output shape {tuple(ya.shape)}, the reference gives {tuple(yb.shape)}")
    err = float((ya.detach() - yb.detach()).abs().max())
    if not math.isfinite(err) or err > tol:
        return _fail(name, f"forward max |error| {err:.2e} > {tol:.0e}")
    g = __import__("torch").randn_like(yb)
    yb.backward(g)
    try:
        ya.backward(g)
    except RuntimeError:
        return _fail(name, "the output has no gradient: the port is not differentiable")
    worst = 0.0
    for i, (xa, xb) in enumerate(zip(a, b)):
        if xb.grad is None:
            continue
        if xa.grad is None:
            return _fail(name, f"no gradient for input {i}: the port is not differentiable")
        gerr = float((xa.grad - xb.grad).abs().max())
        if not math.isfinite(gerr) or gerr > tol:
            return _fail(name, f"gradient of input {i}: max |error| {gerr:.2e} > {tol:.0e}")
        worst = max(worst, gerr)
    return _ok(name, f"forward {sci(err)}, gradients {sci(worst)} from the reference (tolerance {tol:.0e})")


def check_block_shape(
    block: Sequence[int] | None, array_shape: Sequence[int], tile: tuple[int, int] = (8, 128)
) -> Check:
    """A Pallas TPU block: each of the last two dims divisible by the tile (8, 128) or equal to the array's."""
    name = "block shape"
    shape = _ints("array_shape", array_shape)
    if block is None:
        return _none(name)
    try:
        blk = _ints("block", block)
    except ValueError as e:
        return _fail(name, str(e))
    if len(blk) != len(shape):
        return _fail(name, f"block has {len(blk)} dims, the array {len(shape)}")
    for d, (b, n, t) in enumerate(zip(blk[-2:], shape[-2:], tile)):
        axis = len(shape) - 2 + d
        if b > n:
            return _fail(name, f"dim {axis}: block {b} is larger than the array's {n}")
        if b % t and b != n:
            return _fail(name, f"dim {axis}: block {b} is neither a multiple of {t} nor the full dim {n}")
    grid = [math.ceil(n / b) for n, b in zip(shape, blk)]
    return _ok(name, f"block {tuple(blk)} fits the ({tile[0]}, {tile[1]}) tile; grid {tuple(grid)}")


def check_cpu_checkpoint(state: Mapping[str, Any] | None) -> Check:
    """A checkpoint that loads anywhere: every tensor in it is on the CPU."""
    name = "portable checkpoint"
    if state is None:
        return _none(name)
    found: list[tuple[str, str]] = []

    def walk(prefix: str, obj: Any) -> None:
        if hasattr(obj, "device") and hasattr(obj, "storage_offset"):
            found.append((prefix, str(obj.device)))
        elif isinstance(obj, Mapping):
            for k, v in obj.items():
                walk(f"{prefix}.{k}" if prefix else str(k), v)
        elif isinstance(obj, (list, tuple)):
            for i, v in enumerate(obj):
                walk(f"{prefix}[{i}]", v)

    walk("", state)
    off = [(k, d) for k, d in found if d != "cpu"]
    if not found:
        return _fail(name, "no tensors in the checkpoint")
    if off:
        return _fail(
            name, f"{len(off)} of {len(found)} tensors on {off[0][1]} (e.g. {off[0][0]}): move them with .cpu()"
        )
    return _ok(name, f"all {len(found)} tensors on the CPU: it loads without the accelerator")


# ------------------------------------------------------------------------------------------------ cost
def check_usd_per_million_tokens(
    answer: float | None, tokens_per_s_per_chip: float, usd_per_chip_hour: float, utilisation: float = 1.0
) -> Check:
    """The reader's price per million tokens against ``xlaport.cost.usd_per_million_tokens`` (within 1 %)."""
    from ..cost import usd_per_million_tokens

    name = "price per million tokens"
    want = usd_per_million_tokens(tokens_per_s_per_chip, usd_per_chip_hour, utilisation)
    if answer is None:
        return _none(name)
    got = float(answer)
    if abs(got / want - 1) <= 0.01:
        return _ok(name, f"${got:.4g} per million tokens")
    hint = ""
    if utilisation < 1 and abs(got / (want * utilisation) - 1) <= 0.01:
        hint = f": the chip is busy {utilisation:.0%} of the paid hours, and idle hours are paid too"
    elif abs(got / (want * 1e6) - 1) <= 0.01 or abs(got / (want / 1e6) - 1) <= 0.01:
        hint = ": off by a factor of a million (per token vs per million tokens)"
    elif abs(got / (want * 3600) - 1) <= 0.01 or abs(got / (want / 3600) - 1) <= 0.01:
        hint = ": off by 3600 (seconds vs hours)"
    return _fail(name, f"${got:.4g}, expected about ${want:.4g}{hint}")


def check_break_even_price(
    answer: float | None, flop_per_month: float, current: Any, proposed: Any, migration: Any, horizon_months: float
) -> Check:
    """The current chip-hour price at which the move nets zero over the horizon (within 1 % of the price)."""
    from dataclasses import replace

    from ..cost import decide

    name = "break-even price"
    if answer is None:
        return _none(name)
    price = float(answer)
    if price <= 0:
        return _fail(name, "a price must be positive")
    d = decide(flop_per_month, replace(current, usd_per_chip_hour=price), proposed, migration, horizon_months)
    scale = decide(flop_per_month, current, proposed, migration, horizon_months).current_monthly_usd
    exact = d.net_over_horizon_usd
    hi = decide(flop_per_month, replace(current, usd_per_chip_hour=price * 1.01), proposed, migration, horizon_months)
    lo = decide(flop_per_month, replace(current, usd_per_chip_hour=price * 0.99), proposed, migration, horizon_months)
    if lo.net_over_horizon_usd <= 0 <= hi.net_over_horizon_usd or abs(exact) <= 1e-9 * max(1.0, scale):
        return _ok(name, f"${price:.2f}/chip-hour: the move nets {exact:,.0f} USD over {horizon_months:g} months")
    side = "still pays" if exact > 0 else "still loses"
    way = "lower" if exact > 0 else "higher"
    return _fail(name, f"at ${price:.2f}/chip-hour the move {side} {abs(exact):,.0f} USD: the break-even is {way}")


# ------------------------------------------------------------------------------------------------ scan
def check_scan_clean(source: str | None, rules: Iterable[str]) -> Check:
    """``source`` (a Python file as a string) has no finding of ``rules`` left and still parses."""
    import ast

    from ..scan import rule_ids, scan_source

    name = "scan clean"
    want = set(rules)
    unknown = want - set(rule_ids())
    if unknown:
        raise ValueError(f"unknown scan rule(s) {', '.join(sorted(unknown))}")
    if source is None:
        return _none(name)
    try:
        ast.parse(source)
    except SyntaxError as e:
        return _fail(name, f"the source no longer parses: line {e.lineno}: {e.msg}")
    left = [f for f in scan_source(source) if f.rule in want]
    if left:
        f = left[0]
        return _fail(
            name, f"{plural(len(left), 'finding')} left; first: line {f.line} {f.rule}: {f.snippet.strip()[:60]}"
        )
    return _ok(name, f"no {', '.join(sorted(want))} finding left")


# ------------------------------------------------------------------------------------------------ beyond the forward
def check_packing(
    lengths: Iterable[int],
    answer: tuple[int, int] | None,
    tokens_per_batch: tuple[int, int],
    max_waste: float,
    strategy: str = "first_fit",
) -> Check:
    """``answer = (row_len, rows_per_batch)`` for packing documents of ``lengths`` whole (never split): one batch
    shape, ``tokens_per_batch = (least, most)`` positions per batch, and at most ``max_waste`` of them padding.

    The rows are those :func:`xlaport.recompile.packing.pack` builds with ``strategy``; the last batch is filled
    up with rows of padding, as :func:`~xlaport.recompile.packing.pack_documents` does.
    """
    from ..recompile.packing import pack

    name = "packing plan"
    lens = _ints("lengths", lengths)
    lo, hi = (int(v) for v in tokens_per_batch)
    if not 1 <= lo <= hi:
        raise ValueError(f"tokens_per_batch must be (least, most) with 1 <= least <= most, got {tokens_per_batch!r}")
    if not 0 <= max_waste < 1:
        raise ValueError(f"max_waste must be a share in [0, 1), got {max_waste!r}")
    if answer is None:
        return _none(name)
    try:
        row_len, rows_per_batch = (int(v) for v in answer)
    except (TypeError, ValueError):
        return _fail(name, "answer must be (row_len, rows_per_batch), e.g. (128, 2)")
    if row_len < 1 or rows_per_batch < 1:
        return _fail(name, f"row_len and rows_per_batch must be positive, got ({row_len}, {rows_per_batch})")
    longest = max(lens)
    if longest > row_len:
        return _fail(
            name, f"the {longest}-token document does not fit a row of {row_len}: raise row_len (or split documents)"
        )
    per_batch = row_len * rows_per_batch
    if not lo <= per_batch <= hi:
        return _fail(
            name,
            f"{rows_per_batch} x {row_len} = {per_batch} tokens per batch; a step should carry {lo} to {hi}",
        )
    rows = pack(lens, row_len, strategy)
    empty = -len(rows) % rows_per_batch  # rows of padding that fill up the last batch
    batches = (len(rows) + empty) // rows_per_batch
    positions = batches * per_batch
    waste = 1 - sum(lens) / positions
    if waste > max_waste:
        slack = len(rows) * row_len - sum(lens)
        return _fail(
            name,
            f"{waste:.0%} of the {positions} positions are padding (limit {max_waste:.0%}): {slack} at the ends of "
            f"{len(rows)} rows, {empty * row_len} in {plural(empty, 'empty row')} filling the last batch",
        )
    return _ok(
        name,
        f"one shape ({rows_per_batch}, {row_len}) for all {batches} batches, so no compile after the first step; "
        f"{waste:.0%} padding",
    )


def check_tied_weights(move: Callable[..., Any] | None, build: Callable[[], Any], device: Any) -> Check:
    """``move(model, device) -> model`` (or ``None``: the model moved in place): every parameter on ``device``, and
    the parameters that share one tensor on the CPU (tied weights) still share one after the move."""
    name = "tied weights"
    ref = build()
    groups: dict[int, list[str]] = {}
    for pname, p in ref.named_parameters(remove_duplicate=False):
        groups.setdefault(id(p), []).append(pname)
    tied = [names for names in groups.values() if len(names) > 1]
    if not tied:
        raise ValueError("the model built has no tied weights: nothing to check")
    if move is None:
        return _none(name)
    model = build()
    try:
        out = move(model, device)
    except Exception as e:
        return _fail(name, f"raised {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
    model = model if out is None else out
    params = dict(model.named_parameters(remove_duplicate=False))
    want = getattr(device, "type", str(device).split(":")[0])
    off = [(n, p.device) for n, p in params.items() if p.device.type != want]
    if off:
        return _fail(name, f"{off[0][0]} is on {off[0][1]}, not {want}: move the whole model")
    for names in tied:
        missing = [n for n in names if n not in params]
        if missing:
            return _fail(name, f"parameter {missing[0]} is gone after the move")
        if len({id(params[n]) for n in names}) > 1:
            return _fail(
                name,
                f"{' and '.join(names)} are {len({id(params[n]) for n in names})} tensors after the move: a training "
                "step would update them apart; re-tie them after moving (model.tie_weights())",
            )
    shared = "; ".join(" = ".join(names) for names in tied)
    return _ok(
        name, f"all {len({id(p) for p in params.values()})} parameter tensors on {want}; still one tensor: {shared}"
    )


def check_matmul_precision(
    forward: Callable[..., Any] | None,
    model: Any,
    inputs: Mapping[str, Any],
    reference: Any,
    target: Any,
    tolerance: tuple[float, float],
) -> Check:
    """``forward(model, inputs) -> logits`` run on ``target`` with its default float32 matmul precision in effect
    (:func:`xlaport.numerics.precision.emulate`): the logits pass an ``allclose(atol, rtol)`` test against the float32
    ``reference`` at ``tolerance``, computed on the model's device (not moved to the CPU first)."""
    import torch

    from ..numerics import precision

    name = "matmul precision"
    atol, rtol = (float(v) for v in tolerance)
    if precision.rule(target) is None:
        raise ValueError("the target has no matmul_precision rule: pass the tpu profile (xlaport.profile('tpu'))")
    if forward is None:
        return _none(name)
    first = next(iter(model.parameters()))
    try:
        with precision.emulate(target) as default, torch.no_grad():
            out = forward(model, inputs)
            used = precision.current_mode()
    except Exception as e:
        return _fail(name, f"raised {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
    logits = getattr(out, "logits", out)
    if logits.device.type != first.device.type:
        return _fail(name, f"the logits came from {logits.device.type}, not the model's {first.device.type}")
    c = precision.compare(logits.cpu(), reference)
    at = (
        "at the device's own setting"
        if used is None
        else f"at {used!r} ({plural(precision.PASSES[used], 'pass', 'passes')})"
    )
    if not c.passes(atol, rtol):
        return _fail(
            name,
            f"{at} the logits need tolerance {c.tol_needed:.1e}; the test allows atol={atol:g}, rtol={rtol:g}"
            + (f" ({used!r} is the target's default)" if used is not None and used == default else ""),
        )
    return _ok(name, f"{at} the logits need {sci(c.tol_needed)}: within atol={atol:g}, rtol={rtol:g}")


# ------------------------------------------------------------------------------------------------ distributed
def check_stream_port(
    fn: Callable[..., Any] | None, original: Callable[..., Any], inputs: Sequence[Any], target: str = "tpu"
) -> Check:
    """``fn(dm, *inputs)``, a port of the CUDA stream code ``original(dm, *inputs)``: on ``target``'s stream rules
    (``xlaport.distributed.streams``) no call it makes raises or does nothing, and its outputs equal the
    original's run in program order (no stream rules: the ``cpu`` profile)."""
    import torch

    from ..distributed.streams import EmulatedStreams
    from ..profiles import profile

    name = "stream port"
    rules = profile(target)
    ref = original(EmulatedStreams(profile("cpu")), *inputs)
    want = ref if isinstance(ref, (tuple, list)) else (ref,)
    if not all(isinstance(w, torch.Tensor) for w in want):
        raise ValueError("the original stream code must return a tensor or a tuple of tensors")
    if fn is None:
        return _none(name)
    dm = EmulatedStreams(rules)
    try:
        got = fn(dm, *inputs)
    except Exception as e:
        text = str(e).splitlines()[0] if str(e) else ""
        if dm.log and dm.log[-1][1] == "raises":  # a stream call the target's rules say raises
            return _fail(name, f"`{dm.log[-1][0]}` raises {type(e).__name__} on {target}: {text}")
        return _fail(name, f"raised {type(e).__name__}: {text}")
    dead = list(dict.fromkeys(c for c, outcome, _ in dm.log if outcome == "no-op"))
    if dead:
        return _fail(
            name,
            f"{', '.join(f'`{c}`' for c in dead)} {'does' if len(dead) == 1 else 'do'} nothing on {target}: dead "
            "code that promises an overlap it does not get; delete it",
        )
    have = got if isinstance(got, (tuple, list)) else (got,)
    if len(have) != len(want):
        return _fail(name, f"{plural(len(have), 'output')}, the CUDA version returns {len(want)}")
    for i, (h, w) in enumerate(zip(have, want)):
        if not isinstance(h, torch.Tensor) or tuple(h.shape) != tuple(w.shape):
            return _fail(name, f"output {i}: not a tensor of shape {tuple(w.shape)}")
        if not w.numel():
            continue
        err = float((h.detach().cpu().double() - w.detach().cpu().double()).abs().max())
        if not math.isfinite(err) or err > 1e-5 * (1 + float(w.detach().abs().max())):
            return _fail(name, f"output {i} differs from the CUDA version's by {err:.2e}")
    left = sorted({c for c, _, _ in dm.log})
    return _ok(
        name,
        f"same outputs as the CUDA version; no stream call raises or does nothing on {target}"
        + (f" ({len(left)} that run left: {', '.join(left)})" if left else " (no stream call left)"),
    )


def check_fsdp_chips(
    answer: int | None,
    shapes: Mapping[str, Sequence[int]],
    budget_bytes: float,
    batch: int,
    state_bytes_per_param: float = 16,
    gathered_bytes_per_param: float = 4,
) -> Check:
    """``answer``: the fewest chips over which FSDP fits a model of parameter ``shapes`` in ``budget_bytes`` per chip.

    Per chip: every parameter's training state (``state_bytes_per_param``, 16 = float32 parameter, gradient and
    AdamW's two moments) sharded as :func:`xlaport.distributed.mesh.fsdp_bytes_per_device` computes, plus the largest parameter gathered
    whole (``gathered_bytes_per_param``), as FSDP does before a layer uses it. The global ``batch`` must split
    evenly over the chips.
    """
    name = "FSDP chips"
    if not shapes:
        raise ValueError("shapes is empty")
    if not budget_bytes > 0:
        raise ValueError(f"budget_bytes must be positive, got {budget_bytes!r}")
    batch = _ints("batch", [batch])[0]
    largest = largest_parameter(shapes) * float(gathered_bytes_per_param)

    def need(n: int) -> float:
        return fsdp_bytes_per_device(shapes, n, state_bytes_per_param) + largest

    if answer is None:
        return _none(name)
    try:
        n = int(answer)
    except (TypeError, ValueError):
        return _fail(name, f"answer must be a whole number of chips, got {answer!r}")
    if n != answer or n < 1:
        return _fail(name, f"answer must be a whole number of chips >= 1, got {answer!r}")
    if batch % n:
        return _fail(name, f"the global batch of {batch} does not split evenly over {n} chips")
    gb = 1e9
    if need(n) > budget_bytes:
        return _fail(
            name,
            f"{need(n) / gb:.1f} GB per chip on {n} chips (sharded state {(need(n) - largest) / gb:.1f} GB + the "
            f"largest parameter gathered whole {largest / gb:.2f} GB); the budget is {budget_bytes / gb:.1f} GB",
        )
    fewer = next((m for m in range(1, n) if batch % m == 0 and need(m) <= budget_bytes), None)
    if fewer is not None:
        return _fail(
            name, f"fits ({need(n) / gb:.1f} GB per chip), but {fewer} chips fit too ({need(fewer) / gb:.1f} GB)"
        )
    return _ok(
        name,
        f"{n} chips: {need(n) / gb:.1f} GB per chip of a {budget_bytes / gb:.1f} GB budget"
        + (f"; {prev} chips would need {need(prev) / gb:.1f} GB" if (prev := _smaller_divisor(batch, n)) else ""),
    )


def _smaller_divisor(batch: int, n: int) -> int | None:
    return next((m for m in range(n - 1, 0, -1) if batch % m == 0), None)
