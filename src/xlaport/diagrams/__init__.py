"""The book's five figures, declared as data and built offline; importing this package never imports torch.

Each public function returns a :class:`matplotlib.figure.Figure` with a one-line title; a chapter shows it by
ending a cell with the call (the figure is not left registered with pyplot, so it is shown once, as the cell's
result), and the site build writes the home page's flowchart with :func:`save` (a reproducible SVG).

* :func:`lazy_vs_eager`: eager (CUDA) against lazy (XLA) execution, with the lazy step's measured times when given
  (matplotlib's ``broken_barh``);
* :func:`fallback_chain`: the dispatcher's path for an op without a kernel on the ``tpu`` device (schemdraw);
* :func:`schedule_views`: ``sigmas[i]`` views at a new storage offset every denoising step (``broken_barh``);
* :func:`kv_cache`: the preallocated static KV cache and its mask, against a cache grown with ``torch.cat``;
* :func:`migration_flowchart`: the book's decision path, from ``xlaport doctor`` to go / no-go (schemdraw);
* :func:`grouped_bars`: grouped horizontal bars, values after the bars, the legend above clear of them.
"""

from __future__ import annotations

from .bars import grouped_bars
from .cells import kv_cache, schedule_views
from .flows import fallback_chain, migration_flowchart
from .style import PALETTE, save
from .timeline import lazy_vs_eager

__all__ = [
    "PALETTE",
    "fallback_chain",
    "grouped_bars",
    "kv_cache",
    "lazy_vs_eager",
    "migration_flowchart",
    "save",
    "schedule_views",
]
