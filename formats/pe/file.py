"""PE/COFF images: identity, sections, exports, COFF symbols, the CodeView record, and DWARF.

pefile parses the headers, sections, export and debug directories (Microsoft PE/COFF
specification: "Optional Header Data Directories", "The .edata Section", "Debug Directory");
its types stay inside this module. Read here by hand, because pefile does not: the COFF
symbol table and its string table ("COFF Symbol Table", "COFF String Table"), which also hold
the long section names (``/4``) that MinGW gives its ``.debug_*`` sections, and the CodeView
record the debug directory points at (``RSDS``: PDB GUID, age, path; the older ``NB10``, a
timestamp signature, is recognised and reported unsupported).

Addresses: a PE vaddr is ``ImageBase + RVA``, what ``llvm-symbolizer --obj app.exe`` takes and
what a PDB's section offsets resolve to. A profile mapping's start stands for ``ImageBase``
(:attr:`PeFile.load_base`). A MinGW image carries DWARF whose addresses are such vaddrs, so the
DWARF reader serves it unchanged (:meth:`PeFile.section_data` hands it ``.debug_*`` by name).
"""

import contextlib
import mmap
import struct
from bisect import bisect_right
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from symbolize.formats.errors import MalformedInputError
from symbolize.formats.mapped import map_read_only
from symbolize.formats.paired import paired_answers
from symbolize.formats.region_answers import AnsweredByRegions
from symbolize.formats.symbols import RankedSymbol, SymbolAnswers, SymbolIndex
from symbolize.formats.types import (
    DebugHint,
    DebugId,
    DebugIdKind,
    DebugInfoSummary,
    DebugLink,
    HintKind,
    ReaderDefaults,
    Segment,
    Symbol,
)

if TYPE_CHECKING:
    from symbolize.formats.dwarf import DwarfInfo

MZ_MAGIC = b"MZ"

PE_MACHINES = {0x8664: "x86_64", 0x14C: "i386", 0xAA64: "aarch64", 0x1C4: "arm", 0xA641: "arm64ec"}
_IMAGE_SCN_MEM_EXECUTE = 0x20000000
_IMAGE_DEBUG_TYPE_CODEVIEW = 2
_DIRECTORY_EXPORT = 0
_DIRECTORY_EXCEPTION = 3
_DIRECTORY_DEBUG = 6
_COFF_SYMBOL = struct.Struct("<8sIhHBB")  # name, Value, SectionNumber, Type, StorageClass, NumberOfAuxSymbols
_IMAGE_SYM_DTYPE_FUNCTION = 2
_IMAGE_SYM_CLASS_STATIC = 3
_IMAGE_SYM_CLASS_FILE = 103
# A CodeView record larger than this is not one: RSDS is 24 bytes and a path.
_MAX_CODEVIEW_SIZE = 1 << 16


class CodeViewRecord(NamedTuple):
    """The debug directory's CodeView entry: which PDB the linker wrote for this image.

    ``signature`` is ``"RSDS"`` (PDB 7.0: ``guid`` as stored, ``age``, ``pdb_path``) or
    ``"NB10"`` (PDB 2.0: ``guid`` holds the 4-byte timestamp signature).
    """

    signature: str
    guid: bytes
    age: int
    pdb_path: str


class _Section(NamedTuple):
    name: str
    rva: int
    virtual_size: int
    file_offset: int
    raw_size: int
    characteristics: int


class PeFile(AnsweredByRegions, ReaderDefaults):
    """A PE image: an ``Image`` always, and a symbol source through its DWARF and symbols (MinGW).

    Raises MalformedInputError when the headers are broken, NotFoundError when the
    file does not exist.
    """

    format = "pe"
    position_dependent = False
    fixed_load_address = False

    def __init__(self, path: Path, data: bytes | None = None) -> None:
        """Open ``path`` (mmap, read only: the headers and the records they point at are read),
        or parse ``data`` in memory and name it ``path``. Call :meth:`close` to release the mmap."""
        self.path = path
        self._data: bytes | mmap.mmap = data if data is not None else map_read_only(path)
        self._map = self._data if isinstance(self._data, mmap.mmap) else None
        self._dwarf: DwarfInfo | None = None
        self._dwarf_built = False
        self._dwarf_error: MalformedInputError | None = None
        self._decoded: dict[str, bytes | None] = {}
        self._symbol_index: tuple[list[int], list[int], list[Symbol]] | None = None
        self._answer_source: SymbolAnswers | None = None
        try:
            self._parse()
        except BaseException:
            self.close()
            raise

    # --- headers -------------------------------------------------------------

    def _fail(self, message: str, offset: int | None = None) -> MalformedInputError:
        return MalformedInputError(message, self.path, offset)

    def _parse(self) -> None:
        import pefile  # imported here: an ELF-only run never pays for it

        if self._data[:2] != MZ_MAGIC:
            raise self._fail("not a PE file (no MZ header)", 0)
        try:
            pe = pefile.PE(data=self._data, fast_load=True)
        except (pefile.PEFormatError, struct.error, ValueError, IndexError, AttributeError) as err:
            raise self._fail(f"bad PE headers: {err}", 0) from err
        try:
            header = pe.FILE_HEADER
            optional = pe.OPTIONAL_HEADER
            self.machine = header.Machine
            self.arch = PE_MACHINES.get(header.Machine, f"machine{header.Machine:#x}")
            self.image_base: int = optional.ImageBase
            self.size_of_image: int = optional.SizeOfImage
            self.time_date_stamp: int = header.TimeDateStamp
            self.load_base = self.image_base
            self.is_dll = bool(header.Characteristics & 0x2000)
            self._symbol_table_offset: int = header.PointerToSymbolTable
            self._symbol_count: int = header.NumberOfSymbols
            directories = list(optional.DATA_DIRECTORY)
            self._string_table = self._coff_string_table()
            self._sections = [self._section(section) for section in pe.sections]
            self._by_name = {section.name: section for section in reversed(self._sections)}
            self.has_pdata = len(directories) > _DIRECTORY_EXCEPTION and directories[_DIRECTORY_EXCEPTION].Size > 0
            self._exports = self._read_exports(pe) if len(directories) > _DIRECTORY_EXPORT else []
            # Why the CodeView record cannot be read ("" when it can or there is none): only the
            # PDB hint goes with it, the image's exports, symbols and DWARF still answer.
            self.codeview_damage = ""
            try:
                self.codeview = self._read_codeview(pe) if len(directories) > _DIRECTORY_DEBUG else None
            except MalformedInputError as err:
                self.codeview, self.codeview_damage = None, str(err)
        except (pefile.PEFormatError, struct.error, ValueError, IndexError, AttributeError, TypeError) as err:
            raise self._fail(f"bad PE file: {err}", 0) from err
        # No pe.close(): given the data, pefile holds no mapping of its own, and its close() runs a full
        # gc.collect() (3 to 11 ms of a lookup run).
        record = self.codeview
        is_rsds = record is not None and record.signature == "RSDS"
        self.debug_id = DebugId(DebugIdKind.PDB, record.guid, record.age) if record and is_rsds else None
        # What names the image itself, PDB or none (symsrv's key of the image, Breakpad's and
        # Crashpad's code ID): a profile of a MinGW or CodeView-less image has only this.
        self.code_id = DebugId(
            DebugIdKind.PE_CODE_ID, self.time_date_stamp.to_bytes(4, "big") + self.size_of_image.to_bytes(4, "big")
        )
        # Why the PDB this image names cannot be used, when it cannot ("" when it can or there is none).
        self.unsupported_debug_reason = (
            "the CodeView record is NB10 (a PDB 2.0 from Visual C++ 6 or older), which is not supported"
            if record is not None and record.signature == "NB10"
            else ""
        )

    def _section(self, section: object) -> _Section:
        raw_name: bytes = getattr(section, "Name")  # noqa: B009 (pefile's attribute, not ours)
        name = raw_name.rstrip(b"\0").decode("utf-8", "replace")
        if name.startswith("/") and name[1:].isdigit():
            # A long name: "/N" is an offset into the COFF string table ("Section Table", Name).
            name = _c_string(self._string_table, int(name[1:])) or name
        file_offset: int = getattr(section, "PointerToRawData")  # noqa: B009
        raw_size: int = getattr(section, "SizeOfRawData")  # noqa: B009
        # A DWARF section past the file breaks only the DWARF: section_data raises when it is read.
        if raw_size and file_offset + raw_size > len(self._data) and not name.startswith(".debug_"):
            raise self._fail(f"section {name} ({raw_size} bytes) extends past end of file", file_offset)
        return _Section(
            name=name,
            rva=getattr(section, "VirtualAddress"),  # noqa: B009
            virtual_size=getattr(section, "Misc_VirtualSize"),  # noqa: B009
            file_offset=file_offset,
            raw_size=raw_size,
            characteristics=getattr(section, "Characteristics"),  # noqa: B009
        )

    def _coff_string_table(self) -> bytes:
        """The COFF string table after the symbol table (its first 4 bytes are its own size)."""
        if not self._symbol_table_offset or not self._symbol_count:
            return b""
        start = self._symbol_table_offset + self._symbol_count * _COFF_SYMBOL.size
        if start + 4 > len(self._data):
            raise self._fail("COFF symbol table extends past end of file", self._symbol_table_offset)
        (size,) = struct.unpack_from("<I", self._data, start)
        if size < 4 or start + size > len(self._data):
            raise self._fail(f"COFF string table of {size} bytes extends past end of file", start)
        return self._data[start : start + size]

    def _read_exports(self, pe: object) -> list[Symbol]:
        import pefile

        assert isinstance(pe, pefile.PE)
        pe.parse_data_directories(directories=[pefile.DIRECTORY_ENTRY["IMAGE_DIRECTORY_ENTRY_EXPORT"]])
        directory = getattr(pe, "DIRECTORY_ENTRY_EXPORT", None)
        if directory is None:
            return []
        exports = []
        for entry in directory.symbols:
            if entry.name and entry.address and not entry.forwarder:
                name = entry.name.decode("utf-8", "replace")
                exports.append(Symbol(name, self.image_base + entry.address, 0))
        return exports

    def _read_codeview(self, pe: object) -> CodeViewRecord | None:
        import pefile

        assert isinstance(pe, pefile.PE)
        pe.parse_data_directories(directories=[pefile.DIRECTORY_ENTRY["IMAGE_DIRECTORY_ENTRY_DEBUG"]])
        for entry in getattr(pe, "DIRECTORY_ENTRY_DEBUG", []):
            debug = entry.struct
            if debug.Type != _IMAGE_DEBUG_TYPE_CODEVIEW:
                continue
            offset, size = debug.PointerToRawData, debug.SizeOfData
            if size < 4:
                raise self._fail(f"CodeView record of {size} bytes holds no signature", offset)
            if size > _MAX_CODEVIEW_SIZE or offset + size > len(self._data):
                raise self._fail(f"CodeView record of {size} bytes extends past end of file", offset)
            return parse_codeview(self._data[offset : offset + size], self.path, offset)
        return None

    # --- Image ---------------------------------------------------------------

    def segments(self) -> Sequence[Segment]:
        """One segment per section, named as the section (long names resolved)."""
        return [
            Segment(
                vaddr=self.image_base + section.rva,
                memsz=section.virtual_size,
                file_offset=section.file_offset,
                filesz=section.raw_size,
                executable=bool(section.characteristics & _IMAGE_SCN_MEM_EXECUTE),
                name=section.name,
            )
            for section in self._sections
        ]

    def debug_hints(self) -> Sequence[DebugHint]:
        """The PDB named by the RSDS record (its recorded path, GUID and age); [] for none or NB10.

        A malformed CodeView record gives a PDB hint that says why (``DebugHint.damaged``).
        """
        if self.codeview_damage:
            return [DebugHint(HintKind.PDB, damaged=self.codeview_damage)]
        if self.codeview is None or self.debug_id is None:
            return []
        return [DebugHint(HintKind.PDB, self.codeview.pdb_path, self.debug_id)]

    def debug_link(self) -> DebugLink | None:
        return None

    def exports(self) -> Sequence[Symbol]:
        """Exported functions (forwarders left out), size 0: the export table records none."""
        return list(self._exports)

    def coff_symbols(self) -> list[Symbol]:
        """The COFF symbols that name code, in table order (MinGW keeps a table; MSVC and lld-link do not).

        llvm-symbolizer's choice (``COFFObjectFile::getSymbolType`` and
        ``SymbolizableObjectFile::addSymbol``): a symbol typed as a function, and any other defined
        symbol that is no section definition (``.text``, static with an aux record) and no file
        record. The second kind matters in code: MinGW's import thunks (``jmp *__imp_Sleep``) come
        from import libraries as untyped externals named after the import (``Sleep``). Untyped
        symbols are kept in executable sections only; elsewhere they name data, never code.
        """
        return [symbol for symbol, names_code in self._coff_table() if names_code]

    def _coff_table(self) -> list[tuple[Symbol, bool]]:
        """Every defined COFF symbol in a section, in table order, and whether it names code."""
        if not self._symbol_count:
            return []
        table_end = self._symbol_table_offset + self._symbol_count * _COFF_SYMBOL.size
        if table_end > len(self._data):
            raise self._fail("COFF symbol table extends past end of file", self._symbol_table_offset)
        found = []
        index = 0
        while index < self._symbol_count:
            offset = self._symbol_table_offset + index * _COFF_SYMBOL.size
            raw_name, value, section_number, sym_type, storage, aux_count = _COFF_SYMBOL.unpack_from(
                self._data, offset
            )
            index += 1 + aux_count
            if not 0 < section_number <= len(self._sections):
                continue
            section = self._sections[section_number - 1]
            is_function = (sym_type >> 4) & 0xF == _IMAGE_SYM_DTYPE_FUNCTION
            is_section_definition = storage == _IMAGE_SYM_CLASS_STATIC and aux_count > 0
            names_code = is_function or (
                not is_section_definition
                and storage != _IMAGE_SYM_CLASS_FILE
                and bool(section.characteristics & _IMAGE_SCN_MEM_EXECUTE)
            )
            if raw_name[:4] == b"\0\0\0\0":
                name = _c_string(self._string_table, int.from_bytes(raw_name[4:], "little"))
            else:
                name = raw_name.rstrip(b"\0").decode("utf-8", "replace")
            found.append((Symbol(name, self.image_base + section.rva + value, 0), names_code and bool(name)))
        return found

    def symbols(self) -> Sequence[Symbol]:
        """COFF symbols that name code, else exports; sizes reach the next symbol or the section's end."""
        return self._symbols_by_address()[2]

    def _symbols_by_address(self) -> tuple[list[int], list[int], list[Symbol]]:
        if self._symbol_index is None:
            table = self._coff_table()
            named = [symbol for symbol, names_code in table if names_code] or list(self._exports)
            # One name per address, llvm-symbolizer's (SymbolizableObjectFile::create): it stable-sorts
            # by (address, size) and keeps the last of each address, and computeSymbolSizes gives
            # every symbol of one address the same size, so the last in table order wins: MinGW's
            # ``fpreset`` over ``_fpreset``, which its runtime lists first.
            chosen: dict[int, Symbol] = {}
            for symbol in named:
                chosen[symbol.vaddr] = symbol
            starts = sorted(chosen)
            # A symbol reaches the next address any symbol of the table has (a section definition
            # of the next object's code included, as computeSymbolSizes counts them), or its
            # section's end.
            boundaries = sorted({symbol.vaddr for symbol, _ in table} | set(starts))
            ends = []
            for vaddr in starts:
                following = bisect_right(boundaries, vaddr)
                section_end = self._section_end(vaddr)
                ends.append(min(boundaries[following], section_end) if following < len(boundaries) else section_end)
            symbols = [chosen[vaddr]._replace(size=end - vaddr) for vaddr, end in zip(starts, ends, strict=True)]
            self._symbol_index = (starts, ends, symbols)
        return self._symbol_index

    def _section_end(self, vaddr: int) -> int:
        for section in self._sections:
            low = self.image_base + section.rva
            if low <= vaddr < low + max(section.virtual_size, section.raw_size):
                return low + max(section.virtual_size, section.raw_size)
        return vaddr + 1

    def identities(self) -> Sequence[DebugId]:
        return (self.debug_id, self.code_id) if self.debug_id is not None else (self.code_id,)

    def symbol_at(self, vaddr: int) -> Symbol | None:
        starts, ends, symbols = self._symbols_by_address()
        position = bisect_right(starts, vaddr) - 1
        if position >= 0 and vaddr < ends[position]:
            return symbols[position]
        return None

    # --- DWARF (MinGW) ---------------------------------------------------------

    def section_data(self, dwarf_name: str) -> bytes | None:
        """Bytes of section ``.<dwarf_name>`` (``"debug_info"``), long names resolved; None when absent."""
        if dwarf_name in self._decoded:
            return self._decoded[dwarf_name]
        section = self._by_name.get("." + dwarf_name)
        data = None
        if section is not None:
            # VirtualSize is the section's true size; SizeOfRawData is rounded up to FileAlignment.
            size = min(section.virtual_size or section.raw_size, section.raw_size)
            if section.file_offset + size > len(self._data):
                raise self._fail(f"section {section.name} extends past end of file", section.file_offset)
            data = self._data[section.file_offset : section.file_offset + size]
        self._decoded[dwarf_name] = data
        return data

    def has_dwarf(self) -> bool:
        """Whether the image carries a non-empty ``.debug_info``, from the section table alone
        (a section reaching past the file still counts: the DWARF is there, damaged)."""
        return self._has_section("debug_info")

    def _has_section(self, dwarf_name: str) -> bool:
        section = self._by_name.get("." + dwarf_name)
        return section is not None and min(section.virtual_size or section.raw_size, section.raw_size) > 0

    def _dwarf_info(self) -> "DwarfInfo | None":
        """The MinGW DWARF, its units' headers read; raises MalformedInputError (every time) when it
        cannot be read at all, which leaves the COFF symbols answering (see :meth:`_answers`)."""
        if self._dwarf_error is not None:
            raise self._dwarf_error
        if not self._dwarf_built:
            self._dwarf_built = True
            if self.has_dwarf():
                from symbolize.formats.dwarf import DwarfInfo

                dwarf = DwarfInfo(self.section_data, self.path, address_size=8 if self.machine != 0x14C else 4)
                try:
                    dwarf.load()
                except MalformedInputError as err:
                    self._dwarf_error = err
                    raise
                self._dwarf = dwarf
        return self._dwarf

    def _answers(self) -> SymbolAnswers:
        """This image as a symbol source: MinGW DWARF units and the COFF symbols (or exports)."""
        if self._answer_source is None:
            symbols = self._symbols_by_address()[2]
            index = SymbolIndex(RankedSymbol(symbol, None) for symbol in symbols)
            self._answer_source = paired_answers(self.path, index, self._dwarf_info)
        return self._answer_source

    def debug_info(self) -> DebugInfoSummary:
        """What the image carries; DWARF that cannot be read is reported in ``damaged``, not raised."""
        damaged = ""
        versions: tuple[int, ...] = ()
        try:
            dwarf = self._dwarf_info()
        except MalformedInputError as err:
            damaged = str(err)
        else:
            versions = dwarf.versions() if dwarf is not None else ()
        return DebugInfoSummary(
            has_symbols=bool(self._symbols_by_address()[2]),
            has_dwarf=self.has_dwarf(),
            has_line_info=self._has_section("debug_line"),
            has_inline_info=False,
            dwarf_versions=versions,
            damaged=damaged,
        )

    def close(self) -> None:
        self._dwarf = None
        if self._answer_source is not None:
            self._answer_source.close()
        self._answer_source = None
        self._decoded.clear()
        if self._map is not None:
            with contextlib.suppress(BufferError):  # a view still held: the mmap is freed with it
                self._map.close()
            self._map = None

    def __enter__(self) -> "PeFile":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"PeFile({str(self.path)!r})"


def parse_codeview(record: bytes, path: Path, file_offset: int) -> CodeViewRecord:
    """An RSDS or NB10 record ("CodeView" debug directory data, the PDB 7.0 and 2.0 forms)."""
    signature = record[:4]
    if signature == b"RSDS":
        if len(record) < 24:
            raise MalformedInputError("RSDS record shorter than 24 bytes", path, file_offset)
        guid, (age,) = record[4:20], struct.unpack_from("<I", record, 20)
        return CodeViewRecord("RSDS", bytes(guid), age, _c_string(record, 24))
    if signature == b"NB10":
        if len(record) < 16:
            raise MalformedInputError("NB10 record shorter than 16 bytes", path, file_offset)
        stamp, age = struct.unpack_from("<II", record, 8)
        return CodeViewRecord("NB10", stamp.to_bytes(4, "little"), age, _c_string(record, 16))
    raise MalformedInputError(f"unknown CodeView signature {bytes(signature)!r}", path, file_offset)


def _c_string(table: bytes, offset: int) -> str:
    if offset >= len(table):
        return ""
    end = table.find(b"\0", offset)
    return table[offset : end if end >= 0 else len(table)].decode("utf-8", "replace")
