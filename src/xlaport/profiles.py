"""Target profiles: each real target's documented behaviour, as data with sources.

The rules live in ``reference/data/profiles.toml``; this module only loads and queries
them. :class:`xlaport.targets.Target` applies the ``compile_*`` rules, and the
book renders every rule with its source, so behaviour and citation never drift
apart.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from ._data import data_text

__all__ = ["Rule", "Profile", "profile", "profile_names"]

_KINDS = {
    "compile_default",
    "compile_reject",
    "compile_ignore",
    "amp_dtype",
    "device_api",
    "note",
    "guard",
    "missing_op",
    "stream_api",
    "distributed",
    "matmul_precision",
}


@dataclass(frozen=True)
class Rule:
    """One documented behaviour of a target, with where it comes from."""

    id: str
    kind: str
    summary: str
    source: str
    key: str | None = None
    value: Any = None
    error: str | None = None
    message: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Profile:
    """What a target does differently from plain PyTorch on CPU."""

    name: str
    title: str
    device_type: str
    compile_backend: str
    rules: tuple[Rule, ...]
    package: str | None = None
    package_version: str | None = None

    def rule(self, rule_id: str) -> Rule:
        for r in self.rules:
            if r.id == rule_id:
                return r
        raise KeyError(f"profile {self.name!r} has no rule {rule_id!r}; it has: {', '.join(r.id for r in self.rules)}")

    def has(self, rule_id: str) -> bool:
        return any(r.id == rule_id for r in self.rules)

    def of_kind(self, kind: str) -> tuple[Rule, ...]:
        return tuple(r for r in self.rules if r.kind == kind)

    @property
    def compile_defaults(self) -> dict[str, Any]:
        """``torch.compile`` keywords the real target sets when the caller does not."""
        return {r.key: r.value for r in self.of_kind("compile_default") if r.key}

    @property
    def amp_dtype(self) -> str | None:
        rules = self.of_kind("amp_dtype")
        return rules[0].value if rules else None

    def table(self) -> list[dict[str, str]]:
        """Rows for display: one per rule, with its source."""
        return [{"rule": r.id, "kind": r.kind, "behaviour": r.summary, "source": r.source} for r in self.rules]


@cache
def _load() -> dict[str, Profile]:
    raw = tomllib.loads(data_text("profiles.toml"))
    out: dict[str, Profile] = {}
    for name, body in raw.items():
        rules = []
        for r in body.get("rules", []):
            if r["kind"] not in _KINDS:
                raise ValueError(f"profiles.toml: rule {name}/{r['id']} has unknown kind {r['kind']!r}")
            known = {k: r.get(k) for k in ("id", "kind", "summary", "source", "key", "value", "error", "message")}
            extra = {k: v for k, v in r.items() if k not in known}
            rules.append(Rule(**known, extra=extra))
        out[name] = Profile(
            name=name,
            title=body["title"],
            device_type=body["device_type"],
            compile_backend=body["compile_backend"],
            rules=tuple(rules),
            package=body.get("package"),
            package_version=body.get("package_version"),
        )
    return out


def profile_names() -> tuple[str, ...]:
    return tuple(_load())


def profile(name: str) -> Profile:
    """The profile of target ``name`` (``"cpu"``, ``"cuda"``, ``"tpu"`` or ``"neuron"``)."""
    profiles = _load()
    if name not in profiles:
        raise ValueError(f"unknown target {name!r}; choose one of: {', '.join(profiles)}")
    return profiles[name]
