"""Address range lists: ``.debug_ranges`` (DWARF 4, 2.17.3) and ``.debug_rnglists`` (DWARF 5, 2.17.3, 7.25)."""

from __future__ import annotations

import struct

from symbolize.formats.dwarf import constants as c
from symbolize.formats.dwarf.reader import DwarfFormatError, read_uleb
from symbolize.formats.dwarf.unit import Unit

Ranges = list[tuple[int, int]]


def decode_ranges(unit: Unit, form: int, value: int) -> Ranges:
    """The ranges a ``DW_AT_ranges`` attribute names, empty ones dropped.

    A range that ends past the container's last address (a base plus an offset can) ends at
    that address, so every bound fits the unsigned arrays the index stores.
    """
    if unit.version >= 5:
        offset = _rnglistx_offset(unit, value) if form == c.DW_FORM_rnglistx else value
        ranges = _rnglist(unit, offset)
    else:
        ranges = _debug_ranges(unit, value + unit.ranges_base)
    return clamp_ranges(ranges, unit.sections.last_address)


def clamp_ranges(ranges: Ranges, last_address: int) -> Ranges:
    """``ranges`` ending at ``last_address`` at the latest, the ones left empty dropped."""
    if all(high <= last_address for _, high in ranges):
        return ranges
    clamped = [(low, min(high, last_address)) for low, high in ranges]
    return [(low, high) for low, high in clamped if high > low]


def _rnglistx_offset(unit: Unit, index: int) -> int:
    data = unit.sections.rnglists
    position = unit.rnglists_base + index * unit.offset_size
    if position + unit.offset_size > len(data):
        raise DwarfFormatError(f"range list index {index:d} outside .debug_rnglists")
    return unit.rnglists_base + unit.read_offset(data, position)


def _rnglist(unit: Unit, offset: int) -> Ranges:
    data = unit.sections.rnglists
    read_addr = unit.read_addr
    size = unit.addr_size
    base = unit.low_pc
    ranges: Ranges = []
    if offset >= len(data):
        raise DwarfFormatError(f"range list offset {offset:#x} outside .debug_rnglists")
    while True:
        kind = data[offset]
        offset += 1
        if kind == c.DW_RLE_end_of_list:
            return [(low, high) for low, high in ranges if high > low]
        if kind == c.DW_RLE_offset_pair:
            start, offset = read_uleb(data, offset)
            end, offset = read_uleb(data, offset)
            ranges.append((base + start, base + end))
        elif kind == c.DW_RLE_base_address:
            base = read_addr(data, offset)
            offset += size
        elif kind == c.DW_RLE_base_addressx:
            index, offset = read_uleb(data, offset)
            base = unit.address(c.DW_FORM_addrx, index)
        elif kind == c.DW_RLE_startx_endx:
            start, offset = read_uleb(data, offset)
            end, offset = read_uleb(data, offset)
            ranges.append((unit.address(c.DW_FORM_addrx, start), unit.address(c.DW_FORM_addrx, end)))
        elif kind == c.DW_RLE_startx_length:
            start, offset = read_uleb(data, offset)
            length, offset = read_uleb(data, offset)
            low = unit.address(c.DW_FORM_addrx, start)
            ranges.append((low, low + length))
        elif kind == c.DW_RLE_start_end:
            low = read_addr(data, offset)
            high = read_addr(data, offset + size)
            offset += 2 * size
            ranges.append((low, high))
        elif kind == c.DW_RLE_start_length:
            low = read_addr(data, offset)
            length, offset = read_uleb(data, offset + size)
            ranges.append((low, low + length))
        else:
            raise DwarfFormatError(f"unknown range list entry kind {kind:#x}")


# (address size, little endian) -> a .debug_ranges entry's two addresses, read in one call: an open
# reads every unit's list (a large Rust binary's: ~7,000 entries), two calls each cost it ~15M
# instructions more.
_ENTRIES = {
    (size, little): struct.Struct(("<" if little else ">") + code * 2)
    for size, code in ((2, "H"), (4, "I"), (8, "Q"))
    for little in (True, False)
}


def _debug_ranges(unit: Unit, offset: int) -> Ranges:
    data = unit.sections.ranges
    read_addr = unit.read_addr
    size = unit.addr_size
    entry = _ENTRIES.get((size, unit.sections.little_endian))
    base_selector = (1 << (8 * size)) - 1
    base = unit.low_pc
    ranges: Ranges = []
    if offset + 2 * size > len(data):
        raise DwarfFormatError(f"range list offset {offset:#x} outside .debug_ranges")
    while True:
        if entry is not None and offset + 2 * size <= len(data):
            start, end = entry.unpack_from(data, offset)
        else:  # an entry cut by the section's end raises as reading its addresses one by one does
            start, end = read_addr(data, offset), read_addr(data, offset + size)
        offset += 2 * size
        if start == 0 and end == 0:
            return [(low, high) for low, high in ranges if high > low]
        if start == base_selector:
            base = end
        else:
            ranges.append((base + start, base + end))
