"""Dynamo's compile events, read from torch's structured trace: one event per frame compile, with its time and the
guard failure that caused it.

Dynamo reports each frame compile to the structured trace (the ``torch.__trace`` logger that ``TORCH_TRACE`` and
``tlparse`` read): a ``compilation_metrics`` record with the function's name (``co_name``), the compile's time
(``entire_frame_compile_time_s``), its id and, on a recompile, the first guard failure (``recompile_reason``, the
text ``TORCH_LOGS=recompiles`` prints: ``tensor 'x' size mismatch at index 0. expected 2, actual 3``). When Dynamo
gives up on a function it logs ``torch._dynamo hit config.recompile_limit (8)`` on its ``convert_frame`` logger at
WARNING. This module listens to both through :mod:`logging` handlers, so nothing in torch is replaced or wrapped,
nothing is printed and no logging setting the user made changes (torch's own trace handlers, if ``TORCH_TRACE`` is
set, keep theirs).

The record names and fields above are what torch 2.9 writes; :func:`contract_problems` says in one line each what a
newer torch no longer provides, and ``tests/unit/test_recompile.py`` runs it against a real compile, so a change in
torch fails that test with the field's name instead of silently counting no compiles.

Cost: while a handler listens, torch formats every structured record (graphs, guards) at compile time; cached steps
compile nothing and pay nothing. A handler is installed only while at least one monitor is active.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["CompileEvent", "DynamoEvents", "EVENTS", "METRICS_RECORD", "METRICS_FIELDS", "contract_problems"]

TRACE_LOGGER = "torch.__trace"  # torch._logging._internal.trace_log: the structured trace
LIMIT_LOGGER = "torch._dynamo.convert_frame"  # where Dynamo warns that a function hit the recompile limit
METRICS_RECORD = "compilation_metrics"  # one per frame compile (backward and runtime compiles have other names)
METRICS_FIELDS = ("co_name", "entire_frame_compile_time_s", "recompile_reason", "compile_id", "fail_type")
_LIMIT = re.compile(r"hit config\.(?:recompile|cache_size)_limit")
_LAST_REASON = re.compile(r"last reason: (.*)")


@dataclass
class CompileEvent:
    """One compile seen by a source: ``"dynamo"`` (a frame compile, with its guard-failure reason on
    recompiles), ``"dynamo-failed"`` (an attempt that compiled nothing, such as one refused at the recompile limit;
    ``reason`` is the guard failure that started it) or ``"dynamo-limit"`` (the recompile-limit warning)."""

    source: str
    seconds: float | None
    reason: str | None
    kind: str | None
    compile_id: str | None = None
    function: str | None = None


Listener = Callable[[CompileEvent], None]


def event_from_metrics(fields: Mapping[str, Any]) -> CompileEvent:
    """The :class:`CompileEvent` for one ``compilation_metrics`` record's fields (``fail_type`` set: nothing
    was compiled)."""
    seconds = fields.get("entire_frame_compile_time_s")
    reason = fields.get("recompile_reason")
    cid = fields.get("compile_id")
    return CompileEvent(
        "dynamo-failed" if fields.get("fail_type") else "dynamo",
        float(seconds) if isinstance(seconds, (int, float)) else None,
        str(reason) if reason else None,
        None,
        None if cid is None else str(cid),
        fields.get("co_name"),
    )


def event_from_limit_warning(message: str) -> CompileEvent | None:
    """The ``"dynamo-limit"`` event for Dynamo's recompile-limit warning, or None for any other message."""
    if not _LIMIT.search(message):
        return None
    m = _LAST_REASON.search(message)
    return CompileEvent("dynamo-limit", None, m.group(1).strip() if m else "", None)


class _TraceHandler(logging.Handler):
    def __init__(self, emit: Listener) -> None:
        super().__init__(level=logging.DEBUG)
        self._send = emit

    def emit(self, record: logging.LogRecord) -> None:
        metadata = getattr(record, "metadata", None)
        if isinstance(metadata, dict) and isinstance(metadata.get(METRICS_RECORD), dict):
            self._send(event_from_metrics(metadata[METRICS_RECORD]))


class _LimitHandler(logging.Handler):
    def __init__(self, emit: Listener) -> None:
        super().__init__(level=logging.WARNING)
        self._send = emit

    def emit(self, record: logging.LogRecord) -> None:
        try:
            event = event_from_limit_warning(record.getMessage())
        except Exception:  # pragma: no cover - a malformed record is not ours to report
            return
        if event is not None:
            self._send(event)


class DynamoEvents:
    """Process-wide listeners on the structured trace and the limit warning, installed while anyone subscribes."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._listeners: list[Listener] = []
        self._handlers: list[tuple[logging.Logger, logging.Handler]] = []
        self._saved: tuple[int, bool] | None = None

    @property
    def installed(self) -> bool:
        return bool(self._handlers)

    def _emit(self, event: CompileEvent) -> None:
        for fn in list(self._listeners):
            fn(event)

    def subscribe(self, listener: Listener) -> None:
        with self._lock:
            self._listeners.append(listener)
            if len(self._listeners) == 1:
                self._install()

    def unsubscribe(self, listener: Listener) -> None:
        with self._lock:
            if listener in self._listeners:
                self._listeners.remove(listener)
            if not self._listeners:
                self._uninstall()

    def _install(self) -> None:
        import torch._logging  # noqa: F401  (sets up torch's loggers, the trace logger among them)

        trace = logging.getLogger(TRACE_LOGGER)
        # torch keeps the trace logger at DEBUG without propagation once its logging is set up; make sure of both
        # while we listen, so our records reach no other handler, and put back what was there after.
        self._saved = (trace.level, trace.propagate)
        trace.setLevel(logging.DEBUG)
        trace.propagate = False
        for logger, handler in (
            (trace, _TraceHandler(self._emit)),
            (logging.getLogger(LIMIT_LOGGER), _LimitHandler(self._emit)),
        ):
            logger.addHandler(handler)
            self._handlers.append((logger, handler))

    def _uninstall(self) -> None:
        for logger, handler in self._handlers:
            logger.removeHandler(handler)
        self._handlers.clear()
        if self._saved is not None:
            trace = logging.getLogger(TRACE_LOGGER)
            trace.setLevel(self._saved[0])
            trace.propagate = self._saved[1]
            self._saved = None


EVENTS = DynamoEvents()


def contract_problems() -> list[str]:
    """What this torch no longer provides that the monitor reads, one line each (empty: all there).

    Compiles a two-line function with Dynamo's ``eager`` backend at two shapes and checks that the structured trace
    reported both compiles as ``compilation_metrics`` with :data:`METRICS_FIELDS`, and the second with a
    size-mismatch reason.
    """
    import torch

    seen: list[dict[str, Any]] = []

    class _Raw(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            md = getattr(record, "metadata", None)
            if isinstance(md, dict) and isinstance(md.get(METRICS_RECORD), dict):
                seen.append(md[METRICS_RECORD])

    events: list[CompileEvent] = []
    raw = _Raw(level=logging.DEBUG)
    EVENTS.subscribe(events.append)
    logging.getLogger(TRACE_LOGGER).addHandler(raw)
    try:
        torch._dynamo.reset()
        f = torch.compile(lambda x: x * 2 + 1, backend="eager", dynamic=False)
        f(torch.ones(2))
        f(torch.ones(3))
    finally:
        logging.getLogger(TRACE_LOGGER).removeHandler(raw)
        EVENTS.unsubscribe(events.append)
        torch._dynamo.reset()
    where = f"torch {torch.__version__}; update xlaport/recompile/dynamo_events.py"
    if len(seen) < 2:
        return [f"the structured trace reported {len(seen)} '{METRICS_RECORD}' records for 2 frame compiles ({where})"]
    problems = [
        f"'{METRICS_RECORD}' records lack the field '{name}' ({where})"
        for name in METRICS_FIELDS
        if any(name not in rec for rec in seen)
    ]
    last = seen[-1].get("recompile_reason") or ""
    if "size mismatch" not in str(last):
        problems.append(f"the recompile's reason does not name the size mismatch: {last!r} ({where})")
    if len(events) != len(seen):
        problems.append(f"{len(events)} events for {len(seen)} compiles ({where})")
    return problems
