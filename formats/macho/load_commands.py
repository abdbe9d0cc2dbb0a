"""Mach-O load commands: the header of one slice, its segments and sections, and what else is read.

From ``<mach-o/loader.h>``: the ``mach_header(_64)``, and of its load commands
``LC_SEGMENT(_64)`` with their sections, ``LC_UUID``, ``LC_SYMTAB`` (where the symbol table is:
``symtab.py`` reads it), ``LC_FUNCTION_STARTS``, ``LC_BUILD_VERSION`` and ``LC_VERSION_MIN_*``.
macholib parses the header and every load command (its structures stay inside this module);
before it runs, the header's ``ncmds``/``sizeofcmds`` are checked against the slice, as dyld
checks them. macholib reads every section's bytes when it parses a slice, so opening a dSYM
costs one read of its DWARF; :func:`read_uuids` reads only load commands, for walks over many
candidate files.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any, BinaryIO, NamedTuple

from symbolize.formats.errors import InputLimitError, MalformedInputError
from symbolize.formats.macho.slices import MH_MAGIC, MH_MAGIC_64, Slice, list_slices, open_stream
from symbolize.formats.types import DebugId, DebugIdKind, Segment

MH_CIGAM_64 = 0xCFFAEDFE

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
SECTION_TYPE = 0xFF  # the section flags' type bits
ZEROFILL_TYPES = frozenset({S_ZEROFILL, S_GB_ZEROFILL, S_THREAD_LOCAL_ZEROFILL})

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

    @property
    def zero_fill(self) -> bool:
        """Whether its bytes are zeros made at load time, none of them in the file (``S_ZEROFILL``...)."""
        return self.flags & SECTION_TYPE in ZEROFILL_TYPES


class BuildVersion(NamedTuple):
    """The platform and versions a slice was built for (``LC_BUILD_VERSION`` or ``LC_VERSION_MIN_*``)."""

    platform: str
    min_os: str
    sdk: str


def _version_text(packed: int) -> str:
    """X.Y.Z packed as xxxx.yy.zz nibbles; ".Z" left out when 0."""
    major, minor, patch = packed >> 16, (packed >> 8) & 0xFF, packed & 0xFF
    return f"{major}.{minor}.{patch}" if patch else f"{major}.{minor}"


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
            f"{ncmds} load commands, more than a Mach-O linker writes",
            path,
            chosen.file_offset,
            limit=MAX_LOAD_COMMANDS,
            unit="load commands",
        )


class SliceHeader(NamedTuple):
    """What one slice's header and load commands say, read without macholib: its arch, where it
    starts in the file, its ``LC_UUID`` (None without one) and its segments as
    ``(segname, vmaddr, vmsize)``."""

    arch: str
    file_offset: int
    uuid: DebugId | None
    segments: tuple[tuple[str, int, int], ...]


_SEGMENT_FIELDS = {LC_SEGMENT: "16sII", LC_SEGMENT_64: "16sQQ"}


def read_slice_headers(path: Path) -> list[SliceHeader]:
    """Every slice of ``path`` as :class:`SliceHeader`, reading only headers and load commands.

    For walks over many files (dSYMs under a search path, a profile's mappings to stamp): no
    section is read. Raises SymbolizeError subclasses for files that are not Mach-O or are malformed.
    """
    found: list[SliceHeader] = []
    stream, _file_size = open_stream(path)
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
            uuid: DebugId | None = None
            segments: list[tuple[str, int, int]] = []
            position = 0
            for _ in range(ncmds):
                if position + 8 > len(commands):
                    raise MalformedInputError("load command extends past end of commands", path, position)
                cmd, cmdsize = struct.unpack_from(order + "II", commands, position)
                if cmdsize < 8 or position + cmdsize > len(commands):
                    raise MalformedInputError(f"load command size {cmdsize} is impossible", path, position)
                if cmd == LC_UUID and cmdsize >= 24 and uuid is None:
                    uuid = DebugId(DebugIdKind.MACHO_UUID, commands[position + 8 : position + 24])
                fields = _SEGMENT_FIELDS.get(cmd)
                if fields is not None and cmdsize >= 8 + struct.calcsize(order + fields):
                    name, vmaddr, vmsize = struct.unpack_from(order + fields, commands, position + 8)
                    segments.append((_text16(name), vmaddr, vmsize))
                position += cmdsize
            found.append(SliceHeader(chosen.arch, chosen.file_offset, uuid, tuple(segments)))
    return found


def read_uuids(path: Path) -> dict[str, DebugId]:
    """Arch -> LC_UUID of every slice of ``path`` that has one (:func:`read_slice_headers`)."""
    return {header.arch: header.uuid for header in read_slice_headers(path) if header.uuid is not None}


class LoadCommands(NamedTuple):
    """What the load commands of one slice say (offsets from the start of the slice)."""

    filetype: int
    flags: int
    little_endian: bool
    address_size: int
    segments: list[Segment]  # by vaddr
    sections: list[Section]  # in load-command order: an nlist's n_sect counts from 1 in it
    section_bytes: dict[tuple[str, str], bytes]  # (segment, section) -> bytes, for sections with bytes
    uuid: DebugId | None
    build_version: BuildVersion | None
    symtab: tuple[int, int, int, int] | None  # symoff, nsyms, stroff, strsize
    function_starts: tuple[int, int] | None  # dataoff, datasize


def parse_load_commands(path: Path, stream: BinaryIO, chosen: Slice) -> LoadCommands:
    """The load commands of slice ``chosen`` of ``path`` (open as ``stream``), checked.

    Raises MalformedInputError for commands that do not fit the slice or that macholib cannot
    parse, InputLimitError for more commands than a linker writes.
    """
    header, commands = _macholib_header(path, stream, chosen)
    raw = header.header
    segments: list[Segment] = []
    sections: list[Section] = []
    section_bytes: dict[tuple[str, str], bytes] = {}
    uuid: DebugId | None = None
    build_version: BuildVersion | None = None
    symtab: tuple[int, int, int, int] | None = None
    function_starts: tuple[int, int] | None = None
    for load, command, data in commands:
        cmd = int(load.cmd)
        if cmd in (LC_SEGMENT, LC_SEGMENT_64):
            _add_segment(path, chosen, command, data, segments, sections, section_bytes)
        elif cmd == LC_UUID:
            uuid = DebugId(DebugIdKind.MACHO_UUID, bytes(command.uuid))
        elif cmd == LC_SYMTAB:
            symtab = (int(command.symoff), int(command.nsyms), int(command.stroff), int(command.strsize))
        elif cmd == LC_FUNCTION_STARTS:
            function_starts = (int(command.dataoff), int(command.datasize))
        elif cmd == LC_BUILD_VERSION:
            platform_name = _PLATFORMS.get(int(command.platform), f"platform{int(command.platform)}")
            build_version = BuildVersion(
                platform_name,
                _version_text(int(command.minos)),
                _version_text(int(command.sdk)),
            )
        elif cmd in _VERSION_MIN_PLATFORMS and build_version is None:
            build_version = BuildVersion(
                _VERSION_MIN_PLATFORMS[cmd], _version_text(int(command.version)), _version_text(int(command.sdk))
            )
    segments.sort(key=lambda segment: segment.vaddr)
    return LoadCommands(
        filetype=int(raw.filetype),
        flags=int(raw.flags),
        little_endian=header.endian == "<",
        # macholib's MH_MAGIC is the magic as read big-endian: MH_CIGAM_64 for a little-endian file.
        address_size=8 if header.MH_MAGIC in (MH_MAGIC_64, MH_CIGAM_64) else 4,
        segments=segments,
        sections=sections,
        section_bytes=section_bytes,
        uuid=uuid,
        build_version=build_version,
        symtab=symtab,
        function_starts=function_starts,
    )


def _macholib_header(path: Path, stream: BinaryIO, chosen: Slice) -> tuple[Any, list[Any]]:
    """The macholib header of the chosen slice, its errors made ours."""
    from macholib.MachO import MachO

    parsed = MachO.__new__(MachO)
    parsed.graphident = parsed.filename = str(path)
    parsed.loader_path = str(path.parent)
    parsed.fat = None
    parsed.headers = []
    parsed.allow_unknown_load_commands = True
    stream.seek(chosen.file_offset)
    head = stream.read(28)
    if len(head) == 28:
        order = "<" if struct.unpack_from("<I", head)[0] in (MH_MAGIC, MH_MAGIC_64) else ">"
        magic, *_, ncmds, sizeofcmds = struct.unpack_from(order + "IiiIII", head)
        if magic in (MH_MAGIC, MH_MAGIC_64):
            check_load_commands(path, chosen, 32 if magic == MH_MAGIC_64 else 28, ncmds, sizeofcmds)
    try:
        # Only the chosen slice: the slice table was checked by list_slices.
        stream.seek(0)
        parsed.load_header(stream, chosen.file_offset, chosen.size)
    except (ValueError, OSError, struct.error, KeyError, IndexError, OverflowError) as err:
        raise MalformedInputError(f"malformed Mach-O load commands: {err}", path, chosen.file_offset) from err
    header = parsed.headers[0]
    if header.header.cputype != chosen.cputype and chosen.file_offset > 0:
        raise MalformedInputError(f"slice header is not {chosen.arch}", path, chosen.file_offset)
    return header, header.commands


def _add_segment(
    path: Path,
    chosen: Slice,
    command: Any,
    raw_sections: Any,
    segments: list[Segment],
    sections: list[Section],
    section_bytes: dict[tuple[str, str], bytes],
) -> None:
    """One ``LC_SEGMENT(_64)``: its segment, its sections, and the bytes of those that have some."""
    name = _text16(command.segname)
    segments.append(
        Segment(
            int(command.vmaddr),
            int(command.vmsize),
            int(command.fileoff),
            int(command.filesize),
            bool(int(command.initprot) & VM_PROT_EXECUTE),
            name,
        )
    )
    if not isinstance(raw_sections, list):
        return
    for raw in raw_sections:
        section = Section(
            _text16(raw.segname) or name,
            _text16(raw.sectname),
            int(raw.addr),
            int(raw.size),
            int(raw.offset),
            int(raw.flags),
        )
        sections.append(section)
        data = getattr(raw, "section_data", None)
        if isinstance(data, bytes) and not section.zero_fill:
            if len(data) != section.size:
                raise MalformedInputError(f"section {section.segment},{section.name} extends past end of file",
                                          path, chosen.file_offset + section.file_offset)  # fmt: skip
            section_bytes.setdefault((section.segment, section.name), data)


def _text16(value: Any) -> str:
    raw = value if isinstance(value, bytes) else str(value).encode("latin-1", "replace")
    return raw.split(b"\0", 1)[0].decode("utf-8", "surrogateescape")
