"""A mapping's binary, and a binary's debug files: the two questions discovery answers for a Module.

The binary behind a mapping named ``filename`` with debug ID text ``debug_id``
(for a universal Mach-O file, the slice with that UUID)
is, in this order: a ``--binary`` file with the mapping's base name, any other
``--binary`` (when there is an ID to match), the file at the recorded path,
and the base name in each ``--search-path`` (exact, else case-insensitively:
a Windows profile names ``C:\\x\\App.exe``). The ID text is parsed as the
candidate's own kind (``DebugId.parse(text, image.debug_id.kind)``) and
compared as a value, so a GNU build ID, a PDB GUID+age and a Mach-O UUID each
match in whatever spelling the profile uses. A PE image is also named by its
code ID (TimeDateStamp and SizeOfImage, read from its headers: the symsrv key
``name.exe/<TIMESTAMP><SIZEOFIMAGE>/name.exe``, what Breakpad, Crashpad and
Sentry record), the only ID of a MinGW or CodeView-less image; a code ID of
another build is refused with both code IDs. A stamped mapping (``symbolize stamp``) records
several IDs, ``<GUID><AGE>,<TIMESTAMP><SIZEOFIMAGE>`` for a PE image: each must match
(symbolize/mapping_ids.py). Without a binary, a separate
debug file found by build ID stands in (it keeps the program headers); then, when the run asks
servers, the binary sources (symbolize/discovery/binary_sources.py: debuginfod's by build ID, the
symbol servers' by code ID) fetch it, verified again here by ID. When none has it, the error
says what each server answered (RemoteMissError: ``not-on-server`` or ``server-unreachable``).

The debug files: each hint the image lists that names a module's debug file
(see ``READER_HINTS`` in symbolize/discovery/registry.py), in the image's
order, through its locator; the first verified file is the best source, the
image itself (its symbols, its own DWARF) the last.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from symbolize import mapping_ids
from symbolize.discovery.paths import DirectoryListings, base_name, build_id_path, is_file_name, lies_under
from symbolize.discovery.registry import READER_HINTS, FileLoader, LookupContext, locate
from symbolize.formats.errors import DebugIdMismatchError, MissingDebugInfoError, RemoteMissError
from symbolize.formats.types import DebugIdKind, ObjectFile
from symbolize.module import Module, Reason, RemoteMiss, Source


def find_module(filename: str, debug_id: str | None, loader: FileLoader) -> Module:
    """The binary for a mapping named ``filename`` (with ``debug_id`` text when known) and its debug files.

    Raises DebugIdMismatchError when binaries named ``filename`` exist but none
    has ``debug_id``, MissingDebugInfoError when none is found at all.
    """
    wanted = debug_id.strip() if debug_id and debug_id.strip() else None
    name = base_name(filename)
    mismatch: DebugIdMismatchError | None = None
    for candidate, by_name in _binary_candidates(filename, name, wanted is not None, loader):
        image = loader.open(candidate)
        if wanted is not None and not _matches(image, wanted):
            image = _slice_with_id(candidate, image, wanted, loader) or image
        if wanted is None or _matches(image, wanted):
            return module_for(image, loader)
        if by_name and mismatch is None:
            mismatch = _mismatch(candidate, image, wanted)
    if wanted is not None:
        stand_in = _debug_file_by_build_id(wanted, loader)
        if stand_in is not None:
            return stand_in
        # Here, not at the top: a run that finds its binaries on disk never needs the sources.
        from symbolize.discovery.binary_sources import fetched_binaries

        for fetched in fetched_binaries(filename, wanted, loader):
            image = loader.open(fetched)
            if _matches(image, wanted):
                return module_for(image, loader)
    if mismatch is not None:
        raise mismatch
    missed = loader.remote.misses(filename) if loader.remote is not None else []
    if missed:
        unreachable = any(miss.reason is Reason.SERVER_UNREACHABLE for miss in missed)
        tried = tuple(url for miss in missed for url in miss.tried)
        said = "; ".join(f"{miss.what}: {miss.reason.value}" for miss in missed)
        raise RemoteMissError(f"binary not found on disk nor on the servers asked ({said})", filename,
                              unreachable=unreachable, tried=tried)  # fmt: skip
    raise MissingDebugInfoError("binary not found (give it with --binary or --search-path)", filename)


def find_module_by_htlhash(filename: str, wanted: str, loader: FileLoader) -> Module:
    """The binary for a mapping named ``filename`` whose file hashes to ``wanted``: its
    ``process.executable.build_id.htlhash`` (formats/identity.py), compared ignoring case.

    Candidates are :func:`find_module`'s with an ID to match (every ``--binary``, the recorded path,
    the base name in each search path); the first that hashes to ``wanted`` is the one. Raises
    DebugIdMismatchError when files named ``filename`` exist but none hashes so, and
    MissingDebugInfoError when none is found at all.
    """
    from symbolize.formats.identity import htlhash

    wanted = wanted.strip().lower()
    mismatch: DebugIdMismatchError | None = None
    for candidate, by_name in _binary_candidates(filename, base_name(filename), True, loader):
        found = htlhash(candidate)
        if found == wanted:
            return module_for(loader.open(candidate), loader)
        if by_name and mismatch is None:
            mismatch = DebugIdMismatchError(candidate, wanted, found, "htlhash")
    if mismatch is not None:
        raise mismatch
    raise MissingDebugInfoError("binary not found (give it with --binary or --search-path)", filename)


def open_module(path: Path, loader: FileLoader, arch: str | None = None) -> Module:
    """``path`` as the binary (its ``arch`` slice, for a universal file), with the debug files discovery finds."""
    return module_for(loader.open(path, arch=arch), loader)


def module_for(image: ObjectFile, loader: FileLoader) -> Module:
    """``image`` with its best debug file (when one verifies) and itself as sources."""
    # An image with its own DWARF is not worth a download: servers are asked for the others only.
    ask_servers = loader.remote is not None and not image.debug_info().has_dwarf
    context = LookupContext(loader, image.path, image.path, image.arch, image.debug_id, image.load_base, ask_servers)
    refused: list[str] = []
    debug_files: list[Source] = []
    for hint in image.debug_hints():
        if hint.kind in READER_HINTS:
            continue
        found = locate(hint, context, refused)
        if found is not None:
            # A PDB answers at its image's vaddrs only once it knows the ImageBase its RVAs add to.
            debug_files.append(loader.open_source(found.path, image_path=image.path, arch=image.arch, image=image))
            break
    # A universal Mach-O file answers for the image's slice; other formats have one.
    own_arch = image.arch if image.format == "macho" else None
    own = loader.open_source(image.path, arch=own_arch)
    if own.debug_info().has_dwarf:
        debug_files.append(own)
    # What the sources' DWARF refuses later, as it asks for its .dwo files and dwz file.
    reader_refusals = [loader.refused(source.path, image.arch) for source in debug_files if source is not own]
    reader_refusals.append(loader.refused(image.path, own_arch))
    missed: list[RemoteMiss] = []
    if loader.remote is not None and ask_servers:
        # The servers' answers refused, and their misses when no debug file was found after all.
        refused += [found for found in loader.remote.refusals(str(image.path)) if found not in refused]
        missed = [] if debug_files else loader.remote.misses(str(image.path))
    return Module(image, debug_files, refused, own_source=own, reader_refusals=reader_refusals, missed=missed)


def _slice_with_id(path: Path, image: ObjectFile, wanted: str, loader: FileLoader) -> ObjectFile | None:
    """The slice of a universal Mach-O file whose UUID is ``wanted`` (the mapping's), if another is."""
    for arch in image.slice_arches():
        if arch != image.arch:
            opened = loader.open(path, arch=arch)
            if _matches(opened, wanted):
                return opened
    return None


def _matches(image: ObjectFile, wanted: str) -> bool:
    """Whether ``image`` is the build the mapping's ID text names (one ID, or a stamp's several:
    symbolize/mapping_ids.py)."""
    return mapping_ids.matches(wanted, image.identities())


def _mismatch(path: Path, image: ObjectFile, wanted: str) -> DebugIdMismatchError:
    """The refusal of ``image`` for ``wanted``, both IDs spelled as the kind ``wanted`` reads as."""
    for identity in image.identities():
        expected = mapping_ids.parse_part(wanted, identity.kind)
        if expected is not None and expected != identity:
            what = "code ID" if identity.kind is DebugIdKind.PE_CODE_ID else "debug ID"
            return DebugIdMismatchError(path, str(expected), str(identity), what)
    return DebugIdMismatchError(path, wanted, str(image.debug_id) if image.debug_id is not None else None)


def _debug_file_by_build_id(wanted: str, loader: FileLoader) -> Module | None:
    """A separate debug file found by build ID, standing in for a missing binary."""
    relative = build_id_path(mapping_ids.parse_part(wanted, DebugIdKind.GNU_BUILD_ID))
    if relative is None:
        return None
    for directory in loader.options.debug_dirs:
        path = directory / relative
        try:
            present = lies_under(path, directory) and path.is_file()
        except OSError:
            continue  # a .build-id directory that cannot be searched: the next debug directory may hold it
        if present:
            stand_in = loader.open(path)
            if _matches(stand_in, wanted):
                return module_for(stand_in, loader)
    return None


def _binary_candidates(
    filename: str, name: str, has_id: bool, loader: FileLoader
) -> Iterator[tuple[Path, bool]]:
    """(path, matched by name) in search order; a path matched only by ID may be rejected quietly."""
    seen: set[Path] = set()
    wanted_name = name.casefold()
    named = [path for path in loader.options.binaries if name and path.name.casefold() == wanted_name]
    others = [path for path in loader.options.binaries if has_id and path not in named]
    ordered = [(path, True) for path in named] + [(path, False) for path in others]
    if filename and "\0" not in filename:
        ordered.append((Path(filename), True))
    if is_file_name(name):
        listings = loader.listings
        ordered += [
            (path, True) for directory in loader.options.search_paths for path in _named_in(directory, name, listings)
        ]
    for path, by_name in ordered:
        key = path.absolute()
        if key not in seen and path.is_file():
            seen.add(key)
            yield path, by_name


def _named_in(directory: Path, name: str, listings: DirectoryListings) -> Iterator[Path]:
    """``directory/name``, else the entries of ``directory`` whose name matches ignoring case."""
    exact = directory / name
    if exact.is_file():
        yield exact
        return
    for match in listings.matching(directory, name):
        yield directory / match
