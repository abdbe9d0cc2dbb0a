"""The ELF locators: build ID, GNU debuglink, dwz supplementary file, split DWARF.

Search order as GDB's ("Separate Debug Files" and "dwz" in the GDB manual;
"Debug Fission" for split DWARF) and llvm-symbolizer's:

- BUILD_ID: ``<debug dir>/.build-id/xx/rest.debug``; the file's build ID must be the hint's.
  Then, when the run asks debuginfod (``--debuginfod``, ``--remote``, ``--offline``: the loader
  holds a :class:`~symbolize.remote.run.RemoteRun`), ``/buildid/<hex>/debuginfo`` from its
  caches or servers (symbolize/remote/debuginfod.py), after every local candidate: a local file
  that verifies never costs a request; then, when it names symbol stores (``--symbol-server``),
  SSQP's ``_.debug/elf-buildid-sym-<build ID>/_.debug`` (symbolize/remote/symsrv_layout.py).
- DEBUGLINK: the ``.gnu_debuglink`` name next to the binary, in its ``.debug/``,
  under ``<debug dir>/<binary's directory>/`` and in each search path; the
  file's CRC32 must be the link's, and its build ID the binary's when both have one.
- SUPPLEMENTARY (``.gnu_debugaltlink``): the recorded path (absolute, or
  relative to the file that records it), then the base name beside that file,
  beside the binary and in the search paths, then ``.build-id/xx/rest.debug``
  under each debug dir, then debuginfod's ``/buildid/<hex>/debuginfo`` of that build ID (as
  elfutils' libdw asks for it); the file's build ID must be the recorded one. A recorded
  path that leaves its directory is followed only when there is a build ID to check.
- SPLIT_DWARF: ``<file>.dwp`` beside the file asking and beside the binary,
  the recorded ``DW_AT_dwo_name`` (absolute, or under ``DW_AT_comp_dir``),
  then that name under the directories of the file and of the binary, and
  the base name there and in the search paths; the file must hold the unit's
  DWO ID (a ``.dwp`` in its index).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from symbolize.discovery.paths import base_name, build_id_path, is_file_name, normalized_dir, relative_path
from symbolize.discovery.registry import (
    Candidate,
    LocatorDefaults,
    LookupContext,
    debug_id_refusal,
    register_locator,
)
from symbolize.formats.elf import ElfFile
from symbolize.formats.types import DebugHint, DebugIdKind, HintKind, ObjectFile


def _build_id_candidates(hint: DebugHint, context: LookupContext) -> Iterator[Candidate]:
    relative = build_id_path(hint.debug_id)
    if relative is None:
        return
    for directory in context.options.debug_dirs:
        yield Candidate(directory / relative, directory)


def _debuginfod_candidates(hint: DebugHint, context: LookupContext, name: str) -> Iterator[Candidate]:
    """The debuginfo of ``hint``'s build ID from the run's caches and servers (``name`` says whose)."""
    remote = context.loader.remote
    if remote is None or not context.ask_servers:
        return
    from symbolize.remote.debuginfod import fetch_artifact  # the network's modules, only when asked

    found = fetch_artifact(remote, hint.debug_id, "debuginfo", name=name, owner=str(context.image_path))
    if found is not None:
        yield Candidate(*found)


def _symbol_store_candidates(hint: DebugHint, context: LookupContext) -> Iterator[Candidate]:
    """SSQP's ``_.debug/elf-buildid-sym-<build ID>/_.debug`` from the run's symbol stores."""
    remote = context.loader.remote
    if remote is None or not context.ask_servers or not remote.options.symbol_servers:
        return
    from symbolize.remote.symsrv import fetch_elf_debug_file  # the network's modules, only when asked

    found = fetch_elf_debug_file(remote, str(context.image_path), hint.debug_id, context.loader)
    if found is not None:
        yield Candidate(found, found.parents[2])


class BuildIdLocator(LocatorDefaults):
    """``<debug dir>/.build-id/xx/rest.debug`` by the image's GNU build ID, then debuginfod's, then
    the symbol stores' (SSQP's ``elf-buildid-sym`` key)."""

    def candidates(self, hint: DebugHint, context: LookupContext) -> Iterator[Candidate]:
        # A generator: the servers are asked only once every local candidate was refused or absent.
        yield from _build_id_candidates(hint, context)
        yield from _debuginfod_candidates(hint, context, context.image_path.name)
        yield from _symbol_store_candidates(hint, context)

    def refusal(self, hint: DebugHint, found: ObjectFile, context: LookupContext) -> str | None:
        return debug_id_refusal(hint.debug_id, found.debug_id, "the binary's")


class DebugLinkLocator(LocatorDefaults):
    """The ``.gnu_debuglink`` file name in the places GDB looks, checked by CRC32."""

    def candidates(self, hint: DebugHint, context: LookupContext) -> Iterator[Candidate]:
        name = hint.name
        if not is_file_name(name):
            return
        directory = normalized_dir(context.image_path)
        yield Candidate(directory / name, directory)
        yield Candidate(directory / ".debug" / name, directory / ".debug")
        below_root = Path(*directory.parts[1:]) if len(directory.parts) > 1 else Path()
        for debug_dir in context.options.debug_dirs:
            yield Candidate(debug_dir / below_root / name, debug_dir)
        for search_path in context.options.search_paths:
            yield Candidate(search_path / name, search_path)

    def refusal(self, hint: DebugHint, found: ObjectFile, context: LookupContext) -> str | None:
        mismatch = debug_id_refusal(context.image_debug_id, found.debug_id, "the binary's")
        if mismatch is not None:
            return mismatch
        if hint.crc32 is not None:
            try:
                actual = context.loader.file_crc32(found.path)
            except OSError as err:
                return f"cannot read: {err.strerror or err}"
            if actual != hint.crc32:
                return f"CRC32 {actual:08x} does not match .gnu_debuglink's {hint.crc32:08x}"
        return None


class SupplementaryLocator(LocatorDefaults):
    """The dwz common file ``.gnu_debugaltlink`` names, checked by its build ID."""

    def candidates(self, hint: DebugHint, context: LookupContext) -> Iterator[Candidate]:
        verifiable = hint.debug_id is not None
        asking_dir = normalized_dir(context.asking_path)
        recorded = hint.name
        if recorded.startswith("/") and verifiable:
            yield Candidate(Path(recorded), None)
        elif (relative := relative_path(recorded)) is not None:
            yield Candidate(asking_dir / relative, asking_dir)
        elif verifiable and "\0" not in recorded and not recorded.startswith("/"):
            yield Candidate(Path(os.path.normpath(asking_dir / recorded)), None)
        yield from _by_base_name(recorded, context)
        yield from _build_id_candidates(hint, context)
        yield from _debuginfod_candidates(hint, context, f"{context.asking_path.name}'s dwz file")

    def refusal(self, hint: DebugHint, found: ObjectFile, context: LookupContext) -> str | None:
        mismatch = debug_id_refusal(hint.debug_id, found.debug_id, ".gnu_debugaltlink's")
        if mismatch is not None:
            return mismatch
        # Every unit of the file referring into it would break with it: refused, it leaves them named.
        return damage_refusal(found)


class SplitDwarfLocator(LocatorDefaults):
    """A skeleton unit's ``.dwo``, or the ``.dwp`` package holding it, checked by DWO ID."""

    def candidates(self, hint: DebugHint, context: LookupContext) -> Iterator[Candidate]:
        verifiable = hint.debug_id is not None
        for owner in (context.asking_path, context.image_path):
            directory = normalized_dir(owner)
            yield Candidate(directory / f"{Path(owner).name}.dwp", directory)
        dwo_name, comp_dir = hint.name, hint.directory
        relative = relative_path(dwo_name)
        if verifiable and dwo_name.startswith("/") and "\0" not in dwo_name:
            yield Candidate(Path(dwo_name), None)
        elif verifiable and relative is not None and comp_dir.startswith("/") and "\0" not in comp_dir:
            yield Candidate(Path(comp_dir) / relative, None)
        if relative is not None:
            for owner in (context.asking_path, context.image_path):
                directory = normalized_dir(owner)
                yield Candidate(directory / relative, directory)
        yield from _by_base_name(dwo_name, context)

    def refusal(self, hint: DebugHint, found: ObjectFile, context: LookupContext) -> str | None:
        if hint.debug_id is None or hint.debug_id.kind is not DebugIdKind.DWO_ID:
            return None
        if not isinstance(found, ElfFile):
            return "not an ELF file"
        dwo_id = int.from_bytes(hint.debug_id.value, "big")
        from symbolize.formats.dwarf.split import holds_split_unit  # the DWARF decoder, only here

        if holds_split_unit(found.section_data, found.path, dwo_id, found.little_endian):
            return None
        return f"holds no split unit with DWO ID {dwo_id:#018x}"


def damage_refusal(found: ObjectFile) -> str | None:
    """Why ``found``'s DWARF cannot be read at all (a section past the decompression cap), or None."""
    damaged = found.debug_info().damaged
    if not damaged:
        return None
    prefix = f"{found.path}: "
    return "its debug info cannot be read: " + (damaged[len(prefix) :] if damaged.startswith(prefix) else damaged)


def _by_base_name(recorded: str, context: LookupContext) -> Iterator[Candidate]:
    name = base_name(recorded)
    if not is_file_name(name):
        return
    for owner in (context.asking_path, context.image_path):
        directory = normalized_dir(owner)
        yield Candidate(directory / name, directory)
    for search_path in context.options.search_paths:
        yield Candidate(search_path / name, search_path)


register_locator(HintKind.BUILD_ID, BuildIdLocator())
register_locator(HintKind.DEBUGLINK, DebugLinkLocator())
register_locator(HintKind.SUPPLEMENTARY, SupplementaryLocator())
register_locator(HintKind.SPLIT_DWARF, SplitDwarfLocator())
