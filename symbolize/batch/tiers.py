"""What the index tiers did in this process, for a batch run's figures: the index store's own counts
(symbolize/index_store/metrics.py: hits and misses of the local cache, the fetched LRU and the
store, indexes built and published, bytes fetched), as plain numbers a worker can send back.

The store's package is looked up by name: it came in a parallel change to this one, and a tree
without it reports no counts rather than failing (once both are in, a plain import would do).
"""

from __future__ import annotations

import importlib
import os
from typing import Any

# The store's reason for giving up on it, when it did: not a count, kept apart.
UNAVAILABLE = "store_unavailable"
# The store a process uses, set by --index-store (symbolize/index_store/config.py) or by the user.
INDEX_STORE_VARIABLE = "SYMBOLIZE_INDEX_STORE"


def _metrics_module() -> Any:
    try:
        return importlib.import_module("symbolize.index_store.metrics")
    except ModuleNotFoundError:
        return None


def tier_counts() -> dict[str, int | str]:
    """This process's counts since it started (or since :func:`reset_tier_counts`); {} without a store package."""
    module = _metrics_module()
    if module is None:
        return {}
    counts: dict[str, Any] = module.index_metrics().to_dict()
    return {name: value for name, value in counts.items() if isinstance(value, int | str)}


def reset_tier_counts() -> None:
    module = _metrics_module()
    if module is not None:
        module.reset_index_metrics()


def configured_index_store() -> str | None:
    """The store this process was told to use, for workers that do not share its environment."""
    return os.environ.get(INDEX_STORE_VARIABLE) or None


def use_index_store(url: str | None) -> None:
    """Use the store at ``url`` in this process (a Dask worker does not inherit the client's
    environment, where the command line put it); nothing when None."""
    if url:
        importlib.import_module("symbolize.index_store.config").configure_index_store(url)
