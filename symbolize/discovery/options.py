"""Where to look for files, as one frozen value: what a run was asked to search.

``binaries`` (``--binary``), ``search_paths`` (``--search-path``), ``debug_dirs``
(``--debug-dir``), and where persistent indexes are read from (``index_dir``, None: not used)
and whether a missing one is built first (``build_missing_indexes``); which servers and download
caches may be asked for files not on disk (``remote``, symbolize/remote/options.py; None: none,
nothing goes to the network). The loader
(symbolize/loader.py) reads them; it, not the options, holds what was opened.
"""

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from symbolize.remote.options import RemoteOptions
else:
    # At run time the field's annotation need only be a type (symbolize/formats/types.py says why
    # none is a string): the real class would import dataclasses, for nothing a run reads.
    RemoteOptions = object

DEFAULT_DEBUG_DIRS: tuple[Path, ...] = (Path("/usr/lib/debug"),)


class _SearchFields(NamedTuple):
    binaries: tuple[Path, ...]
    search_paths: tuple[Path, ...]
    debug_dirs: tuple[Path, ...]
    index_dir: Path | None
    build_missing_indexes: bool
    remote: RemoteOptions | None


class SearchOptions(_SearchFields):
    """Where to look, and where indexes live. Sequences given are kept as tuples; ``_replace``
    (a NamedTuple's) takes tuples.

    A NamedTuple, not a frozen dataclass: every lookup reads it, and ``import dataclasses`` (inspect,
    ast, dis, tokenize) is about a tenth of a one-address cold lookup's instructions.
    """

    __slots__ = ()

    def __new__(
        cls,
        binaries: Sequence[Path] = (),
        search_paths: Sequence[Path] = (),
        debug_dirs: Sequence[Path] = DEFAULT_DEBUG_DIRS,
        index_dir: Path | None = None,
        build_missing_indexes: bool = False,
        remote: RemoteOptions | None = None,
    ) -> "SearchOptions":
        # Frozen means frozen all the way down: a list given by a caller is copied, not shared.
        fields = (tuple(binaries), tuple(search_paths), tuple(debug_dirs), index_dir, build_missing_indexes, remote)
        return super().__new__(cls, *fields)
