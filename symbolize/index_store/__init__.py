"""A shared index store (issue 26): indexes published once by debug ID to object storage and
fetched by every worker, with hits, misses and bytes counted per tier.

Nothing here imports obstore or fsspec until a store URL that needs them is used
(symbolize/index_store/backends.py), nor anything but the standard library on import.
config.py says which store a process uses, tiers.py is the store (names, checks, LRU, markers,
aliases), metrics.py the counts a caller reports (``index_metrics()``).
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from symbolize.index_store.config import INDEX_STORE_VARIABLE, configure_index_store, index_store
    from symbolize.index_store.metrics import IndexMetrics, index_metrics, reset_index_metrics

__all__ = [
    "INDEX_STORE_VARIABLE",
    "IndexMetrics",
    "configure_index_store",
    "index_metrics",
    "index_store",
    "reset_index_metrics",
]

_HOMES = {
    "INDEX_STORE_VARIABLE": "config",
    "configure_index_store": "config",
    "index_store": "config",
    "IndexMetrics": "metrics",
    "index_metrics": "metrics",
    "reset_index_metrics": "metrics",
}


def __getattr__(name: str) -> Any:
    """The public names, imported when first asked for: importing the package (as any of its
    modules does) loads nothing else."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f"{__name__}.{home}"), name)
