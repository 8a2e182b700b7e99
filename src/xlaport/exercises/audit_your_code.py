"""Chapter *Audit your code*: a port the scanner finds clean and that runs, and a collate of few shapes."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..text import plural
from .common import ArgumentError, Verdict, fails, guarded, passes, raised

__all__ = ["check_scan_clean", "check_step_port", "check_collate", "hidden_documents", "HIDDEN_SEEDS"]


def _scan_problem(source: Any, want: set[str], keep: Iterable[str]) -> str | None:
    """Why ``source`` is not a clean port (not a string, does not parse, a finding left, work deleted), or None."""
    import ast

    from ..scan import scan_source

    if not isinstance(source, str):
        return f"answer must be the ported source as a string (got {type(source).__name__})"
    try:
        tree = ast.parse(source)
    except SyntaxError as e:
        return f"the source no longer parses: line {e.lineno}: {e.msg}"
    left = [f for f in scan_source(source) if f.rule in want]
    if left:
        f = left[0]
        return f"{plural(len(left), 'finding')} left; first: line {f.line} {f.rule}: {f.snippet.strip()[:60]}"
    present = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            present.add(node.name)
        elif isinstance(node, ast.Call):
            fn = node.func
            present.add(fn.attr if isinstance(fn, ast.Attribute) else getattr(fn, "id", ""))
    gone = [k for k in keep if k not in present]
    if gone:
        return (
            f"the source no longer defines or calls {', '.join(gone)}: keep the code's work and change only how it runs"
        )
    return None


def _run_on_cpu(source: str) -> dict[str, Any]:
    """Execute ``source`` with ``xlaport.target(...)`` giving the CPU target, whatever name it asks for."""
    import xlaport

    had = "target" in vars(xlaport)
    before = vars(xlaport).get("target")
    from ..targets import target as real_target

    setattr(xlaport, "target", lambda name="auto", **kw: real_target("cpu"))  # noqa: B010
    try:
        namespace: dict[str, Any] = {"__name__": "__audit_port__"}
        exec(compile(source, "<your port>", "exec"), namespace)
        return namespace
    finally:
        if had:
            setattr(xlaport, "target", before)  # noqa: B010
        else:
            delattr(xlaport, "target")


def _check_rules(rules: Iterable[str]) -> set[str]:
    from ..scan import rule_ids

    want = set(rules)
    unknown = want - set(rule_ids())
    if unknown:
        raise ArgumentError(f"unknown scan rule(s) {', '.join(sorted(unknown))}")
    return want


@guarded("scan clean", arguments=_check_rules)
def check_scan_clean(source: str, rules: Iterable[str], keep: Iterable[str] = (), run: bool = False) -> Verdict:
    """``source`` (a Python file as a string) has no finding of ``rules`` left, still parses, and still defines or
    calls every name in ``keep`` (so that deleting the code is not a port: ``keep=["backward", "step"]``). With
    ``run``, the source is also executed on the CPU target (``xlaport.target`` gives it whatever it asks for) and must
    leave a module whose parameters got gradients: the port still trains."""
    import torch

    want = set(rules)
    problem = _scan_problem(source, want, list(keep))
    if problem:
        return fails(problem)
    if run:
        try:
            ns = _run_on_cpu(source)
        except Exception as e:
            return fails(f"the scan is clean, but the port does not run on the CPU: {raised(e, 'it')}")
        modules = [v for v in ns.values() if isinstance(v, torch.nn.Module)]
        if not any(p.grad is not None for m in modules for p in m.parameters()):
            return fails("the scan is clean and the port runs, but no model got gradients: the step does not train")
        return passes(f"no {', '.join(sorted(want))} finding left, and the step trains on the CPU target")
    return passes(f"no {', '.join(sorted(want))} finding left")


# The seeds check_step_port runs a port with: the chapter never shows a run with them.
HIDDEN_SEEDS: tuple[int, ...] = (4057, 91)
STEP_RULES: tuple[str, ...] = ("cuda-device", "cuda-api", "cuda-amp")
STEP_KEEP: tuple[str, ...] = ("backward", "step")


def _cuda_step_on_cpu(seed: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """What examples/audit_exercises/cuda_step.py computes, in float32 on the CPU, from ``seed``: the weights before
    and after its one step (a 64x64 linear layer, SGD at lr 0.1 on the mean square of its output, data drawn after
    the layer)."""
    import torch

    torch.manual_seed(seed)
    model = torch.nn.Linear(64, 64)
    before = {k: v.detach().clone() for k, v in model.state_dict().items()}
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(8, 64)
    model(x).square().mean().backward()
    opt.step()
    return before, {k: v.detach().clone() for k, v in model.state_dict().items()}


def _check_seeds(seeds: tuple[int, ...]) -> None:
    if not seeds or not all(isinstance(s, int) for s in seeds):
        raise ArgumentError(f"seeds must be whole numbers, got {seeds!r}")


@guarded("step port", arguments=_check_seeds)
def check_step_port(source: str, seeds: tuple[int, ...] = HIDDEN_SEEDS) -> Verdict:
    """``source``, a port of the chapter's CUDA training step, has no ``cuda-device``, ``cuda-api`` or ``cuda-amp``
    finding left and still calls ``backward`` and ``step``; run on the CPU target from each of ``seeds`` (seeds the
    chapter never shows), it makes the same update as the CUDA step, computed here in float32 from the same seed: the
    same model, data, loss, optimiser and learning rate, in the same order. The update may differ by 5% of its size,
    room for a port that runs the step in bfloat16."""
    import torch

    problem = _scan_problem(source, set(STEP_RULES), STEP_KEEP)
    if problem:
        return fails(problem)
    for seed in seeds:
        before, want = _cuda_step_on_cpu(seed)
        torch.manual_seed(seed)
        try:
            ns = _run_on_cpu(source)
        except Exception as e:
            return fails(f"the scan is clean, but the port does not run on the CPU: {raised(e, 'it')}")
        modules = [v for v in ns.values() if isinstance(v, torch.nn.Module)]
        if not modules:
            return fails("the port leaves no model behind (keep the CUDA step's `model`)")
        got = {k: v.detach().float().cpu() for k, v in modules[0].state_dict().items()}
        if set(got) != set(want) or any(got[k].shape != want[k].shape for k in want):
            shapes = {k: tuple(v.shape) for k, v in got.items()}
            return fails(f"the port's model is not the CUDA step's 64x64 linear layer: {shapes}")
        step = torch.cat([(want[k] - before[k]).flatten() for k in sorted(want)])
        mine = torch.cat([(got[k] - before[k]).flatten() for k in sorted(want)])
        if not bool(mine.abs().sum() > 0):
            return fails(f"from seed {seed} (one you did not see) the port's step left the weights unchanged")
        off = float((mine - step).norm() / step.norm())
        if off > 0.05:
            return fails(
                f"from seed {seed} (one you did not see) the port's update differs from the CUDA step's by "
                f"{off:.0%} of its size: keep its model, data, loss, optimiser, learning rate and their order; "
                "change only where it runs",
            )
    return passes(
        f"no {', '.join(STEP_RULES)} finding left, and from {plural(len(seeds), 'unseen seed')} the port's step "
        "updates the weights as the CUDA step does",
    )


def hidden_documents() -> list[list[Any]]:
    """The batches of token documents the collate check runs the reader's ``collate`` on: 24 batches of 2 to 6
    documents of 1 to 120 tokens, lengths the chapter never shows."""
    import torch

    g = torch.Generator().manual_seed(909)
    out = []
    for _ in range(24):
        n = int(torch.randint(2, 7, (1,), generator=g))
        lens = torch.randint(1, 121, (n,), generator=g).tolist()
        out.append([torch.randint(1, 1000, (k,), generator=g) for k in lens])
    return out


def _check_max_shapes(max_shapes: int) -> None:
    if max_shapes < 1:
        raise ArgumentError(f"max_shapes must be >= 1, got {max_shapes!r}")


@guarded("collate", arguments=_check_max_shapes)
def check_collate(source: str, max_shapes: int = 4) -> Verdict:
    """``source`` defines ``collate(docs) -> (batch, length)`` tensor without a ``variable-length-batch`` finding;
    run on :func:`hidden_documents`, every row starts with its document, the rest is padding (0), and the batches
    take at most ``max_shapes`` lengths (a few buckets, each one compiled once)."""
    import torch

    problem = _scan_problem(source, {"variable-length-batch"}, ["collate"])
    if problem:
        return fails(problem)
    try:
        ns = _run_on_cpu(source)
        collate = ns["collate"]
    except Exception as e:
        return fails(f"the source does not run: {raised(e, 'it')}")
    lengths = set()
    for i, docs in enumerate(hidden_documents()):
        where = f"batch {i} ({len(docs)} documents, the longest {max(len(d) for d in docs)} tokens)"
        try:
            out = collate([d.clone() for d in docs])
        except Exception as e:
            return fails(f"{where}: collate {raised(e)}")
        if not isinstance(out, torch.Tensor) or out.dim() != 2 or out.shape[0] != len(docs):
            return fails(f"{where}: collate must return a (documents, length) tensor")
        for r, d in enumerate(docs):
            if out.shape[1] < len(d) or not torch.equal(out[r, : len(d)].to(d.dtype), d):
                return fails(f"{where}: row {r} does not start with its document (truncated or reordered)")
            if bool((out[r, len(d) :] != 0).any()):
                return fails(f"{where}: row {r} is padded with something other than 0")
        lengths.add(int(out.shape[1]))
    if len(lengths) > max_shapes:
        return fails(
            f"24 batches came out in {len(lengths)} lengths, so {len(lengths)} programs: pad to a few fixed bucket "
            f"lengths (at most {max_shapes}), not to each batch's longest document",
        )
    return passes(f"24 unseen batches in {plural(len(lengths), 'length')} {sorted(lengths)}; every document kept")
