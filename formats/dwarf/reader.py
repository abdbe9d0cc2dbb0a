"""Primitive decoding of DWARF data: LEB128 numbers, fixed-width integers, C strings.

Hand-written rather than pyelftools' struct engine because these run once per
attribute on the hot path (see ``formats/dwarf/info.py``). Every function takes
the section bytes and an offset and returns ``(value, next_offset)``; callers
catch IndexError/struct.error at a unit boundary and turn them into
MalformedInputError there, which keeps the inner loops free of checks.
"""

from __future__ import annotations

import struct
from collections.abc import Callable

_U16 = struct.Struct("<H").unpack_from
_U32 = struct.Struct("<I").unpack_from
_U64 = struct.Struct("<Q").unpack_from
_U16_BE = struct.Struct(">H").unpack_from
_U32_BE = struct.Struct(">I").unpack_from
_U64_BE = struct.Struct(">Q").unpack_from

# What they read: a section as bytes, or a view of a file's mapping (formats/dwarf/sections.py);
# indexing and struct's unpack_from read both alike.
Data = bytes | memoryview
UIntReader = Callable[[Data, int], int]
# uint_reader's functions by (size, little endian).
_MADE_READERS: dict[tuple[int, bool], UIntReader] = {}


class DwarfFormatError(Exception):
    """Internal: the data is inconsistent; DwarfInfo turns it into MalformedInputError."""


def read_uleb(data: Data, offset: int) -> tuple[int, int]:
    byte = data[offset]
    if byte < 0x80:
        return byte, offset + 1
    result = byte & 0x7F
    shift = 7
    while True:
        offset += 1
        byte = data[offset]
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, offset + 1
        shift += 7


def read_sleb(data: Data, offset: int) -> tuple[int, int]:
    result = 0
    shift = 0
    while True:
        byte = data[offset]
        offset += 1
        result |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            if byte & 0x40:
                result -= 1 << shift
            return result, offset


def uint_reader(size: int, little_endian: bool = True) -> UIntReader:
    """A function reading an unsigned integer of ``size`` bytes (1, 2, 3, 4 or 8) at an offset.

    Made once per (size, byte order) and shared: every unit asks for seven (``Unit``), and an open
    of a file reads every unit's header (libpython: 146 units, ~1,000 readers made anew each time).
    """
    found = _MADE_READERS.get((size, little_endian))
    if found is None:
        found = _MADE_READERS[size, little_endian] = _make_uint_reader(size, little_endian)
    return found


def _make_uint_reader(size: int, little_endian: bool) -> UIntReader:
    if size == 1:
        return lambda data, offset: data[offset]
    if size == 3:
        if little_endian:
            return lambda data, offset: data[offset] | data[offset + 1] << 8 | data[offset + 2] << 16
        return lambda data, offset: data[offset] << 16 | data[offset + 1] << 8 | data[offset + 2]
    unpack = {2: _U16, 4: _U32, 8: _U64}[size] if little_endian else {2: _U16_BE, 4: _U32_BE, 8: _U64_BE}[size]
    return lambda data, offset: unpack(data, offset)[0]


def read_initial_length(data: Data, offset: int, little_endian: bool, what: str) -> tuple[int, int, int]:
    """The header every DWARF unit, line program and table set starts with (DWARF 5, 7.4).

    Returns (offset size: 4 or 8, offset of the contents, offset one past the end); raises
    DwarfFormatError when the length is reserved or runs past the section.
    """
    if offset + 4 > len(data):
        raise DwarfFormatError(f"{what} at {offset:#x} starts past the end of its section")
    length = _U32(data, offset)[0] if little_endian else _U32_BE(data, offset)[0]
    if length == 0xFFFFFFFF:
        if offset + 12 > len(data):
            raise DwarfFormatError(f"{what} at {offset:#x} is truncated")
        length = _U64(data, offset + 4)[0] if little_endian else _U64_BE(data, offset + 4)[0]
        contents, offset_size = offset + 12, 8
    elif length >= 0xFFFFFFF0:
        raise DwarfFormatError(f"{what} at {offset:#x} has reserved length {length:#x}")
    else:
        contents, offset_size = offset + 4, 4
    end = contents + length
    if end > len(data):
        raise DwarfFormatError(f"{what} at {offset:#x} claims {length} bytes, past the end of its section")
    return offset_size, contents, end
