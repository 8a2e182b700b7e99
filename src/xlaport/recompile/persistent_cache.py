"""Does a compilation cache on disk spare a new process its compiles? Measured in fresh processes.

torch_xla's persistent cache (``torch_xla.runtime.initialize_cache(path)``) writes each compiled
program to ``path``; a later process that runs the same graph should load it instead of compiling.
Whether it can depends on the PJRT client: the check below runs the same small compile (the
encoder of :class:`xlaport.models.TinyWhisper` on one batch) in two fresh processes that share
one cache directory and reports, for each, compiles and the cache counters
(``PersistentCacheHit``/``Miss``/``DeserializeFailure``) with any deserialisation error text.

>>> from xlaport.recompile.persistent_cache import PersistentCacheCheck
>>> with PersistentCacheCheck(frames=200) as check:
...     check.start("cold")              # in the background, at the lowest CPU priority
...     ...                              # the chapter's own timings run meanwhile
...     check.start("warm")              # starts after "cold" has finished (one worker)
...     cold, warm = check.result("cold"), check.result("warm")

Run as ``python -m xlaport.recompile.persistent_cache CACHE_DIR FRAMES``, the module is the side
process itself: it prints one JSON line.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from .. import xla_cpu

__all__ = ["CacheRun", "PersistentCacheCheck", "COUNTERS"]

COUNTERS: tuple[str, ...] = ("PersistentCacheHit", "PersistentCacheMiss", "PersistentCacheDeserializeFailure")
_ERROR_MARK = "Failed to deserialize executable: "


@dataclass(frozen=True)
class CacheRun:
    """One fresh process's compile of the probe graph with the shared cache directory."""

    label: str
    compiles: int
    compile_s: float | None
    hits: int
    misses: int
    deserialize_failures: int
    errors: tuple[str, ...]  # distinct deserialisation error texts the process printed
    files_after: int  # files in the cache directory once the process ended


class PersistentCacheCheck:
    """Run the probe in fresh processes, one after another in the background, sharing one cache directory."""

    def __init__(
        self, frames: int = 200, *, cache_dir: str | os.PathLike[str] | None = None, timeout_s: float = 600
    ) -> None:
        if not isinstance(frames, int) or isinstance(frames, bool) or not 16 <= frames <= 3000:
            raise ValueError(f"frames must be a whole number of log-mel frames in [16, 3000], got {frames!r}")
        self.frames = frames
        self.timeout_s = timeout_s
        self._own_dir = cache_dir is None
        self.cache_dir = Path(tempfile.mkdtemp(prefix="xla_cache_") if cache_dir is None else cache_dir)
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        self._pool = ThreadPoolExecutor(max_workers=1)
        self._jobs: dict[str, Future[CacheRun]] = {}
        # Every run gets this environment, taken now: the cache key covers XLA's options (XLA_FLAGS among them), so
        # a run started before the caller's torch_xla had set its flags and one started after would miss each other.
        self._env = {**os.environ, "PJRT_DEVICE": "CPU"}
        xla_cpu.configure(self._env)

    # ---------------------------------------------------------------- lifecycle
    def __enter__(self) -> PersistentCacheCheck:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Wait for running processes, then remove the cache directory if this check made it."""
        self._pool.shutdown(wait=True)
        if self._own_dir:
            shutil.rmtree(self.cache_dir, ignore_errors=True)

    # ---------------------------------------------------------------- runs
    def start(self, label: str) -> Future[CacheRun]:
        """Queue one fresh process (runs after those queued before it)."""
        if not isinstance(label, str) or not label or label in self._jobs:
            raise ValueError(f"label must be a new, non-empty string, got {label!r}")
        self._jobs[label] = self._pool.submit(self._run, label)
        return self._jobs[label]

    def result(self, label: str) -> CacheRun:
        """The run ``label``, waiting for it if needed; a failed process raises RuntimeError with its stderr tail."""
        if label not in self._jobs:
            raise ValueError(f"no run {label!r}; started: {', '.join(self._jobs) or 'none'}")
        return self._jobs[label].result()

    def wait(self, label: str) -> None:
        """Block until run ``label`` has finished (so that timings made next are not disturbed)."""
        self.result(label)

    def _run(self, label: str) -> CacheRun:
        package_root = str(Path(__file__).resolve().parents[2])
        env = {
            **self._env,
            "PYTHONPATH": os.pathsep.join(p for p in (package_root, self._env.get("PYTHONPATH", "")) if p),
        }
        low = (lambda: os.nice(19)) if hasattr(os, "nice") else None
        p = subprocess.run(
            [sys.executable, "-m", __name__, str(self.cache_dir), str(self.frames)],
            capture_output=True,
            text=True,
            env=env,
            timeout=self.timeout_s,
            preexec_fn=low,
        )
        if p.returncode != 0:
            raise RuntimeError(f"persistent-cache process {label!r} failed:\n{p.stderr[-2000:]}")
        d = json.loads(p.stdout.strip().splitlines()[-1])
        errors = tuple(
            sorted({line.split(_ERROR_MARK, 1)[1].strip() for line in p.stderr.splitlines() if _ERROR_MARK in line})
        )
        return CacheRun(
            label,
            d["compiles"],
            d["compile_s"],
            d["PersistentCacheHit"],
            d["PersistentCacheMiss"],
            d["PersistentCacheDeserializeFailure"],
            errors,
            len(os.listdir(self.cache_dir)),
        )


def _probe(cache_dir: str, frames: int) -> dict[str, object]:
    """The side process: initialise the cache before any computation, compile the probe graph once."""
    import torch
    import torch_xla
    import torch_xla.runtime as xr

    xr.initialize_cache(cache_dir, readonly=False)
    from .. import metrics
    from ..models.whisper import TinyWhisper, synthetic_mel
    from .monitor import RecompileMonitor

    dev = torch_xla.device()
    torch.manual_seed(0)
    model = TinyWhisper(enc_layers=1, dec_layers=1).eval().to(dev)
    with RecompileMonitor("cache", sync=lambda: torch_xla.sync(wait=True)) as mon:
        mel, mask = synthetic_mel([frames, 100], generator=torch.Generator().manual_seed(0))
        with mon.step(mel), torch.no_grad():
            out = model.encode(mel.to(dev), mask.to(dev))[0]  # kept: a lazy result nobody holds is never computed
    assert out.shape[0] == 2
    snap = metrics.snapshot(fallbacks=False, extra=COUNTERS)
    return {
        "compiles": mon.records[0].compiles,
        "compile_s": mon.records[0].compile_s,
        **{n: snap.counter(n) for n in COUNTERS},
    }


if __name__ == "__main__":  # pragma: no cover - runs in the side process
    if len(sys.argv) != 3:
        sys.exit("usage: python -m xlaport.recompile.persistent_cache CACHE_DIR FRAMES")
    print(json.dumps(_probe(sys.argv[1], int(sys.argv[2]))))
