"""Where to look for files, as one frozen value: what a run was asked to search.

``binaries`` (``--binary``), ``search_paths`` (``--search-path``), ``debug_dirs``
(``--debug-dir``), and where persistent indexes are read from (``index_dir``, None: not used)
and whether a missing one is built first (``build_missing_indexes``); which servers and download
caches may be asked for files not on disk (``remote``, symbolize/remote/options.py; None: none,
nothing goes to the network). The loader
(symbolize/loader.py) reads them; it, not the options, holds what was opened.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from symbolize.remote.options import RemoteOptions

DEFAULT_DEBUG_DIRS: tuple[Path, ...] = (Path("/usr/lib/debug"),)


@dataclass(frozen=True)
class SearchOptions:
    """Where to look, and where indexes live. Sequences given are kept as tuples."""

    binaries: Sequence[Path] = ()
    search_paths: Sequence[Path] = ()
    debug_dirs: Sequence[Path] = DEFAULT_DEBUG_DIRS
    index_dir: Path | None = None
    build_missing_indexes: bool = False
    remote: RemoteOptions | None = None

    def __post_init__(self) -> None:
        # Frozen means frozen all the way down: a list given by a caller is copied, not shared.
        for name in ("binaries", "search_paths", "debug_dirs"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
