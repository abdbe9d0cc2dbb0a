"""The ELF header, section header table and program header table (gABI chapter 4, "ELF Header",
"Sections"; chapter 5, "Program Header"), extended numbering included, over bytes already in memory.

Decoded with :mod:`struct` rather than through pyelftools' section objects,
which parse compression headers and linked tables as soon as a section is
listed: here only the tables are read, and every range they name is checked
against the bytes there are.
"""

import struct
from pathlib import Path
from typing import NamedTuple

from symbolize.formats.errors import MalformedInputError

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
SHN_XINDEX = 0xFFFF
PN_XNUM = 0xFFFF

MACHINES = {
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


class Section(NamedTuple):
    name: str
    sh_type: int
    sh_flags: int
    sh_addr: int
    sh_offset: int
    sh_size: int
    sh_link: int
    sh_addralign: int
    sh_entsize: int


class ProgramHeader(NamedTuple):
    p_type: int
    p_flags: int
    p_offset: int
    p_vaddr: int
    p_filesz: int
    p_memsz: int
    p_align: int


class Layout:
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


class ElfHeaders:
    """The tables of an ELF image in ``buf``, named ``path`` in errors.

    Raises MalformedInputError (with the offset) for a table or section that
    does not fit in the bytes.
    """

    def __init__(self, buf: memoryview, path: Path) -> None:
        self.buf = buf
        self.path = path
        self.sections: list[Section] = []
        self.by_name: dict[str, Section] = {}
        if len(buf) < 16 or bytes(buf[:4]) != ELF_MAGIC:
            raise self.fail("truncated ELF identification" if len(buf) < 16 else "not an ELF file", 0)
        if buf[4] not in (1, 2) or buf[5] not in (1, 2):
            raise self.fail(f"bad ELF class {buf[4]} or data encoding {buf[5]}", 4)
        self.little_endian = buf[5] == 1
        self.address_size = 8 if buf[4] == 2 else 4
        self.layout = layout = Layout(buf[4] == 2, self.little_endian)
        (e_type, e_machine, _version, _entry, e_phoff, e_shoff, _flags, _ehsize, e_phentsize, e_phnum,
         e_shentsize, e_shnum, e_shstrndx) = self._unpack(layout.ehdr, 16, "ELF header")  # fmt: skip
        self.e_type = e_type
        self.e_machine = e_machine
        arch = MACHINES.get(e_machine, f"em{e_machine}")
        if arch == "riscv":
            arch = "riscv64" if layout.is_64 else "riscv32"
        self.arch = arch
        section_headers = self._read_section_headers(e_shoff, e_shentsize, e_shnum, e_shstrndx)
        if e_phnum == PN_XNUM and section_headers:
            e_phnum = section_headers[0][7]  # sh_info of section 0 holds the real count
        self.program_headers = self._read_program_headers(e_phoff, e_phentsize, e_phnum)

    def fail(self, message: str, offset: int | None = None) -> MalformedInputError:
        return MalformedInputError(message, self.path, offset)

    def checked_range(self, offset: int, size: int, what: str) -> memoryview:
        if offset + size > len(self.buf):
            raise self.fail(f"{what} ({size} bytes) extends past end of file", offset)
        return self.buf[offset : offset + size]

    def raw(self, section: Section) -> memoryview | None:
        """A section's bytes as stored; None for SHT_NOBITS."""
        if section.sh_type == SHT_NOBITS:
            return None
        return self.checked_range(section.sh_offset, section.sh_size, f"section {section.name}")

    def named_raw(self, name: str) -> tuple[Section, memoryview] | None:
        """The section called ``name`` and its bytes as stored; None when it is absent or SHT_NOBITS."""
        section = self.by_name.get(name)
        data = self.raw(section) if section is not None else None
        return (section, data) if section is not None and data is not None else None

    def _unpack(self, layout: struct.Struct, offset: int, what: str) -> tuple[int, ...]:
        if offset < 0 or offset + layout.size > len(self.buf):
            raise self.fail(f"{what} extends past end of file", offset)
        return layout.unpack_from(self.buf, offset)

    def _read_table(
        self, offset: int, entsize: int, count: int, layout: struct.Struct, what: str
    ) -> list[tuple[int, ...]]:
        if count == 0:
            return []
        if entsize < layout.size:
            raise self.fail(f"{what} entry size {entsize} is smaller than {layout.size}", offset)
        if offset <= 0 or offset + entsize * count > len(self.buf):
            raise self.fail(f"{what} ({count} entries) extends past end of file", offset)
        return [layout.unpack_from(self.buf, offset + i * entsize) for i in range(count)]

    def _read_section_headers(
        self, e_shoff: int, e_shentsize: int, e_shnum: int, e_shstrndx: int
    ) -> list[tuple[int, ...]]:
        if e_shoff == 0:
            return []
        shdr = self.layout.shdr
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
                names = bytes(self.checked_range(offset, size, "section name table"))
        for sh_name, sh_type, sh_flags, sh_addr, sh_offset, sh_size, sh_link, _info, align, entsize in raw:
            name = c_string(names, sh_name)
            section = Section(name, sh_type, sh_flags, sh_addr, sh_offset, sh_size, sh_link, align, entsize)
            if sh_type != SHT_NOBITS:
                self.checked_range(sh_offset, sh_size, f"section {name or '#' + str(len(self.sections))}")
            self.sections.append(section)
            self.by_name.setdefault(name, section)
        return raw

    def _read_program_headers(self, e_phoff: int, e_phentsize: int, e_phnum: int) -> list[ProgramHeader]:
        headers = []
        rows = self._read_table(e_phoff, e_phentsize, e_phnum, self.layout.phdr, "program header table")
        for row in rows:
            if self.layout.is_64:
                p_type, p_flags, p_offset, p_vaddr, _paddr, p_filesz, p_memsz, p_align = row
            else:
                p_type, p_offset, p_vaddr, _paddr, p_filesz, p_memsz, p_flags, p_align = row
            headers.append(ProgramHeader(p_type, p_flags, p_offset, p_vaddr, p_filesz, p_memsz, p_align))
        return headers


def align_up(value: int, alignment: int) -> int:
    return (value + alignment - 1) & ~(alignment - 1)


def c_string(table: bytes, offset: int) -> str:
    if offset >= len(table):
        return ""
    end = table.find(b"\0", offset)
    return table[offset : end if end >= 0 else len(table)].decode("utf-8", "surrogateescape")
