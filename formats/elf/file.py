"""``ElfFile``: an ELF image and symbol source over a read-only mmap.

What it ties together, each concern in its own module: the tables
(``headers.py``), identity and links (``notes.py``), function symbols and
MiniDebugInfo (``symtab.py``), hints (``hints.py``).
Here: the file's lifetime (mmap, plain reads of large sections), section
bytes for the DWARF reader (SHF_COMPRESSED and ``.zdebug`` decompressed on
first request, see formats/sections.py), and the file as a
symbol source (its answers decided by formats/dwarf/answers.py and formats/symbols.py).
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from symbolize.formats.elf.headers import PF_X, PT_LOAD, SHF_COMPRESSED, SHT_NOBITS, ElfHeaders
from symbolize.formats.elf.hints import debug_hints, debuglink_hint, readable_hint, supplementary_hint
from symbolize.formats.elf.notes import find_build_id, read_debug_link, read_supplementary_link
from symbolize.formats.errors import MalformedInputError, NotFoundError, SymbolizeError
from symbolize.formats.region_answers import AnsweredByRegions
from symbolize.formats.types import (
    DebugHint,
    DebugInfoSummary,
    DebugLink,
    HintKind,
    Image,
    ReaderDefaults,
    SectionSource,
    Segment,
    Symbol,
)

if TYPE_CHECKING:
    from symbolize.formats.dwarf import DwarfInfo
    from symbolize.formats.elf.symtab import FunctionSymbol
    from symbolize.formats.symbols import SymbolAnswers, SymbolIndex, SymbolRow

# The modules that read a file's symbols, decompress its sections and pair its DWARF with its
# symbols are imported where they are used: a warm lookup opens the file for its identity and
# hints and answers from the index, which needs none of them (they were ~7 % of its instructions).

# The smallest page of every ELF target: segments are mapped from page boundaries of at least this.
_PAGE_SIZE = 0x1000
ET_EXEC = 2


class ElfFile(AnsweredByRegions, ReaderDefaults):
    """An ELF executable, shared object, separate debug file, ``.dwo`` or ``.dwp``.

    Frames lists are innermost first. ``section_data`` is the DWARF reader's
    section getter. Call :meth:`close` (or use ``with``) to release the mmap.
    """

    format = "elf"

    def __init__(self, path: Path, data: bytes | None = None) -> None:
        """Open ``path`` (mmap, read only), or parse ``data`` in memory and name it ``path``.

        The files the DWARF refers to (the dwz common file: :meth:`needs`; a split unit's
        ``.dwo``/``.dwp``: its region's ``needs``) are supplied by whoever opened it
        (:meth:`supply`); until then split units and supplementary references stay unresolved.
        """
        self.path = path
        # The dwz common file supplied for .gnu_debugaltlink (needs()), read when the DWARF loads.
        self._supplementary: SectionSource | None = None
        self._file: BinaryIO | None = None
        self._map: mmap.mmap | None = None
        self._buf = memoryview(data if data is not None else self._map_file())
        self._decoded: dict[str, bytes | memoryview | None] = {}
        self._entries: list[SymbolRow] | None = None
        self._symbols: list[FunctionSymbol] | None = None
        # Why the MiniDebugInfo symbols are missing, when its .gnu_debugdata cannot be read.
        self._symbols_error: MalformedInputError | None = None
        self._index: SymbolIndex | None = None
        # The binary this file is the separate debug file of (bind_image): its symbols name frames.
        self._image: ElfFile | None = None
        self._answer_source: SymbolAnswers | None = None
        self._dwarf: DwarfInfo | None = None
        self._dwarf_error: MalformedInputError | None = None
        self._dwarf_built = False
        self._summary: DebugInfoSummary | None = None
        self._segments: tuple[Segment, ...] | None = None
        try:
            self._headers = headers = ElfHeaders(self._buf, path)
            self.little_endian = headers.little_endian
            self.address_size = headers.address_size
            self.e_type = headers.e_type
            self.e_machine = headers.e_machine
            self.arch = headers.arch
            # ET_EXEC is loaded at its vaddrs; ET_DYN (PIE, shared objects) anywhere (gABI "Base Address").
            self.position_dependent = headers.e_type == ET_EXEC
            loads = [header for header in headers.program_headers if header.p_type == PT_LOAD]
            # The address the lowest page of the first PT_LOAD stands for: where a whole-module mapping starts.
            self.load_base = min((header.p_vaddr for header in loads), default=0) // _PAGE_SIZE * _PAGE_SIZE
            self.debug_id = find_build_id(headers)
        except BaseException:
            self.close()
            raise

    def _map_file(self) -> mmap.mmap | bytes:
        try:
            self._file = self.path.open("rb")
            size = os.fstat(self._file.fileno()).st_size
        except FileNotFoundError as err:
            raise NotFoundError("file not found", self.path) from err
        except OSError as err:
            raise SymbolizeError(f"cannot read file: {err.strerror or err}", self.path) from err
        if size == 0:
            return b""  # mmap refuses empty files; the header check reports it
        try:
            self._map = mmap.mmap(self._file.fileno(), 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError) as err:
            self._file.close()
            raise SymbolizeError(f"cannot map file: {err}", self.path) from err
        return self._map

    def __enter__(self) -> ElfFile:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        self._decoded.clear()
        self._dwarf = None
        if self._answer_source is not None:
            self._answer_source.close()
        self._answer_source = None
        if self._map is not None:
            try:
                self._buf.release()
                self._map.close()
            except BufferError:
                pass  # a caller still holds a section view; the mmap is freed with it
            self._map = None
        if self._file is not None:
            self._file.close()
            self._file = None

    def __repr__(self) -> str:
        return f"ElfFile({str(self.path)!r})"

    # --- image ---------------------------------------------------------------

    def segments(self) -> Sequence[Segment]:
        # Asked once per mapping when a profile is normalized: computed once, immutable.
        if self._segments is None:
            self._segments = tuple(
                sorted(
                    (
                        Segment(
                            header.p_vaddr,
                            header.p_memsz,
                            header.p_offset,
                            header.p_filesz,
                            bool(header.p_flags & PF_X),
                        )
                        for header in self._headers.program_headers
                        if header.p_type == PT_LOAD
                    ),
                    key=lambda segment: segment.vaddr,
                )
            )
        return self._segments

    def debug_link(self) -> DebugLink | None:
        return read_debug_link(self._headers)

    def supplementary_link(self) -> tuple[str, bytes] | None:
        """``.gnu_debugaltlink``: the dwz common file (path, build ID) this file's DWARF refers into."""
        return read_supplementary_link(self._headers)

    def debug_hints(self) -> list[DebugHint]:
        """Where this file says its debug info lives: build ID, ``.gnu_debuglink``, ``.gnu_debugaltlink``.

        Split-DWARF ``.dwo`` files are not listed: their names live in the DWARF
        units and are asked for (``HintKind.SPLIT_DWARF``) when a unit is decoded.

        A malformed link section gives a hint that says so (``DebugHint.damaged``): discovery
        refuses it, and the file's own symbols and DWARF still answer.
        """
        link = readable_hint(HintKind.DEBUGLINK, lambda: debuglink_hint(self.debug_link()))
        return debug_hints(self.debug_id, link, self._supplementary_hint())

    def _supplementary_hint(self) -> DebugHint | None:
        return readable_hint(HintKind.SUPPLEMENTARY, lambda: supplementary_hint(self.supplementary_link()))

    # --- sections for the DWARF reader ---------------------------------------

    def section_data(self, dwarf_name: str) -> bytes | memoryview | None:
        """Decompressed bytes of ``.<dwarf_name>`` or ``.z<dwarf_name>``; None when absent.

        ``dwarf_name`` has no leading dot: ``"debug_info"``, ``"debug_info.dwo"``,
        ``"debug_cu_index"``. SHT_NOBITS sections (left in stripped debug files)
        count as absent.
        """
        if dwarf_name in self._decoded:
            return self._decoded[dwarf_name]
        from symbolize.formats.sections import decompress_chdr, decompress_zdebug

        headers = self._headers
        data: bytes | memoryview | None = None
        section = headers.by_name.get("." + dwarf_name)
        raw = headers.raw(section) if section is not None else None
        if section is not None and raw is not None:
            data = self._read_bytes(section.sh_offset, len(raw)) if self._file is not None else raw
            if section.sh_flags & SHF_COMPRESSED:
                data = decompress_chdr(
                    raw,
                    is_64=headers.layout.is_64,
                    little_endian=self.little_endian,
                    path=self.path,
                    file_offset=section.sh_offset,
                    file_size=len(self._buf),
                )
        else:
            legacy = headers.by_name.get(".z" + dwarf_name)
            raw = headers.raw(legacy) if legacy is not None else None
            if legacy is not None and raw is not None:
                data = decompress_zdebug(
                    raw, path=self.path, file_offset=legacy.sh_offset, file_size=len(self._buf)
                )
        self._decoded[dwarf_name] = data
        return data

    def section_view(self, dwarf_name: str) -> bytes | memoryview | None:
        """``section_data`` without a copy where the section is stored uncompressed in a mapped
        file: a view of the mapping (the compiled DWARF source reads it in place). Otherwise, or
        once ``section_data`` has read the section, what ``section_data`` gives.

        A file shrunk since it was mapped is refused here (a read past its new end would fault);
        one shrunk by another process after this check still faults on the pages it lost, as in
        every reader that maps its input (llvm-symbolizer too).
        """
        section = self._headers.by_name.get("." + dwarf_name)
        if dwarf_name in self._decoded or self._map is None or section is None or section.sh_flags & SHF_COMPRESSED:
            return self.section_data(dwarf_name)
        raw = self._headers.raw(section)
        if raw is None:
            return self.section_data(dwarf_name)
        assert self._file is not None
        if os.fstat(self._file.fileno()).st_size < section.sh_offset + len(raw):
            raise self._headers.fail("section is cut short: the file shrank while open", section.sh_offset)
        return raw

    def _read_bytes(self, file_offset: int, size: int) -> bytes:
        """Read a range with a plain read, not through the mapping.

        The DWARF reader wants ``bytes`` (it searches them); copying from the
        mapping would fault the pages in and keep both the pages and the copy
        resident, twice the memory for the largest sections of a binary.
        """
        assert self._file is not None
        self._file.seek(file_offset)
        data = self._file.read(size)
        if len(data) != size:
            raise self._headers.fail("section is cut short: the file shrank while open", file_offset)
        return data

    # --- symbols -------------------------------------------------------------

    def _function_entries(self) -> list[SymbolRow]:
        """Every function symbol of the file's tables, as listed (:func:`function_symbol_rows`)."""
        if self._entries is None:
            from symbolize.formats.elf.symtab import function_symbol_rows

            try:
                self._entries = function_symbol_rows(self._headers)
            except MalformedInputError as err:
                if ".gnu_debugdata" not in self._headers.by_name:
                    raise
                # MiniDebugInfo that cannot be read (bad xz, a broken payload) takes only its own
                # symbols with it; a damaged .symtab raises again here.
                self._entries = function_symbol_rows(self._headers, mini_debug_info=False)
                self._symbols_error = err
        return self._entries

    def _all_function_symbols(self) -> list[FunctionSymbol]:
        if self._symbols is None:
            from symbolize.formats.elf.symtab import all_function_symbols

            self._symbols = all_function_symbols(self._function_entries())
        return self._symbols

    def symbols(self) -> Sequence[Symbol]:
        """Function symbols from .symtab, .dynsym and MiniDebugInfo, deduplicated, by address."""
        return [entry.symbol for entry in self._all_function_symbols()]

    def _symbol_index(self) -> SymbolIndex:
        if self._index is None:
            from symbolize.formats.elf.symtab import symbol_of_row
            from symbolize.formats.symbols import SymbolIndex

            # Built from the tables' rows as listed: keeping the preferred row of each address
            # keeps the preferred of each (address, name) among them, so the deduplicated list
            # (:meth:`_all_function_symbols`, a sort by name too) is not needed for it, and a
            # symbol's name is decoded only where a lookup asks for it.
            self._index = SymbolIndex.from_rows(self._function_entries(), symbol_of_row)
        return self._index

    def symbol_at(self, vaddr: int) -> Symbol | None:
        """The function symbol covering ``vaddr``, or None."""
        return self._symbol_index().symbol_at(vaddr)

    # --- debug info ----------------------------------------------------------

    def has_dwarf(self) -> bool:
        """Whether the file carries a non-empty ``.debug_info`` (or ``.zdebug_info``), read or not.

        Decided from the section headers alone, so a section that cannot be
        decompressed (a bomb past the cap) still counts: the file has DWARF, damaged.
        """
        return self._has_section("debug_info")

    def _has_section(self, dwarf_name: str) -> bool:
        headers = self._headers
        for name in ("." + dwarf_name, ".z" + dwarf_name):
            section = headers.by_name.get(name)
            if section is not None and section.sh_type != SHT_NOBITS and section.sh_size > 0:
                return True
        return False

    def _dwarf_info(self) -> DwarfInfo | None:
        """The file's DWARF, its units' headers read; None without DWARF.

        Raises MalformedInputError (every time) when the DWARF cannot be read at
        all: a section past the decompression cap, a first unit without a length.
        The symbol table does not depend on it (see :meth:`_answers`).
        """
        if self._dwarf_error is not None:
            raise self._dwarf_error
        if not self._dwarf_built:
            self._dwarf_built = True
            if self.has_dwarf():
                # Imported here so a reader without DWARF never loads the DWARF package.
                from symbolize.formats.dwarf import DwarfInfo
                from symbolize.formats.native import kernels

                try:
                    dwarf = DwarfInfo(
                        self.section_data,
                        self.path,
                        address_size=self.address_size,
                        little_endian=self.little_endian,
                        follows_split_units=True,
                        supplementary=self._supplementary,
                        # Where the compiled source answers, it reads the sections in place.
                        views=self.section_view if kernels is not None else None,
                    )
                    # Every section the units need is read here, so that damage to any of them
                    # shows now, once, and breaks the DWARF alone.
                    dwarf.load()
                except MalformedInputError as err:
                    self._dwarf_error = err
                    raise
                self._dwarf = dwarf
        return self._dwarf

    def needs(self) -> list[DebugHint]:
        """The dwz common file its ``.gnu_debugaltlink`` names, when it has DWARF: its strings
        are read with the units, so it is supplied before the DWARF is first read."""
        hint = self._supplementary_hint() if self.has_dwarf() else None
        return [hint] if hint is not None else []

    def supply(self, hint: DebugHint, found: SectionSource | None) -> None:
        """The dwz common file (:meth:`needs`), or a split unit's ``.dwo``/``.dwp`` (its region's
        ``needs``), found and verified by the caller; None when there is none."""
        if hint.kind is HintKind.SUPPLEMENTARY:
            self._supplementary = found
        elif hint.kind is HintKind.SPLIT_DWARF and self._dwarf is not None:
            self._dwarf.supply_split_unit(hint, found)

    def bind_image(self, image: Image) -> None:
        """Answer as ``image``'s separate debug file: as llvm-symbolizer 14 does, the image's own
        symbol table (its ``.symtab``, else ``.dynsym``) names the outermost frame, and where it
        has no symbol this file's DWARF does; this file's symbols answer only where neither names
        an address (see formats/symbols.py)."""
        if not isinstance(image, ElfFile) or image is self or image.path.resolve() == self.path.resolve():
            return
        if self._image is not image:
            self._image = image
            self._answer_source = None

    def answer_inputs(self) -> str:
        """What this file's answers depend on besides the file itself (part of its index key): the
        image whose symbols name its frames (``bind_image``), by build ID and size, else by path,
        size and mtime; "" when unbound."""
        image = self._image
        if image is None:
            return ""
        stat = image.path.stat()
        if image.debug_id is not None:
            return f"names from image {image.debug_id} size {stat.st_size}"
        return f"names from image {image.path.resolve()} size {stat.st_size} mtime {stat.st_mtime_ns}"

    def _naming_symbols(self) -> tuple[SymbolIndex, SymbolIndex | None]:
        """(the symbols that name outermost frames, the symbols beneath them): the bound image's
        and this file's own, else this file's own alone. An image whose symbol table does not read
        names nothing: this file's own symbols stand in."""
        own = self._symbol_index()
        if self._image is None:
            return own, None
        try:
            return self._image._symbol_index(), own
        except MalformedInputError:
            return own, None

    def _answers(self) -> SymbolAnswers:
        """This file as a symbol source: its DWARF units and symbol table (its image's, when bound)."""
        if self._answer_source is None:
            from symbolize.formats.paired import paired_answers

            naming, beneath = self._naming_symbols()
            # Executables and shared objects place no code at 0; a relocatable object's sections all start there.
            executable = [segment for segment in self.segments() if segment.executable]
            zero_is_discarded = bool(executable) and not any(
                segment.vaddr <= 0 < segment.vaddr + segment.memsz for segment in executable
            )
            self._answer_source = paired_answers(
                self.path, naming, self._dwarf_info, self._symbols_error, beneath=beneath,
                zero_is_discarded=zero_is_discarded,
            )  # fmt: skip
        return self._answer_source

    def debug_info(self) -> DebugInfoSummary:
        """What this file carries. ``has_inline_info`` is always False: knowing it needs a DIE walk.

        DWARF or MiniDebugInfo that cannot be read is reported in ``damaged``,
        never raised: the rest still names what it names.
        """
        if self._summary is None:
            has_symbols = bool(self._function_entries())
            try:
                dwarf = self._dwarf_info()
            except MalformedInputError as err:
                dwarf, damaged = None, str(err)
            else:
                damaged = str(self._symbols_error) if self._symbols_error is not None else ""
            self._summary = DebugInfoSummary(
                has_symbols=has_symbols,
                has_dwarf=self.has_dwarf(),
                has_line_info=self._has_section("debug_line"),
                has_inline_info=False,
                dwarf_versions=dwarf.versions() if dwarf is not None else (),
                split_dwarf=dwarf.has_split_units() if dwarf is not None else False,
                damaged=damaged,
            )
        return self._summary
