"""The shared index store: indexes fetched by debug ID, checked, kept in a bounded local LRU, and
published once with a conditional write.

Objects (under the store URL's prefix)::

    idx/v<format>.<schema>.<answers>/<debug-id>/<variant>   the index file, byte for byte
    fail/v<format>.<schema>.<answers>/<debug-id>/<variant>  JSON {"reason", "written"}: could not index
    alias/<kind>-<id>                                       JSON {"index": <idx name>, "debug_id"}

(aliases: ``pe-code-id-<hex>`` of a PE image, also for its PDB's index; ``htlhash-<hex>`` of the binary.)

``<debug-id>`` is the build's (``gnu-build-id-<hex>``, ``pdb-<hex>-<age>``, ``macho-uuid-<hex>``);
``<variant>`` is a digest of the whole index key (symbolize/cache.py's index_key: demangler,
architecture, load base, the files a debug map names, the file's size), so two indexes of one
build that answer differently never share a name. Objects are immutable: written with
``put_if_absent``, the first writer wins and later writers drop theirs (it is the same build's).
The one overwrite is of an object this process refused as damaged: replaced by a checked one.

Only what another machine can use is published: a source with a debug ID (one identified by
path and mtime is this machine's), whose answers came from it alone (an index whose answers came
from split units or a dwz file records paths of this machine: it stays local).

A fetched object is written to ``<cache>/store/`` under a temporary name, checked as a local index
is (symbolize/index/store.py's IndexFile: magic, version, header CRC, the key it answers for)
and every array's CRC32 checked at once, then renamed: a damaged or foreign object is refused,
counted, and never used; the lookup builds the index locally. ``<cache>/store/`` is a least
recently used cache bounded by :data:`LRU_BYTES_VARIABLE` (default 4 GiB).

The store is trusted as the cache directory is: the checks catch damage, not a forger.

A store that fails to answer (unreachable, refusing, hanging past its timeout) is not asked again
by this process: lookups fall back to building locally, a RuntimeWarning says so once (the command
line prints it as one line), and :attr:`IndexStore.unavailable` (and the metrics'
``store_unavailable``) keeps why. Whole objects are read as ranges of [0, size) after ``head``:
every read is bounded by a size the reader checked first.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from symbolize.formats.errors import MalformedInputError, SymbolizeError
from symbolize.index_store.backends import ObjectBackend, StoreUnavailableError
from symbolize.index_store.counts import count, record_failure
from symbolize.index_store.urls import open_backend

if TYPE_CHECKING:
    from symbolize.formats.types import DebugId

MAX_BYTES_VARIABLE = "SYMBOLIZE_INDEX_STORE_MAX_BYTES"
LRU_BYTES_VARIABLE = "SYMBOLIZE_INDEX_STORE_LRU_BYTES"
FAILURE_TTL_VARIABLE = "SYMBOLIZE_INDEX_STORE_FAILURE_TTL"
# An index larger than this is neither fetched nor published (a store's answer may be hostile).
DEFAULT_MAX_BYTES = 2 << 30
DEFAULT_LRU_BYTES = 4 << 30
# How long a "could not index" marker keeps other workers from trying the same build again.
DEFAULT_FAILURE_TTL = 24 * 3600.0
# Aliases and markers are a few hundred bytes; more is not one of ours.
SMALL_OBJECT_BYTES = 64 << 10
# Indexes are read in ranges of this size: a bounded buffer, a size checked as it grows.
CHUNK_BYTES = 8 << 20
FETCHED_DIR = "store"
# How long a process believes the store lacks an index before asking again (another worker may
# have published it since).
MISSING_SECONDS = 60.0
# An index key (symbolize/cache.py's index_key) whose identity is a debug ID: its versions, the
# debug ID's kind, value and age.
_SHARED_KEY = re.compile(
    r"symbolize index (?P<versions>[0-9]+(?:\.[0-9]+)*) .*"
    r" (?P<kind>[a-z][a-z-]*) (?P<id>[0-9a-f]+) age (?P<age>\d+) size \d+"
)


def _setting(name: str, default: float) -> float:
    """The variable ``name`` as a finite number of at least 0; ``default`` for anything else."""
    try:
        value = float(os.environ.get(name) or default)
    except ValueError:
        return default
    return value if math.isfinite(value) and value >= 0 else default


def debug_id_text(debug_id: DebugId) -> str:
    """A debug ID as an object name word: ``<kind>-<hex>``, ``-<age>`` for a PDB's."""
    text = f"{debug_id.kind.value}-{debug_id.value.hex()}"
    return f"{text}-{debug_id.age}" if debug_id.age else text


def _digest(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode()).hexdigest()


class IndexStore:
    """The index store at ``url`` (a directory, ``s3://bucket/prefix``, ``gs://``, ``az://`` or
    any fsspec URL). Never raises for what the store does: every failure is counted, remembered
    (:attr:`unavailable`) and answered as a miss."""

    def __init__(self, url: str, backend: ObjectBackend | None = None) -> None:
        self.url = url
        self._backend = backend
        self.unavailable: str | None = None
        # Names of objects this process refused as damaged: the one kind of object it overwrites.
        self._refused: set[str] = set()
        # Names the store did not hold, with when it said so (a long-lived process asks again later).
        self._missing: dict[str, float] = {}
        self.max_bytes = int(_setting(MAX_BYTES_VARIABLE, DEFAULT_MAX_BYTES))
        self.lru_bytes = int(_setting(LRU_BYTES_VARIABLE, DEFAULT_LRU_BYTES))
        self.failure_ttl = _setting(FAILURE_TTL_VARIABLE, DEFAULT_FAILURE_TTL)

    # Names --------------------------------------------------------------------------------

    @staticmethod
    def object_name(key: str) -> str | None:
        """The name of the index keyed ``key`` (symbolize/cache.py's index_key) in any store; None
        for an index that is not shared (its file has no debug ID: it is named by path and mtime)."""
        fields = _SHARED_KEY.fullmatch(key)
        if fields is None:
            return None
        word = f"{fields['kind']}-{fields['id']}" + (f"-{fields['age']}" if fields["age"] != "0" else "")
        # The key's versions (index format, schema, answers): an index another version wrote is
        # not even fetched.
        return f"idx/v{fields['versions']}/{word}/{_digest(key)[:32]}"

    @staticmethod
    def fetched_path(cache_dir: Path, key: str) -> Path:
        """Where the index keyed ``key`` is kept once fetched."""
        return cache_dir / FETCHED_DIR / (_digest(key)[:40] + ".idx")

    # Reading ------------------------------------------------------------------------------

    def _ask(self) -> ObjectBackend | None:
        if self.unavailable is not None:
            return None
        if self._backend is None:
            try:
                self._backend = open_backend(self.url)
            except StoreUnavailableError as error:
                self._fail(error)
                return None
        return self._backend

    def _fail(self, error: StoreUnavailableError) -> None:
        if self.unavailable is None:
            self.unavailable = str(error)
            # Said once: the command line prints RuntimeWarnings as "symbolize: warning:" lines.
            warnings.warn(RuntimeWarning(f"{error}; indexes are built locally for the rest of this run"), stacklevel=2)
        record_failure(str(error))

    def has(self, key: str, cache_dir: Path) -> bool:
        """Whether the index keyed ``key`` is fetched already or in the store (its contents are
        checked when it is fetched)."""
        if self.fetched_path(cache_dir, key).is_file():
            return True
        name = self.object_name(key)
        backend = self._ask() if name is not None else None
        if backend is None or name is None or self._known_missing(name):
            return False
        try:
            found = backend.head(name) is not None
        except StoreUnavailableError as error:
            self._fail(error)
            return False
        if not found:
            self._missing[name] = time.monotonic()
        return found

    def _known_missing(self, name: str) -> bool:
        """Whether the store said it lacks ``name`` a moment ago (within :data:`MISSING_SECONDS`)."""
        return time.monotonic() - self._missing.get(name, -MISSING_SECONDS) < MISSING_SECONDS

    def fetch(self, key: str, cache_dir: Path) -> Path | None:
        """The checked local copy of the index keyed ``key``: from the LRU, else fetched from the store.
        None when neither has a good one (a damaged object is refused, never kept)."""
        name = self.object_name(key)
        if name is None:
            return None
        path = self.fetched_path(cache_dir, key)
        if path.is_file():
            count(fetched_hits=1)
            with contextlib.suppress(OSError):
                os.utime(path)  # most recently used
            return path
        count(fetched_misses=1)
        backend = self._ask()
        if backend is None:
            return None
        if self._known_missing(name):
            count(store_misses=1)  # asked a moment ago: a file never indexed is not asked about per lookup
            return None
        try:
            info = backend.head(name)
            if info is None:
                self._missing[name] = time.monotonic()
                count(store_misses=1)
                return None
            if info.size > self.max_bytes:
                self._refuse(name)
                return None
            fetched = self._download(backend, name, info.size, path, key)
        except StoreUnavailableError as error:
            self._fail(error)
            return None
        if fetched is None:
            self._refuse(name)
            return None
        count(store_hits=1)
        self._evict(path.parent, keep=path)
        return fetched

    def _refuse(self, name: str) -> None:
        self._refused.add(name)
        count(refused=1)

    def _download(self, backend: ObjectBackend, name: str, size: int, path: Path, key: str) -> Path | None:
        """The object read in ranges to a temporary beside ``path``, checked, then renamed to
        ``path``; None when it is not a whole, good index keyed ``key``."""
        import tempfile

        from symbolize.tempfiles import INDEX_TEMPORARY, remove_stale_temporaries

        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            remove_stale_temporaries(path.parent, INDEX_TEMPORARY)
            handle, name_of_temporary = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
        except OSError:
            return None  # nowhere to keep it: answered from the source
        temporary = Path(name_of_temporary)
        try:
            with os.fdopen(handle, "wb") as output:
                position = 0
                while position < size:
                    try:
                        chunk = backend.get_range(name, position, min(size, position + CHUNK_BYTES))
                    except FileNotFoundError:
                        return None  # removed between head and get
                    if not chunk or position + len(chunk) > size:
                        break
                    output.write(chunk)
                    position += len(chunk)
                    count(bytes_fetched=len(chunk))
            if position != size or not check_index_file(temporary, key):
                return None
            os.replace(temporary, path)
            return path
        except OSError:
            return None
        finally:
            temporary.unlink(missing_ok=True)

    def _evict(self, directory: Path, keep: Path) -> None:
        """Remove the least recently used fetched indexes beyond :attr:`lru_bytes` (never ``keep``)."""
        entries = []
        for path in directory.glob("*.idx"):
            try:
                stat = path.stat()
            except OSError:
                continue
            entries.append((stat.st_mtime, stat.st_size, path))
        total = sum(size for _, size, _ in entries)
        for _, size, path in sorted(entries):
            if total <= self.lru_bytes:
                break
            if path == keep:
                continue
            try:
                path.unlink()  # a mapped index stays readable where it is mapped (POSIX)
            except OSError:
                continue  # Windows: mapped by a run; evicted another time
            total -= size

    # Writing ------------------------------------------------------------------------------

    def publish(self, key: str, path: Path, *, binary: Path | None = None, shareable: bool = True) -> bool:
        """Write the index file at ``path`` (keyed ``key``, just built here) to the store unless
        it holds one; True when this call wrote it. ``shareable`` False (answers from other files
        of this machine) publishes nothing. ``binary``: the file the profile's mappings name (the
        index's source, or the binary it is the debug file of), whose other IDs (a PE image's
        code ID) and htlhash become aliases of the index."""
        name = self.object_name(key)
        if name is None or not shareable:
            return False
        return self._put(name, path, binary)

    def publish_file(self, key: str, path: Path, *, binary: Path | None = None, shareable: bool = True) -> bool:
        """:meth:`publish` for an index file built before (``symbolize index --index-store``),
        checked first as a fetched one is (a damaged file is not published), and only when the
        store holds no index under its name."""
        name = self.object_name(key)
        if name is None or not shareable or not check_index_file(path, key):
            return False
        backend = self._ask()
        try:
            if backend is None or (backend.head(name) is not None and name not in self._refused):
                return False
        except StoreUnavailableError as error:
            self._fail(error)
            return False
        return self._put(name, path, binary)

    def _put(self, name: str, path: Path, binary: Path | None) -> bool:
        backend = self._ask()
        if backend is None:
            return False
        try:
            if path.stat().st_size > self.max_bytes:
                return False
            data = path.read_bytes()
        except OSError:
            return False
        try:
            wrote = backend.put_if_absent(name, data)
            if not wrote and name in self._refused:
                backend.put(name, data)  # the object there was damaged: replaced by a checked one
                self._refused.discard(name)
                wrote = True
            if wrote:
                count(published=1, bytes_published=len(data))
            self._missing.pop(name, None)
            body = json.dumps({"index": name, "debug_id": name.split("/")[2]}, sort_keys=True).encode()
            for alias in _aliases(binary) if binary is not None else ():
                backend.put_if_absent(f"alias/{alias}", body)
        except StoreUnavailableError as error:
            self._fail(error)
            return False
        return wrote

    def resolve_alias(self, alias: str) -> dict[str, str] | None:
        """What alias ``alias`` (``pe-code-id-<hex>``, ``htlhash-<hex>``) points at: {"index": the
        index object's name, "debug_id": the build's debug ID word}; None when the store has none."""
        body = self._small_object(f"alias/{alias}")
        if body is None:
            return None
        try:
            data = json.loads(body)
        except ValueError:
            return None
        if not isinstance(data, dict) or not all(isinstance(data.get(field), str) for field in ("index", "debug_id")):
            return None
        return {"index": data["index"], "debug_id": data["debug_id"]}

    # "Could not index" markers ----------------------------------------------------------

    def mark_unindexable(self, key: str, reason: str) -> None:
        """Tell other workers that the index keyed ``key`` could not be built (for :attr:`failure_ttl` seconds)."""
        name = self.object_name(key)
        backend = self._ask() if name is not None else None
        if backend is None or name is None:
            return
        body = json.dumps({"reason": reason[:1000], "written": time.time()}).encode()
        try:
            backend.put("fail/" + name.removeprefix("idx/"), body)
        except StoreUnavailableError as error:
            self._fail(error)

    def unindexable(self, key: str) -> str | None:
        """Why another worker could not build the index keyed ``key``, while its marker is fresh; else None."""
        name = self.object_name(key)
        if name is None:
            return None
        body = self._small_object("fail/" + name.removeprefix("idx/"))
        if body is None:
            return None
        try:
            data = json.loads(body)
            written, reason = float(data["written"]), str(data["reason"])
        except (ValueError, TypeError, KeyError):
            return None
        return reason if 0 <= time.time() - written < self.failure_ttl else None

    def _small_object(self, name: str) -> bytes | None:
        backend = self._ask()
        if backend is None:
            return None
        try:
            info = backend.head(name)
            if info is None or info.size > SMALL_OBJECT_BYTES:
                return None
            body = backend.get_range(name, 0, info.size)
        except FileNotFoundError:
            return None
        except StoreUnavailableError as error:
            self._fail(error)
            return None
        count(bytes_fetched=len(body))
        return body


def check_index_file(path: Path, key: str, empty: Sequence[str] = ()) -> bool:
    """Whether the file at ``path`` is a whole index keyed ``key``: the checks of a local index
    (IndexFile's header, version and key), and every array's CRC32 at once; and whether each of
    the arrays ``empty`` names is empty."""
    from symbolize.index.store import IndexFile

    try:
        index = IndexFile(path, key)
    except (MalformedInputError, OSError):
        return False
    try:
        for name in index.array_names():
            index.array(name)
        return all(len(index.array(name)) == 0 for name in empty)
    except MalformedInputError:
        return False
    finally:
        index.close()


def _aliases(binary: Path) -> list[str]:
    """The alias words of a build: its binary's other IDs (a PE image's code ID, also when the
    index is its PDB's), the binary's htlhash."""
    aliases = [
        debug_id_text(identity) for identity in _binary_identities(binary) if identity.kind.value == "pe-code-id"
    ]
    hashed = _htlhash(binary)
    if hashed is not None:
        aliases.append(f"htlhash-{hashed}")
    return aliases


def _binary_identities(binary: Path) -> Sequence[DebugId]:
    """Every ID the binary's headers record (formats/identity.py: a few pages read, nothing decoded);
    none when they cannot be read."""
    from symbolize.formats.identity import read_header_identities

    try:
        return tuple(identity for header in read_header_identities(binary) for identity in header.ids)
    except (SymbolizeError, OSError):
        return ()


def _htlhash(binary: Path) -> str | None:
    """The binary's htlhash (formats/identity.py); None when it cannot be read."""
    from symbolize.formats.identity import htlhash

    try:
        return htlhash(binary)
    except (OSError, SymbolizeError):
        return None
