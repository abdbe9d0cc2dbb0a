"""What an open reads of each unit (formats/dwarf/info.py's unit table): the root entries of a
shared abbreviation table without parsing it whole, and .debug_ranges lists entry by entry, each
read as the reference reads it."""

from __future__ import annotations

import struct
from types import SimpleNamespace
from typing import Any, cast

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from symbolize.formats.dwarf.abbrev import lazy_abbrev_table, read_abbrev_table
from symbolize.formats.dwarf.ranges import _debug_ranges
from symbolize.formats.dwarf.reader import uint_reader
from symbolize.formats.dwarf.unit import Unit
from symbolize.formats.native import kernels

# Entries: (code, tag, has children, [(attribute, form)]); the codes 1 and 2 are compile units'
# roots (DW_TAG_compile_unit), 3 a subprogram, 2 given twice (the last one counts, as in a dict).
_ENTRIES = [
    (1, 0x11, True, [(0x03, 0x08), (0x11, 0x01)]),
    (2, 0x11, False, [(0x03, 0x0E)]),
    (3, 0x2E, False, [(0x03, 0x08)]),
    (2, 0x11, True, [(0x1B, 0x0E), (0x10, 0x17)]),
]


def _table() -> bytes:
    data = b""
    for code, tag, children, attributes in _ENTRIES:
        data += bytes([code, tag, int(children)]) + b"".join(bytes(pair) for pair in attributes) + b"\0\0"
    return data + b"\0"


@pytest.mark.skipif(kernels is None, reason="the lazy table is the compiled kernels' (the reference reads whole)")
@pytest.mark.parametrize("codes", [[1, 2], [2, 1], [1, 3, 2], [1, 1]])
def test_units_sharing_a_table_read_their_roots_without_parsing_it_whole(codes: list[int]) -> None:
    data = _table()
    whole, end = read_abbrev_table(data, 0)
    made = lazy_abbrev_table(data, 0, codes[0], {})
    assert made is not None and made[1] == end
    table = made[0]
    for code in codes[1:]:
        table.add_root(code)
    assert [table.get(code) for code in codes] == [whole[code] for code in codes]
    assert not table._filled
    assert table.get(4) is None and table._filled  # a code no root uses: the whole table read
    assert dict(table) == whole


def _reference(data: bytes, offset: int, size: int, little: bool, base: int) -> list[tuple[int, int]]:
    """.debug_ranges as read one address at a time (the reader before entries were read whole)."""
    read = uint_reader(size, little)
    ranges = []
    while True:
        start, end = read(data, offset), read(data, offset + size)
        offset += 2 * size
        if start == 0 and end == 0:
            return [(low, high) for low, high in ranges if high > low]
        if start == (1 << (8 * size)) - 1:
            base = end
        else:
            ranges.append((base + start, base + end))


def _outcome(read: Any) -> object:
    try:
        return read()
    except (struct.error, IndexError) as error:
        return f"{type(error).__name__}: {error}"


@settings(max_examples=300, deadline=None)
@given(size=st.sampled_from([2, 4, 8]), little=st.booleans(), base=st.integers(0, 1 << 16),
       entries=st.lists(st.tuples(st.sampled_from([0, 1, 5, -1]), st.integers(0, 9)), max_size=6),
       terminated=st.booleans(), cut=st.integers(0, 7), view=st.booleans())  # fmt: skip
def test_range_lists_read_as_address_by_address(
    size: int, little: bool, base: int, entries: list[tuple[int, int]], terminated: bool, cut: int, view: bool
) -> None:
    top = (1 << (8 * size)) - 1
    order = "little" if little else "big"
    data = b"".join(
        (top if start == -1 else start).to_bytes(size, order) + end.to_bytes(size, order) for start, end in entries
    )
    data += bytes(2 * size) if terminated else b""
    data = data[: len(data) - cut]  # a list the section's end cuts, or one without its end
    assume(len(data) >= 2 * size)  # a shorter one is refused before any read
    sections = SimpleNamespace(ranges=memoryview(data) if view else data, little_endian=little)
    read_addr = uint_reader(size, little)
    unit = cast(Unit, SimpleNamespace(sections=sections, read_addr=read_addr, addr_size=size, low_pc=base))
    assert _outcome(lambda: _debug_ranges(unit, 0)) == _outcome(lambda: _reference(data, 0, size, little, base))
