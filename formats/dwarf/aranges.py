"""``.debug_aranges`` (DWARF 5, 6.1.2): which unit covers which addresses."""

from __future__ import annotations

from collections.abc import Container, Iterator

from symbolize.formats.dwarf.reader import DwarfFormatError, read_initial_length, uint_reader


def iter_aranges(
    data: bytes, little_endian: bool = True, units: Container[int] | None = None
) -> Iterator[tuple[int, int, int]]:
    """Yield (unit offset in .debug_info, low address, length) for every tuple of every set, or of
    the sets of ``units`` (unit offsets) alone: the others' headers are read and checked as
    always, their tuples skipped (an open asks for the few units whose DIEs give no ranges, and
    a large Rust binary's sets hold thousands of tuples)."""
    offset = 0
    while offset + 4 <= len(data):
        offset_size, position, end = read_initial_length(data, offset, little_endian, "address range set")
        position += 2  # version
        unit_offset = uint_reader(offset_size, little_endian)(data, position)
        position += offset_size
        address_size = data[position]
        segment_size = data[position + 1]
        position += 2
        if address_size not in (2, 4, 8):
            raise DwarfFormatError(f"address range set at {offset:#x} has address size {address_size}")
        tuple_size = 2 * address_size + segment_size
        if units is not None and unit_offset not in units:
            offset = end
            continue
        # Tuples start at a multiple of their size from the set's start.
        position += (-(position - offset)) % tuple_size
        read_address = uint_reader(address_size, little_endian)
        while position + tuple_size <= end:
            low = read_address(data, position + segment_size)
            size = read_address(data, position + segment_size + address_size)
            position += tuple_size
            if low == 0 and size == 0:
                break
            yield unit_offset, low, size
        offset = end
