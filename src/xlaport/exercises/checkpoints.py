"""Chapter *Checkpoints across hosts*: which saved pieces a new rank reads, and how FSDP2 splits uneven rows."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from .common import Verdict, fails, guarded, passes, raised

__all__ = ["check_reshard_reads", "check_shard_rows", "HIDDEN_RESHARDS", "HIDDEN_SPLITS"]

#: (rows, saved ranks, new ranks, new rank) the resharding check asks about.
HIDDEN_RESHARDS = ((24, 4, 3, 1), (48, 8, 6, 5), (12, 2, 6, 3), (30, 3, 5, 0), (64, 8, 8, 7))


def _reads(rows: int, saved: int, new: int, rank: int) -> list[tuple[int, int, int]]:
    lo, hi = rank * rows // new, (rank + 1) * rows // new
    out = []
    for s in range(saved):
        a, b = s * rows // saved, (s + 1) * rows // saved
        if max(a, lo) < min(b, hi):
            out.append((s, max(a, lo), min(b, hi)))
    return out


@guarded("resharded reads", must_be="a function reads(rows, saved_ranks, new_ranks, rank)")
def check_reshard_reads(reads: Callable[..., Any]) -> Verdict:
    """``reads(rows, saved_ranks, new_ranks, rank) -> [(saved_rank, first_row, end_row), ...]`` on
    :data:`HIDDEN_RESHARDS`."""
    done = []
    for rows, saved, new, rank in HIDDEN_RESHARDS:
        want = _reads(rows, saved, new, rank)
        where = f"for {rows} rows saved by {saved} ranks, loaded by {new}, new rank {rank}"
        try:
            got = [tuple(int(v) for v in piece) for piece in reads(rows, saved, new, rank)]
        except Exception as e:
            return fails(f"{where}: {raised(e, 'it')} (return a list of (saved_rank, first_row, end_row))")
        if got == want:
            done.append(f"{len(got)} piece{'s' if len(got) != 1 else ''}")
            continue
        hint = ""
        if got and {p[0] for p in got} == {p[0] for p in want} and got != want:
            hint = ": the right saved ranks, the wrong rows: read only where the saved block and the new block overlap"
        elif got == [p for p in want if p[0] == rank]:
            hint = ": a new rank does not read the saved rank of the same number; it reads whatever overlaps its rows"
        elif len(got) < len(want):
            hint = ": a block can straddle several saved blocks"
        return fails(f"{where}: {got}, expected {want}{hint}")
    return passes(f"right on {len(done)} unseen reshardings: {', '.join(done)}")


#: (rows, ranks) the FSDP2 split check asks about.
HIDDEN_SPLITS = ((10, 4), (7, 3), (5, 8), (64, 8), (1, 2), (9, 4))


@guarded("FSDP2 row split", must_be="a function split(rows, ranks) returning a list of row counts")
def check_shard_rows(split: Callable[..., Any]) -> Verdict:
    """``split(rows, ranks) -> [rows on each rank]`` as ``torch.chunk`` splits them, on :data:`HIDDEN_SPLITS`."""
    done = []
    for rows, ranks in HIDDEN_SPLITS:
        chunk = math.ceil(rows / ranks)
        want = [max(0, min(chunk, rows - r * chunk)) for r in range(ranks)]
        where = f"for {rows} rows over {ranks} ranks"
        try:
            got = [int(v) for v in split(rows, ranks)]
        except Exception as e:
            return fails(f"{where}: {raised(e, 'it')}")
        if got == want:
            done.append(str(got))
            continue
        hint = ""
        if len(got) != ranks:
            hint = f": one count per rank, {ranks} of them"
        elif sum(got) != rows:
            hint = f": the counts must add up to the {rows} rows"
        elif got == sorted(got) and got != want:
            hint = ": torch.chunk gives the full chunks to the first ranks and leaves the last ones short"
        elif max(got) - min(got) <= 1:
            hint = ": that is an even spread; torch.chunk gives every rank ceil(rows / ranks) until the rows run out"
        return fails(f"{where}: {got}, expected {want}{hint}")
    return passes(f"right on {len(done)} unseen splits: {'; '.join(done)}")
