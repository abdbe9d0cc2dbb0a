"""Mach-O reader: thin and universal (fat, fat64) files, as an image and a symbol source.

Implements, from ``<mach-o/loader.h>``, ``<mach-o/fat.h>``, ``<mach-o/nlist.h>`` and
``<mach-o/stab.h>`` (Apple's "OS X ABI Mach-O File Format Reference"): the fat header and
its ``fat_arch``/``fat_arch_64`` slices, the Mach-O header, ``LC_SEGMENT(_64)`` and their
sections, ``LC_UUID``, ``LC_SYMTAB`` with its nlist entries and stabs, ``LC_FUNCTION_STARTS``,
``LC_BUILD_VERSION`` and ``LC_VERSION_MIN_*``. DWARF (of a dSYM, an object file, or a binary
that keeps it) lives in ``__DWARF,__debug_*`` sections and is read by the DWARF reader that
ELF uses, through :meth:`MachOFile.section_data`.

macholib parses the fat header, the Mach-O headers and every load command (its structures
stay inside this module). Hand-written here, because macholib does not give them: checks of
the slice table against the file (slices past its end or overlapping, which macholib accepts);
the nlist table and string table, read in one pass with every offset checked (macholib's
``SymbolTable`` builds one structure per entry and reads names past the table's end); the
ULEB128 deltas of ``LC_FUNCTION_STARTS``; the stabs of a debug map; and the arch names of
CPU types and subtypes. macholib reads every section's bytes when it parses a slice, so
opening a dSYM costs one read of its DWARF; :func:`read_uuids` reads only load commands, for
walks over many candidate files.
"""

from __future__ import annotations

import contextlib
import itertools
import mmap
import os
import platform
import struct
from bisect import bisect_right
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, NamedTuple

from symbolize.formats.errors import (
    InputLimitError,
    MalformedInputError,
    MissingDebugInfoError,
    SymbolizeError,
    UnsupportedFormatError,
)
from symbolize.formats.paired import paired_answers
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
    ReaderDefaults,
    SectionSource,
    Segment,
    Symbol,
)

if TYPE_CHECKING:
    from symbolize.formats.archive import ArchiveMember
    from symbolize.formats.dwarf import DwarfInfo
    from symbolize.formats.facts import Coverage, SectionFact
    from symbolize.formats.macho.debugmap import DebugMapSource

FAT_MAGIC = 0xCAFEBABE
FAT_MAGIC_64 = 0xCAFEBABF
MH_MAGIC = 0xFEEDFACE
MH_MAGIC_64 = 0xFEEDFACF
MH_CIGAM_64 = 0xCFFAEDFE
# A fat header shares its magic with Java class files, whose next word (a version) is >= 45;
# no universal file has that many slices (file(1) tells them apart the same way).
_MAX_FAT_SLICES = 30

MH_OBJECT = 0x1
MH_EXECUTE = 0x2
MH_DYLIB = 0x6
MH_BUNDLE = 0x8
MH_DSYM = 0xA
MH_PIE = 0x200000

LC_SEGMENT = 0x1
LC_SYMTAB = 0x2
LC_SEGMENT_64 = 0x19
LC_UUID = 0x1B
LC_VERSION_MIN_MACOSX = 0x24
LC_VERSION_MIN_IPHONEOS = 0x25
LC_FUNCTION_STARTS = 0x26
LC_VERSION_MIN_TVOS = 0x2F
LC_VERSION_MIN_WATCHOS = 0x30
LC_BUILD_VERSION = 0x32

# The most load commands a slice may list. ld64 writes one per segment, dylib and a few dozen
# more (tens to a few hundred); macholib builds ~2.8 KB of objects per command, so a header
# claiming a million (8 bytes each fit in 8 MB) took 85 s and 2.8 GB before this cap.
MAX_LOAD_COMMANDS = 1 << 14
LOAD_COMMAND_SIZE = 8

VM_PROT_EXECUTE = 0x4
S_ZEROFILL = 0x1
S_GB_ZEROFILL = 0xC
S_THREAD_LOCAL_ZEROFILL = 0x12
S_ATTR_PURE_INSTRUCTIONS = 0x80000000
S_ATTR_SOME_INSTRUCTIONS = 0x400

N_STAB = 0xE0
N_TYPE = 0x0E
N_SECT = 0x0E
N_EXT = 0x01
N_GSYM = 0x20
N_FUN = 0x24
N_STSYM = 0x26
N_BNSYM = 0x2E
N_SO = 0x64
N_OSO = 0x66
N_ENSYM = 0x4E

CPU_ARCH_ABI64 = 0x01000000
CPU_ARCH_ABI64_32 = 0x02000000
CPU_TYPE_X86 = 7
CPU_TYPE_ARM = 12
CPU_TYPE_POWERPC = 18
CPU_SUBTYPE_MASK = 0xFF000000
CPU_SUBTYPE_X86_64_H = 8
CPU_SUBTYPE_ARM64E = 2

_VERSION_MIN_PLATFORMS = {
    LC_VERSION_MIN_MACOSX: "macos",
    LC_VERSION_MIN_IPHONEOS: "ios",
    LC_VERSION_MIN_TVOS: "tvos",
    LC_VERSION_MIN_WATCHOS: "watchos",
}
# LC_BUILD_VERSION platforms (<mach-o/loader.h> PLATFORM_*).
_PLATFORMS = {
    1: "macos",
    2: "ios",
    3: "tvos",
    4: "watchos",
    5: "bridgeos",
    6: "maccatalyst",
    7: "ios-simulator",
    8: "tvos-simulator",
    9: "watchos-simulator",
    10: "driverkit",
    11: "visionos",
    12: "visionos-simulator",
}
# What platform.machine() calls the host's CPU, in Mach-O arch names.
_HOST_ARCHES = {"x86_64": "x86_64", "amd64": "x86_64", "arm64": "arm64", "aarch64": "arm64", "i386": "i386"}
# A Mach-O section name holds 16 bytes: "__debug_str_offsets" is stored as "__debug_str_offs".
_SECTION_NAME_SIZE = 16


# Every name arch_name gives a known CPU: what ``FILE:ARCH`` may end with.
ARCH_NAMES = frozenset(
    {"x86_64", "x86_64h", "arm64", "arm64e", "arm64_32", "i386", "arm", "armv7", "armv7s", "armv7k", "ppc", "ppc64"}
)


def arch_name(cputype: int, cpusubtype: int) -> str:
    """The name Apple's tools (lipo, llvm-symbolizer's ``FILE:ARCH``) give a CPU type and subtype."""
    subtype = cpusubtype & ~CPU_SUBTYPE_MASK
    if cputype == CPU_TYPE_X86 | CPU_ARCH_ABI64:
        return "x86_64h" if subtype == CPU_SUBTYPE_X86_64_H else "x86_64"
    if cputype == CPU_TYPE_ARM | CPU_ARCH_ABI64:
        return "arm64e" if subtype == CPU_SUBTYPE_ARM64E else "arm64"
    if cputype == CPU_TYPE_ARM | CPU_ARCH_ABI64_32:
        return "arm64_32"
    if cputype == CPU_TYPE_X86:
        return "i386"
    if cputype == CPU_TYPE_ARM:
        return {9: "armv7", 11: "armv7s", 12: "armv7k"}.get(subtype, "arm")
    if cputype == CPU_TYPE_POWERPC:
        return "ppc"
    if cputype == CPU_TYPE_POWERPC | CPU_ARCH_ABI64:
        return "ppc64"
    return f"cpu{cputype:#x}"


def host_arch() -> str:
    """The host's CPU as a Mach-O arch name ("" when it has none)."""
    return _HOST_ARCHES.get(platform.machine().lower(), "")


class Slice(NamedTuple):
    """One architecture of a file: the whole file when thin, one ``fat_arch`` when universal."""

    arch: str
    cputype: int
    cpusubtype: int
    file_offset: int
    size: int


class Section(NamedTuple):
    segment: str
    name: str
    vaddr: int
    size: int
    file_offset: int
    flags: int

    @property
    def has_instructions(self) -> bool:
        return bool(self.flags & (S_ATTR_PURE_INSTRUCTIONS | S_ATTR_SOME_INSTRUCTIONS))


class BuildVersion(NamedTuple):
    """The platform and versions a slice was built for (``LC_BUILD_VERSION`` or ``LC_VERSION_MIN_*``)."""

    platform: str
    min_os: str
    sdk: str


class Stab(NamedTuple):
    """One debugging symbol-table entry (``<mach-o/stab.h>``): ``n_type`` N_SO, N_OSO, N_FUN, ..."""

    n_type: int
    n_sect: int
    n_desc: int
    value: int
    name: str
    # Where the nlist entry sits in the file (a malformed debug map names it).
    file_offset: int


class _Nlist(NamedTuple):
    n_type: int
    n_sect: int
    n_desc: int
    value: int
    name: str
    file_offset: int


def _version_text(packed: int) -> str:
    """X.Y.Z packed as xxxx.yy.zz nibbles; ".Z" left out when 0."""
    major, minor, patch = packed >> 16, (packed >> 8) & 0xFF, packed & 0xFF
    return f"{major}.{minor}.{patch}" if patch else f"{major}.{minor}"


def _open_stream(path: Path) -> tuple[BinaryIO, int]:
    try:
        stream = path.open("rb")
        return stream, os.fstat(stream.fileno()).st_size
    except FileNotFoundError as err:
        raise MissingDebugInfoError("file not found", path) from err
    except OSError as err:
        raise SymbolizeError(f"cannot read file: {err.strerror or err}", path) from err


def _slice_table(path: Path, head: bytes, file_size: int) -> list[tuple[int, int, int, int]]:
    """(cputype, cpusubtype, file offset, size) of each slice of a universal file, checked.

    Raises MalformedInputError for a slice past the end of the file, slices that overlap, or
    a table that does not fit; UnsupportedFormatError for a Java class file.
    """
    magic, count = struct.unpack_from(">II", head)
    if count > _MAX_FAT_SLICES:
        raise UnsupportedFormatError(f"not a universal Mach-O file ({count} slices: a Java class file?)", path)
    entry = struct.Struct(">iiQQII" if magic == FAT_MAGIC_64 else ">iiIII")
    if 8 + count * entry.size > min(len(head), file_size):
        raise MalformedInputError(f"fat header ({count} slices) extends past end of file", path, 8)
    slices = []
    for position in range(count):
        cputype, cpusubtype, offset, size, *_align = entry.unpack_from(head, 8 + position * entry.size)
        where = 8 + position * entry.size
        if offset < 8 + count * entry.size or offset + size > file_size or size == 0:
            raise MalformedInputError(
                f"fat slice {position} [{offset:#x}, +{size:#x}) is outside the file", path, where
            )
        slices.append((cputype & 0xFFFFFFFF, cpusubtype & 0xFFFFFFFF, offset, size))
    ordered = sorted(slices, key=lambda item: item[2])
    for before, after in itertools.pairwise(ordered):
        if before[2] + before[3] > after[2]:
            raise MalformedInputError(f"fat slices at {before[2]:#x} and {after[2]:#x} overlap", path, 8)
    return slices


def list_slices(path: Path) -> list[Slice]:
    """The slices of ``path``: one for a thin Mach-O file, one per architecture for a universal one.

    Reads only the fat header and each slice's Mach-O header.
    """
    stream, file_size = _open_stream(path)
    with stream:
        head = stream.read(8 + _MAX_FAT_SLICES * 32)
        if len(head) < 8:
            raise MalformedInputError("truncated Mach-O header", path, 0)
        magic = struct.unpack_from(">I", head)[0]
        if magic in (FAT_MAGIC, FAT_MAGIC_64):
            return [
                Slice(arch_name(cputype, subtype), cputype, subtype, offset, size)
                for cputype, subtype, offset, size in _slice_table(path, head, file_size)
            ]
        return [_thin_slice(path, head, 0, file_size)]


def _thin_slice(path: Path, head: bytes, file_offset: int, size: int) -> Slice:
    """The one slice of a thin Mach-O file whose first bytes are ``head``, at ``file_offset``."""
    if len(head) < 4:
        raise MalformedInputError("truncated Mach-O header", path, file_offset)
    little = struct.unpack_from("<I", head)[0]
    order = "<" if little in (MH_MAGIC, MH_MAGIC_64) else ">"
    if struct.unpack_from(order + "I", head)[0] not in (MH_MAGIC, MH_MAGIC_64):
        raise UnsupportedFormatError("not a Mach-O file", path)
    if len(head) < 12:
        raise MalformedInputError("truncated Mach-O header", path, file_offset)
    cputype, subtype = struct.unpack_from(order + "II", head, 4)
    return Slice(arch_name(cputype, subtype), cputype, subtype, file_offset, size)


def member_slice(path: Path, member: ArchiveMember) -> Slice:
    """An archive member as the one slice of a thin Mach-O object (``lib.a(member.o)``)."""
    stream, _file_size = _open_stream(path)
    with stream:
        stream.seek(member.file_offset)
        head = stream.read(min(member.size, 32))
    try:
        return _thin_slice(path, head, member.file_offset, member.size)
    except UnsupportedFormatError as err:
        raise UnsupportedFormatError(f"archive member {member.name} is not a Mach-O file", path) from err


def choose_slice(path: Path, slices: Sequence[Slice], arch: str | None) -> Slice:
    """The slice named ``arch``; without one, the only slice, else the host's, else the first.

    Raises UnsupportedFormatError when no slice has that name (the message lists those that do).
    """
    if arch:
        for candidate in slices:
            if candidate.arch == arch:
                return candidate
        names = ", ".join(candidate.arch for candidate in slices)
        raise UnsupportedFormatError(f"no {arch} slice (the file holds {names})", path)
    if not slices:
        raise MalformedInputError("universal Mach-O file holds no slice", path, 0)
    host = host_arch()
    return next((candidate for candidate in slices if candidate.arch == host), slices[0])


def check_load_commands(path: Path, chosen: Slice, header_size: int, ncmds: int, sizeofcmds: int) -> None:
    """Refuse a header whose load commands cannot fit its slice (dyld's check: the header and
    ``sizeofcmds`` within the slice, and each command at least 8 bytes) or that lists more than
    :data:`MAX_LOAD_COMMANDS`; before anything is read per command."""
    if header_size + sizeofcmds > chosen.size:
        raise MalformedInputError("load commands extend past end of file", path, chosen.file_offset)
    if ncmds * LOAD_COMMAND_SIZE > sizeofcmds:
        raise MalformedInputError(
            f"{ncmds} load commands cannot fit in sizeofcmds {sizeofcmds} (8 bytes each at least)",
            path,
            chosen.file_offset,
        )
    if ncmds > MAX_LOAD_COMMANDS:
        raise InputLimitError(
            f"{ncmds} load commands, more than a Mach-O linker writes", path, chosen.file_offset,
            limit=MAX_LOAD_COMMANDS, unit="load commands",
        )


def read_uuids(path: Path) -> dict[str, DebugId]:
    """Arch -> LC_UUID of every slice of ``path``, reading only headers and load commands.

    For walks over many candidate files (dSYMs under a search path): no section is read.
    Raises SymbolizeError subclasses for files that are not Mach-O or are malformed.
    """
    found: dict[str, DebugId] = {}
    stream, _file_size = _open_stream(path)
    with stream:
        for chosen in list_slices(path):
            stream.seek(chosen.file_offset)
            header = stream.read(32)
            if len(header) < 28:
                raise MalformedInputError("truncated Mach-O header", path, chosen.file_offset)
            order = "<" if struct.unpack_from("<I", header)[0] in (MH_MAGIC, MH_MAGIC_64) else ">"
            magic, _cpu, _sub, _filetype, ncmds, sizeofcmds = struct.unpack_from(order + "IiiIII", header)
            header_size = 32 if magic == MH_MAGIC_64 else 28
            check_load_commands(path, chosen, header_size, ncmds, sizeofcmds)
            stream.seek(chosen.file_offset + header_size)
            commands = stream.read(sizeofcmds)
            position = 0
            for _ in range(ncmds):
                if position + 8 > len(commands):
                    raise MalformedInputError("load command extends past end of commands", path, position)
                cmd, cmdsize = struct.unpack_from(order + "II", commands, position)
                if cmdsize < 8 or position + cmdsize > len(commands):
                    raise MalformedInputError(f"load command size {cmdsize} is impossible", path, position)
                if cmd == LC_UUID and cmdsize >= 24:
                    found[chosen.arch] = DebugId(DebugIdKind.MACHO_UUID, commands[position + 8 : position + 24])
                    break
                position += cmdsize
    return found


class MachOFile(ReaderDefaults):
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
        self._nlists: list[_Nlist] | None = None
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
            self._file, file_size = _open_stream(path)
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
        header, commands = self._macholib_header()
        raw = header.header
        self.filetype = int(raw.filetype)
        self.flags = int(raw.flags)
        self.little_endian = header.endian == "<"
        # macholib's MH_MAGIC is the magic as read big-endian: MH_CIGAM_64 for a little-endian file.
        self.address_size = 8 if header.MH_MAGIC in (MH_MAGIC_64, MH_CIGAM_64) else 4
        self.position_dependent = self.filetype == MH_EXECUTE and not self.flags & MH_PIE
        self.fixed_load_address = self.position_dependent
        self._segments: list[Segment] = []
        self._sections: list[Section] = []
        self._section_bytes: dict[tuple[str, str], bytes] = {}
        self.debug_id: DebugId | None = None
        self.build_version: BuildVersion | None = None
        self._symtab: tuple[int, int, int, int] | None = None
        self._function_starts_at: tuple[int, int] | None = None
        for load, command, data in commands:
            cmd = int(load.cmd)
            if cmd in (LC_SEGMENT, LC_SEGMENT_64):
                self._add_segment(command, data)
            elif cmd == LC_UUID:
                self.debug_id = DebugId(DebugIdKind.MACHO_UUID, bytes(command.uuid))
            elif cmd == LC_SYMTAB:
                self._symtab = (int(command.symoff), int(command.nsyms), int(command.stroff), int(command.strsize))
            elif cmd == LC_FUNCTION_STARTS:
                self._function_starts_at = (int(command.dataoff), int(command.datasize))
            elif cmd == LC_BUILD_VERSION:
                platform_name = _PLATFORMS.get(int(command.platform), f"platform{int(command.platform)}")
                self.build_version = BuildVersion(
                    platform_name, _version_text(int(command.minos)), _version_text(int(command.sdk))
                )
            elif cmd in _VERSION_MIN_PLATFORMS and self.build_version is None:
                self.build_version = BuildVersion(
                    _VERSION_MIN_PLATFORMS[cmd], _version_text(int(command.version)), _version_text(int(command.sdk))
                )
        self._segments.sort(key=lambda segment: segment.vaddr)
        text = next((segment for segment in self._segments if segment.name == "__TEXT"), None)
        self.load_base = text.vaddr if text is not None else 0
        self._code_sections = sorted(
            (section for section in self._sections if section.has_instructions), key=lambda s: s.vaddr
        )

    def _macholib_header(self) -> tuple[Any, list[Any]]:
        """The macholib header of the chosen slice, its errors made ours."""
        from macholib.MachO import MachO

        assert self._file is not None
        parsed = MachO.__new__(MachO)
        parsed.graphident = parsed.filename = str(self.path)
        parsed.loader_path = str(self.path.parent)
        parsed.fat = None
        parsed.headers = []
        parsed.allow_unknown_load_commands = True
        self._file.seek(self.slice.file_offset)
        head = self._file.read(28)
        if len(head) == 28:
            order = "<" if struct.unpack_from("<I", head)[0] in (MH_MAGIC, MH_MAGIC_64) else ">"
            magic, *_, ncmds, sizeofcmds = struct.unpack_from(order + "IiiIII", head)
            if magic in (MH_MAGIC, MH_MAGIC_64):
                check_load_commands(self.path, self.slice, 32 if magic == MH_MAGIC_64 else 28, ncmds, sizeofcmds)
        try:
            # Only the chosen slice: the slice table was checked by list_slices.
            self._file.seek(0)
            parsed.load_header(self._file, self.slice.file_offset, self.slice.size)
        except (ValueError, OSError, struct.error, KeyError, IndexError, OverflowError) as err:
            raise self._fail(f"malformed Mach-O load commands: {err}", self.slice.file_offset) from err
        header = parsed.headers[0]
        if header.header.cputype != self.slice.cputype and self.slice.file_offset > 0:
            raise self._fail(f"slice header is not {self.arch}", self.slice.file_offset)
        return header, header.commands

    def _add_segment(self, command: Any, sections: Any) -> None:
        name = _text16(command.segname)
        self._segments.append(
            Segment(
                int(command.vmaddr),
                int(command.vmsize),
                int(command.fileoff),
                int(command.filesize),
                bool(int(command.initprot) & VM_PROT_EXECUTE),
                name,
            )
        )
        if not isinstance(sections, list):
            return
        for raw in sections:
            section = Section(
                _text16(raw.segname) or name,
                _text16(raw.sectname),
                int(raw.addr),
                int(raw.size),
                int(raw.offset),
                int(raw.flags),
            )
            self._sections.append(section)
            data = getattr(raw, "section_data", None)
            if isinstance(data, bytes) and section.flags & 0xFF not in (
                S_ZEROFILL,
                S_GB_ZEROFILL,
                S_THREAD_LOCAL_ZEROFILL,
            ):
                if len(data) != section.size:
                    raise self._fail(f"section {section.segment},{section.name} extends past end of file",
                                     self.slice.file_offset + section.file_offset)  # fmt: skip
                self._section_bytes.setdefault((section.segment, section.name), data)

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

    def _all_nlists(self) -> list[_Nlist]:
        if self._nlists is not None:
            return self._nlists
        nlists: list[_Nlist] = []
        if self._symtab is not None:
            symoff, nsyms, stroff, strsize = self._symtab
            order = "<" if self.little_endian else ">"
            layout = struct.Struct(order + ("IBBHQ" if self.address_size == 8 else "IBBHI"))
            table = self._read(symoff, nsyms * layout.size, "symbol table")
            strings = bytes(self._read(stroff, strsize, "string table"))
            for position, (n_strx, n_type, n_sect, n_desc, n_value) in enumerate(layout.iter_unpack(table)):
                nlists.append(
                    _Nlist(
                        n_type,
                        n_sect,
                        n_desc,
                        n_value,
                        _c_string(strings, n_strx),
                        self.slice.file_offset + symoff + position * layout.size,
                    )
                )
        self._nlists = nlists
        return nlists

    def stabs(self) -> list[Stab]:
        """The debugging entries of the symbol table, in table order (a debug map, when the linker kept one)."""
        return [Stab(*entry) for entry in self._all_nlists() if entry.n_type & N_STAB]

    def defined_symbols(self) -> list[Symbol]:
        """Every defined, non-debugging symbol (functions and data, any section), size 0, by address.

        The names as stored, leading ``_`` dropped: what a debug map or llvm-symbolizer's own
        symbol-size rule (the next symbol of any kind) works from.
        """
        found = [
            Symbol(entry.name[1:] if entry.name.startswith("_") else entry.name, entry.value, 0)
            for entry in self._all_nlists()
            if not entry.n_type & N_STAB and entry.n_type & N_TYPE == N_SECT and entry.name
        ]
        return sorted(found, key=lambda symbol: symbol.vaddr)

    def function_starts(self) -> list[int]:
        """Vaddrs listed by LC_FUNCTION_STARTS (ULEB128 deltas from the ``__TEXT`` vmaddr), sorted."""
        if self._function_starts_at is None:
            return []
        dataoff, datasize = self._function_starts_at
        data = self._read(dataoff, datasize, "function starts")
        starts = []
        address = self.load_base
        value = shift = 0
        for byte in data:
            value |= (byte & 0x7F) << shift
            shift += 7
            if byte & 0x80:
                if shift > 63:
                    raise self._fail("function start delta is too long", self.slice.file_offset + dataoff)
                continue
            if value == 0:
                break  # the table is padded with zeros to a word boundary
            address += value
            starts.append(address)
            value = shift = 0
        return starts

    def symbols(self) -> Sequence[Symbol]:
        """Function symbols (defined in a section holding instructions), by address, leading ``_`` dropped.

        A symbol's size reaches the next LC_FUNCTION_STARTS entry (or its section's end);
        without that table it is 0, and the symbol reaches the next symbol.
        """
        if self._symbols is None:
            starts = self.function_starts()
            found: dict[tuple[str, int], Symbol] = {}
            for entry in self._all_nlists():
                if entry.n_type & N_STAB or entry.n_type & N_TYPE != N_SECT or not entry.name:
                    continue
                if not 0 < entry.n_sect <= len(self._sections):
                    continue
                home = self._sections[entry.n_sect - 1]
                if not home.has_instructions or not home.vaddr <= entry.value < home.vaddr + max(home.size, 1):
                    continue
                size = 0
                if starts:
                    following = bisect_right(starts, entry.value)
                    end = starts[following] if following < len(starts) else home.vaddr + home.size
                    size = min(end, home.vaddr + home.size) - entry.value
                name = entry.name[1:] if entry.name.startswith("_") else entry.name
                found.setdefault((name, entry.value), Symbol(name, entry.value, max(size, 0)))
            self._symbols = sorted(found.values(), key=lambda symbol: (symbol.vaddr, symbol.name))
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

    def answer_regions(self) -> Sequence[AnswerRegion]:
        return self._answers().answer_regions()

    def answers(self, key: int) -> Sequence[AnswerRun]:
        return self._answers().answers(key)

    def frames_at(self, vaddr: int) -> list[Frame]:
        """Frames at ``vaddr``, innermost first: from DWARF (this file's, else its debug map's
        objects'), else from the symbol table; [] if none."""
        return self._answers().frames_at(vaddr)

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

    # --- facts for the auditor (formats/macho/coverage.py) -----------------------------

    def section_facts(self) -> tuple[SectionFact, ...]:
        from symbolize.formats.macho.coverage import macho_section_facts

        return macho_section_facts(self)

    def coverage(self) -> Coverage:
        """What the function symbols and the DWARF (or the debug map's) cover (see symbolize.formats.facts)."""
        from symbolize.formats.macho.coverage import macho_coverage

        return macho_coverage(self)


def _text16(value: Any) -> str:
    raw = value if isinstance(value, bytes) else str(value).encode("latin-1", "replace")
    return raw.split(b"\0", 1)[0].decode("utf-8", "surrogateescape")


def _c_string(table: bytes, offset: int) -> str:
    if offset >= len(table):
        return ""
    end = table.find(b"\0", offset)
    return table[offset : end if end >= 0 else len(table)].decode("utf-8", "surrogateescape")
