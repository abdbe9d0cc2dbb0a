"""Finding the binary behind a profile mapping, and the debug files behind a binary.

Debug files are looked up as GDB does ("Separate Debug Files" in the GDB
manual): by build ID under ``<debug dir>/.build-id/xx/rest.debug``, then by
the ``.gnu_debuglink`` name (CRC32 checked) next to the binary, in its
``.debug/`` directory, under ``<debug dir>/<binary dir>/`` and in the search
paths. A candidate whose build ID differs from the one asked for is refused,
never used.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from symbolize.cache import with_index
from symbolize.formats.errors import DebugIdMismatchError, MissingDebugInfoError, SymbolizeError
from symbolize.formats.open import open_object
from symbolize.formats.types import ObjectFile
from symbolize.module import Module

DEFAULT_DEBUG_DIRS = (Path("/usr/lib/debug"),)


class ObjectCache:
    """Opened object files by path, reopened only when the file's mtime or size changes.

    A profile maps one library many times (one mapping per segment, per
    process); each is opened once. The cache owns the files: :meth:`close`
    closes them all.
    """

    def __init__(self, index_dir: Path | None = None, build_missing_indexes: bool = False) -> None:
        self._objects: dict[Path, tuple[tuple[int, int], ObjectFile]] = {}
        # Where persistent indexes are read from (None: not used); see symbolize/cache.py.
        self.index_dir = index_dir
        self.build_missing_indexes = build_missing_indexes

    def open(self, path: Path) -> ObjectFile:
        try:
            stat = path.stat()
        except FileNotFoundError as err:
            raise MissingDebugInfoError("file not found", path) from err
        except OSError as err:
            raise SymbolizeError(f"cannot read file: {err.strerror or err}", path) from err
        key = path.resolve()
        stamp = (stat.st_mtime_ns, stat.st_size)
        cached = self._objects.get(key)
        if cached is not None and cached[0] == stamp:
            return cached[1]
        if cached is not None:
            cached[1].close()
        opened = with_index(open_object(path), self.index_dir, self.build_missing_indexes)
        self._objects[key] = (stamp, opened)
        return opened

    def index_in_background(self) -> list[Path]:
        """Start building the indexes this cache found missing, for later runs; returns the files.

        Raises OSError when the builder cannot be started.
        """
        if self.index_dir is None:
            return []
        from symbolize.cache import is_indexable, worth_indexing
        from symbolize.index.background import start_background_indexing

        # With an index directory, a source comes back unindexed only when it has no index.
        opened = [found for _stamp, found in self._objects.values()]
        missing = [source for source in opened if is_indexable(source) and worth_indexing(source)]
        return start_background_indexing(missing, self.index_dir) if missing else []

    def close(self) -> None:
        for _stamp, opened in self._objects.values():
            opened.close()
        self._objects.clear()


@dataclass
class DiscoveryOptions:
    """Where to look. ``cache`` is shared by every lookup made with these options."""

    binaries: Sequence[Path] = ()
    search_paths: Sequence[Path] = ()
    debug_dirs: Sequence[Path] = DEFAULT_DEBUG_DIRS
    cache: ObjectCache = field(default_factory=ObjectCache, repr=False, compare=False)


def find_module(filename: str, build_id: str | None, options: DiscoveryOptions) -> Module:
    """The binary for a mapping named ``filename`` (with ``build_id`` when known) and its debug files.

    Raises DebugIdMismatchError when binaries named ``filename`` exist but none
    has ``build_id``, MissingDebugInfoError when none is found at all.
    """
    wanted = build_id.strip().lower() if build_id else None
    basename = filename.replace("\\", "/").rsplit("/", 1)[-1]
    mismatch: DebugIdMismatchError | None = None
    for candidate, by_name in _binary_candidates(filename, basename, wanted, options):
        binary = options.cache.open(candidate)
        found = _id_text(binary)
        if wanted is None or found == wanted:
            return _module_for(binary, options)
        if by_name and mismatch is None:
            mismatch = DebugIdMismatchError(candidate, wanted, found)
    if wanted is not None:
        # A separate debug file keeps the program headers, so it can stand in for a missing binary.
        for debug_path in _build_id_paths(wanted, options.debug_dirs):
            if debug_path.is_file():
                stand_in = options.cache.open(debug_path)
                if _id_text(stand_in) == wanted:
                    return _module_for(stand_in, options)
    if mismatch is not None:
        raise mismatch
    raise MissingDebugInfoError("binary not found (give it with --binary or --search-path)", filename)


def open_module(path: Path, options: DiscoveryOptions) -> Module:
    """``path`` as the binary, with the debug files discovery finds for it."""
    return _module_for(options.cache.open(path), options)


def _id_text(opened: ObjectFile) -> str | None:
    return str(opened.debug_id) if opened.debug_id is not None else None


def _binary_candidates(
    filename: str, basename: str, wanted: str | None, options: DiscoveryOptions
) -> Iterator[tuple[Path, bool]]:
    """(path, matched by name) in search order; a path matched only by build ID may be rejected quietly."""
    seen: set[Path] = set()
    named = [path for path in options.binaries if basename and path.name == basename]
    others = [path for path in options.binaries if wanted is not None and path not in named]
    ordered = [(path, True) for path in named] + [(path, False) for path in others]
    if filename:
        ordered.append((Path(filename), True))
    if basename:
        ordered += [(directory / basename, True) for directory in options.search_paths]
    for path, by_name in ordered:
        key = path.absolute()
        if key not in seen and path.is_file():
            seen.add(key)
            yield path, by_name


def _build_id_paths(build_id: str, debug_dirs: Sequence[Path]) -> list[Path]:
    if len(build_id) < 3:
        return []
    return [directory / ".build-id" / build_id[:2] / f"{build_id[2:]}.debug" for directory in debug_dirs]


def _debuglink_paths(binary_path: Path, name: str, options: DiscoveryOptions) -> list[Path]:
    directory = binary_path.absolute().parent
    relative = Path(*directory.parts[1:]) if len(directory.parts) > 1 else Path()
    return [
        directory / name,
        directory / ".debug" / name,
        *(debug_dir / relative / name for debug_dir in options.debug_dirs),
        *(search_path / name for search_path in options.search_paths),
    ]


def _debug_candidates(binary: ObjectFile, options: DiscoveryOptions) -> Iterator[tuple[Path, int | None]]:
    """(path, expected CRC32 or None) of possible separate debug files, best first."""
    build_id = _id_text(binary)
    if build_id is not None:
        for path in _build_id_paths(build_id, options.debug_dirs):
            yield path, None
    link = binary.debug_link()
    if link is not None:
        for path in _debuglink_paths(binary.path, link.filename, options):
            yield path, link.crc32


def _file_crc32(path: Path) -> int:
    crc = 0
    with path.open("rb") as stream:
        while chunk := stream.read(1 << 20):
            crc = zlib.crc32(chunk, crc)
    return crc


def _refusal(binary: ObjectFile, candidate: ObjectFile, crc32: int | None) -> str | None:
    """Why ``candidate`` cannot be ``binary``'s debug file, or None if it can."""
    expected, found = _id_text(binary), _id_text(candidate)
    if expected is not None and found != expected:
        return f"build ID {found or 'none'} does not match the binary's {expected}"
    if crc32 is not None:
        try:
            actual = _file_crc32(candidate.path)
        except OSError as err:
            return f"cannot read: {err.strerror or err}"
        if actual != crc32:
            return f"CRC32 {actual:08x} does not match .gnu_debuglink's {crc32:08x}"
    return None


def _module_for(binary: ObjectFile, options: DiscoveryOptions) -> Module:
    debug_files: list[ObjectFile] = []
    refused: list[str] = []
    seen = {binary.path.resolve()}
    for path, crc32 in _debug_candidates(binary, options):
        if path.resolve() in seen or not path.is_file():
            continue
        seen.add(path.resolve())
        try:
            candidate = options.cache.open(path)
        except SymbolizeError as err:
            refused.append(str(err))
            continue
        reason = _refusal(binary, candidate, crc32)
        if reason is not None:
            refused.append(f"{path}: {reason}")
            continue
        debug_files.append(candidate)
        break
    if binary.debug_info().has_dwarf:
        debug_files.append(binary)
    return Module(binary, debug_files, refused)
