"""CUDA stream and event code pointed at a target: what each call does there, from the target's rules.

``stream_api(t)`` returns the module a CUDA codebase's ``torch.cuda`` stream calls become on target
``t``: ``torch.cuda`` on a GPU, ``torch.tpu`` on a TPU VM (TorchTPU registers it), ``torch_neuronx``
on Trainium, and otherwise an :class:`EmulatedStreams` object: for ``tpu`` and ``neuron`` emulated
on XLA:CPU, and for a plain CPU (which has no streams: with the ``cpu`` profile's empty rule set
every call runs in program order). That object is **emulation**: it does not reproduce streams, it
reproduces what the real target's documented stream API does with your calls, as the profile's
``stream_api`` and ``device_api`` rules say (each with its source). On emulated ``tpu``:
``stream(s)`` is a no-op context, ``Event.wait()``/``Stream.wait_stream()`` do nothing,
``Stream.query()`` raises TorchTPU's ``NotImplementedError`` with its exact text, and
``current_stream()`` raises TorchTPU's ``RuntimeError`` pointing to ``torch.accelerator``.

>>> from xlaport.distributed.streams import stream_api, attempt
>>> dm = stream_api(xlaport.target("tpu"))        # torch.cuda-like
>>> side = dm.Stream()
>>> attempt(dm, lambda: side.query())              # Attempt(outcome='raises', error='NotImplementedError', ...)

Calls the emulator has no rule for run in program order, which is all XLA:CPU can do; they are
logged as ``"works"`` with ``rule=None``. Work inside ``with dm.stream(s):`` runs where it would run
anyway: in the one lazy XLA graph of the step.
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from ..profiles import Profile, Rule

__all__ = [
    "OUTCOMES",
    "STREAM_CALLS",
    "Attempt",
    "Behaviour",
    "EmulatedStreams",
    "Trial",
    "agrees",
    "attempt",
    "behaviour",
    "rules_for",
    "rules_table",
    "stream_api",
]

OUTCOMES: tuple[str, ...] = ("works", "no-op", "raises", "host-timed")
STREAM_CALLS: tuple[str, ...] = (
    "Stream",
    "Event",
    "stream",
    "current_stream",
    "default_stream",
    "set_stream",
    "synchronize",
    "Stream.query",
    "Stream.priority_range",
    "Stream.synchronize",
    "Stream.record_event",
    "Stream.wait_event",
    "Stream.wait_stream",
    "Event.record",
    "Event.wait",
    "Event.query",
    "Event.synchronize",
    "Event.elapsed_time",
    "Event.ipc_handle",
    "Event.from_ipc_handle",
)
_ERRORS: dict[str, type[Exception]] = {"NotImplementedError": NotImplementedError, "RuntimeError": RuntimeError}


@dataclass(frozen=True)
class Behaviour:
    """What one stream/event call does on a target, and which rule says so (``None``: no rule)."""

    call: str
    outcome: str  # one of OUTCOMES
    error: str | None = None
    message: str | None = None
    rule: str | None = None
    source: str | None = None


def behaviour(profile: Profile, call: str) -> Behaviour:
    """The documented behaviour of ``call`` (a name in :data:`STREAM_CALLS`) on ``profile``'s target."""
    if call not in STREAM_CALLS:
        raise ValueError(f"unknown stream call {call!r}; choose one of: {', '.join(STREAM_CALLS)}")
    for r in profile.of_kind("device_api"):  # module-level device calls that raise (e.g. TorchTPU's legacy APIs)
        if call in r.extra.get("names", ()):
            prefer = r.extra.get("prefer", {}).get(call, f"torch.accelerator.{call}")
            message = (r.message or r.summary).format(name=call, prefer=prefer)
            return Behaviour(call, "raises", r.error or "RuntimeError", message, r.id, r.source)
    for r in profile.of_kind("stream_api"):
        if call in r.extra.get("names", ()):
            outcome = r.extra.get("behaviour", "works")
            if outcome not in OUTCOMES:
                raise ValueError(f"rule {profile.name}/{r.id}: behaviour must be one of {OUTCOMES}, got {outcome!r}")
            return Behaviour(call, outcome, r.error, r.message, r.id, r.source)
    return Behaviour(call, "works")


@dataclass(frozen=True)
class Attempt:
    """What happened when one line of stream code ran: ``outcome`` is one of :data:`OUTCOMES`."""

    outcome: str
    error: str | None = None
    message: str | None = None
    rule: str | None = None
    value: Any = None


def attempt(dm: Any, fn: Callable[[], Any]) -> Attempt:
    """Run ``fn()`` (one stream call) against ``dm`` from :func:`stream_api` and say what it did.

    An exception becomes ``outcome="raises"`` with its type and message (so a chapter can show the
    line that would stop a CUDA script). On :class:`EmulatedStreams` the log tells no-ops and
    host-timed calls apart from calls that worked; a real device module only reports works/raises.
    """
    before = len(dm.log) if isinstance(dm, EmulatedStreams) else 0
    try:
        value = fn()
    except Exception as e:
        rule = dm.log[-1][2] if isinstance(dm, EmulatedStreams) and len(dm.log) > before else None
        return Attempt("raises", type(e).__name__, str(e), rule)
    if isinstance(dm, EmulatedStreams) and len(dm.log) > before:
        entries = dm.log[before:]
        for kind in ("no-op", "host-timed"):  # the most telling outcome among the calls fn made
            hit = next((e for e in entries if e[1] == kind), None)
            if hit:
                return Attempt(kind, rule=hit[2], value=value)
        return Attempt("works", rule=entries[-1][2], value=value)
    return Attempt("works", value=value)


class _Stream:
    def __init__(self, api: EmulatedStreams, stream_id: int, priority: int = 0) -> None:
        self._api, self.stream_id, self.priority = api, stream_id, priority

    def __repr__(self) -> str:
        return f"<emulated {self._api.target} stream {self.stream_id}>"

    def query(self) -> bool:
        self._api._apply("Stream.query")
        return True  # in program order: done once the step has synced

    def priority_range(self) -> tuple[int, int]:
        self._api._apply("Stream.priority_range")
        return (0, 0)  # one implicit stream, one priority

    def synchronize(self) -> None:
        self._api._apply("Stream.synchronize")
        self._api._sync()

    def record_event(self, event: _Event | None = None) -> _Event:
        self._api._apply("Stream.record_event")
        event = event if event is not None else self._api.Event()
        event.record(self)
        return event

    def wait_event(self, event: _Event) -> None:
        if self._api._apply("Stream.wait_event") == "no-op":
            return
        event.wait(self)

    def wait_stream(self, stream: _Stream) -> None:
        if self._api._apply("Stream.wait_stream") == "no-op":
            return
        self.wait_event(stream.record_event())


class _Event:
    """An event on the emulator: ``record()`` runs the work queued so far (a sync) and notes when it finished."""

    def __init__(self, api: EmulatedStreams, enable_timing: bool = False) -> None:
        self._api, self.enable_timing = api, enable_timing
        self._done: float | None = None

    def __repr__(self) -> str:
        return f"<emulated {self._api.target} event>"

    def record(self, stream: _Stream | None = None) -> _Event:
        self._api._apply("Event.record")
        self._api._sync()  # the work recorded so far has run once the host knows it has
        self._done = time.perf_counter()
        return self

    def wait(self, stream: _Stream | None = None) -> None:
        self._api._apply("Event.wait")  # in program order there is nothing to wait for

    def query(self) -> bool:
        self._api._apply("Event.query")
        return True

    def synchronize(self) -> None:
        self._api._apply("Event.synchronize")  # record() already waited

    def elapsed_time(self, end: _Event) -> float:
        """Milliseconds between the host learning that this event's work and ``end``'s work finished."""
        self._api._apply("Event.elapsed_time")
        if not (self.enable_timing and end.enable_timing):
            raise ValueError("both events need enable_timing=True")
        if self._done is None or end._done is None:
            raise ValueError("record both events before elapsed_time")
        return 1000.0 * (end._done - self._done)

    def ipc_handle(self) -> Any:
        self._api._apply("Event.ipc_handle")
        raise NotImplementedError("the emulator has no inter-process events")

    @classmethod
    def from_ipc_handle(cls, device: Any, handle: Any) -> Any:  # pragma: no cover - mirrors the real API's shape
        raise NotImplementedError("the emulator has no inter-process events")


class EmulatedStreams:
    """``torch.tpu``/``torch.neuron`` stream calls on the emulator, behaving as the target's rules say.

    Every call is appended to :attr:`log` as ``(call, outcome, rule id or None)``.
    """

    def __init__(self, profile: Profile, sync: Callable[[], None] | None = None) -> None:
        self.profile = profile
        self.target = profile.name
        self._sync = sync or (lambda: None)
        self.log: list[tuple[str, str, str | None]] = []
        self._next_id = 1
        self._default = _Stream(self, 0)
        self._current = self._default

    def __repr__(self) -> str:
        return f"<EmulatedStreams: {self.kind}>"

    @property
    def kind(self) -> str:
        """What this object stands for, in words (for banners and tables)."""
        if rules_for(self.profile):
            return f"{self.profile.title} stream rules, emulated on XLA:CPU"
        return f"{self.profile.title}: no stream rules, calls run in program order"

    def behaviour(self, call: str) -> Behaviour:
        return behaviour(self.profile, call)

    def _apply(self, call: str) -> str:
        b = self.behaviour(call)
        self.log.append((call, b.outcome, b.rule))
        if b.outcome == "raises":
            raise _ERRORS.get(b.error or "", RuntimeError)(b.message or f"{call} is not supported on {self.target}")
        return b.outcome

    # torch.cuda-shaped module functions
    def Stream(self, device: Any = None, priority: int = 0, **kwargs: Any) -> _Stream:
        self._apply("Stream")
        s = _Stream(self, self._next_id, priority)
        self._next_id += 1
        return s

    def Event(self, enable_timing: bool = False, **kwargs: Any) -> _Event:
        self._apply("Event")
        return _Event(self, enable_timing)

    @contextmanager
    def stream(self, stream: _Stream | None) -> Iterator[None]:
        outcome = self._apply("stream")
        if outcome == "no-op" or stream is None:
            yield
            return
        previous, self._current = self._current, stream
        try:
            yield
        finally:
            self._current = previous

    def current_stream(self, device: Any = None) -> _Stream:
        self._apply("current_stream")
        return self._current

    def default_stream(self, device: Any = None) -> _Stream:
        self._apply("default_stream")
        return self._default

    def set_stream(self, stream: _Stream) -> None:
        self._apply("set_stream")
        self._current = stream

    def synchronize(self, device: Any = None) -> None:
        self._apply("synchronize")
        self._sync()


def stream_api(target: Any) -> Any:
    """The ``torch.cuda``-shaped stream module for ``target`` (an :class:`xlaport.Target`); see the module doc."""
    device = getattr(target, "device", None)
    if device is None or not hasattr(target, "profile"):
        raise ValueError(f"stream_api needs an xlaport Target (xlaport.target(...)), got {type(target).__name__}")
    if device.type == "xla":
        return EmulatedStreams(target.profile, target.sync)
    if device.type == "cuda":
        import torch

        return torch.cuda
    if device.type == "tpu":  # torch_tpu registered torch.tpu when xlaport.targets imported it
        import torch

        return torch.tpu  # type: ignore[attr-defined]
    if device.type == "neuron":
        return importlib.import_module("torch_neuronx")  # torch_neuronx.Stream / torch_neuronx.stream
    return EmulatedStreams(target.profile, target.sync)  # CPU: no streams at all; calls run in program order


def agrees(profile: Profile, dm: Any, call: str, seen: Attempt) -> tuple[bool, str]:
    """Did ``seen`` (an :func:`attempt` of ``call`` on ``dm``) do what ``profile``'s rules say? ``(ok, why)``.

    On :class:`EmulatedStreams` the outcome must match the rule exactly (and a raised error its type and
    text). A real device module (``torch.cuda``, ``torch.tpu``) cannot show a no-op, so there a call must
    raise exactly when a rule says it raises, with the rule's text, and otherwise run.
    """
    if call not in STREAM_CALLS:
        raise ValueError(f"unknown stream call {call!r}; choose one of: {', '.join(STREAM_CALLS)}")
    return _agrees(profile, call, seen, exact=isinstance(dm, EmulatedStreams))


def _agrees(profile: Profile, call: str, seen: Attempt, exact: bool) -> tuple[bool, str]:
    want = behaviour(profile, call)
    if want.outcome == "raises":
        if seen.outcome != "raises" or seen.error != want.error or seen.message != want.message:
            return False, f"expected {want.error}({want.message!r}) per rule {want.rule}, got {_show(seen)}"
        return True, f"raises {want.error}, as rule {want.rule} says"
    if seen.outcome == "raises":
        return False, f"expected it to run ({want.outcome}), got {_show(seen)}"
    if exact and seen.outcome != want.outcome:
        return False, f"expected {want.outcome} per rule {want.rule}, got {seen.outcome}"
    return True, f"{want.outcome}" + (f", as rule {want.rule} says" if want.rule else " (no rule)")


def _show(a: Attempt) -> str:
    return f"{a.error}({a.message!r})" if a.outcome == "raises" else a.outcome


def rules_for(profile: Profile) -> list[Rule]:
    """The profile's rules that decide stream behaviour (``stream_api`` and the device calls that raise)."""
    return [*profile.of_kind("stream_api"), *(r for r in profile.of_kind("device_api") if r.extra.get("names"))]


def _cell(text: object) -> str:
    return str(text).replace("|", "/").replace("\n", " ")


def rules_table(profile: Profile) -> str:
    """The rules that decide stream behaviour on ``profile``'s target, as a markdown table: rule, the CUDA calls it
    covers, what they do there, source."""
    lines = ["| rule | calls | what happens | source |", "|---|---|---|---|"]
    for r in rules_for(profile):
        names = r.extra["names"] if r.kind == "stream_api" else [n for n in r.extra["names"] if n in STREAM_CALLS]
        what = r.extra.get("behaviour", "raises") + (f" `{r.error}`" if r.error else "")
        calls = ", ".join(f"`{n}`" for n in names)
        lines.append(f"| `{r.id}` | {calls} | {what} | {_cell(r.source)} |")
    return "\n".join(lines)


class Trial:
    """Lines of CUDA stream code run one at a time on ``dm`` (from :func:`stream_api`), each kept with what it did.

    ``trial.line("side = torch.cuda.Stream()", "Stream", lambda: dm.Stream())`` runs the call, records
    ``{"code", "call", "seen"}`` in :attr:`rows` (``seen`` an :class:`Attempt`) and returns the call's value
    (``None`` when it raised), so the next line can use it.
    """

    def __init__(self, dm: Any) -> None:
        self.dm = dm
        self.rows: list[dict[str, Any]] = []

    def line(self, code: str, call: str, fn: Callable[[], Any]) -> Any:
        if call not in STREAM_CALLS:
            raise ValueError(f"unknown stream call {call!r}; choose one of: {', '.join(STREAM_CALLS)}")
        seen = attempt(self.dm, fn)
        self.rows.append({"code": code, "call": call, "seen": seen})
        return seen.value

    def counts(self) -> dict[str, int]:
        """How many lines had each outcome (every name in :data:`OUTCOMES`, zeros included)."""
        out = dict.fromkeys(OUTCOMES, 0)
        for r in self.rows:
            out[r["seen"].outcome] += 1
        return out

    def table(self, target_name: str) -> str:
        """The lines and what each did on ``target_name``, as a markdown table."""
        if not self.rows:
            raise ValueError("no stream lines were run: call trial.line(...) first")
        kind = self.dm.kind if isinstance(self.dm, EmulatedStreams) else f"real {target_name}"
        lines = [f"| CUDA line | on `{target_name}` ({kind}) | rule |", "|---|---|---|"]
        for r in self.rows:
            s = r["seen"]
            what = f"raises `{s.error}`: {s.message}" if s.outcome == "raises" else s.outcome
            lines.append(f"| `{r['code']}` | {_cell(what)} | {f'`{s.rule}`' if s.rule else 'none'} |")
        return "\n".join(lines)
