"""The Mach-O locators: a binary's dSYM, and the object files its debug map names.

- DSYM: ``X.dSYM/Contents/Resources/DWARF/X`` (X the binary's file name) beside the binary and
  in each search path, as lldb and llvm-symbolizer look; then any dSYM under a search path
  whose UUID is the binary's (a renamed bundle, one made on another machine), found by a walk
  that reads only load commands (:func:`symbolize.formats.macho.read_uuids`) and is done once
  per search path per run; then SSQP's store layout (``_.dwarf/mach-uuid-sym-<UUID>/_.dwarf``,
  symbolize/remote/symsrv.py) under each search path and each local store of ``--symbol-server``,
  and, when the run asks symbol servers, from their caches and HTTP stores. A dSYM whose UUID
  differs is refused with both UUIDs. The slice is the binary's: the registry opens a universal
  dSYM with the image's ``arch``.
- DEBUG_MAP_OBJECT (an N_OSO stab): the recorded path relative to the binary's directory and
  each search path (``-oso_prefix`` builds record such paths), the base name there, and an
  absolute recorded path only when the stab records an mtime to check it by. The file must be
  a Mach-O object (``MH_OBJECT``), and its mtime the one the stab records, when it records
  one (0, as ``ZERO_AR_DATE`` links write, records none): an object rebuilt since the link
  describes other code. An archive member (``libx.a(member.o)``, also a Rust ``.rlib``'s) is
  looked for as its archive is, by the same rules, and its mtime is the one its ar header
  records (what the linker copied into the stab). An object file's mtime is compared from its
  status before it is opened: an object rebuilt since the link is never read.
"""

from __future__ import annotations

import os
import weakref
from collections.abc import Iterator
from pathlib import Path

from symbolize.discovery.paths import DirectoryListings, base_name, is_file_name, normalized_dir, relative_path
from symbolize.discovery.registry import (
    Candidate,
    LocatorDefaults,
    LookupContext,
    debug_id_refusal,
    register_locator,
)
from symbolize.formats.archive import split_member_path
from symbolize.formats.errors import SymbolizeError
from symbolize.formats.types import DebugHint, DebugId, HintKind, ObjectFile

# The Mach-O reader (and macholib) is imported where a Mach-O file is looked for or checked: an
# ELF or PE lookup never needs it.

# How far the UUID walk goes: dSYMs sit near the top of a build or symbols directory.
MAX_WALK_DEPTH = 6
MAX_WALK_ENTRIES = 20000

# Per run (per loader, whose directory listings live as long as it): search path -> the DWARF
# files of the dSYMs under it and their UUIDs.
_WALKS: weakref.WeakKeyDictionary[DirectoryListings, dict[Path, list[tuple[Path, frozenset[DebugId]]]]] = (
    weakref.WeakKeyDictionary()
)


def dsym_dwarf_path(directory: Path, name: str) -> Path:
    """Where a dSYM bundle keeps the DWARF of the binary called ``name``."""
    return directory / f"{name}.dSYM" / "Contents" / "Resources" / "DWARF" / name


def _dsym_dwarf_files(root: Path) -> Iterator[Path]:
    """The files in ``*.dSYM/Contents/Resources/DWARF/`` under ``root``, bounded in depth and entries."""
    seen = 0
    pending = [(root, 0)]
    while pending:
        directory, depth = pending.pop()
        try:
            with os.scandir(directory) as entries:
                listed = sorted(entries, key=lambda entry: entry.name)
        except OSError:
            continue
        for entry in listed:
            seen += 1
            if seen > MAX_WALK_ENTRIES:
                return
            if not entry.is_dir(follow_symlinks=False):
                continue
            path = Path(entry.path)
            if entry.name.endswith(".dSYM"):
                dwarf_dir = path / "Contents" / "Resources" / "DWARF"
                try:
                    yield from sorted(child for child in dwarf_dir.iterdir() if child.is_file())
                except OSError:
                    continue
            elif depth + 1 < MAX_WALK_DEPTH:
                pending.append((path, depth + 1))


def dsyms_under(root: Path, listings: DirectoryListings) -> list[tuple[Path, frozenset[DebugId]]]:
    """(DWARF file, its slices' UUIDs) of every dSYM under ``root``; walked once per run (per
    ``listings``, the loader's)."""
    walks = _WALKS.setdefault(listings, {})
    key = root.resolve()
    found = walks.get(key)
    if found is None:
        from symbolize.formats.macho.load_commands import read_uuids  # the Mach-O reader only when a dSYM is looked for

        found = []
        for path in _dsym_dwarf_files(root):
            try:
                found.append((path, frozenset(read_uuids(path).values())))
            except SymbolizeError:
                continue  # not Mach-O, or broken: a name match would report it, a walk skips it
        walks[key] = found
    return found


class DsymLocator(LocatorDefaults):
    """A Mach-O image's dSYM: by name beside it and in the search paths, then by UUID under them."""

    def candidates(self, hint: DebugHint, context: LookupContext) -> Iterator[Candidate]:
        name = hint.name
        if is_file_name(name):
            directory = normalized_dir(context.image_path)
            yield Candidate(dsym_dwarf_path(directory, name), directory)
            for search_path in context.options.search_paths:
                yield Candidate(dsym_dwarf_path(search_path, name), search_path)
        if hint.debug_id is None:
            return
        for search_path in context.options.search_paths:
            for path, uuids in dsyms_under(search_path, context.loader.listings):
                if hint.debug_id in uuids:
                    yield Candidate(path, search_path)
        yield from _stored_dwarf(hint.debug_id, context)

    def refusal(self, hint: DebugHint, found: ObjectFile, context: LookupContext) -> str | None:
        from symbolize.formats.macho.file import MachOFile

        if not isinstance(found, MachOFile):
            return "not a Mach-O file"
        if not found.has_dwarf():
            return "holds no DWARF"
        return debug_id_refusal(hint.debug_id, found.debug_id, "the binary's")


def _stored_dwarf(uuid: DebugId, context: LookupContext) -> Iterator[Candidate]:
    """SSQP's ``_.dwarf/mach-uuid-sym-<UUID>/_.dwarf`` under the search paths and the symbol path's
    local stores, then from the download caches or the run's symbol servers."""
    from symbolize.remote.symsrv import fetch_from_symbol_servers  # the transfer's, once a dSYM is looked for
    from symbolize.remote.symsrv_layout import configured_symbol_path, local_store_candidates, macho_dwarf_key
    from symbolize.remote.verifiers import uuid_verifier

    key = macho_dwarf_key(uuid)
    if key is None:
        return
    stores = [*context.options.search_paths, *configured_symbol_path(context.options.remote).directories()]
    yield from local_store_candidates(stores, key, context.loader, stores)
    remote = context.loader.remote
    if remote is None or not context.ask_servers:
        return
    what = f"{context.image_path.name} dSYM ({key.index})"
    found = fetch_from_symbol_servers(remote, str(context.image_path), key, what, uuid_verifier(uuid))
    if found is not None:
        yield Candidate(found, found.parents[2])


class DebugMapObjectLocator(LocatorDefaults):
    """An object file named by an N_OSO stab, checked by the mtime the stab records."""

    def candidates(self, hint: DebugHint, context: LookupContext) -> Iterator[Candidate]:
        recorded, member = hint.name, None
        if "\0" in recorded:
            return
        in_archive = split_member_path(recorded)
        if in_archive is not None:
            recorded, member = in_archive
        relative = relative_path(recorded)
        roots = [normalized_dir(context.image_path), *context.options.search_paths]
        if relative is not None:
            for root in roots:
                yield Candidate(root / relative, root, member)
        elif recorded.startswith("/") and hint.mtime is not None:
            yield Candidate(Path(recorded), None, member)
        name = base_name(recorded)
        if is_file_name(name):
            for root in roots:
                yield Candidate(root / name, root, member)

    def stat_refusal(self, hint: DebugHint, candidate: Candidate, status: os.stat_result) -> str | None:
        """An object file (not an archive, whose members carry their own mtimes) whose mtime is
        not the recorded one: refused before it is opened, so a stale object is never read."""
        if hint.mtime is None or candidate.member is not None:
            return None
        return _mtime_refusal(int(status.st_mtime), hint.mtime)

    def refusal(self, hint: DebugHint, found: ObjectFile, context: LookupContext) -> str | None:
        from symbolize.formats.macho.file import MachOFile
        from symbolize.formats.macho.load_commands import MH_OBJECT

        if not isinstance(found, MachOFile) or found.filetype != MH_OBJECT:
            return "not a Mach-O object file"
        if hint.mtime is None or found.member is None:
            return None  # a whole object's mtime was compared before it was opened (stat_refusal)
        return _mtime_refusal(found.member.mtime, hint.mtime)


def _mtime_refusal(actual: int, recorded: int) -> str | None:
    if actual != recorded:
        return f"modified since the link: mtime {actual} is not the {recorded} the debug map records"
    return None


register_locator(HintKind.DSYM, DsymLocator())
register_locator(HintKind.DEBUG_MAP_OBJECT, DebugMapObjectLocator())
