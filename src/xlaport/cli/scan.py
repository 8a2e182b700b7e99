"""``xlaport scan PATH...``: CUDA-isms, custom kernels and recompile risks in a codebase, without running it.

Exit status: 0 when no finding reaches ``--fail-on`` (default ``error``, or ``fail-on`` in the scanned
project's ``[tool.xlaport]``), 1 when one does, 2 on bad input. Torch-free.
"""

from __future__ import annotations

import argparse
import os
import sys

__all__ = ["configure", "run"]

_FORMATS = ("table", "json", "sarif", "markdown")
_LEVELS = ("error", "warning", "note", "never")  # xlaport.scan.FAIL_LEVELS, repeated so --help stays light


def configure(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Scan Python files, .cu/.cuh sources, requirements*.txt and pyproject.toml for what stops or slows "
        "CUDA code on TPU (TorchTPU) and Trainium (TorchNeuron): device strings, torch.cuda calls, fp16 AMP, "
        "streams, NCCL, CUDA-only packages, custom kernels, data-dependent shapes, host syncs in loops, growing "
        "caches. Nothing is imported or run. Silence a line with '# xlaport: ignore[RULE]'; configure a project "
        "in [tool.xlaport] of its pyproject.toml. Exit 1 when a finding reaches --fail-on, 2 on bad input."
    )
    p.add_argument("paths", nargs="*", metavar="PATH", help="files or folders to scan")
    p.add_argument("--format", choices=_FORMATS, default="table", help="output format (default table)")
    p.add_argument("--output", "-o", metavar="FILE", help="write the report to FILE instead of standard output")
    p.add_argument(
        "--fail-on",
        choices=_LEVELS,
        default=None,
        help="exit 1 when a finding is at this level or worse (default: the project's fail-on, else error)",
    )
    p.add_argument("--config", metavar="PYPROJECT", help="use this pyproject.toml's [tool.xlaport] for every path")
    p.add_argument("--jobs", "-j", default=None, help="worker processes (default: all cores on large trees)")
    p.add_argument("--max-file-size", default=None, metavar="BYTES", help="skip larger files (default 8 MiB)")
    p.add_argument("--max-findings", default=None, metavar="N", help="table/markdown: show at most N findings")
    p.add_argument("--progress", action="store_true", help="show a progress bar even when stderr is not a terminal")
    p.add_argument("--rules", action="store_true", help="list the rules (id, severity, why, fix, chapter) and exit")
    p.add_argument(
        "--explain",
        metavar="RULE",
        help="print what RULE finds, why, the fix, an example of each side and its chapters, and exit",
    )
    p.add_argument(
        "--baseline",
        metavar="FILE",
        help="report only findings not in this baseline (matched by rule, file and code text, not line number)",
    )
    p.add_argument("--write-baseline", metavar="FILE", help="write every finding to FILE as the baseline, exit 0")


def _print_rules() -> None:
    from ..scan import RULES

    for r in RULES:
        print(f"{r.id}  [{r.severity}, {r.category}]  {r.title}")
        print(f"    why: {r.why}")
        print(f"    fix: {r.fix}")
        if r.docs:
            print(f"    book: {', '.join(r.docs)}")


def run(args: argparse.Namespace) -> int:
    from ..scan import scan, table, to_json, to_markdown, to_sarif
    from .args import positive_whole

    if args.rules:
        _print_rules()
        return 0
    if args.explain is not None:
        from ..scan import rule

        print(rule(args.explain).explain())
        return 0
    if not args.paths:
        raise ValueError("give at least one file or folder to scan (or --rules to list the rules)")
    jobs = positive_whole("--jobs", args.jobs) if args.jobs is not None else None
    size = positive_whole("--max-file-size", args.max_file_size) if args.max_file_size is not None else None
    limit = positive_whole("--max-findings", args.max_findings) if args.max_findings is not None else None
    if args.config is not None and not os.path.isfile(args.config):
        raise ValueError(f"no such config file: {args.config}")
    progress = True if (args.progress or sys.stderr.isatty()) else None
    res = scan(args.paths, config=args.config, jobs=jobs, progress=progress, max_file_size=size)
    if args.write_baseline:
        from ..scan.baseline import write_baseline

        n = write_baseline(res, args.write_baseline)
        print(f"wrote {n} finding{'s' if n != 1 else ''} to the baseline {args.write_baseline}", file=sys.stderr)
        return 0
    if args.baseline:
        from ..scan.baseline import apply_baseline, load_baseline

        res, known = apply_baseline(res, load_baseline(args.baseline))
        print(f"{known} finding{'s' if known != 1 else ''} in the baseline {args.baseline} not shown", file=sys.stderr)
    if args.format == "json":
        text = to_json(res)
    elif args.format == "sarif":
        import json

        text = json.dumps(to_sarif(res), indent=2)
    elif args.format == "markdown":
        text = to_markdown(res, limit)
    else:
        color = args.output is None and sys.stdout.isatty() and "NO_COLOR" not in os.environ
        text = table(res, limit, color=color)
    if args.output:
        try:
            with open(args.output, "w", encoding="utf-8") as fh:
                fh.write(text if text.endswith("\n") else text + "\n")
        except OSError as e:
            raise ValueError(f"cannot write {args.output}: {e.strerror or e}") from None
        from ..scan.output import summary_line

        print(summary_line(res), file=sys.stderr)
    else:
        print(text)
    level = args.fail_on or res.fail_on or "error"
    return 1 if res.reaches(level) else 0
