"""The zoo sweep: does each architecture run forward, train, and train on varied lengths without a cliff?

For every model of :mod:`xlaport.zoo.registry` and every target (emulated ``tpu``/``neuron``, or the real
device), :func:`run_model` measures, against a float32 CPU run of the same weights:

1. **forward** at a fixed shape (``batch`` items of ``fixed_len``): runs, finite, and equal to the CPU
   logits within Hugging Face's equivalence tolerance for the matmul precision in effect
   (:func:`xlaport.numerics.precision.tolerance_for`);
2. **a full training step** at that shape (forward, backward, AdamW, one sync): the loss within the same
   tolerance, the gradients within the same relative (L2) error, the parameters finite and updated;
3. **ops**: what the target does with every ATen op of the forward and of the training step
   (:func:`xlaport.ops.coverage` on a CPU trace): an op that would raise fails the stage;
4. **varied lengths**: ``steps`` training steps on batches whose lengths are drawn the way text lengths
   are (log-normal), each padded to its longest item, against the same batches padded to ``fixed_len``.
   :class:`~xlaport.recompile.RecompileMonitor` counts the compiles of each step; throughput is *useful*
   tokens per second (padding excluded), compared between the two runs per second of this process's CPU time,
   which a busy machine hardly changes (:attr:`~xlaport.zoo.results.ModelResult.ratio`). The fixed-shape run gets one untimed warm-up step first, as a
   long fixed-shape job amortises its one compile; the varied run is timed whole, compiles included, because
   a job with varied lengths keeps meeting new ones. **No cliff** means the varied run keeps at least
   ``cliff_ratio`` of the fixed-shape throughput.

The training steps run in torch_xla's lazy mode on the emulator (one XLA program per distinct graph, the
same count a static-shape ``torch.compile`` gives; see ``notebooks/recompile_storms.ipynb``), with the
optimizer's state created up front (:func:`init_optimizer_state`) so that a shape compiles once, not twice.
On the emulated ``tpu`` target the profile's matmul precision rule is applied
(:func:`xlaport.numerics.precision.emulate`). Failures are recorded, one line each, never raised.

>>> from xlaport.zoo import SweepConfig, sweep
>>> result = sweep(SweepConfig(models=("llama", "bert"), targets=("tpu",)), progress=print)
>>> print(result.table())
>>> result.summary()["tpu"]          # forward / training / no-cliff pass rates
>>> result.to_json()
"""

from __future__ import annotations

import contextlib
import copy
import platform
import time
import warnings
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from .. import metrics
from ..text import plural
from . import registry
from .config import SWEEP_TARGETS, SweepConfig, draw_lengths
from .registry import _one_line
from .results import ModelResult, RunResult, StageResult, SweepResult, _finite

__all__ = [
    "SweepConfig",
    "StageResult",
    "RunResult",
    "ModelResult",
    "SweepResult",
    "run_model",
    "sweep",
    "draw_lengths",
    "init_optimizer_state",
    "SWEEP_TARGETS",
]

Progress = Callable[[str], None]


# --------------------------------------------------------------------------- helpers
def init_optimizer_state(opt: Any) -> None:
    """Create AdamW/Adam state (step, exp_avg, exp_avg_sq) now, as the first ``step()`` would.

    Lazily created state makes the first training step a different graph from every later one, so a
    static-shape backend compiles each shape twice; created up front, the first step is already the
    steady-state graph (one compile per shape).
    """
    import torch

    for group in opt.param_groups:
        capturable = bool(group.get("capturable", False)) or bool(group.get("fused", False))
        for p in group["params"]:
            state = opt.state[p]
            if state:
                continue
            state["step"] = torch.zeros((), dtype=torch.float32, device=p.device) if capturable else torch.tensor(0.0)
            state["exp_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
            state["exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)
            if group.get("amsgrad", False):
                state["max_exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)


def _unique_params(model: Any) -> int:
    """Parameter tensors, counting a tied (shared) parameter once."""
    return len({id(p) for _, p in model.named_parameters(remove_duplicate=False)})


def _to(batch: Mapping[str, Any], device: Any) -> dict[str, Any]:
    import torch

    return {k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in batch.items()}


def _flat_grads(model: Any) -> Any:
    import torch

    gs = [p.grad.detach().reshape(-1).cpu() for p in model.parameters() if p.grad is not None]
    return torch.cat(gs).double() if gs else torch.zeros(0, dtype=torch.float64)


def _cpu_traces(spec: registry.ModelSpec, model: Any, batch: Mapping[str, Any], lr: float) -> tuple[Any, Any]:
    """ATen op traces of the forward and of a training step, on the CPU, with PyTorch's math attention.

    CPU attention would dispatch a CPU-only fused kernel (``_scaled_dot_product_flash_attention_for_cpu``)
    that no accelerator receives; the math path is what XLA runs and every backend has.
    """
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel

    from ..ops import aten_ops

    m = copy.deepcopy(model)
    opt = torch.optim.AdamW(m.parameters(), lr=lr)

    def fwd() -> Any:
        with torch.no_grad():
            return spec.output(m(**batch))

    def step() -> None:
        loss = m(**batch).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    with sdpa_kernel([SDPBackend.MATH]):
        return aten_ops(fwd), aten_ops(step)


def _ops_verdict(trace: Any, target: str) -> tuple[list[str], list[str], int]:
    from ..ops import coverage

    if target not in ("tpu", "neuron"):
        return [], [], len(trace)
    cov = coverage(trace, target)
    rows = [r for r in cov.rows if r.op.startswith("aten::")]
    return (
        [r.op for r in rows if r.status == "raises"],
        [r.op for r in rows if r.status == "falls back"],
        len(rows),
    )


# --------------------------------------------------------------------------- one model
def run_model(
    spec: registry.ModelSpec,
    t: Any,
    config: SweepConfig,
    *,
    reference: dict[str, Any] | None = None,
    progress: Progress | None = None,
) -> ModelResult:
    """Measure one model on one target (see the module docstring). ``reference`` caches the CPU side."""
    import torch

    from ..numerics import precision
    from ..recompile import RecompileMonitor

    config = config.validated()
    say = progress or (lambda s: None)
    start = time.perf_counter()
    mode = config.precision if precision.rule(t) is not None else None
    res = ModelResult(spec.name, spec.family, t.name, t.kind)
    ref = reference if reference is not None else {}
    gen = torch.Generator().manual_seed(config.seed)
    try:
        if "model" not in ref:
            ref.update(_reference(spec, config, gen))
    except ValueError as e:
        res.forward.error = res.train.error = str(e)
        res.wall_s = time.perf_counter() - start
        return res
    res.params = ref["params"]
    fixed_batch = ref["fixed_batch"]
    spec = ref["spec"]
    dev = t.device
    fwd_ops = _ops_verdict(ref["traces"][0], t.name)
    train_ops = _ops_verdict(ref["traces"][1], t.name)

    with precision.emulate(t, mode) as active, _missing_ops_as(t):
        res.precision = active
        atol, rtol = precision.tolerance_for(active)

        # 1. forward at the fixed shape
        fwd = res.forward
        fwd.raises, fwd.falls_back, fwd.n_ops = fwd_ops
        snap = metrics.snapshot(times=())
        model = copy.deepcopy(ref["model"]).to(dev)
        res.untied = _unique_params(model) - ref["unique_params"]
        if res.untied and hasattr(model, "tie_weights"):
            # What HF's Trainer does after moving a model to an XLA device. Without it the output layer and the
            # embedding train as two tensors; the training step below fails on that unless config.retie, and the
            # measurements after it run on the re-tied model either way.
            model.tie_weights()
        try:
            b = _to(fixed_batch, dev)
            with RecompileMonitor("forward", sync=t.sync) as mon, mon.step(), torch.no_grad():
                model.eval()
                out = spec.output(model(**b))
            c = precision.compare(out.cpu(), ref["logits"])
            fwd.ran, fwd.compiles, fwd.seconds = True, mon.summary().compiles, mon.summary().wall_s
            fwd.tol_needed, fwd.max_abs = _finite(c.tol_needed), _finite(c.max_abs)
            close = c.passes(atol, rtol)
            fwd.passed = close and not fwd.raises
            fwd.why = _why(c.finite, close, fwd.raises, atol, rtol)
        except Exception as e:  # a model that fails on the target: record, go on
            fwd.error = _one_line(e)
        _fallbacks(fwd, snap, t)
        say(f"  forward: {'ok' if fwd.passed else 'FAIL'} ({fwd.why or fwd.error})")

        # 2. one full training step at the fixed shape
        tr = res.train
        tr.raises, tr.falls_back, tr.n_ops = train_ops
        snap = metrics.snapshot(times=())
        try:
            model.train()
            opt = torch.optim.AdamW(model.parameters(), lr=config.lr)
            init_optimizer_state(opt)
            before = [p.detach().cpu().clone() for p in model.parameters()]
            t.sync()
            with RecompileMonitor("train", sync=t.sync) as mon, mon.step():
                opt.zero_grad(set_to_none=True)
                loss = model(**b).loss
                loss.backward()
                opt.step()
            tr.ran, tr.compiles, tr.seconds = True, mon.summary().compiles, mon.summary().wall_s
            lc = precision.compare(loss.detach().cpu().reshape(1), ref["loss"].reshape(1))
            grads = _flat_grads(model)
            gc = precision.compare(grads, ref["grads"])
            after = [p.detach().cpu() for p in model.parameters()]
            finite = lc.finite and gc.finite and all(bool(torch.isfinite(p).all()) for p in after)
            changed = any(not torch.equal(x, y) for x, y in zip(before, after))
            tr.tol_needed, tr.max_abs, tr.grad_rel_l2 = _finite(lc.tol_needed), _finite(lc.max_abs), _finite(gc.rel_l2)
            close = lc.passes(atol, rtol) and gc.finite and gc.rel_l2 <= rtol
            untied = bool(res.untied) and not config.retie
            tr.passed = finite and close and changed and not tr.raises and not untied
            tr.why = _why(finite, close, tr.raises, atol, rtol, grad=gc.rel_l2) + ("" if changed else "; no update")
            if res.untied:
                tr.why += f"; tied weights came apart in .to(device) ({plural(res.untied, 'tensor')})" + (
                    ", re-tied with model.tie_weights()" if config.retie else ": call model.tie_weights() after moving"
                )
        except Exception as e:
            tr.error = _one_line(e)
        _fallbacks(tr, snap, t)
        say(f"  training step: {'ok' if tr.passed else 'FAIL'} ({tr.why or tr.error})")

        # 3. the same batches at one fixed shape, then at their own lengths
        if tr.ran:
            try:
                res.fixed = _run(spec, model, opt, t, config, ref["lengths"], config.fixed_len, warm_up=True)
                res.varied = _run(spec, model, opt, t, config, ref["lengths"], None, warm_up=False)
            except Exception as e:
                res.varied_error = _one_line(e)
            if res.varied is not None and res.fixed is not None:
                say(
                    f"  varied lengths: {res.varied.compiles} compiles in {res.varied.steps} steps, "
                    f"{res.varied.tokens_per_s:.0f} vs {res.fixed.tokens_per_s:.0f} useful tokens/s at a fixed shape "
                    f"({res.ratio:.2f}x per CPU second)"
                )
            else:
                say(f"  varied lengths: {res.varied_error}")
    del model
    res.wall_s = time.perf_counter() - start
    return res


@contextlib.contextmanager
def _missing_ops_as(t: Any) -> Iterator[None]:
    """Missing ops as ``t`` treats them, when a tpu target in this process installed TorchTPU's behaviour.

    The emulated tpu target makes ops without any kernel raise TorchTPU's NotImplementedError, for the whole
    process (the XLA device is shared). A neuron target falls back to the CPU instead, so its stages run
    with the fallback switched on (and TorchTPU's fallback warning silenced).
    """
    from ..ops import emulated_ops
    from ..ops.fallback import TpuFallbackWarning, cpu_fallback

    if t.name == "tpu" or not emulated_ops():
        yield
        return
    with cpu_fallback(True), warnings.catch_warnings():
        warnings.simplefilter("ignore", TpuFallbackWarning)
        yield


def _fallbacks(stage: StageResult, snap: Any, t: Any) -> None:
    """Record the ops torch_xla ran on the CPU during a stage; blame the emulator for a failure among them."""
    from ..ops import decide, support_table

    if snap.backend != "xla":
        return
    stage.cpu_fallbacks = metrics.snapshot(times=()).delta(snap).fallbacks
    if stage.error is None or t.name not in ("tpu", "neuron"):
        return
    table = support_table(t.name)
    # the same verdict the report and the emulator use: the target runs the op (a kernel, or a structured
    # composite that reaches one), so a failure in torch_xla's CPU fallback for it is the emulator's
    own = [op for op in stage.cpu_fallbacks if op != "aten::_local_scalar_dense" and decide(op, table).runs]
    if own:
        stage.emulator_fault = (
            f"{', '.join(own)} ran through torch_xla's CPU fallback on the emulator; {t.profile.title} runs it"
        )


def _why(finite: bool, close: bool, raises: list[str], atol: float, rtol: float, grad: float | None = None) -> str:
    parts = []
    if not finite:
        parts.append("inf/NaN")
    elif not close:
        g = f"; gradient error {grad:.1e} > {rtol:g}" if grad is not None and grad > rtol else ""
        parts.append(f"outside atol={atol:g}, rtol={rtol:g}{g}")
    else:
        parts.append(f"within atol={atol:g}, rtol={rtol:g}")
    if raises:
        parts.append(f"{len(raises)} op(s) would raise: {', '.join(r.removeprefix('aten::') for r in raises[:3])}")
    return "; ".join(parts)


def _reference(spec: registry.ModelSpec, config: SweepConfig, gen: Any) -> dict[str, Any]:
    """The CPU float32 side: model, fixed batch, logits, one training step's loss and grads, op traces."""
    import torch

    s = spec if config.layers is None else spec.with_layers(config.layers)
    s = s.for_fixed_len(config.fixed_len).with_overrides(config.overrides)
    model = s.build(config.seed)
    fixed_batch, _ = s.batch([config.fixed_len] * config.batch, config.fixed_len, generator=gen)
    lengths = draw_lengths(config)
    with torch.no_grad():
        model.eval()
        logits = s.output(model(**fixed_batch)).detach().clone()
    model.train()
    m = copy.deepcopy(model)
    loss = m(**fixed_batch).loss
    loss.backward()
    grads = _flat_grads(m)
    traces = _cpu_traces(s, model, fixed_batch, config.lr)
    return {
        "spec": s,
        "model": model,
        "params": sum(p.numel() for p in model.parameters()),
        "unique_params": _unique_params(model),
        "fixed_batch": fixed_batch,
        "logits": logits,
        "loss": loss.detach().clone(),
        "grads": grads,
        "lengths": lengths,
        "traces": traces,
    }


def _run(
    spec: registry.ModelSpec,
    model: Any,
    opt: Any,
    t: Any,
    config: SweepConfig,
    lengths: list[list[int]],
    pad_to: int | None,
    *,
    warm_up: bool,
) -> RunResult:
    import torch

    from ..recompile import RecompileMonitor

    gen = torch.Generator().manual_seed(config.seed + 1)
    batches = [spec.batch(ls, pad_to, generator=gen) for ls in lengths]

    def step(b: Mapping[str, Any]) -> None:
        opt.zero_grad(set_to_none=True)
        model(**b).loss.backward()
        opt.step()

    if warm_up:
        step(_to(batches[0][0], t.device))
        t.sync()
    run = RunResult()
    with RecompileMonitor("varied" if pad_to is None else "fixed", sync=t.sync) as mon:
        for b, useful in batches:
            positions = _positions(spec, b)
            with mon.step(*[v for v in b.values() if isinstance(v, torch.Tensor)]):
                step(_to(b, t.device))
            run.useful += useful
            run.positions += positions
    s = mon.summary()
    run.steps, run.compiles, run.distinct_shapes, run.wall_s, run.compile_s, run.cpu_s = (
        s.steps,
        s.compiles,
        s.distinct_keys,
        s.wall_s,
        s.compile_s,
        s.cpu_s,
    )
    return run


def _positions(spec: registry.ModelSpec, batch: Mapping[str, Any]) -> int:
    """Positions computed along the varying axis (useful or padding)."""
    if spec.task == "image-classification":
        pv = batch["pixel_values"]
        patch = int(spec.config["patch_size"])
        return int(pv.shape[0]) * (int(pv.shape[-1]) // patch) ** 2
    if spec.task == "speech-seq2seq":
        return int(batch["labels"].numel())
    if spec.task == "seq2seq":
        return int(batch["input_ids"].numel() + batch["labels"].numel())
    return int(batch["input_ids"].numel())


# --------------------------------------------------------------------------- the sweep
def sweep(config: SweepConfig, *, progress: Progress | None = None) -> SweepResult:
    """Run every model of ``config`` on every target; one line per stage to ``progress``."""
    import torch

    import xlaport

    config = config.validated()
    say = progress or (lambda s: None)
    start = time.perf_counter()
    # Every target before any backward pass: autograd sizes its per-device queues at the first backward.
    targets = {name: xlaport.target(name) for name in config.targets}
    env = {"python": platform.python_version(), "torch": torch.__version__}
    try:
        import transformers

        env["transformers"] = transformers.__version__
        verbosity = transformers.logging.get_verbosity()
        transformers.logging.set_verbosity_error()
    except ImportError:  # pragma: no cover - depends on the environment
        raise ValueError("the zoo needs Hugging Face transformers (pip install transformers)") from None
    for name, t in targets.items():
        env[f"target {name}"] = t.banner()
    results = []
    try:
        n = len(config.models)
        for i, m in enumerate(config.models, 1):
            spec = registry.get(m)
            ref: dict[str, Any] = {}
            for name, t in targets.items():
                say(f"[{i}/{n}] {m} on {name} ({t.kind})")
                results.append(run_model(spec, t, config, reference=ref, progress=say))
    finally:
        transformers.logging.set_verbosity(verbosity)
    return SweepResult(config, results, time.perf_counter() - start, env)
