"""``MachOFile``: one slice of a Mach-O file as an image and a symbol source.

What it ties together, each concern in its own module (Apple's "OS X ABI Mach-O File Format
Reference"): the fat header and slice choice (``slices.py``, ``<mach-o/fat.h>``), the header and
load commands (``load_commands.py``, ``<mach-o/loader.h>``), the symbol table, its stabs and
``LC_FUNCTION_STARTS`` (``symtab.py``, ``<mach-o/nlist.h>``, ``<mach-o/stab.h>``). Here: the
file's lifetime (a read-only mmap, every read checked against the slice), section bytes for the
DWARF reader (DWARF of a dSYM, an object file, or a binary that keeps it lives in
``__DWARF,__debug_*`` sections and is read by the DWARF reader that ELF uses, through
:meth:`MachOFile.section_data`), and the slice as a symbol source: its own DWARF and symbols, or
the objects its debug map names (``debugmap.py``).
"""

from __future__ import annotations

import contextlib
import mmap
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from symbolize.formats.errors import MalformedInputError
from symbolize.formats.macho.load_commands import (
    MH_BUNDLE,
    MH_DYLIB,
    MH_EXECUTE,
    MH_PIE,
    BuildVersion,
    Section,
    parse_load_commands,
)
from symbolize.formats.macho.slices import choose_slice, list_slices, member_slice, open_stream
from symbolize.formats.macho.symtab import (
    N_OSO,
    Nlist,
    Stab,
    defined_symbols,
    function_starts,
    function_symbols,
    nlist_layout,
    read_nlists,
    stabs,
)
from symbolize.formats.paired import paired_answers
from symbolize.formats.region_answers import AnsweredByRegions
from symbolize.formats.symbols import RankedSymbol, SymbolAnswers, SymbolIndex
from symbolize.formats.types import (
    DebugHint,
    DebugId,
    DebugInfoSummary,
    DebugLink,
    HintKind,
    ReaderDefaults,
    SectionSource,
    Segment,
    Symbol,
)

if TYPE_CHECKING:
    from symbolize.formats.archive import ArchiveMember
    from symbolize.formats.dwarf import DwarfInfo
    from symbolize.formats.macho.debugmap import DebugMapSource

_SECTION_NAME_SIZE = 16


class MachOFile(AnsweredByRegions, ReaderDefaults):
    """One slice of a Mach-O file: an executable, dylib, bundle, object file or dSYM DWARF file.

    ``arch`` picks the slice of a universal file (see :func:`choose_slice`). Frames lists are
    innermost first. Call :meth:`close` (or use ``with``) to release the file.
    """

    format = "macho"

    def __init__(self, path: Path, arch: str | None = None, member: str | None = None) -> None:
        """Open the ``arch`` slice of ``path``; the objects a debug map names are supplied
        (:meth:`needs`, :meth:`supply`) by whoever opened it.

        ``member``: ``path`` is a static archive, and the object is its member of that name.
        """
        self.path = path
        self.member: ArchiveMember | None = None
        # The object (or why there is none) supplied for each debug map hint, by its name.
        self._map_objects: dict[str, MachOFile | str] = {}
        self._debug_map: DebugMapSource | None = None
        self._debug_map_built = False
        self._file: BinaryIO | None = None
        self._map: mmap.mmap | None = None
        self._dwarf: DwarfInfo | None = None
        self._dwarf_error: MalformedInputError | None = None
        self._dwarf_built = False
        self._symbols: list[Symbol] | None = None
        self._symbol_index: SymbolIndex | None = None
        self._answer_source: SymbolAnswers | DebugMapSource | None = None
        self._nlists: list[Nlist] | None = None
        self._summary: DebugInfoSummary | None = None
        if member is not None:
            from symbolize.formats.archive import find_member

            self.member = find_member(path, member)
            self.slices = [member_slice(path, self.member)]
        else:
            self.slices = list_slices(path)
        self.slice = choose_slice(path, self.slices, arch)
        self.arch = self.slice.arch
        self.universal = len(self.slices) > 1 or (self.slice.file_offset > 0 and member is None)
        try:
            self._file, file_size = open_stream(path)
            self._map = mmap.mmap(self._file.fileno(), 0, access=mmap.ACCESS_READ) if file_size else None
            self._parse_load_commands()
        except BaseException:
            self.close()
            raise

    def __enter__(self) -> MachOFile:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        self._dwarf = None
        self._debug_map = None
        if self._answer_source is not None:
            self._answer_source.close()
        self._answer_source = None
        if self._map is not None:
            # A view may still be held (by an error's traceback): the mmap is freed with it.
            with contextlib.suppress(BufferError):
                self._map.close()
            self._map = None
        if self._file is not None:
            self._file.close()
            self._file = None

    def __repr__(self) -> str:
        member = f", member={self.member.name!r}" if self.member is not None else ""
        return f"MachOFile({str(self.path)!r}, arch={self.arch!r}{member})"

    def _fail(self, message: str, offset: int | None = None) -> MalformedInputError:
        return MalformedInputError(message, self.path, offset)

    # --- load commands ---------------------------------------------------------

    def _parse_load_commands(self) -> None:
        assert self._file is not None
        loaded = parse_load_commands(self.path, self._file, self.slice)
        self.filetype = loaded.filetype
        self.flags = loaded.flags
        self.little_endian = loaded.little_endian
        self.address_size = loaded.address_size
        self.position_dependent = self.filetype == MH_EXECUTE and not self.flags & MH_PIE
        self.fixed_load_address = self.position_dependent
        self._segments: list[Segment] = loaded.segments
        self._sections: list[Section] = loaded.sections
        self._section_bytes: dict[tuple[str, str], bytes] = loaded.section_bytes
        self.debug_id: DebugId | None = loaded.uuid
        self.build_version: BuildVersion | None = loaded.build_version
        self._symtab = loaded.symtab
        self._function_starts_at = loaded.function_starts
        text = next((segment for segment in self._segments if segment.name == "__TEXT"), None)
        self.load_base = text.vaddr if text is not None else 0
        self._code_sections = sorted(
            (section for section in self._sections if section.has_instructions), key=lambda s: s.vaddr
        )

    # --- image -----------------------------------------------------------------

    def segments(self) -> Sequence[Segment]:
        return tuple(self._segments)

    def sections(self) -> Sequence[Section]:
        return tuple(self._sections)

    def section(self, segment: str, name: str) -> Section | None:
        return next((s for s in self._sections if s.segment == segment and s.name == name), None)

    @property
    def has_unwind_info(self) -> bool:
        return self.section("__TEXT", "__unwind_info") is not None

    @property
    def has_eh_frame(self) -> bool:
        return self.section("__TEXT", "__eh_frame") is not None

    def debug_link(self) -> DebugLink | None:
        return None

    def debug_hints(self) -> Sequence[DebugHint]:
        """The dSYM (by this file's name and UUID), then one hint per N_OSO object of the debug map.

        An N_OSO stab's value is the object's mtime, 0 when the linker recorded none
        (``ZERO_AR_DATE``); archive members are named ``lib.a(member.o)``.
        """
        hints = []
        if self.filetype in (MH_EXECUTE, MH_DYLIB, MH_BUNDLE):
            hints.append(DebugHint(HintKind.DSYM, self.path.name, self.debug_id))
        for stab in self.stabs():
            if stab.n_type == N_OSO and stab.name:
                hints.append(DebugHint(HintKind.DEBUG_MAP_OBJECT, stab.name, mtime=stab.value or None))
        return hints

    # --- raw bytes ---------------------------------------------------------------

    def _read(self, offset: int, size: int, what: str) -> memoryview:
        """``size`` bytes at ``offset`` from the start of the slice, checked against the slice."""
        if offset < 0 or size < 0 or offset + size > self.slice.size or self._map is None:
            raise self._fail(f"{what} ({size} bytes) extends past end of file", self.slice.file_offset + offset)
        start = self.slice.file_offset + offset
        return memoryview(self._map)[start : start + size]

    def section_data(self, dwarf_name: str) -> bytes | None:
        """Bytes of ``__DWARF,__<dwarf_name>`` (the name cut at 16 bytes, as Mach-O stores it); None if absent.

        ``dwarf_name`` has no leading dot: ``"debug_info"``, ``"debug_str_offsets"``.
        """
        return self._section_bytes.get(("__DWARF", ("__" + dwarf_name)[:_SECTION_NAME_SIZE]))

    # --- symbols -------------------------------------------------------------------

    def _all_nlists(self) -> list[Nlist]:
        if self._nlists is None:
            if self._symtab is None:
                self._nlists = []
            else:
                symoff, nsyms, stroff, strsize = self._symtab
                entry_size = nlist_layout(self.little_endian, self.address_size).size
                table = self._read(symoff, nsyms * entry_size, "symbol table")
                strings = bytes(self._read(stroff, strsize, "string table"))
                where = self.slice.file_offset + symoff
                self._nlists = read_nlists(table, strings, self.little_endian, self.address_size, where)
        return self._nlists

    def nlists(self) -> list[Nlist]:
        """Every entry of the symbol table, in table order."""
        return self._all_nlists()

    def stabs(self) -> list[Stab]:
        """The debugging entries of the symbol table, in table order (a debug map, when the linker kept one)."""
        return stabs(self._all_nlists())

    def defined_symbols(self) -> list[Symbol]:
        """Every defined, non-debugging symbol (functions and data, any section), size 0, by address."""
        return defined_symbols(self._all_nlists())

    def function_starts(self) -> list[int]:
        """Vaddrs listed by LC_FUNCTION_STARTS (ULEB128 deltas from the ``__TEXT`` vmaddr), sorted."""
        if self._function_starts_at is None:
            return []
        dataoff, datasize = self._function_starts_at
        data = self._read(dataoff, datasize, "function starts")
        return function_starts(data, self.load_base, self.path, self.slice.file_offset + dataoff)

    def symbols(self) -> Sequence[Symbol]:
        """Function symbols (defined in a section holding instructions), by address, leading ``_`` dropped.

        A symbol's size reaches the next LC_FUNCTION_STARTS entry (or its section's end);
        without that table it is 0, and the symbol reaches the next symbol.
        """
        if self._symbols is None:
            self._symbols = function_symbols(self._all_nlists(), self._sections, self.function_starts())
        return self._symbols

    def symbol_index(self) -> SymbolIndex:
        """The function symbols as an address index (formats/symbols.py): one per address, the
        largest, then the last by name; a size-0 one reaching the next symbol, or its section's end."""
        if self._symbol_index is None:
            self._symbol_index = SymbolIndex(
                RankedSymbol(symbol, self._section_end(symbol.vaddr), (0, position))
                for position, symbol in enumerate(self.symbols())
            )
        return self._symbol_index

    def _section_end(self, vaddr: int) -> int:
        for section in self._code_sections:
            if section.vaddr <= vaddr < section.vaddr + section.size:
                return section.vaddr + section.size
        return vaddr + 1

    @property
    def slice_offset(self) -> int:
        return self.slice.file_offset

    def slice_arches(self) -> Sequence[str]:
        return tuple(item.arch for item in self.slices) if len(self.slices) > 1 else ()

    def symbol_at(self, vaddr: int) -> Symbol | None:
        return self.symbol_index().symbol_at(vaddr)

    # --- debug info ------------------------------------------------------------------

    def has_dwarf(self) -> bool:
        return bool(self.section_data("debug_info"))

    def dwarf_info(self) -> DwarfInfo | None:
        """The DWARF reader over this file's ``__DWARF`` sections; None when it has none."""
        if self._dwarf_error is not None:
            raise self._dwarf_error
        if not self._dwarf_built:
            self._dwarf_built = True
            if self.has_dwarf():
                from symbolize.formats.dwarf import DwarfInfo

                try:
                    self._dwarf = DwarfInfo(
                        self.section_data,
                        self.path,
                        address_size=self.address_size,
                        little_endian=self.little_endian,
                    )
                except MalformedInputError as err:
                    self._dwarf_error = err
                    raise
        return self._dwarf

    def needs(self) -> list[DebugHint]:
        """The objects its debug map names, for a file without DWARF of its own (a dSYM's DWARF,
        or an object file's, wins): its answers come from theirs."""
        if self.has_dwarf():
            return []
        return [hint for hint in self.debug_hints() if hint.kind is HintKind.DEBUG_MAP_OBJECT]

    def supply(self, hint: DebugHint, found: SectionSource | None) -> None:
        """The object a debug map hint names (:meth:`needs`), found and verified; None when not."""
        if hint.kind is HintKind.DEBUG_MAP_OBJECT:
            self._map_objects[hint.name] = found if isinstance(found, MachOFile) else "object file not found"

    def debug_map(self) -> DebugMapSource | None:
        """The objects of this binary's debug map, as supplied; None without a debug map, or
        before its objects were supplied (a file read alone answers from its symbols).

        Only for a file without DWARF of its own (a dSYM's DWARF, or an object file's, wins).
        """
        if not self._debug_map_built:
            hints = self.needs()
            if hints and all(hint.name in self._map_objects for hint in hints):
                from symbolize.formats.macho.debugmap import DebugMapSource

                self._debug_map_built = True
                self._debug_map = DebugMapSource(self, {hint.name: self._map_objects[hint.name] for hint in hints})
            elif not hints:
                self._debug_map_built = True
        return self._debug_map

    def _answers(self) -> SymbolAnswers | DebugMapSource:
        """This slice as a symbol source: its debug map's objects, else its own DWARF (a dSYM's,
        an object file's) and symbols."""
        if self._answer_source is None:
            debug_map = self.debug_map()
            if debug_map is not None:
                self._answer_source = debug_map
            else:
                self._answer_source = paired_answers(self.path, self.symbol_index(), self.dwarf_info)
        return self._answer_source

    def answer_inputs(self) -> str:
        """What this slice's answers depend on besides the file itself (part of its index key):
        the objects its debug map found, each with its size and mtime, or why it was not used."""
        debug_map = self.debug_map()
        return debug_map.inputs() if debug_map is not None else ""

    def debug_info(self) -> DebugInfoSummary:
        if self._summary is None:
            debug_map = self.debug_map()
            if debug_map is not None:
                self._summary = debug_map.debug_info()
                return self._summary
            dwarf = self.dwarf_info()
            self._summary = DebugInfoSummary(
                has_symbols=bool(self.symbols()),
                has_dwarf=self.has_dwarf(),
                has_line_info=bool(self.section_data("debug_line")),
                has_inline_info=False,
                dwarf_versions=dwarf.versions() if dwarf is not None else (),
            )
        return self._summary
