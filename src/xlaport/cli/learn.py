"""``xlaport learn``: a learner's own copies of a session's chapters, resets, solutions on request, a team table.

    xlaport learn sessions                                   # the sessions and their chapters
    xlaport learn start --session 2 --dir ~/xlaport-work --name ana [--progress ~/team-progress]
    xlaport learn reset port_training --dir ~/xlaport-work  # a fresh copy; the old one goes to .reset/
    xlaport learn reveal port_training 1                     # print exercise 1's solution
    xlaport learn team ~/team-progress [--session 2]         # who passed what, and how many tries

Torch-free: it copies and reads notebooks and JSON lines only.
"""

from __future__ import annotations

import argparse
import getpass
from pathlib import Path

__all__ = ["configure", "run"]


def _sessions() -> int:
    from ..exercises.curriculum import SESSIONS

    for i, s in enumerate(SESSIONS, 1):
        needs = ", ".join(map(str, s.prerequisites)) or "none"
        print(f"{i}. {s.title}: {', '.join(s.chapters)} (needs {needs})")
    return 0


def _start(args: argparse.Namespace) -> int:
    from ..exercises import workspace

    folder = Path(args.dir).expanduser()
    written = workspace.start(args.session, folder, args.name, Path(args.progress) if args.progress else None,
                              force=args.force)  # fmt: skip
    for p in written:
        print(f"wrote {p}")
    kept = [s for s in workspace.session(args.session).chapters if (folder / f"{s}.ipynb") not in written]
    if kept:
        print(f"kept your existing {', '.join(kept)} (--force overwrites; `xlaport learn reset CHAPTER` resets one)")
    where = args.progress or f"{folder / '.progress'}"
    print(f"progress records for {args.name}: {where}")
    print(f"next: pip install 'xlaport[learn]' (JupyterLab), then: jupyter lab {folder}")
    return 0


def _reset(args: argparse.Namespace) -> int:
    from ..exercises import workspace

    dest, kept = workspace.reset(args.chapter, Path(args.dir))
    print(f"wrote a fresh {dest}" + (f"; your previous copy is {kept}" if kept else ""))
    return 0


def _reveal(args: argparse.Namespace) -> int:
    from ..exercises import workspace

    print(workspace.solution_text(args.chapter, args.n))
    return 0


def _team(args: argparse.Namespace) -> int:
    from ..exercises.curriculum import session
    from ..exercises.progress import team_table

    chapters = session(args.session).chapters if args.session else None
    print(team_table(Path(args.folder), chapters), end="")
    return 0


def run(args: argparse.Namespace) -> int:
    return {"sessions": lambda a: _sessions(), "start": _start, "reset": _reset, "reveal": _reveal, "team": _team}[
        args.action
    ](args)


def configure(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="action", metavar="ACTION", required=True, parser_class=type(p))
    sub.add_parser("sessions", help="list the sessions and their chapters")
    s = sub.add_parser("start", help="copy a session's chapters, without solutions, into your own folder")
    s.add_argument("--session", type=int, required=True, help="session number (see `xlaport learn sessions`)")
    s.add_argument("--dir", required=True, help="your folder, outside the repository (e.g. ~/xlaport-work)")
    s.add_argument("--name", default=getpass.getuser(), help="your name in the team table (default: your login)")
    s.add_argument("--progress", help="a shared folder for progress records (default: DIR/.progress)")
    s.add_argument("--force", action="store_true", help="overwrite copies already in DIR")
    r = sub.add_parser("reset", help="replace your copy of a chapter with a fresh one (the old one is kept)")
    r.add_argument("chapter", help="chapter name, e.g. port_training")
    r.add_argument("--dir", required=True, help="your folder")
    v = sub.add_parser("reveal", help="print an exercise's solution")
    v.add_argument("chapter", help="chapter name, e.g. port_training")
    v.add_argument("n", type=int, help="exercise number in the chapter, from 1")
    t = sub.add_parser("team", help="a table of who passed which exercise, from a progress folder")
    t.add_argument("folder", help="the shared progress folder")
    t.add_argument("--session", type=int, help="only this session's chapters")
