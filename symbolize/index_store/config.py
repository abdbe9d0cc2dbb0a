"""Which index store this process uses: ``--index-store URL``, else ``$SYMBOLIZE_INDEX_STORE``.

:func:`configure_index_store` also sets the variable, so the processes this one starts (the
background index builder, a batch run's workers) use the same store.
"""

from __future__ import annotations

import _thread
import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from symbolize.index_store.tiers import IndexStore

INDEX_STORE_VARIABLE = "SYMBOLIZE_INDEX_STORE"

# _thread's lock: threading is not otherwise imported by a plain run.
_LOCK = _thread.allocate_lock()
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
