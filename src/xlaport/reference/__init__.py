"""The book's reference data and the pages rendered from it.

``reference/data/`` holds every data file with provenance (target rules, op tables read from the
torch_tpu wheel, TorchNeuron's op list, the API mapping, hardware facts). Each generated reference
page has one module here, named as the page, with ``render() -> str`` (MyST markdown). The pages sit above what
they render: the modules that load and query the data (the last column) never import this package, and read the
files through :func:`data_text` (:mod:`xlaport._data`, re-exported here).

==================  =========================================  ======================================
page / module       rendered from                               query API
==================  =========================================  ======================================
``target_rules``    ``data/profiles.toml``                      :mod:`xlaport.profiles`
``api_mapping``     ``data/api_mapping.toml`` + API surface     :mod:`xlaport.api_mapping`
``op_coverage``     ``data/torch_tpu-0.2.0-ops.json`` and more  :mod:`xlaport.ops`
``hardware``        ``data/hardware.toml``                      :mod:`xlaport.cost`
``scan_rules``      the scanner's rule modules                  :mod:`xlaport.scan.rules`
==================  =========================================  ======================================

The site's extension (``_ext/xlaport_site/generated.py``) writes each to ``book/generated/<page>.md`` when the
book builds.
"""

from __future__ import annotations

import importlib

from .._data import data_text

__all__ = ["PAGES", "data_text", "render"]

PAGES: tuple[str, ...] = ("target_rules", "api_mapping", "op_coverage", "hardware", "kernel_concepts", "scan_rules")


def render(page: str) -> str:
    """The MyST markdown of reference page ``page`` (one of :data:`PAGES`).

    ``op_coverage`` imports torch_xla (its ``xla`` column), which changes Dynamo's global config:
    render it in a process of its own, as the site build does.
    """
    if page not in PAGES:
        raise ValueError(f"unknown reference page {page!r}; choose one of: {', '.join(PAGES)}")
    return str(importlib.import_module(f"{__name__}.{page}").render())
