"""What the index tiers did in this process: hits and misses per tier, bytes fetched and published.

One set of counts per process (symbolize/index_store/counts.py), counted by symbolize/cache.py
and the store (symbolize/index_store/tiers.py) under a lock, since a server names profiles on
several threads; :func:`index_metrics` gives them as an :class:`IndexMetrics`. A batch run sums
its workers' snapshots (``+``) and reports them.

Tiers, in the order a lookup asks them:

- ``local``: the index cache directory (an index built on this machine, or by ``symbolize index``);
- ``fetched``: the bounded LRU of indexes fetched from the store (``<cache>/store/``);
- ``store``: the shared index store (``--index-store``);
- ``built``: none had it, the index was built here (then published to the store when one is set).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields

from symbolize.index_store import counts

TIERS = ("local", "fetched", "store")


@dataclass
class IndexMetrics:
    """Counts since the process started (or :func:`reset_index_metrics`)."""

    local_hits: int = 0
    local_misses: int = 0
    fetched_hits: int = 0
    fetched_misses: int = 0
    store_hits: int = 0
    store_misses: int = 0
    # Indexes built here, and how many of them this process wrote to the store first (a race lost
    # to another writer, or an index that stays local, is built but not published).
    built: int = 0
    published: int = 0
    # Objects read from the store (whole indexes and the small alias and marker objects).
    bytes_fetched: int = 0
    bytes_published: int = 0
    # Objects the store held that were refused: damaged, foreign, over the size cap.
    refused: int = 0
    # Store requests that failed (the store unreachable or erring); after the first, the process
    # stops asking it and builds locally (``store_unavailable`` says why).
    store_errors: int = 0
    # Builds skipped because the store holds a fresh "could not index" marker for the file.
    skipped_unindexable: int = 0
    store_unavailable: str | None = None

    def __add__(self, other: IndexMetrics) -> IndexMetrics:
        summed = IndexMetrics()
        for field in fields(IndexMetrics):
            mine, theirs = getattr(self, field.name), getattr(other, field.name)
            if field.name == "store_unavailable":
                setattr(summed, field.name, mine or theirs)
            else:
                setattr(summed, field.name, mine + theirs)
        return summed

    def hits(self, tier: str) -> int:
        return int(getattr(self, f"{tier}_hits"))

    def misses(self, tier: str) -> int:
        return int(getattr(self, f"{tier}_misses"))

    def to_dict(self) -> dict[str, int | str | None]:
        return asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)


def index_metrics() -> IndexMetrics:
    """A snapshot (a copy) of this process's counts."""
    with counts.LOCK:
        return _snapshot()


def reset_index_metrics() -> IndexMetrics:
    """Zero the counts; returns what they were."""
    with counts.LOCK:
        previous = _snapshot()
        counts.COUNTS.clear()
        counts.FAILURES.clear()
    return previous


def _snapshot() -> IndexMetrics:
    return IndexMetrics(**counts.COUNTS, store_unavailable=counts.FAILURES[0] if counts.FAILURES else None)
