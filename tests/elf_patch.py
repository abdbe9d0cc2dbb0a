"""Damage one section of a real ELF fixture, for containment tests: the rest of the file stays as built.

Only the section header table is read (ELF64, little-endian: the fixtures' layout).
"""

from __future__ import annotations

import struct
from typing import NamedTuple

SHF_COMPRESSED = 0x800
ELFCOMPRESS_ZSTD = 2
_SHDR = struct.Struct("<IIQQQQIIQQ")


class SectionHeader(NamedTuple):
    index: int
    name: str
    header_offset: int
    flags: int
    offset: int
    size: int


def section_headers(data: bytes) -> dict[str, SectionHeader]:
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    raw = [_SHDR.unpack_from(data, shoff + index * shentsize) for index in range(shnum)]
    strings_offset = raw[shstrndx][4]
    found = {}
    for index, fields in enumerate(raw):
        start = strings_offset + fields[0]
        name = data[start : data.index(b"\0", start)].decode()
        found[name] = SectionHeader(index, name, shoff + index * shentsize, fields[2], fields[4], fields[5])
    return found


def with_bomb(data: bytes, name: str, claimed: int = 4 << 30) -> bytes:
    """``data`` with section ``name`` turned into a zstd SHF_COMPRESSED section claiming ``claimed`` bytes.

    The claim is refused before anything is inflated (formats/sections.py), so the stream's bytes
    (the section's old contents) are never read.
    """
    header = section_headers(data)[name]
    out = bytearray(data)
    struct.pack_into("<Q", out, header.header_offset + 8, header.flags | SHF_COMPRESSED)
    struct.pack_into("<IIQQ", out, header.offset, ELFCOMPRESS_ZSTD, 0, claimed, 1)
    return bytes(out)


def with_unit_ranges_moved(data: bytes, shift: int) -> bytes:
    """``data`` with every compile unit's address ranges (``.debug_ranges`` lists and
    ``.debug_aranges`` tuples, DWARF 4, 64-bit addresses) moved ``shift`` bytes up, away from its code.

    The units, their line tables and a split unit's DIEs stay as built: the debug info still
    describes the code, but no lookup can reach it through the units' ranges.
    """
    headers = section_headers(data)
    out = bytearray(data)
    ranges = headers[".debug_ranges"]
    for position in range(ranges.offset, ranges.offset + ranges.size - 15, 16):
        low, high = struct.unpack_from("<QQ", out, position)
        if low != high and low != 0xFFFFFFFFFFFFFFFF:  # not an end of list, empty entry or base selection
            struct.pack_into("<QQ", out, position, low + shift, high + shift)
    aranges = headers[".debug_aranges"]
    position = aranges.offset
    while position < aranges.offset + aranges.size:
        (length,) = struct.unpack_from("<I", out, position)
        tuples = position + 16  # the 12-byte header, padded to twice the address size
        for entry in range(tuples, position + 4 + length - 15, 16):
            low, size = struct.unpack_from("<QQ", out, entry)
            if low or size:
                struct.pack_into("<QQ", out, entry, low + shift, size)
        position += 4 + length
    return bytes(out)


def with_section_contents(data: bytes, name: str, contents: bytes) -> bytes:
    """``data`` with section ``name`` holding ``contents``, appended at the end of the file.

    For a section no segment loads (``.gnu_debuglink``, ``.gnu_debugaltlink``): only its header's
    offset and size change, so the new contents may be longer than the old.
    """
    header = section_headers(data)[name]
    out = bytearray(data)
    struct.pack_into("<QQ", out, header.header_offset + 24, len(out), len(contents))  # sh_offset, sh_size
    return bytes(out + contents)
