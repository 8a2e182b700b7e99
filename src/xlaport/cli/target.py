"""``xlaport target``: say which backend a name resolves to here, and the target's rules."""

from __future__ import annotations

import argparse

from ..targets import TARGET_NAMES

__all__ = ["configure", "run"]


def run(args: argparse.Namespace) -> int:
    from ..targets import target

    t = target(args.name)
    print(t.banner())
    if args.rules:
        for row in t.profile.table():
            print(f"- {row['rule']} [{row['kind']}]: {row['behaviour']}\n    source: {row['source']}")
    return 0


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("name", nargs="?", default="auto", choices=TARGET_NAMES, help="target name (default: auto)")
    p.add_argument("--rules", action="store_true", help="also list the target's documented rules with sources")
