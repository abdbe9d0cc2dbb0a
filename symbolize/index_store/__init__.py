"""A shared index store (issue 26): indexes published once by debug ID to object storage and
fetched by every worker, with hits, misses and bytes counted per tier.

Nothing here imports obstore or fsspec until a store URL that needs them is used
(symbolize/index_store/backends.py), nor anything but the standard library on import.
config.py says which store a process uses, tiers.py is the store (names, checks, LRU, markers,
aliases), metrics.py the counts a caller reports (``index_metrics()``).
"""

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
