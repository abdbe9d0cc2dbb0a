"""Where persistent indexes live, what names them, and how they are loaded, built and cleared.

An index is keyed by the identity of the file it answers for: its GNU build ID
and size (or, without a build ID, its resolved path, size and mtime), plus the
index format and the toolkit's answer logic, so an index built by another
version is never believed. A damaged or foreign index is deleted; lookups take
the uncached path until it is built again (by ``symbolize index``, or by the
background builder the command line starts after a run that missed it:
symbolize/index/background.py).

With a shared index store (``--index-store``, ``$SYMBOLIZE_INDEX_STORE``: symbolize/index_store/),
a missing index is looked for there too (fetched, checked, kept in ``<cache>/store/``), and an
index built here is published to it. Every tier's hits and misses are counted
(symbolize/index_store/metrics.py).
"""

import importlib
import os
import re
import sys
from array import array
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple, Protocol

from symbolize.demangle import DEMANGLER
from symbolize.formats.errors import MalformedInputError
from symbolize.index.indexed import SCHEMA_VERSION, IndexableSource, IndexedObject
from symbolize.index.store import FORMAT_VERSION, IndexFile, write_index
from symbolize.index_store.config import INDEX_STORE_VARIABLE, index_store
from symbolize.index_store.counts import count as _count

if TYPE_CHECKING:
    from symbolize.index_store.tiers import IndexStore


def _sha256_hex(data: bytes) -> str:
    """SHA-256 of ``data`` in hex, from CPython's own implementation where it has one (the same
    digests as hashlib's): importing hashlib loads OpenSSL's libcrypto, a few milliseconds of a
    warm lookup that needs one digest of a short key."""
    for name in ("_sha256", "_sha2"):  # CPython 3.11; 3.12 and later
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        return str(module.sha256(data).hexdigest())
    import hashlib

    return hashlib.sha256(data).hexdigest()


CACHE_DIR_VARIABLE = "SYMBOLIZE_CACHE_DIR"
# Bump when a change to the readers changes any answer: older indexes then stop matching.
# 5: untyped and data symbols that label code (hand-written assembly) name it.
# 6: a separate ELF debug file's outermost frames are named by its binary's symbols first.
# 7: a DWARF 4 skeleton's own range list ignores its DW_AT_GNU_ranges_base; indexes record the
#    files their split units and dwz file were looked up in (CONSULTED_ARRAY).
# 8: frames carry their line row's discriminator and their function's decl file and entry.
ANSWER_VERSION = 8
# The index array holding the path of the file an index was built from.
SOURCE_PATH_ARRAY = "source_path"
# The index array holding the files the source's decoding looked up (ConsultedFiles), or nothing.
CONSULTED_ARRAY = "consulted_files"
# The index array holding the path of the binary a debug file was found for, or nothing (the
# source is the binary): what `symbolize index` and `cache show` name a debug file's index by.
IMAGE_PATH_ARRAY = "image_path"
# The index array holding the htlhash of the binary (formats/identity.py: the OpenTelemetry
# profiles build ID the eBPF profiler sends), in hex, or nothing: what finds an index by that hash.
HTLHASH_ARRAY = "htlhash"


class ConsultedFiles(Protocol):
    """The files a source's decoding looked up besides the source (a split unit's .dwo or .dwp, the
    dwz file), which its index key cannot name: they are known only once the answers are built.
    An index stores their record and is believed only while the record holds
    (symbolize/loader.py's HintFollower)."""

    def consulted_record(self) -> bytes: ...

    def record_holds(self, record: bytes) -> bool: ...


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


def is_indexable(source: IndexableSource) -> bool:
    """Whether ``source`` can be indexed: a symbol source that is not an index already."""
    return not isinstance(source, IndexedObject)


# From this many function symbols on, a file without debug info is worth an index too: reading and
# ordering its symbol table costs a run about a second or more (librustc_driver's 107,000: 2.7 s),
# its index answers in milliseconds.
LARGE_SYMBOL_TABLE = 20_000


def worth_indexing(source: IndexableSource) -> bool:
    """Whether a source holds what an index saves reading again: debug info, or a large symbol table
    (:data:`LARGE_SYMBOL_TABLE`; a small one is quick to read).

    Debug info that cannot be read at all (``damaged``) saves nothing: such a file answers from
    its symbol table, and its own answers keep saying why the rest is unnamed.
    """
    summary = source.debug_info()
    if summary.damaged:
        return False
    if summary.has_dwarf or summary.has_line_info or summary.has_inline_info:
        return True
    # The readers keep the table they read for debug_info(): counting it reads nothing again.
    return summary.has_symbols and len(source.symbols()) >= LARGE_SYMBOL_TABLE


def index_key(source: IndexableSource) -> str:
    """What an index answers for: the source's identity (debug ID fields, else path, size and
    mtime), its kind and architecture (slices of one file differ), and every version that shapes
    the stored answers."""
    stat = source.path.stat()
    debug_id = source.debug_id
    identity = (
        f"{debug_id.kind.value} {debug_id.value.hex()} age {debug_id.age} size {stat.st_size}"
        if debug_id is not None
        else f"path {source.path.resolve()} size {stat.st_size} mtime {stat.st_mtime_ns}"
    )
    # The base its answers are at: a PDB's vaddrs are its image's ImageBase plus RVAs (bind_image).
    # A stand-in for a reader (formats/pdb/deferred.py) gives the reader's name: the index is the reader's.
    kind = f"{source.index_kind} {source.format} {source.arch} base {source.load_base}"
    # The other files its answers come from, when it names them (a debug map's objects): an
    # index built while they were found must not answer a run that cannot find them, nor the reverse.
    if described := source.answer_inputs():
        kind += f" inputs {_sha256_hex(described.encode())[:32]}"
    # Indexes store demangled names (symbolize/index/indexed.py): a new demangler makes new ones.
    return f"symbolize index {FORMAT_VERSION}.{SCHEMA_VERSION}.{ANSWER_VERSION} {DEMANGLER} {kind} {identity}"


def index_path(cache_dir: Path, key: str) -> Path:
    return cache_dir / "index" / (_sha256_hex(key.encode())[:40] + ".idx")


def has_index(source: IndexableSource, cache_dir: Path) -> bool:
    """Whether ``cache_dir`` holds an index keyed for ``source`` (its contents are checked on loading)."""
    key = index_key(source)
    if index_path(cache_dir, key).is_file():
        return True
    store = _index_store()
    return store is not None and store.has(key, cache_dir)


def _index_store() -> "IndexStore | None":
    """The shared index store this process uses, or None."""
    return index_store() if os.environ.get(INDEX_STORE_VARIABLE) else None




def load_index(
    source: IndexableSource, cache_dir: Path, consulted: ConsultedFiles | None = None
) -> IndexedObject | None:
    """``source`` answered from its index in ``cache_dir``, or None when there is no usable index.

    An index whose answers came from other files too (split units, a dwz file) is used only
    through ``consulted``, the follower of ``source``'s needs, and only while they are as when it
    was built; otherwise it is stale and deleted, and ``source`` answers (a file that appeared or
    went away since changes the inline frames).
    """
    key = index_key(source)
    path = index_path(cache_dir, key)
    if path.is_file():
        indexed = _open_index(source, path, key, consulted)
        if indexed is not None:
            _count(local_hits=1)
            return indexed
    _count(local_misses=1)
    store = _index_store()
    fetched = store.fetch(key, cache_dir) if store is not None else None
    return _open_index(source, fetched, key, consulted) if fetched is not None else None


def _open_index(
    source: IndexableSource, path: Path, key: str, consulted: ConsultedFiles | None
) -> IndexedObject | None:
    """The index file at ``path`` (local or fetched) answering for ``source``, or None when it is
    damaged, foreign or stale (then deleted: rebuilt, or fetched again, next time)."""
    try:
        index = IndexFile(path, key)
        record = bytes(index.array(CONSULTED_ARRAY))
        if record and (consulted is None or not consulted.record_holds(record)):
            index.close()
            if consulted is not None:
                path.unlink(missing_ok=True)  # stale: rebuilt next time
            return None
        return IndexedObject(source, index)
    except MalformedInputError:
        path.unlink(missing_ok=True)  # damaged or foreign: never trusted, rebuilt next time
        return None
    except OSError:
        return None


def build_index(
    source: IndexableSource,
    cache_dir: Path,
    consulted: ConsultedFiles | None = None,
    image_path: Path | None = None,
) -> Path:
    """Store every answer ``source`` gives, and what ``consulted`` looked up for them; returns the
    index's path. ``image_path`` is the binary ``source`` is the debug file of (None: itself)."""
    from symbolize.index.build import build_index_arrays  # building only: a warm lookup reads

    key = index_key(source)
    path = index_path(cache_dir, key)
    store = _index_store()
    try:
        answers = build_index_arrays(source)
    except MalformedInputError as error:
        if store is not None:  # other workers need not try this build again for a while
            store.mark_unindexable(key, str(error))
        raise
    # Not part of the key (any copy of a build shares its index): what `cache show` names it by.
    # First, so the answers' arrays keep their place at the end of the file.
    arrays: dict[str, array[int] | bytes] = {
        SOURCE_PATH_ARRAY: os.fsencode(source.path.resolve()),
        # After the answers were built: every split unit and the dwz file were looked up by then.
        CONSULTED_ARRAY: consulted.consulted_record() if consulted is not None else b"",
        IMAGE_PATH_ARRAY: os.fsencode(image_path.resolve()) if image_path is not None else b"",
        HTLHASH_ARRAY: _htlhash_of(image_path if image_path is not None else source.path),
    }
    arrays.update(answers)
    write_index(path, key, arrays)
    _count(built=1)
    if store is not None:
        # Only an index whose answers came from ``source`` alone serves another machine.
        store.publish(key, path, binary=image_path or source.path, shareable=not arrays[CONSULTED_ARRAY])
    return path


def publish_index_file(path: Path) -> bool:
    """Publish the index file at ``path`` to this process's index store unless it holds one
    (``symbolize index --index-store``); True when this call wrote it. One whose answers came
    from other files of this machine too (split units, a dwz file) is not published."""
    store = _index_store()
    key = stored_key(path)
    if store is None or key is None:
        return False
    source_path, image_path = index_owner(path)
    binary = image_path or source_path
    try:
        index = IndexFile(path, key)
    except (MalformedInputError, OSError):
        return False
    try:
        shareable = not index.array(CONSULTED_ARRAY)
    except MalformedInputError:
        return False
    finally:
        index.close()
    return store.publish_file(key, path, binary=binary if binary is not None and binary.is_file() else None,
                              shareable=shareable)  # fmt: skip
def _htlhash_of(binary: Path) -> bytes:
    """``binary``'s htlhash as ASCII hex; nothing when it cannot be read (the index stands without)."""
    from symbolize.formats.errors import SymbolizeError
    from symbolize.formats.identity import htlhash

    try:
        return htlhash(binary).encode("ascii")
    except SymbolizeError:
        return b""


def index_htlhash(path: Path) -> str | None:
    """The htlhash of the binary the index at ``path`` answers for (lower-case hex); None when the
    index does not hold one (written before it was recorded) or cannot be read."""
    key = stored_key(path)
    if key is None:
        return None
    try:
        index = IndexFile(path, key)
    except (MalformedInputError, OSError):
        return None
    try:
        return bytes(index.array(HTLHASH_ARRAY)).decode("ascii") or None
    except (MalformedInputError, UnicodeDecodeError):
        return None
    finally:
        index.close()


def with_index(
    source: IndexableSource,
    cache_dir: Path | None,
    build_missing: bool,
    consulted: ConsultedFiles | None = None,
    image_path: Path | None = None,
) -> IndexableSource:
    """``source`` answered from its index when there is one (built first if asked), else itself.

    The indexed object stands in for ``source`` (it answers from the index, the rest is the
    source's). ``consulted`` is the follower of the needs ``source``'s decoding has (load_index);
    ``image_path`` the binary ``source`` is the debug file of (build_index).
    """
    if cache_dir is None or not is_indexable(source):
        return source
    indexed = load_index(source, cache_dir, consulted)
    if indexed is None and build_missing:
        key = index_key(source)
        store = _index_store()
        if store is not None and store.unindexable(key) is not None:
            _count(skipped_unindexable=1)  # another worker could not: the same build fails alike
            return source
        path = build_index(source, cache_dir, consulted, image_path)
        indexed = _open_index(source, path, key, consulted)
    return indexed if indexed is not None else source


class CacheEntry(NamedTuple):
    """An index file, with what its key and header say it answers for (None where unreadable)."""

    path: Path
    size: int
    key: str | None
    # The file it was built from (any copy of the same build uses it).
    source_path: Path | None = None
    # The build's debug ID (hex), or None for a file identified by path, size and mtime.
    debug_id: str | None = None
    demangler: str | None = None
    modified: float = 0.0
    # The binary the source is the debug file of (None: the source is the binary, or unknown).
    image_path: Path | None = None


# An index's key, as index_key spells it (demangler names hold spaces; the kind is 4 words, then
# the digest of the other files its answers come from when there are any). Compiled where
# `cache show` first reads it (re keeps it): a lookup never does, and compiling it at import
# was ~5 % of a warm one.
_KEY = (
    r"symbolize index \S+ (?P<demangler>.+?) \w+ \S+ \S+ base \S+ (?:inputs [0-9a-f]+ )?"
    r"(?:(?P<kind>[\w-]+) (?P<id>[0-9a-f]+) age (?P<age>\d+) size \d+|path .*)"
)


def cache_entries(cache_dir: Path) -> list[CacheEntry]:
    """The index files in ``cache_dir``, with what each answers for."""
    entries = []
    for path in sorted((cache_dir / "index").glob("*.idx")):
        try:
            stat = path.stat()
        except OSError:
            continue  # removed meanwhile (a clear, a damaged index dropped by a lookup)
        key = stored_key(path)
        fields = re.fullmatch(_KEY, key) if key is not None else None
        debug_id = None
        if fields is not None and fields["id"] is not None:
            debug_id = fields["id"] + (f"-{fields['age']}" if fields["age"] != "0" else "")
        source_path, image_path = _stored_paths(path, key)
        entries.append(
            CacheEntry(
                path,
                stat.st_size,
                key,
                source_path,
                debug_id,
                fields["demangler"] if fields is not None else None,
                stat.st_mtime,
                image_path,
            )
        )
    return entries


def clear_cache(cache_dir: Path) -> int:
    """Delete every index, leftover temporary file, build marker and failure record; returns how many."""
    removed = 0
    index_dir = cache_dir / "index"
    patterns = ("*.idx", "*.tmp", "*.building", "*.failed")
    # And the indexes fetched from a shared store (symbolize/index_store/tiers.py's FETCHED_DIR).
    fetched = [*(cache_dir / "store").glob("*.idx"), *(cache_dir / "store").glob("*.tmp")]
    for path in [found for pattern in patterns for found in index_dir.glob(pattern)] + fetched:
        path.unlink(missing_ok=True)
        removed += 1
    return removed


def stored_key(path: Path) -> str | None:
    """The key in the header of the index file at ``path``; None when it cannot be read."""
    try:
        with path.open("rb") as handle:
            head = handle.read(4096)
        length = int.from_bytes(head[20:22], "little")
        return head[22 : 22 + length].decode()
    except (OSError, UnicodeDecodeError):
        return None


def index_owner(path: Path) -> tuple[Path | None, Path | None]:
    """The file the index at ``path`` was built from, and the binary that file is the debug file
    of (None when it is the binary); None for what cannot be read."""
    return _stored_paths(path, stored_key(path))


def _stored_paths(path: Path, key: str | None) -> tuple[Path | None, Path | None]:
    """The path an index was built from and the binary that file is the debug file of; None for
    what the index does not hold (written before it was stored) or an index that cannot be read."""
    if key is None:
        return None, None
    try:
        index = IndexFile(path, key)
    except (MalformedInputError, OSError):
        return None, None
    try:
        return _stored_path(index, SOURCE_PATH_ARRAY), _stored_path(index, IMAGE_PATH_ARRAY)
    finally:
        index.close()


def _stored_path(index: IndexFile, name: str) -> Path | None:
    try:
        stored = bytes(index.array(name))
    except MalformedInputError:
        return None  # an index written before the array was
    return Path(os.fsdecode(stored)) if stored else None
