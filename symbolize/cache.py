"""Where persistent indexes live, what names them, and how they are loaded, built and cleared.

An index is keyed by the identity of the file it answers for: its GNU build ID
and size (or, without a build ID, its resolved path, size and mtime), plus the
index format and the toolkit's answer logic, so an index built by another
version is never believed. A damaged or foreign index is deleted; lookups take
the uncached path until it is built again (by ``symbolize index``, or by the
background builder the command line starts after a run that missed it:
symbolize/index/background.py).
"""

from __future__ import annotations

import hashlib
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from symbolize.demangle import DEMANGLER
from symbolize.formats.elf import ElfFile
from symbolize.formats.errors import MalformedInputError
from symbolize.formats.types import ObjectFile
from symbolize.index.indexed import SCHEMA_VERSION, IndexedObject, build_index_arrays
from symbolize.index.store import FORMAT_VERSION, IndexFile, write_index

CACHE_DIR_VARIABLE = "SYMBOLIZE_CACHE_DIR"
# Bump when a change to the readers changes any answer: older indexes then stop matching.
ANSWER_VERSION = 3


def default_cache_dir() -> Path:
    """$SYMBOLIZE_CACHE_DIR, else the platform's per-user cache directory."""
    configured = os.environ.get(CACHE_DIR_VARIABLE)
    if configured:
        return Path(configured)
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
        return base / "symbolize" / "Cache"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "symbolize"
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "symbolize"


def index_key(elf: ElfFile) -> str:
    stat = elf.path.stat()
    identity = (
        f"build-id {elf.debug_id} size {stat.st_size}"
        if elf.debug_id is not None
        else f"path {elf.path.resolve()} size {stat.st_size} mtime {stat.st_mtime_ns}"
    )
    # Indexes store demangled names (symbolize/index/indexed.py): a new demangler makes new ones.
    return f"symbolize index {FORMAT_VERSION}.{SCHEMA_VERSION}.{ANSWER_VERSION} {DEMANGLER} {identity}"


def index_path(cache_dir: Path, key: str) -> Path:
    return cache_dir / "index" / (hashlib.sha256(key.encode()).hexdigest()[:40] + ".idx")


def load_index(elf: ElfFile, cache_dir: Path) -> IndexedObject | None:
    """``elf`` answered from its index in ``cache_dir``, or None when there is no usable index."""
    key = index_key(elf)
    path = index_path(cache_dir, key)
    if not path.is_file():
        return None
    try:
        return IndexedObject(elf, IndexFile(path, key))
    except MalformedInputError:
        path.unlink(missing_ok=True)  # damaged or foreign: never trusted, rebuilt next time
        return None
    except OSError:
        return None


def build_index(elf: ElfFile, cache_dir: Path) -> Path:
    """Decode everything ``elf`` can answer and store it; returns the index's path."""
    key = index_key(elf)
    path = index_path(cache_dir, key)
    write_index(path, key, build_index_arrays(elf))
    return path


def with_index(opened: ObjectFile, cache_dir: Path | None, build_missing: bool) -> ObjectFile:
    """``opened`` answered from its index when there is one (built first if asked)."""
    if cache_dir is None or not isinstance(opened, ElfFile):
        return opened
    indexed = load_index(opened, cache_dir)
    if indexed is None and build_missing:
        build_index(opened, cache_dir)
        indexed = load_index(opened, cache_dir)
    return indexed if indexed is not None else opened


@dataclass(frozen=True)
class CacheEntry:
    path: Path
    size: int
    key: str | None


def cache_entries(cache_dir: Path) -> list[CacheEntry]:
    """The index files in ``cache_dir`` with their sizes and keys (None when unreadable)."""
    entries = []
    for path in sorted((cache_dir / "index").glob("*.idx")):
        entries.append(CacheEntry(path, path.stat().st_size, _stored_key(path)))
    return entries


def clear_cache(cache_dir: Path) -> int:
    """Delete every index (and leftover temporary file and build marker); returns how many files were removed."""
    removed = 0
    index_dir = cache_dir / "index"
    for path in [*index_dir.glob("*.idx"), *index_dir.glob("*.tmp"), *index_dir.glob("*.building")]:
        path.unlink(missing_ok=True)
        removed += 1
    return removed


def _stored_key(path: Path) -> str | None:
    try:
        with path.open("rb") as handle:
            head = handle.read(4096)
        length = int.from_bytes(head[20:22], "little")
        return head[22 : 22 + length].decode()
    except (OSError, UnicodeDecodeError):
        return None
