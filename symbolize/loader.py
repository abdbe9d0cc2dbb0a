"""The one place that opens object and debug files, and supplies what their readers need.

A :class:`Loader` is built once per run from its :class:`~symbolize.discovery.options.SearchOptions`
and owns everything opened in it:

- the object cache: each file opened once per resolved path and slice (a fat Mach-O's ``arch``, a
  static archive's member), reopened when its mtime or size changes;
- hint following: a reader opens no other file and calls nothing back; it says which files it
  needs in what it returns (``SymbolSource.needs()`` for the whole file: the dwz common file, a
  debug map's objects; ``AnswerRegion.needs`` for one region: a split unit's ``.dwo`` or
  ``.dwp``), and the loader finds them through the locator registry
  (symbolize/discovery/registry.py) and supplies them (``SymbolSource.supply``), as gimli's
  addr2line returns ``LookupResult::Load`` to its caller instead of opening the file itself;
- the index cache: a file answering lookups (:meth:`Loader.open_source`) comes from its persistent
  index in ``options.index_dir`` when there is one (symbolize/cache.py), built first when
  ``options.build_missing_indexes`` says so; :meth:`Loader.missing_indexes` reports the rest, for
  the API to build in the background (symbolize/index/background.py);
- the remote part (:attr:`Loader.remote`, symbolize/remote/run.py): when ``options.remote`` asks
  for servers or download caches, the run's Fetcher, which locators and binary sources ask for
  files not on disk, and what it missed and fetched, for the summary.

A file's needs for the whole of it are supplied as it is opened (its strings and its debug map
are read before anything else is asked of it); a region's, the first time that region is asked
for, so a lookup opens only the ``.dwo`` files of the units it reaches.
"""

from __future__ import annotations

import os
from bisect import bisect_right
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from stat import S_ISREG
from typing import TYPE_CHECKING, BinaryIO

from symbolize.discovery.options import DEFAULT_DEBUG_DIRS, SearchOptions
from symbolize.discovery.paths import DirectoryListings
from symbolize.discovery.registry import LookupContext, candidate_paths, locate
from symbolize.formats.errors import MalformedInputError, NotFoundError, SymbolizeError
from symbolize.formats.open import open_object
from symbolize.formats.types import (
    AnswerRegion,
    AnswerRun,
    DebugHint,
    DebugId,
    DebugInfoSummary,
    Frame,
    HintKind,
    Image,
    ObjectFile,
    SectionSource,
    Symbol,
    SymbolSource,
    frames_or_errors,
)
from symbolize.module import FileIdentity

if TYPE_CHECKING:
    from symbolize.index.indexed import IndexableSource
    from symbolize.index.job import IndexJob
    from symbolize.remote.progress import DownloadProgress
    from symbolize.remote.run import RemoteRun

# (resolved path, slice selector): a fat Mach-O holds one object per architecture, a static
# archive one per member (selector "ARCH(member)").
_Key = tuple[Path, str | None]

# The needs a reader has while it decodes (a split unit's .dwo or .dwp, the dwz file): what they
# find shapes its answers, yet no index key can name it before the answers are built.
_DECODING_HINTS = frozenset({HintKind.SPLIT_DWARF, HintKind.SUPPLEMENTARY})

# A file as a candidate was when a hint was followed: [size, mtime in ns], or None when absent.
FileState = list[int] | None


def _file_state(path: str) -> FileState:
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return [stat.st_size, stat.st_mtime_ns] if S_ISREG(stat.st_mode) else None


class HintFollower:
    """The needs of one opened file, followed through the locator registry for the image it serves.

    ``refused`` collects the candidates turned down, for diagnostics. For the needs a reader has
    while decoding, it notes every candidate path as it was when followed (symbolize/cache.py's
    ``ConsultedFiles``): an index built from those answers is believed only while they stay so.
    """

    def __init__(self, loader: Loader, image_path: Path, asking_path: Path, arch: str | None) -> None:
        self.loader = loader
        self.image_path = image_path
        self.asking_path = asking_path
        self.arch = arch
        self.refused: list[str] = []
        self._consulted: dict[str, FileState] = {}

    def follow(self, hint: DebugHint) -> SectionSource | None:
        """The file ``hint`` names, found and verified; None when none is (the refusals noted)."""
        # The servers are asked for what they can name (a dwz file by its build ID), after every
        # local candidate; the files on disk alone are what an index's record keeps.
        context = LookupContext(
            self.loader, self.image_path, self.asking_path, self.arch, ask_servers=self.loader.remote is not None
        )
        if hint.kind in _DECODING_HINTS:
            # Before locate opens anything: a file that appears meanwhile then shows as a change.
            for path in map(os.path.abspath, candidate_paths(hint, context._replace(ask_servers=False))):
                if path not in self._consulted:
                    self._consulted[path] = _file_state(path)
        found = locate(hint, context, self.refused)
        if found is None or not isinstance(found.opened, SectionSource):
            return None
        return found.opened

    def supply(self, reader: ObjectFile, hints: Sequence[DebugHint]) -> None:
        """Follow each of ``hints`` and hand ``reader`` what was found."""
        for hint in hints:
            reader.supply(hint, self.follow(hint))

    def consulted_record(self) -> bytes:
        """Every candidate path of the decoding needs followed so far, with its state then, and the
        settings that chose those paths; empty when no such need was followed."""
        if not self._consulted:
            return b""
        import json  # here: only an index's record of the files its decoding needed uses it

        return json.dumps({"settings": self._settings(), "files": self._consulted}, sort_keys=True).encode()

    def record_holds(self, record: bytes) -> bool:
        """Whether the files ``record`` (a :meth:`consulted_record`) lists are as they were, and
        these settings would look for them where it did."""
        import json

        try:
            data = json.loads(record)
        except ValueError:
            return False
        if not isinstance(data, dict) or data.get("settings") != self._settings():
            return False
        files = data.get("files")
        if not isinstance(files, dict):
            return False
        return all(_file_state(path) == state for path, state in files.items())

    def _settings(self) -> list[object]:
        options = self.loader.options
        return [
            os.path.abspath(self.image_path),
            os.path.abspath(self.asking_path),
            self.arch,
            [os.path.abspath(path) for path in options.search_paths],
            [os.path.abspath(path) for path in options.debug_dirs],
        ]


class SuppliedSource:
    """A reader as a symbol source whose regions' needs are met before they are asked.

    Asked for a region's answers (:meth:`answers`) or for the frames at an address
    (:meth:`frames_at`), it first follows the needs of the regions concerned that were not
    followed yet and supplies them to the reader, then asks the reader. Everything else is the
    reader's. The reader's needs for the whole file were supplied when it was opened.
    """

    def __init__(self, reader: ObjectFile, follower: HintFollower) -> None:
        self.reader = reader
        self.path: Path = reader.path
        self.format: str = reader.format
        self.arch: str = reader.arch
        self.debug_id: DebugId | None = reader.debug_id
        self.load_base: int = reader.load_base
        self._follower = follower
        # Regions with needs not followed yet, by low: (low, high, key, needs); None until listed.
        self._pending: list[tuple[int, int, int, tuple[DebugHint, ...]]] | None = None
        self._pending_lows: list[int] = []
        # The greatest high among the pending regions up to each position: where a scan stops.
        self._pending_reach: list[int] = []
        # The needs of each region key (a unit with several ranges has several regions), in order.
        self._needs_by_key: dict[int, dict[DebugHint, None]] = {}
        self._met: set[int] = set()

    # The reader's own -----------------------------------------------------------------------

    @property
    def index_kind(self) -> str:
        return self.reader.index_kind

    def symbols(self) -> Sequence[Symbol]:
        return self.reader.symbols()

    def debug_info(self) -> DebugInfoSummary:
        return self.reader.debug_info()

    def bind_image(self, image: Image) -> None:
        self.reader.bind_image(image)
        self.load_base = self.reader.load_base  # a PDB's answers move to the image's ImageBase

    def answer_inputs(self) -> str:
        return self.reader.answer_inputs()

    def lines_missing_reason(self) -> str | None:
        return self.reader.lines_missing_reason()

    def needs(self) -> Sequence[DebugHint]:
        return ()  # met: the loader supplied them as it opened the reader

    def supply(self, hint: DebugHint, found: SectionSource | None) -> None:
        self.reader.supply(hint, found)

    def relative_file_names(self, vaddr: int) -> Mapping[str, str]:
        return self.reader.relative_file_names(vaddr)

    def close(self) -> None:
        self.reader.close()

    def __repr__(self) -> str:
        return f"SuppliedSource({self.reader!r})"

    # Answers, needs met first -------------------------------------------------------------

    def answer_regions(self) -> Sequence[AnswerRegion]:
        return self.reader.answer_regions()

    def answers(self, key: int) -> Sequence[AnswerRun]:
        self._meet(key)
        return self.reader.answers(key)

    def frames_at(self, vaddr: int) -> list[Frame]:
        pending = self._pending if self._pending is not None else self._list_pending()
        if pending:
            # Every pending region holding vaddr: the reader may ask any of them (overlaps).
            position = bisect_right(self._pending_lows, vaddr) - 1
            while position >= 0 and self._pending_reach[position] > vaddr:
                low, high, key, _needs = pending[position]
                if low <= vaddr < high:
                    self._meet(key)
                position -= 1
        return self.reader.frames_at(vaddr)

    def frames_many(self, vaddrs: Sequence[int]) -> list[list[Frame] | MalformedInputError]:
        """:meth:`frames_at` of each vaddr, or the MalformedInputError it raises: through the
        reader's batch where no region has needs left to follow, else one address at a time."""
        pending = self._pending if self._pending is not None else self._list_pending()
        if pending:
            return frames_or_errors(self.frames_at, vaddrs)
        return self.reader.frames_many(vaddrs)

    def _list_pending(self) -> list[tuple[int, int, int, tuple[DebugHint, ...]]]:
        pending = sorted(
            (region.low, region.high, region.key, region.needs)
            for region in self.reader.answer_regions()
            if region.needs
        )
        reach, running = [], 0
        for _low, high, key, needs in pending:
            running = max(running, high)
            reach.append(running)
            self._needs_by_key.setdefault(key, {}).update(dict.fromkeys(needs))
        self._pending, self._pending_lows, self._pending_reach = pending, [low for low, *_ in pending], reach
        return pending

    def _meet(self, key: int) -> None:
        if key in self._met:
            return
        self._met.add(key)
        if self._pending is None:
            self._list_pending()
        self._follower.supply(self.reader, list(self._needs_by_key.get(key, ())))


class Loader:
    """Opens, verifies and caches every object and debug file of a run; see the module docstring.

    Close it (or use ``with``) to close every file it opened.
    """

    def __init__(
        self, options: SearchOptions | None = None, *, download_progress: DownloadProgress | None = None
    ) -> None:
        self.options = options if options is not None else SearchOptions()
        self._remote: RemoteRun | None = None
        if self.options.remote is not None and self.options.remote.asked:
            from symbolize.remote.run import RemoteRun  # the network's modules, only when asked

            self._remote = RemoteRun(self.options.remote, self.identify, download_progress)
        self._objects: dict[_Key, tuple[tuple[int, int], ObjectFile]] = {}
        self._sources: dict[_Key, tuple[tuple[int, int], SymbolSource]] = {}
        # How each source was opened (path, arch, image path, bound image), for a background builder
        # to open it alike: its IndexJob is made only for a source found missing an index
        # (missing_indexes), so a run answered from indexes never imports symbolize/index/job.py.
        self._opened_as: dict[_Key, tuple[Path, str | None, Path | None, ObjectFile | None]] = {}
        # The follower of each object's needs: what it refused is asked for in summaries.
        self._followers: dict[_Key, HintFollower] = {}
        # The search directories' entries, listed once for every name looked up in them.
        self._listings = DirectoryListings()

    @property
    def listings(self) -> DirectoryListings:
        return self._listings

    @property
    def remote(self) -> RemoteRun | None:
        """The run's servers and download caches (symbolize/remote/run.py); None when none is asked."""
        return self._remote

    def __enter__(self) -> Loader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def open(
        self, path: Path, *, image_path: Path | None = None, arch: str | None = None, member: str | None = None
    ) -> ObjectFile:
        """The reader for ``path`` (the ``arch`` slice of a fat file, the ``member`` of a static
        archive), its needs for the whole file supplied.

        ``image_path`` is the binary ``path`` serves (itself when None): its directory is searched
        for the files ``path``'s debug info needs. A file already open keeps the follower it was
        first opened with.
        """
        key, stamp = self._key(path, arch if member is None else f"{arch or ''}({member})")
        cached = self._objects.get(key)
        if cached is not None and cached[0] == stamp:
            return cached[1]
        if cached is not None:
            self._forget(key)
        opened = open_object(path, arch=arch, member=member)
        self._objects[key] = (stamp, opened)
        follower = self._followers[key] = HintFollower(self, image_path or path, path, arch)
        try:
            follower.supply(opened, opened.needs())
        except BaseException:
            self._forget(key)
            raise
        return opened

    def open_indexed_pdb(self, path: Path, arch: str | None, image_load_base: int) -> ObjectFile | None:
        """The PDB at ``path`` by its identity alone (a few blocks read), answering at
        ``image_load_base``, when a persistent index answers for it: what :meth:`open` gives for
        ``path`` from then on. None without an index directory, an identity or an index."""
        index_dir = self.options.index_dir
        if index_dir is None:
            return None
        # The PDB reader's modules only for a PDB: an ELF or Mach-O run never needs them.
        from symbolize.formats.pdb.deferred import DeferredPdb, read_pdb_identity

        identity = read_pdb_identity(path)
        if identity is None:
            return None
        deferred = DeferredPdb(path, identity, image_load_base)
        from symbolize.cache import has_index  # the cache's modules only for a run that has one

        if not has_index(deferred, index_dir):
            return None
        key, stamp = self._key(path, arch)
        cached = self._objects.get(key)
        if cached is not None and cached[0] == stamp:
            return cached[1]
        if cached is not None:
            self._forget(key)
        self._objects[key] = (stamp, deferred)
        return deferred

    @contextmanager
    def byte_stream(self, path: Path) -> Iterator[BinaryIO]:
        """The bytes of the file at ``path``, for a caller that decodes them itself (the auditor's
        prologue decoder). Raises SymbolizeError when it cannot be read."""
        try:
            stream = path.open("rb")
        except OSError as err:
            raise SymbolizeError(f"cannot read file: {err.strerror or err}", path) from err
        with stream:
            yield stream

    def refused(self, path: Path, arch: str | None = None) -> list[str]:
        """What following ``path``'s needs has refused so far, as ``"path: reason"``.

        The list itself, not a copy: a split unit's ``.dwo`` is followed when its region is first
        asked for, so refusals keep arriving while lookups run.
        """
        follower = self._followers.get((path.resolve(), arch))
        return follower.refused if follower is not None else []

    def file_crc32(self, path: Path) -> int:
        """The CRC32 ``.gnu_debuglink`` records of the file at ``path``: zlib's, over the whole file.
        Raises OSError when it cannot be read."""
        import zlib  # here: only a debuglink's candidate is checked by it

        crc = 0
        with path.open("rb") as stream:
            while chunk := stream.read(1 << 20):
                crc = zlib.crc32(chunk, crc)
        return crc

    def identify(self, path: Path, arch: str | None = None) -> FileIdentity:
        """What the file at ``path`` is (format and IDs), opened and closed at once, never cached: how
        a download is verified before it is stored under its final name. Raises SymbolizeError when
        it is no object file this toolkit reads."""
        opened = open_object(path, arch=arch)
        try:
            return FileIdentity(opened.format, opened.debug_id, tuple(opened.identities()))
        finally:
            opened.close()

    def open_source(
        self, path: Path, *, image_path: Path | None = None, arch: str | None = None, image: ObjectFile | None = None
    ) -> SymbolSource:
        """``path`` answering lookups, its regions' needs met as they are asked: from its index in
        ``options.index_dir`` when there is one, else the reader.

        A source that answers at an image's vaddrs only once it knows the image (a PDB holds
        RVAs: ``bind_image``) is bound to ``image`` before its index is loaded or built, so the
        index stores the answers lookups will ask for.
        """
        key, stamp = self._key(path, arch)
        cached = self._sources.get(key)
        if cached is not None and cached[0] == stamp and key in self._objects:
            return cached[1]
        supplied, follower = self.open_for_indexing(path, image_path=image_path, arch=arch, image=image)
        options = self.options
        source: SymbolSource = supplied
        if options.index_dir is not None:  # the cache's modules only for a run that has one
            from symbolize.cache import with_index

            source = with_index(supplied, options.index_dir, options.build_missing_indexes, follower, image_path)
        self._sources[key] = (stamp, source)
        self._opened_as[key] = (path, arch, image_path, image)
        return source

    def open_for_indexing(
        self, path: Path, *, image_path: Path | None = None, arch: str | None = None, image: ObjectFile | None = None
    ) -> tuple[SuppliedSource, HintFollower]:
        """``path`` as :meth:`open_source` opens it, before any index: the reader as a source (bound
        to ``image``), and the follower of its needs, whose record an index of it keeps."""
        opened = self.open(path, image_path=image_path, arch=arch)
        if image is not None:
            opened.bind_image(image)
        key, _stamp = self._key(path, arch)
        follower = self._followers.get(key) or HintFollower(self, image_path or path, path, arch)
        return SuppliedSource(opened, follower), follower

    def supply_all(self, reader: ObjectFile) -> None:
        """Meet every need of every region of ``reader`` (opened here) now: for what reads all of a
        file at once (the auditor's coverage), as lookups would meet them one region at a time."""
        key = next((key for key, (_stamp, opened) in self._objects.items() if opened is reader), None)
        follower = self._followers.get(key) if key is not None else None
        if follower is None:
            return
        needs = dict.fromkeys(hint for region in reader.answer_regions() for hint in region.needs)
        follower.supply(reader, list(needs))

    def missing_indexes(self) -> list[tuple[IndexableSource, IndexJob]]:
        """The sources opened without an index though one would save their decode, each with how it
        was opened (for a background builder to open it alike); none without ``index_dir``."""
        if self.options.index_dir is None:
            return []
        from symbolize.cache import is_indexable, worth_indexing

        # With an index directory, a source comes back unindexed only when it has no index.
        missing = [
            (key, source)
            for key, (_stamp, source) in self._sources.items()
            if is_indexable(source) and worth_indexing(source)
        ]
        return [(source, self._index_job(key)) for key, source in missing]

    def _index_job(self, key: _Key) -> IndexJob:
        """How the source of ``key`` was opened, as a background builder opens it."""
        from symbolize.index.job import IndexJob

        path, arch, image_path, image = self._opened_as[key]
        options = self.options
        return IndexJob(
            path,
            arch,
            image_path,
            image.path if image is not None else None,
            image.arch if image is not None else None,
            tuple(options.binaries),
            tuple(options.search_paths),
            None if tuple(options.debug_dirs) == DEFAULT_DEBUG_DIRS else tuple(options.debug_dirs),
        )

    def _key(self, path: Path, arch: str | None) -> tuple[_Key, tuple[int, int]]:
        try:
            stat = path.stat()
        except FileNotFoundError as err:
            raise NotFoundError("file not found", path) from err
        except OSError as err:
            raise SymbolizeError(f"cannot read file: {err.strerror or err}", path) from err
        return (path.resolve(), arch), (stat.st_mtime_ns, stat.st_size)

    def _forget(self, key: _Key) -> None:
        self._opened_as.pop(key, None)
        self._followers.pop(key, None)
        for table in (self._sources, self._objects):
            entry = table.pop(key, None)
            if entry is not None:
                entry[1].close()

    def close(self) -> None:
        for table in (self._sources, self._objects):
            for _stamp, opened in table.values():
                opened.close()
            table.clear()
        self._opened_as.clear()
        self._followers.clear()
        self._listings.clear()
