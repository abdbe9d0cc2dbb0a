"""ELF reader: the parts of an ELF file that symbolization needs.

Implements, from the System V gABI (chapter 4, "Object Files", and chapter 5,
"Program Loading"): the ELF header, section header table (with extended
numbering), program header table, note sections and segments, and symbol
tables. From the GNU extensions: the ``NT_GNU_BUILD_ID`` note,
``.gnu_debuglink``, ``.gnu_debugaltlink``, MiniDebugInfo (``.gnu_debugdata``: an
xz-compressed ELF whose ``.symtab`` holds local function symbols) and split
DWARF files (``.dwo``/``.dwp``, served by the same section getter).

The reader finds no other file: it lists its hints (:meth:`ElfFile.debug_hints`)
and, when its DWARF needs a ``.dwo`` or the dwz common file, asks the resolver
symbolize/ gave it when it opened the file.

The headers are decoded here with :mod:`struct` over a read-only mmap rather
than through pyelftools' section objects, because those parse compression
headers and linked tables as soon as a section is listed; here opening reads
the headers only, and every section's bytes are read, checked and
decompressed on first request.
"""

from __future__ import annotations

import lzma
import mmap
import os
import struct
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, NamedTuple

from symbolize.formats.errors import MalformedInputError, MissingDebugInfoError, SymbolizeError
from symbolize.formats.facts import Coverage, SectionFact, merge_ranges
from symbolize.formats.sections import decompress_chdr, decompress_zdebug
from symbolize.formats.symbols import RankedSymbol, SymbolAnswers, SymbolIndex
from symbolize.formats.types import (
    AnswerRegion,
    AnswerRun,
    DebugHint,
    DebugId,
    DebugIdKind,
    DebugInfoSummary,
    DebugLink,
    Frame,
    HintKind,
    HintResolver,
    Segment,
    Symbol,
)

if TYPE_CHECKING:
    from symbolize.formats.dwarf import DwarfInfo, SectionGetter

ELF_MAGIC = b"\x7fELF"

ET_EXEC = 2
PT_LOAD = 1
PT_NOTE = 4
PF_X = 1
SHT_SYMTAB = 2
SHT_NOTE = 7
SHT_NOBITS = 8
SHT_DYNSYM = 11
SHF_COMPRESSED = 0x800
SHF_EXECINSTR = 0x4
SHN_UNDEF = 0
SHN_LORESERVE = 0xFF00
SHN_XINDEX = 0xFFFF
PN_XNUM = 0xFFFF
STT_FUNC = 2
STT_FILE = 4
STT_GNU_IFUNC = 10
STB_LOCAL = 0
NT_GNU_BUILD_ID = 3
EM_ARM = 40

_MACHINES = {
    3: "i386",
    8: "mips",
    20: "ppc",
    21: "ppc64",
    22: "s390x",
    40: "arm",
    43: "sparcv9",
    62: "x86_64",
    183: "aarch64",
    243: "riscv",
    258: "loongarch64",
}

# A MiniDebugInfo payload is a few hundred KiB; refuse an xz bomb well before memory runs out.
_MAX_DEBUGDATA_SIZE = 1 << 30

# DWARF facts used by the cheap unit-header walk in debug_info().
_DW_FORM_IMPLICIT_CONST = 0x21

# The smallest page of every ELF target: segments are mapped from page boundaries of at least this.
_PAGE_SIZE = 0x1000
_U64 = (1 << 64) - 1


class _Section(NamedTuple):
    name: str
    sh_type: int
    sh_flags: int
    sh_addr: int
    sh_offset: int
    sh_size: int
    sh_link: int
    sh_addralign: int
    sh_entsize: int


class _ProgramHeader(NamedTuple):
    p_type: int
    p_flags: int
    p_offset: int
    p_vaddr: int
    p_filesz: int
    p_memsz: int
    p_align: int


class _FunctionSymbol(NamedTuple):
    symbol: Symbol
    is_local: bool
    # End of the symbol's section: how far a size-0 symbol may reach.
    section_end: int | None
    # (table rank, index in table): .symtab ranks above MiniDebugInfo, which ranks above .dynsym.
    order: tuple[int, int] = (0, 0)


class _Layout:
    """Struct formats for one ELF class and byte order."""

    def __init__(self, is_64: bool, little_endian: bool) -> None:
        order = "<" if little_endian else ">"
        self.order = order
        if is_64:
            self.ehdr = struct.Struct(order + "HHIQQQIHHHHHH")
            self.shdr = struct.Struct(order + "IIQQQQIIQQ")
            self.phdr = struct.Struct(order + "IIQQQQQQ")
            self.sym = struct.Struct(order + "IBBHQQ")
        else:
            self.ehdr = struct.Struct(order + "HHIIIIIHHHHHH")
            self.shdr = struct.Struct(order + "IIIIIIIIII")
            self.phdr = struct.Struct(order + "IIIIIIII")
            self.sym = struct.Struct(order + "IIIBBH")
        self.is_64 = is_64
        self.word = struct.Struct(order + "I")


class ElfFile:
    """An ELF executable, shared object, separate debug file, ``.dwo`` or ``.dwp``.

    Frames lists are innermost first. ``section_data`` is the DWARF reader's
    section getter. Call :meth:`close` (or use ``with``) to release the mmap.
    """

    format = "elf"

    def __init__(self, path: Path, data: bytes | None = None, resolver: HintResolver | None = None) -> None:
        """Open ``path`` (mmap, read only), or parse ``data`` in memory and name it ``path``.

        ``resolver`` finds the files the DWARF refers to (``.dwo``/``.dwp``, the dwz
        common file); without one, split units and supplementary references stay unresolved.
        """
        self.path = path
        self._resolver = resolver
        self._file: BinaryIO | None = None
        self._map: mmap.mmap | None = None
        self._buf = memoryview(data if data is not None else self._map_file())
        self._decoded: dict[str, bytes | memoryview | None] = {}
        self._symbols: list[_FunctionSymbol] | None = None
        self._index: SymbolIndex | None = None
        self._answer_source: SymbolAnswers | None = None
        self._dwarf: DwarfInfo | None = None
        self._dwarf_error: MalformedInputError | None = None
        self._dwarf_built = False
        self._summary: DebugInfoSummary | None = None
        self._segments: tuple[Segment, ...] | None = None
        try:
            self._parse_headers()
            self.debug_id = self._find_build_id()
        except BaseException:
            self.close()
            raise

    def _map_file(self) -> mmap.mmap | bytes:
        try:
            self._file = self.path.open("rb")
            size = os.fstat(self._file.fileno()).st_size
        except FileNotFoundError as err:
            raise MissingDebugInfoError("file not found", self.path) from err
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

    # --- headers -------------------------------------------------------------

    def _fail(self, message: str, offset: int | None = None) -> MalformedInputError:
        return MalformedInputError(message, self.path, offset)

    def _unpack(self, layout: struct.Struct, offset: int, what: str) -> tuple[int, ...]:
        if offset < 0 or offset + layout.size > len(self._buf):
            raise self._fail(f"{what} extends past end of file", offset)
        return layout.unpack_from(self._buf, offset)

    def _parse_headers(self) -> None:
        buf = self._buf
        if len(buf) < 16 or bytes(buf[:4]) != ELF_MAGIC:
            raise self._fail("truncated ELF identification" if len(buf) < 16 else "not an ELF file", 0)
        if buf[4] not in (1, 2) or buf[5] not in (1, 2):
            raise self._fail(f"bad ELF class {buf[4]} or data encoding {buf[5]}", 4)
        self.little_endian = buf[5] == 1
        self.address_size = 8 if buf[4] == 2 else 4
        self._layout = layout = _Layout(buf[4] == 2, self.little_endian)
        (e_type, e_machine, _version, _entry, e_phoff, e_shoff, _flags, _ehsize, e_phentsize, e_phnum,
         e_shentsize, e_shnum, e_shstrndx) = self._unpack(layout.ehdr, 16, "ELF header")  # fmt: skip
        self.e_type = e_type
        self.e_machine = e_machine
        self.arch = _MACHINES.get(e_machine, f"em{e_machine}")
        if self.arch == "riscv":
            self.arch = "riscv64" if layout.is_64 else "riscv32"
        # ET_EXEC is loaded at its vaddrs; ET_DYN (PIE, shared objects) anywhere (gABI "Base Address").
        self.position_dependent = e_type == ET_EXEC
        section_headers = self._read_section_headers(e_shoff, e_shentsize, e_shnum, e_shstrndx)
        if e_phnum == PN_XNUM and section_headers:
            e_phnum = section_headers[0][7]  # sh_info of section 0 holds the real count
        self._program_headers = self._read_program_headers(e_phoff, e_phentsize, e_phnum)
        loads = [header for header in self._program_headers if header.p_type == PT_LOAD]
        # The address the lowest page of the first PT_LOAD stands for: what a whole-module mapping starts at.
        self.load_base = min((header.p_vaddr for header in loads), default=0) // _PAGE_SIZE * _PAGE_SIZE

    def _read_table(
        self, offset: int, entsize: int, count: int, layout: struct.Struct, what: str
    ) -> list[tuple[int, ...]]:
        if count == 0:
            return []
        if entsize < layout.size:
            raise self._fail(f"{what} entry size {entsize} is smaller than {layout.size}", offset)
        if offset <= 0 or offset + entsize * count > len(self._buf):
            raise self._fail(f"{what} ({count} entries) extends past end of file", offset)
        return [layout.unpack_from(self._buf, offset + i * entsize) for i in range(count)]

    def _read_section_headers(
        self, e_shoff: int, e_shentsize: int, e_shnum: int, e_shstrndx: int
    ) -> list[tuple[int, ...]]:
        self._sections: list[_Section] = []
        self._by_name: dict[str, _Section] = {}
        if e_shoff == 0:
            return []
        shdr = self._layout.shdr
        if e_shnum == 0 or e_shstrndx == SHN_XINDEX:
            # Extended numbering: section 0's sh_size and sh_link hold the real values.
            first = self._read_table(e_shoff, e_shentsize, 1, shdr, "section header table")[0]
            e_shnum = e_shnum or first[5]
            if e_shstrndx == SHN_XINDEX:
                e_shstrndx = first[6]
        raw = self._read_table(e_shoff, e_shentsize, e_shnum, shdr, "section header table")
        names = b""
        if 0 < e_shstrndx < len(raw):
            _name, sh_type, _flags, _addr, offset, size, *_rest = raw[e_shstrndx]
            if sh_type != SHT_NOBITS:
                names = bytes(self._checked_range(offset, size, "section name table"))
        for sh_name, sh_type, sh_flags, sh_addr, sh_offset, sh_size, sh_link, _info, align, entsize in raw:
            name = _c_string(names, sh_name)
            section = _Section(name, sh_type, sh_flags, sh_addr, sh_offset, sh_size, sh_link, align, entsize)
            if sh_type != SHT_NOBITS:
                self._checked_range(sh_offset, sh_size, f"section {name or '#' + str(len(self._sections))}")
            self._sections.append(section)
            self._by_name.setdefault(name, section)
        return raw

    def _read_program_headers(self, e_phoff: int, e_phentsize: int, e_phnum: int) -> list[_ProgramHeader]:
        headers = []
        rows = self._read_table(e_phoff, e_phentsize, e_phnum, self._layout.phdr, "program header table")
        for row in rows:
            if self._layout.is_64:
                p_type, p_flags, p_offset, p_vaddr, _paddr, p_filesz, p_memsz, p_align = row
            else:
                p_type, p_offset, p_vaddr, _paddr, p_filesz, p_memsz, p_flags, p_align = row
            headers.append(_ProgramHeader(p_type, p_flags, p_offset, p_vaddr, p_filesz, p_memsz, p_align))
        return headers

    def _checked_range(self, offset: int, size: int, what: str) -> memoryview:
        if offset + size > len(self._buf):
            raise self._fail(f"{what} ({size} bytes) extends past end of file", offset)
        return self._buf[offset : offset + size]

    def _raw(self, section: _Section) -> memoryview | None:
        if section.sh_type == SHT_NOBITS:
            return None
        return self._checked_range(section.sh_offset, section.sh_size, f"section {section.name}")

    def segments(self) -> Sequence[Segment]:
        # Asked once per address when a profile is normalized: computed once, immutable.
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
                        for header in self._program_headers
                        if header.p_type == PT_LOAD
                    ),
                    key=lambda segment: segment.vaddr,
                )
            )
        return self._segments

    def _notes(self) -> Iterator[tuple[bytes, int, memoryview]]:
        """(name, type, descriptor) of every note, from note sections, else PT_NOTE segments."""
        sources = [
            (section.sh_offset, section.sh_size, section.sh_addralign)
            for section in sorted(self._sections, key=lambda s: s.name != ".note.gnu.build-id")
            if section.sh_type == SHT_NOTE
        ]
        if not self._sections:
            sources = [(h.p_offset, h.p_filesz, h.p_align) for h in self._program_headers if h.p_type == PT_NOTE]
        word = self._layout.word
        for offset, size, align in sources:
            data = self._checked_range(offset, size, "note")
            # Notes are 4-byte aligned, except in 8-aligned containers (gABI "Note Section").
            pad = 8 if align == 8 else 4
            pos = 0
            while pos + 12 <= len(data):
                namesz, descsz = word.unpack_from(data, pos)[0], word.unpack_from(data, pos + 4)[0]
                note_type = word.unpack_from(data, pos + 8)[0]
                name_at = pos + 12
                desc_at = name_at + _align_up(namesz, pad)
                end = desc_at + _align_up(descsz, pad)
                if desc_at + descsz > len(data):
                    raise self._fail("note extends past its section", offset + pos)
                yield (
                    bytes(data[name_at : name_at + namesz]).rstrip(b"\0"),
                    note_type,
                    data[desc_at : desc_at + descsz],
                )
                pos = end

    def _find_build_id(self) -> DebugId | None:
        for name, note_type, desc in self._notes():
            if name == b"GNU" and note_type == NT_GNU_BUILD_ID and len(desc) > 0:
                return DebugId(DebugIdKind.GNU_BUILD_ID, bytes(desc))
        return None

    def _named_raw(self, name: str) -> tuple[_Section, memoryview] | None:
        """The section called ``name`` and its bytes as stored; None when it is absent or SHT_NOBITS."""
        section = self._by_name.get(name)
        data = self._raw(section) if section is not None else None
        return (section, data) if section is not None and data is not None else None

    def debug_link(self) -> DebugLink | None:
        found = self._named_raw(".gnu_debuglink")
        if found is None:
            return None
        section, raw = found[0], bytes(found[1])
        end = raw.find(b"\0")
        crc_at = _align_up(end + 1, 4)
        if end <= 0 or crc_at + 4 > len(raw):
            raise self._fail("malformed .gnu_debuglink", section.sh_offset)
        (crc,) = self._layout.word.unpack_from(raw, crc_at)
        return DebugLink(raw[:end].decode("utf-8", "surrogateescape"), crc)

    def supplementary_link(self) -> tuple[str, bytes] | None:
        """``.gnu_debugaltlink``: the dwz common file (path, build ID) this file's DWARF refers into."""
        found = self._named_raw(".gnu_debugaltlink")
        if found is None:
            return None
        section, raw = found[0], bytes(found[1])
        end = raw.find(b"\0")
        if end <= 0:
            raise self._fail("malformed .gnu_debugaltlink", section.sh_offset)
        return raw[:end].decode("utf-8", "surrogateescape"), raw[end + 1 :]

    def debug_hints(self) -> list[DebugHint]:
        """Where this file says its debug info lives: build ID, ``.gnu_debuglink``, ``.gnu_debugaltlink``.

        Split-DWARF ``.dwo`` files are not listed: their names live in the DWARF
        units and are asked for (``HintKind.SPLIT_DWARF``) when a unit is decoded.
        """
        hints: list[DebugHint] = []
        if self.debug_id is not None:
            hints.append(DebugHint(HintKind.BUILD_ID, debug_id=self.debug_id))
        link = self.debug_link()
        if link is not None:
            hints.append(DebugHint(HintKind.DEBUGLINK, link.filename, crc32=link.crc32))
        supplementary = self._supplementary_hint()
        if supplementary is not None:
            hints.append(supplementary)
        return hints

    def _supplementary_hint(self) -> DebugHint | None:
        link = self.supplementary_link()
        if link is None:
            return None
        name, build_id = link
        return DebugHint(
            HintKind.SUPPLEMENTARY, name, DebugId(DebugIdKind.GNU_BUILD_ID, build_id) if build_id else None
        )

    # --- sections for the DWARF reader ---------------------------------------

    def section_data(self, dwarf_name: str) -> bytes | memoryview | None:
        """Decompressed bytes of ``.<dwarf_name>`` or ``.z<dwarf_name>``; None when absent.

        ``dwarf_name`` has no leading dot: ``"debug_info"``, ``"debug_info.dwo"``,
        ``"debug_cu_index"``. SHT_NOBITS sections (left in stripped debug files)
        count as absent.
        """
        if dwarf_name in self._decoded:
            return self._decoded[dwarf_name]
        data: bytes | memoryview | None = None
        section = self._by_name.get("." + dwarf_name)
        raw = self._raw(section) if section is not None else None
        if section is not None and raw is not None:
            data = self._read_bytes(section.sh_offset, len(raw)) if self._file is not None else raw
            if section.sh_flags & SHF_COMPRESSED:
                data = decompress_chdr(
                    raw,
                    is_64=self._layout.is_64,
                    little_endian=self.little_endian,
                    path=self.path,
                    file_offset=section.sh_offset,
                    file_size=len(self._buf),
                )
        else:
            legacy = self._by_name.get(".z" + dwarf_name)
            raw = self._raw(legacy) if legacy is not None else None
            if legacy is not None and raw is not None:
                data = decompress_zdebug(
                    raw, path=self.path, file_offset=legacy.sh_offset, file_size=len(self._buf)
                )
        self._decoded[dwarf_name] = data
        return data

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
            raise self._fail("section is cut short: the file shrank while open", file_offset)
        return data

    # --- symbols -------------------------------------------------------------

    def _function_symbols(self, section: _Section) -> Iterator[_FunctionSymbol]:
        data = self._raw(section)
        if data is None:
            return
        if not 0 < section.sh_link < len(self._sections):
            raise self._fail(f"{section.name} links to missing string table {section.sh_link}", section.sh_offset)
        strings = bytes(self._raw(self._sections[section.sh_link]) or b"")
        layout = self._layout.sym
        stride = section.sh_entsize or layout.size
        if stride < layout.size:
            raise self._fail(f"{section.name} entry size {stride} is too small", section.sh_offset)
        thumb_mask = ~1 if self.e_machine == EM_ARM else ~0
        source_file = None
        rank = 2 if section.sh_type == SHT_SYMTAB else 0
        count = (len(data) - layout.size) // stride + 1 if len(data) >= layout.size else 0
        # One unpack over the whole table when entries are packed, as they always are in practice.
        entries = (
            layout.iter_unpack(data[: count * stride])
            if stride == layout.size
            else (layout.unpack_from(data, position * stride) for position in range(count))
        )
        # A symbol's section bounds how far a size-0 symbol may reach.
        homes = self._sections[: min(SHN_LORESERVE, len(self._sections))]
        section_ends = [home.sh_addr + home.sh_size for home in homes]
        is_64 = self._layout.is_64
        for position, entry in enumerate(entries):
            if is_64:
                st_name, st_info, _other, st_shndx, st_value, st_size = entry
            else:
                st_name, st_value, st_size, st_info, _other, st_shndx = entry
            symbol_type = st_info & 0xF
            if symbol_type == STT_FILE:
                # Local symbols follow the STT_FILE entry of the source they came from.
                source_file = _c_string(strings, st_name) or None
                continue
            if (symbol_type != STT_FUNC and symbol_type != STT_GNU_IFUNC) or st_shndx == SHN_UNDEF:
                continue
            name = _c_string(strings, st_name)
            if not name:
                continue
            is_local = st_info >> 4 == STB_LOCAL
            section_end = section_ends[st_shndx] if st_shndx < len(section_ends) else None
            symbol = Symbol(name, st_value & thumb_mask, st_size, source_file if is_local else None)
            yield _FunctionSymbol(symbol, is_local, section_end, (rank, position))

    def _mini_debug_info_symbols(self) -> list[_FunctionSymbol]:
        found = self._named_raw(".gnu_debugdata")
        if found is None:
            return []
        section, data = found
        payload = self._unxz(data, section.sh_offset)
        try:
            with ElfFile(self.path, data=payload) as mini:
                return [entry._replace(order=(1, entry.order[1])) for entry in mini._all_function_symbols()]
        except MalformedInputError as err:
            # Offsets inside the payload mean nothing in the outer file; name the section instead.
            raise self._fail(f"in .gnu_debugdata: {err.reason}", section.sh_offset) from err

    def _unxz(self, data: memoryview, file_offset: int) -> bytes:
        decompressor = lzma.LZMADecompressor(format=lzma.FORMAT_XZ)
        try:
            payload = decompressor.decompress(data, _MAX_DEBUGDATA_SIZE)
        except lzma.LZMAError as err:
            raise self._fail(f"bad xz data in .gnu_debugdata: {err}", file_offset) from err
        if not decompressor.eof:
            raise self._fail("truncated xz data in .gnu_debugdata", file_offset)
        return payload

    def _all_function_symbols(self) -> list[_FunctionSymbol]:
        if self._symbols is None:
            found: dict[tuple[str, int], _FunctionSymbol] = {}
            sources: list[Iterator[_FunctionSymbol]] = [
                self._function_symbols(section)
                for section in self._sections
                if section.sh_type in (SHT_SYMTAB, SHT_DYNSYM)
            ]
            sources.append(iter(self._mini_debug_info_symbols()))
            for source in sources:
                for entry in source:
                    key = (entry.symbol.name, entry.symbol.vaddr)
                    if key not in found or _preference(entry) > _preference(found[key]):
                        found[key] = entry
            self._symbols = sorted(found.values(), key=lambda e: (e.symbol.vaddr, e.symbol.name))
        return self._symbols

    def symbols(self) -> Sequence[Symbol]:
        """Function symbols from .symtab, .dynsym and MiniDebugInfo, deduplicated, by address."""
        return [entry.symbol for entry in self._all_function_symbols()]

    def _symbol_index(self) -> SymbolIndex:
        if self._index is None:
            entries = self._all_function_symbols()
            self._index = SymbolIndex(RankedSymbol(e.symbol, e.section_end, e.order) for e in entries)
        return self._index

    def symbol_at(self, vaddr: int) -> Symbol | None:
        """The function symbol covering ``vaddr``, or None."""
        return self._symbol_index().symbol_at(vaddr)

    # --- debug info ----------------------------------------------------------

    def has_dwarf(self) -> bool:
        info = self.section_data("debug_info")
        return info is not None and len(info) > 0

    def _dwarf_info(self) -> DwarfInfo | None:
        if self._dwarf_error is not None:
            raise self._dwarf_error
        if not self._dwarf_built:
            self._dwarf_built = True
            if self.has_dwarf():
                # Imported here so a reader without DWARF never loads the DWARF package.
                from symbolize.formats.dwarf import DwarfInfo

                try:
                    self._dwarf = DwarfInfo(
                        self.section_data,
                        self.path,
                        address_size=self.address_size,
                        little_endian=self.little_endian,
                        split_resolver=self._resolve_split if self._resolver is not None else None,
                        supplementary_resolver=(
                            self._resolve_supplementary if self._resolver is not None else None
                        ),
                    )
                except MalformedInputError as err:
                    self._dwarf_error = err
                    raise
        return self._dwarf

    def _answers(self) -> SymbolAnswers:
        """This file as a symbol source: its DWARF units and symbol table (formats/dwarf/answers.py)."""
        if self._answer_source is None:
            try:
                dwarf = self._dwarf_info()
            except MalformedInputError as err:
                # Broken debug info hides nothing the symbol table knows (issue 9): the error is the
                # answer only where no symbol covers the address.
                self._answer_source = SymbolAnswers(self.path, self._symbol_index(), broken=err)
                return self._answer_source
            if dwarf is None:
                self._answer_source = SymbolAnswers(self.path, self._symbol_index())
            else:
                from symbolize.formats.dwarf.answers import DwarfSymbolAnswers

                self._answer_source = DwarfSymbolAnswers(self.path, dwarf, self._symbol_index())
        return self._answer_source

    def answer_regions(self) -> Sequence[AnswerRegion]:
        return self._answers().answer_regions()

    def answers(self, key: int) -> Sequence[AnswerRun]:
        return self._answers().answers(key)

    def frames_at(self, vaddr: int) -> list[Frame]:
        """Frames at ``vaddr``, innermost first, from DWARF and the symbol table; [] if none."""
        return self._answers().frames_at(vaddr)

    def _resolve_supplementary(self) -> tuple[SectionGetter, Path] | None:
        """Sections of the dwz common file, as the resolver finds and verifies it."""
        hint = self._supplementary_hint()
        found = self._resolver(hint) if hint is not None and self._resolver is not None else None
        return (found.section_data, found.path) if found is not None else None

    def _resolve_split(
        self, dwo_name: str, comp_dir: str | None, dwo_id: int | None
    ) -> tuple[SectionGetter, Path] | None:
        """Sections (and path) of the ``.dwo`` or ``.dwp`` holding the split unit, as the resolver finds it."""
        debug_id = DebugId(DebugIdKind.DWO_ID, (dwo_id & _U64).to_bytes(8, "big")) if dwo_id is not None else None
        hint = DebugHint(HintKind.SPLIT_DWARF, dwo_name, debug_id, directory=comp_dir or "")
        found = self._resolver(hint) if self._resolver is not None else None
        return (found.section_data, found.path) if found is not None else None

    def debug_info(self) -> DebugInfoSummary:
        """What this file carries. ``has_inline_info`` is always False: knowing it needs a DIE walk."""
        if self._summary is None:
            dwarf = self._dwarf_info()
            versions = dwarf.versions() if dwarf is not None else ()
            split = dwarf.has_split_units() if dwarf is not None else False
            self._summary = DebugInfoSummary(
                has_symbols=bool(self._all_function_symbols()),
                has_dwarf=self.has_dwarf(),
                has_line_info=bool(self.section_data("debug_line")),
                has_inline_info=False,
                dwarf_versions=versions,
                split_dwarf=split,
            )
        return self._summary


    # --- facts for the auditor (symbolize/audit) -------------------------------

    def section_facts(self) -> tuple[SectionFact, ...]:
        """Every section: name, address, size, whether it holds code, whether it is compressed."""
        return tuple(
            SectionFact(
                section.name,
                section.sh_addr,
                section.sh_size,
                bool(section.sh_flags & SHF_EXECINSTR),
                bool(section.sh_flags & SHF_COMPRESSED) or section.name.startswith(".zdebug"),
                section.sh_type == SHT_NOBITS,
            )
            for section in self._sections
        )

    def coverage(self) -> Coverage:
        """What this file's symbol index and DWARF cover (see symbolize.formats.facts)."""
        from symbolize.formats.dwarf.coverage import dwarf_coverage

        index = self._symbol_index()
        symbols = merge_ranges(zip(index.starts, index.ends, strict=True))
        try:
            dwarf = self._dwarf_info()
            found = dwarf_coverage(dwarf) if dwarf is not None else Coverage()
        except MalformedInputError as err:
            # Broken DWARF covers nothing; the symbol table still names what it names.
            found = Coverage(broken_units=(str(err),))
        return found._replace(symbols=symbols)


def _preference(entry: _FunctionSymbol) -> tuple[int, tuple[int, int]]:
    """Among symbols at one address, the one llvm-symbolizer names: the largest, then the last in
    the symbol table (it stable-sorts by address and size and keeps the last of each address).
    Identical code folded by the linker is where this matters: several names, one address."""
    return entry.symbol.size, entry.order


def _align_up(value: int, alignment: int) -> int:
    return (value + alignment - 1) & ~(alignment - 1)


def _c_string(table: bytes, offset: int) -> str:
    if offset >= len(table):
        return ""
    end = table.find(b"\0", offset)
    return table[offset : end if end >= 0 else len(table)].decode("utf-8", "surrogateescape")
