"""The doctor's recompile probe: run an entry point on the emulated ``tpu`` over given input shapes and count
compiles with :class:`~xlaport.recompile.RecompileMonitor`.

It runs in a fresh interpreter (``python -m xlaport.doctor.probe``, a JSON request on stdin, a JSON
answer on stdout), because importing torch_xla changes Dynamo's global configuration for the whole
process. Each call gets fresh random inputs of its shapes; the list of shapes is run ``repeat`` times,
so a program compiled again for a shape already seen shows a graph that depends on the data.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import xla_cpu
from ..text import plural

__all__ = ["ProbeCall", "ProbeResult", "run_probe", "parse_probe", "main"]


@dataclass(frozen=True)
class ProbeCall:
    index: int
    repeat: int
    inputs: str
    compiles: int
    compile_s: float | None
    wall_s: float
    new_shape: bool
    error: str | None = None


@dataclass
class ProbeResult:
    entry: str
    target: str
    banner: str = ""
    calls: list[ProbeCall] = field(default_factory=list)
    error: str | None = None
    seconds: float = 0.0
    counts_compiles: bool = True  # False where the target has no compile counter (the plain CPU target)

    @property
    def compiles(self) -> int:
        return sum(c.compiles for c in self.calls)

    @property
    def shapes(self) -> int:
        return len({c.inputs for c in self.calls})

    @property
    def repeat_compiles(self) -> int:
        """Compiles in calls whose shapes had been seen before: the graph depends on the data."""
        return sum(c.compiles for c in self.calls if not c.new_shape)

    def verdict(self) -> str:
        if self.error:
            return f"probe failed: {self.error}"
        if not self.calls:
            return "no calls"
        errors = [c for c in self.calls if c.error]
        if errors:
            return f"{len(errors)} of {len(self.calls)} calls failed on {self.target}: {errors[0].error}"
        if not self.counts_compiles:
            return (
                f"{plural(len(self.calls), 'call')} ran; compiles not counted: the target here has no compile counter "
                "(a CPU without torch_xla); run the probe on an emulated or real tpu or neuron"
            )
        if self.repeat_compiles:
            return (
                f"{plural(self.compiles, 'program')} for {plural(self.shapes, 'input shape')}; {self.repeat_compiles} "
                "of them for shapes "
                "already seen: the graph depends on the data (a data-dependent shape, a baked-in value)"
            )
        return f"{plural(self.compiles, 'program')} for {plural(self.shapes, 'input shape')}; shapes seen before compiled nothing"

    def as_dict(self) -> dict[str, Any]:
        return {
            "entry": self.entry,
            "target": self.target,
            "banner": self.banner,
            "error": self.error,
            "seconds": round(self.seconds, 2),
            "compiles": self.compiles,
            "repeat_compiles": self.repeat_compiles,
            "counts_compiles": self.counts_compiles,
            "verdict": self.verdict(),
            "calls": [c.__dict__ for c in self.calls],
        }


def parse_probe(spec: str) -> list[str]:
    """One call's inputs: ``"4x17:int64"`` or several separated by ``;`` (``"4x8;4x8:bool"``)."""
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError("bad --probe: expected SHAPE[:DTYPE][;SHAPE[:DTYPE]...], e.g. 4x17:int64")
    parts = [p.strip() for p in spec.split(";") if p.strip()]
    if not parts:
        raise ValueError(f"bad --probe {spec!r}: expected SHAPE[:DTYPE][;SHAPE[:DTYPE]...]")
    return parts


def _src_dir() -> str:
    return str(Path(__file__).resolve().parents[2])


def run_probe(
    entry: str,
    probes: list[list[str]],
    *,
    target: str = "tpu",
    repeat: int = 2,
    seed: int = 0,
    timeout: float = 180.0,
) -> ProbeResult:
    """Run ``entry`` on ``target`` (emulated where no device is present) in a fresh interpreter."""
    import time

    req = {"entry": entry, "probes": probes, "target": target, "repeat": repeat, "seed": seed}
    env = dict(os.environ)
    xla_cpu.configure(env)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (_src_dir(), env.get("PYTHONPATH")) if p)
    res = ProbeResult(entry, target)
    start = time.perf_counter()
    try:
        out = subprocess.run(
            [sys.executable, "-m", "xlaport.doctor.probe"],
            input=json.dumps(req),
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
            cwd=os.getcwd(),
        )
    except subprocess.TimeoutExpired:
        res.error = f"timed out after {timeout:g} s"
        res.seconds = time.perf_counter() - start
        return res
    res.seconds = time.perf_counter() - start
    answer = None
    for line in reversed(out.stdout.strip().splitlines()):
        if line.startswith("{"):
            try:
                answer = json.loads(line)
                break
            except json.JSONDecodeError:
                continue
    if answer is None:
        tail = (out.stderr.strip().splitlines() or ["no output"])[-1]
        res.error = f"probe process exited {out.returncode}: {tail}"
        return res
    res.banner = answer.get("banner", "")
    res.error = answer.get("error")
    res.calls = [ProbeCall(**c) for c in answer.get("calls", [])]
    res.counts_compiles = bool(answer.get("counts_compiles", True))
    return res


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return f"{type(e).__name__}: {text.splitlines()[0]}" if text else type(e).__name__


def main() -> int:
    """The child side: read the request, run the calls under a RecompileMonitor, print one JSON line."""
    req = json.loads(sys.stdin.read())
    xla_cpu.configure()
    import torch

    import xlaport
    from xlaport.ops.entry import load_entry, parse_input
    from xlaport.recompile import RecompileMonitor

    out: dict[str, Any] = {"banner": "", "calls": [], "error": None}
    try:
        torch.manual_seed(int(req["seed"]))
        t = xlaport.target(req["target"])
        out["banner"] = t.banner()
        out["counts_compiles"] = t.compiles() is not None
        entry = load_entry(req["entry"])
        fn = entry.fn
        if fn is None:
            raise ValueError("the probe needs FILE.py:CALLABLE or MODULE:CALLABLE, not a whole script")
        if isinstance(fn, torch.nn.Module):
            fn = fn.to(t.device).eval()
        gen = torch.Generator().manual_seed(int(req["seed"]))
        with RecompileMonitor("probe", sync=t.sync) as mon:
            for rep in range(int(req["repeat"])):
                for specs in req["probes"]:
                    xs = [parse_input(s, gen).to(t.device) for s in specs]
                    label = ";".join(specs)
                    err = None
                    result = None
                    try:
                        with mon.step(*xs, label=label), torch.no_grad():
                            result = fn(*xs)  # kept alive until the step's sync runs the graph that computes it
                    except Exception as e:
                        err = _first_line(e)
                    del result
                    rec = mon.records[-1]
                    out["calls"].append(
                        {
                            "index": len(out["calls"]),
                            "repeat": rep + 1,
                            "inputs": label,
                            "compiles": int(rec.compiles),
                            "compile_s": rec.compile_s,
                            "wall_s": rec.wall_s,
                            "new_shape": bool(rec.new_key),
                            "error": err,
                        }
                    )
    except Exception as e:
        out["error"] = _first_line(e)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
