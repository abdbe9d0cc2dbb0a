"""This process's counts of index loads per tier, builds and store traffic (the fields of
symbolize/index_store/metrics.py's IndexMetrics), in a module that imports nothing: symbolize/cache.py
counts every load, with or without a store, and only a caller that reads the counts loads the rest.
Under _thread's lock (a builtin module, unlike threading): a server names profiles on several threads.
"""

from __future__ import annotations

import _thread

LOCK = _thread.allocate_lock()
COUNTS: dict[str, int] = {}
# The first store failure's text (IndexMetrics.store_unavailable), when there was one.
FAILURES: list[str] = []


def count(**increments: int) -> None:
    """Add ``increments`` (an IndexMetrics field name: amount) to this process's counts."""
    with LOCK:
        for name, amount in increments.items():
            COUNTS[name] = COUNTS.get(name, 0) + amount


def record_failure(reason: str) -> None:
    """Count a failed store request; the first one's ``reason`` is kept."""
    with LOCK:
        COUNTS["store_errors"] = COUNTS.get("store_errors", 0) + 1
        if not FAILURES:
            FAILURES.append(reason)
