"""The download store: debug files fetched from servers, laid out by validated keys, written atomically.

Layouts are the ones the other tools use, so that each reuses the other's files: debuginfod keys
as elfutils' client caches them (``<buildid>/debuginfo``, ``<buildid>/executable``), symsrv keys
as a symsrv downstream store (``<name>/<index>/<name>``). Our store keeps each namespace under
``<root>/<namespace>/``; a tier the caller names (elfutils' system cache, read only; a
``cache*DIR`` of a symbol path, read and write) holds keys directly under its root.

A path is built only from a :class:`StoreKey`, whose parts are checked (no separators, no
``..``, no names a file system treats specially), never from what a server sent. A download is
written to a temporary beside its destination (``.<name>.<random>.tmp``, the shape
symbolize/tempfiles.py removes when stale) and renamed over it only once verified, so a
partial file never becomes an entry. Misses (a server's 404) are recorded per server and key
under ``<root>/.misses/`` and believed for the miss TTL.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from symbolize.errors import SymbolizeError
from symbolize.tempfiles import PROFILE_TEMPORARY, remove_stale_temporaries

# A key part: what IDs and debug file names are made of. No separators, no leading dot (no "..",
# no hidden files), no characters Windows refuses in a name; at most 255 characters.
_PART = re.compile(r"[A-Za-z0-9_+~@$-][A-Za-z0-9._+~@$ -]{0,254}")
# Windows' reserved device names, refused as a part on every OS (a store may be shared).
_RESERVED = re.compile(r"(con|prn|aux|nul|com[0-9]|lpt[0-9])(\..*)?", re.IGNORECASE)
_NAMESPACE = re.compile(r"[a-z][a-z0-9-]{0,31}")
_MAX_PARTS = 8
MISSES = ".misses"

# How often a temporary's directory is made again when a concurrent clean-up removed it.
_DIRECTORY_ATTEMPTS = 5


class UnsafeKeyError(SymbolizeError):
    """A key part (an ID, a debug file's name from a binary) cannot name a store path safely."""


@dataclass(frozen=True)
class StoreKey:
    """Where a file lives in a store: a namespace (``debuginfod``, ``symsrv``) and path parts.

    Every part is validated on construction (:class:`UnsafeKeyError` otherwise), so a key is a
    safe relative path wherever it is laid out.
    """

    namespace: str
    parts: tuple[str, ...]

    def __post_init__(self) -> None:
        if not _NAMESPACE.fullmatch(self.namespace):
            raise UnsafeKeyError(f"store namespace {self.namespace!r} is not a plain name")
        if not 0 < len(self.parts) <= _MAX_PARTS:
            raise UnsafeKeyError(f"store key of {len(self.parts)} parts (1 to {_MAX_PARTS})")
        for part in self.parts:
            if not _PART.fullmatch(part) or part.endswith((" ", ".")) or _RESERVED.fullmatch(part):
                raise UnsafeKeyError(f"store key part {part!r} cannot name a file safely")

    @property
    def name(self) -> str:
        """The file's name (the last part)."""
        return self.parts[-1]

    def under(self, root: Path) -> Path:
        return root.joinpath(*self.parts)

    def __str__(self) -> str:
        return f"{self.namespace}:{'/'.join(self.parts)}"


@dataclass(frozen=True)
class StoreTier:
    """A directory holding keys directly under ``root``; ``writable``: downloads may be stored there."""

    root: Path
    writable: bool


class DownloadStore:
    """Our store at ``root``: entries per namespace, temporaries, and the record of misses."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def tier(self, namespace: str) -> StoreTier:
        return StoreTier(self.root / namespace, writable=True)

    def tiers(self, key: StoreKey, extra: Sequence[StoreTier]) -> list[StoreTier]:
        """Where ``key`` is looked up, in order: the caller's tiers, then ours."""
        return [*extra, self.tier(key.namespace)]

    def destination_tier(self, key: StoreKey, extra: Sequence[StoreTier]) -> StoreTier:
        """Where a download of ``key`` is stored: the first writable tier the caller named, else ours."""
        return next((tier for tier in extra if tier.writable), self.tier(key.namespace))

    def entries(self, key: StoreKey, extra: Sequence[StoreTier]) -> Iterator[Path]:
        """The files standing for ``key`` in its tiers, in lookup order (not yet verified).

        An empty file is skipped: elfutils' client records its misses as empty files."""
        for tier in self.tiers(key, extra):
            path = key.under(tier.root)
            with contextlib.suppress(OSError):
                if path.is_file() and path.stat().st_size > 0:
                    yield path

    @staticmethod
    def open_partial(destination: Path) -> tuple[Path, BinaryIO]:
        """A new temporary beside ``destination`` (directories made), open for writing and reading.

        Another download that stored nothing removes the directories it made that stayed empty
        (:meth:`remove_empty_parents`), which may be the ones just made here for a key beside its
        own (debuginfod's ``<build ID>/executable`` and ``<build ID>/debuginfo``, asked at once):
        they are made again, a few times, rather than the download refused."""
        directory = destination.parent
        for attempt in range(1, _DIRECTORY_ATTEMPTS + 1):
            directory.mkdir(parents=True, exist_ok=True)
            try:
                descriptor, name = tempfile.mkstemp(prefix=f".{destination.name}.", suffix=".tmp", dir=directory)
                break
            except FileNotFoundError:
                if attempt == _DIRECTORY_ATTEMPTS:
                    raise
        remove_stale_temporaries(directory, PROFILE_TEMPORARY)
        return Path(name), os.fdopen(descriptor, "w+b")

    @staticmethod
    def remove_empty_parents(destination: Path, tier: StoreTier) -> None:
        """Remove the directories made for ``destination`` that stayed empty (nothing was stored),
        up to its tier's root."""
        directory = destination.parent
        while directory != tier.root and tier.root in directory.parents:
            try:
                directory.rmdir()
            except OSError:
                return  # not empty (another entry, another download's temporary), or gone
            directory = directory.parent

    @staticmethod
    def commit(partial: Path, destination: Path) -> Path:
        """Rename a verified temporary over its destination (atomic on one file system)."""
        os.replace(partial, destination)
        return destination

    @staticmethod
    def touch(path: Path) -> None:
        """Mark an entry used now: pruning by age removes the least recently used first."""
        with contextlib.suppress(OSError):
            os.utime(path)

    # Misses: one small file per (server, key), whose mtime is when the server said 404.

    def _miss_path(self, server: str, key: StoreKey) -> Path:
        digest = hashlib.sha256(f"{server}\0{key}".encode()).hexdigest()[:40]
        return self.root / MISSES / digest

    def miss_is_fresh(self, server: str, key: StoreKey, ttl: float, *, now: float | None = None) -> bool:
        try:
            recorded = self._miss_path(server, key).stat().st_mtime
        except OSError:
            return False
        now = time.time() if now is None else now
        return 0 <= now - recorded < ttl

    def record_miss(self, server: str, key: StoreKey, url: str) -> None:
        """Remember that ``server`` answered 404 for ``key`` (at ``url``). Never raises: a miss
        that cannot be recorded is asked again next time, nothing worse."""
        path = self._miss_path(server, key)
        with contextlib.suppress(OSError):
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(f"{url}\n", encoding="utf-8")

    def forget_miss(self, server: str, key: StoreKey) -> None:
        with contextlib.suppress(OSError):
            self._miss_path(server, key).unlink()
