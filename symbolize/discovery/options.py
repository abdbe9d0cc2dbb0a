"""Where discovery looks, and the cache of files it opened (each opened once, with its resolver)."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from stat import S_ISREG

from symbolize.cache import with_index
from symbolize.discovery.paths import DirectoryListings
from symbolize.formats.errors import MissingDebugInfoError, SymbolizeError
from symbolize.formats.open import open_object
from symbolize.formats.types import DebugHint, HintKind, HintResolver, ObjectFile, SectionSource
from symbolize.index.job import IndexJob

DEFAULT_DEBUG_DIRS = (Path("/usr/lib/debug"),)

# (resolved path, slice selector): a fat Mach-O holds one object per architecture, a static
# archive one per member (selector "ARCH(member)").
_Key = tuple[Path, str | None]


class ObjectCache:
    """Opened object files by resolved path and slice (``arch``), reopened when mtime or size changes.

    A profile maps one library many times (one mapping per segment, per
    process); each is opened once. :meth:`open` gives the reader itself (an
    image, or the sections a resolver hands back); :meth:`open_source` the
    same file answering lookups, from its persistent index when there is one.
    The cache owns the files: :meth:`close` closes them all.
    """

    def __init__(self, index_dir: Path | None = None, build_missing_indexes: bool = False) -> None:
        self._objects: dict[_Key, tuple[tuple[int, int], ObjectFile]] = {}
        self._sources: dict[_Key, tuple[tuple[int, int], ObjectFile]] = {}
        # How each source was opened, for a background builder to open it alike.
        self._jobs: dict[_Key, IndexJob] = {}
        # The resolver each object was opened with: what it refused is asked for in summaries.
        self._resolvers: dict[_Key, HintResolver] = {}
        # Where persistent indexes are read from (None: not used); see symbolize/cache.py.
        self.index_dir = index_dir
        self.build_missing_indexes = build_missing_indexes
        # The search directories' entries, listed once for every name looked up in them.
        self.listings = DirectoryListings()

    def open(
        self, path: Path, arch: str | None = None, resolver: HintResolver | None = None, member: str | None = None
    ) -> ObjectFile:
        """The reader for ``path`` (the ``arch`` slice of a fat file, the ``member`` of a static
        archive); ``resolver`` serves its hints.

        A file already open keeps the resolver it was first opened with.
        """
        key, stamp = self._key(path, arch if member is None else f"{arch or ''}({member})")
        cached = self._objects.get(key)
        if cached is not None and cached[0] == stamp:
            return cached[1]
        if cached is not None:
            self._forget(key)
        opened = open_object(path, arch=arch, resolver=resolver, member=member)
        self._objects[key] = (stamp, opened)
        if resolver is not None:
            self._resolvers[key] = resolver
        return opened

    def adopt(self, path: Path, arch: str | None, opened: ObjectFile) -> ObjectFile:
        """``opened`` (made by a locator, for ``path``) as what :meth:`open` gives for ``path`` from now
        on; the file already open for ``path``, unchanged since, when there is one."""
        key, stamp = self._key(path, arch)
        cached = self._objects.get(key)
        if cached is not None and cached[0] == stamp:
            return cached[1]
        if cached is not None:
            self._forget(key)
        self._objects[key] = (stamp, opened)
        return opened

    def refused(self, path: Path, arch: str | None = None) -> list[str]:
        """What the resolver ``path`` was opened with has refused so far, as ``"path: reason"``.

        The list itself, not a copy: a split unit's ``.dwo`` is asked for when the unit is
        first decoded, so refusals keep arriving while lookups run.
        """
        resolver = self._resolvers.get((path.resolve(), arch))
        return resolver.refused if isinstance(resolver, Resolver) else []

    def open_source(
        self,
        path: Path,
        arch: str | None = None,
        resolver: HintResolver | None = None,
        image: ObjectFile | None = None,
        job: IndexJob | None = None,
    ) -> ObjectFile:
        """``path`` answering lookups: from its index in ``index_dir`` when there is one, else the reader.

        A source that answers at an image's vaddrs only once it knows the image (a PDB
        holds RVAs: ``bind_image``) is bound to ``image`` before its index is loaded or
        built, so the index stores the answers lookups will ask for. ``job`` says how it
        was opened, for :meth:`index_in_background` (default: by path and ``arch`` alone).
        """
        opened = self.open(path, arch, resolver)
        key, stamp = self._key(path, arch)
        cached = self._sources.get(key)
        if cached is not None and cached[0] == stamp:
            return cached[1]
        bind = getattr(opened, "bind_image", None)
        if image is not None and callable(bind):
            bind(image)
        # The resolver the file was first opened with: the one its decoding asks (see Resolver).
        consulted = self._resolvers.get(key)
        source = with_index(
            opened, self.index_dir, self.build_missing_indexes, consulted if isinstance(consulted, Resolver) else None
        )
        self._sources[key] = (stamp, source)
        self._jobs[key] = job or IndexJob(path, arch)
        return source

    def _key(self, path: Path, arch: str | None) -> tuple[_Key, tuple[int, int]]:
        try:
            stat = path.stat()
        except FileNotFoundError as err:
            raise MissingDebugInfoError("file not found", path) from err
        except OSError as err:
            raise SymbolizeError(f"cannot read file: {err.strerror or err}", path) from err
        return (path.resolve(), arch), (stat.st_mtime_ns, stat.st_size)

    def _forget(self, key: _Key) -> None:
        self._jobs.pop(key, None)
        self._resolvers.pop(key, None)
        for table in (self._sources, self._objects):
            entry = table.pop(key, None)
            if entry is not None:
                entry[1].close()

    def index_in_background(self) -> list[Path]:
        """Start building the indexes this cache found missing, for later runs; returns the files.

        Raises OSError when the builder cannot be started.
        """
        if self.index_dir is None:
            return []
        from symbolize.cache import is_indexable, worth_indexing
        from symbolize.index.background import start_background_indexing

        # With an index directory, a source comes back unindexed only when it has no index. The
        # builder opens each as it was opened here (its slice, the image a PDB was bound to, the
        # search settings its hints were followed with), so it builds the index this run missed.
        missing = [
            (source, self._jobs[key])
            for key, (_stamp, source) in self._sources.items()
            if is_indexable(source) and worth_indexing(source)
        ]
        return start_background_indexing(missing, self.index_dir) if missing else []

    def close(self) -> None:
        for table in (self._sources, self._objects):
            for _stamp, opened in table.values():
                opened.close()
            table.clear()
        self._jobs.clear()
        self._resolvers.clear()
        self.listings.clear()


@dataclass
class DiscoveryOptions:
    """Where to look. ``cache`` is shared by every lookup made with these options."""

    binaries: Sequence[Path] = ()
    search_paths: Sequence[Path] = ()
    debug_dirs: Sequence[Path] = DEFAULT_DEBUG_DIRS
    cache: ObjectCache = field(default_factory=ObjectCache, repr=False, compare=False)

    def open(
        self, path: Path, *, image_path: Path | None = None, arch: str | None = None, member: str | None = None
    ) -> ObjectFile:
        """The reader for ``path`` (its ``member``, for a static archive), whose hints are followed
        from these options.

        ``image_path`` is the binary ``path`` serves (itself when None): its
        directory is searched for the files ``path``'s debug info refers to.
        """
        return self.cache.open(path, arch, Resolver(self, image_path or path, path, arch), member)

    def open_source(
        self, path: Path, *, image_path: Path | None = None, arch: str | None = None, image: ObjectFile | None = None
    ) -> ObjectFile:
        """Like :meth:`open`, answering from the persistent index when there is one (bound to ``image``)."""
        job = IndexJob(
            path,
            arch,
            image_path,
            image.path if image is not None else None,
            image.arch if image is not None else None,
            tuple(self.binaries),
            tuple(self.search_paths),
            None if self.debug_dirs == DEFAULT_DEBUG_DIRS else tuple(self.debug_dirs),
        )
        return self.cache.open_source(path, arch, Resolver(self, image_path or path, path, arch), image, job)


# The hints a reader asks for while it decodes (a split unit's .dwo or .dwp, the dwz file): what
# they find shapes its answers, yet no index key can name it before the answers are built.
_DECODING_HINTS = frozenset({HintKind.SPLIT_DWARF, HintKind.SUPPLEMENTARY})

# A file as a candidate was when a hint was followed: [size, mtime in ns], or None when absent.
FileState = list[int] | None


def _file_state(path: str) -> FileState:
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return [stat.st_size, stat.st_mtime_ns] if S_ISREG(stat.st_mode) else None


class Resolver:
    """The :data:`HintResolver` a reader is opened with: its hints go through the locator registry.

    ``refused`` collects the candidates turned down, for diagnostics. For the hints a reader asks
    for while decoding, it notes every candidate path as it was when asked (symbolize/cache.py's
    ``ConsultedFiles``): an index built from those answers is believed only while they stay so.
    """

    def __init__(self, options: DiscoveryOptions, image_path: Path, asking_path: Path, arch: str | None) -> None:
        self.options = options
        self.image_path = image_path
        self.asking_path = asking_path
        self.arch = arch
        self.refused: list[str] = []
        self._consulted: dict[str, FileState] = {}

    def __call__(self, hint: DebugHint) -> SectionSource | None:
        from symbolize.discovery.registry import LookupContext, candidate_paths, locate

        context = LookupContext(self.options, self.image_path, self.asking_path, self.arch)
        if hint.kind in _DECODING_HINTS:
            # Before locate opens anything: a file that appears meanwhile then shows as a change.
            for path in map(os.path.abspath, candidate_paths(hint, context)):
                if path not in self._consulted:
                    self._consulted[path] = _file_state(path)
        found = locate(hint, context, self.refused)
        if found is None or not isinstance(found.opened, SectionSource):
            return None
        return found.opened

    def consulted_record(self) -> bytes:
        """Every candidate path of the decoding hints followed so far, with its state then, and the
        settings that chose those paths; empty when no such hint was followed."""
        if not self._consulted:
            return b""
        return json.dumps({"settings": self._settings(), "files": self._consulted}, sort_keys=True).encode()

    def record_holds(self, record: bytes) -> bool:
        """Whether the files ``record`` (a :meth:`consulted_record`) lists are as they were, and
        these settings would look for them where it did."""
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
        options = self.options
        return [
            os.path.abspath(self.image_path),
            os.path.abspath(self.asking_path),
            self.arch,
            [os.path.abspath(path) for path in options.search_paths],
            [os.path.abspath(path) for path in options.debug_dirs],
        ]
