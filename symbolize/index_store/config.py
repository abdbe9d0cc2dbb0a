"""Which index store this process uses: ``--index-store URL``, else ``$SYMBOLIZE_INDEX_STORE``.

:func:`configure_index_store` also sets the variable, so the processes this one starts (the
background index builder, a batch run's workers) use the same store.
"""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING

from symbolize.cache import INDEX_STORE_VARIABLE

if TYPE_CHECKING:
    from symbolize.index_store.tiers import IndexStore

__all__ = ["INDEX_STORE_VARIABLE", "configure_index_store", "forget_index_stores", "index_store"]

_LOCK = threading.Lock()
_STORES: dict[str, IndexStore] = {}


def configure_index_store(url: str | None) -> None:
    """Use the store at ``url`` from now on, in this process and those it starts (None or "": none)."""
    if url:
        os.environ[INDEX_STORE_VARIABLE] = url
    else:
        os.environ.pop(INDEX_STORE_VARIABLE, None)


def index_store() -> IndexStore | None:
    """The store this process uses (one object per URL: what it learnt, such as being
    unreachable, holds for the whole run), or None."""
    url = os.environ.get(INDEX_STORE_VARIABLE)
    if not url:
        return None
    with _LOCK:
        store = _STORES.get(url)
        if store is None:
            from symbolize.index_store.tiers import IndexStore

            store = _STORES[url] = IndexStore(url)
    return store


def forget_index_stores() -> None:
    """Drop every store object (tests: a store that was unreachable may be asked again)."""
    with _LOCK:
        _STORES.clear()
