"""Keeping the download store bounded: entries unused for too long go, then the least recently used
until the store fits its size limit; expired misses and stale temporaries go too.

"Used" is the entry's mtime: a download sets it, a cache hit touches it (DownloadStore.touch), as
elfutils' client keeps its cache by ``max_unused_age_s`` (a week by default). The walk never
follows a symbolic link and removes only regular files under the store's root; a directory left
empty is removed. The Fetcher prunes with the default limits at most once per
:data:`AUTO_PRUNE_INTERVAL` (elfutils' ``cache_clean_interval_s``: a day); ``symbolize cache
prune`` prunes when asked, with the limits given.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import time
from dataclasses import dataclass
from pathlib import Path

from symbolize.remote.options import DEFAULT_MISS_TTL
from symbolize.remote.store import MISSES
from symbolize.tempfiles import PROFILE_TEMPORARY, STALE_AFTER_SECONDS

DEFAULT_MAX_AGE = 7 * 86400.0
DEFAULT_MAX_BYTES = 10 << 30
AUTO_PRUNE_INTERVAL = 86400.0
# The stamp whose mtime says when the store was last pruned.
PRUNED_STAMP = ".last-pruned"


@dataclass(frozen=True)
class PruneResult:
    """What a prune removed and what it kept (entries only: misses and temporaries are counted apart)."""

    removed_files: int
    removed_bytes: int
    kept_files: int
    kept_bytes: int
    removed_misses: int
    removed_temporaries: int


@dataclass(frozen=True)
class _Entry:
    path: Path
    size: int
    used: float


def prune_store(
    root: Path,
    *,
    max_bytes: int | None = DEFAULT_MAX_BYTES,
    max_age: float | None = DEFAULT_MAX_AGE,
    miss_ttl: float = DEFAULT_MISS_TTL,
    now: float | None = None,
) -> PruneResult:
    """Prune the store at ``root``: entries unused for more than ``max_age`` seconds, then the least
    recently used until the rest holds at most ``max_bytes`` (None: no such limit); misses older
    than ``miss_ttl``; temporaries older than symbolize/tempfiles.py's stale age. A store that
    does not exist is empty. Files that cannot be removed are kept (and counted as kept)."""
    now = time.time() if now is None else now
    entries: list[_Entry] = []
    temporaries: list[Path] = []
    misses: list[Path] = []
    for directory, subdirectories, files in os.walk(root):
        here = Path(directory)
        in_misses = here == root / MISSES
        for name in files:
            path = here / name
            try:
                status = path.lstat()
            except OSError:
                continue
            if not stat.S_ISREG(status.st_mode):
                continue
            if in_misses:
                if now - status.st_mtime >= miss_ttl:
                    misses.append(path)
            elif PROFILE_TEMPORARY.fullmatch(name):
                if now - status.st_mtime >= STALE_AFTER_SECONDS:
                    temporaries.append(path)
            elif here != root:  # the store's own stamp files live at its root
                entries.append(_Entry(path, status.st_size, status.st_mtime))
        # os.walk lists links to directories among the directories: never descend into one.
        subdirectories[:] = [name for name in subdirectories if not (here / name).is_symlink()]
    doomed = {entry.path for entry in entries if max_age is not None and now - entry.used > max_age}
    kept = sorted((entry for entry in entries if entry.path not in doomed), key=lambda entry: entry.used)
    total = sum(entry.size for entry in kept)
    while max_bytes is not None and kept and total > max_bytes:
        oldest = kept.pop(0)
        doomed.add(oldest.path)
        total -= oldest.size
    removed_files = removed_bytes = 0
    sizes = {entry.path: entry.size for entry in entries}
    for path in doomed:
        if _remove(path):
            removed_files += 1
            removed_bytes += sizes[path]
    removed_misses = sum(_remove(path) for path in misses)
    removed_temporaries = sum(_remove(path) for path in temporaries)
    _remove_empty_directories(root)
    kept_files = len(entries) - removed_files
    kept_bytes = sum(entry.size for entry in entries) - removed_bytes
    return PruneResult(removed_files, removed_bytes, kept_files, kept_bytes, removed_misses, removed_temporaries)


def prune_if_due(root: Path, *, interval: float = AUTO_PRUNE_INTERVAL, now: float | None = None) -> PruneResult | None:
    """:func:`prune_store` with the default limits when the store was last pruned ``interval``
    seconds ago or more (or never, once it holds anything); None when not due. Never raises."""
    now = time.time() if now is None else now
    stamp = root / PRUNED_STAMP
    try:
        if now - stamp.stat().st_mtime < interval:
            return None
    except FileNotFoundError:
        if not root.is_dir():
            return None
    except OSError:
        return None
    try:
        stamp.touch()
        return prune_store(root, now=now)
    except OSError:
        return None


def _remove(path: Path) -> bool:
    try:
        path.unlink()
    except OSError:
        return False
    return True


def _remove_empty_directories(root: Path) -> None:
    for directory, subdirectories, files in os.walk(root, topdown=False):
        here = Path(directory)
        if here != root and not files and not subdirectories and not here.is_symlink():
            with contextlib.suppress(OSError):
                here.rmdir()


def parse_size(text: str) -> int:
    """``10G``, ``500M``, ``64k``, ``1024`` (bytes; K/M/G/T are powers of 1024; a trailing B or iB
    is allowed). Raises ValueError with the reason."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?\s*", text, re.IGNORECASE)
    if not match:
        raise ValueError(f"{text!r} is not a size (e.g. 10G, 500M, 1024)")
    scale = 1024 ** " kmgt".index(match.group(2).lower() or " ")
    return int(float(match.group(1)) * scale)


def parse_age(text: str) -> float:
    """``7d``, ``12h``, ``30m``, ``90s``, ``3600`` (seconds). Raises ValueError with the reason."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(d|h|m|min|s)?\s*", text, re.IGNORECASE)
    if not match:
        raise ValueError(f"{text!r} is not an age (e.g. 7d, 12h, 30m, 3600)")
    unit = (match.group(2) or "s").lower()
    return float(match.group(1)) * {"d": 86400, "h": 3600, "m": 60, "min": 60, "s": 1}[unit]
