"""``.debug_aranges`` read for some units only (formats/dwarf/aranges.py): the sets of the other
units are skipped, never their checks, so what is read and what is raised are the same."""

from __future__ import annotations

import struct

from hypothesis import given, settings
from hypothesis import strategies as st

from symbolize.formats.dwarf.aranges import iter_aranges

# A set: (its unit's offset, its address size, its (low, length) tuples).
_SETS = st.lists(
    st.tuples(
        st.sampled_from([0, 0x40, 0x80]),
        st.sampled_from([4, 8, 3]),  # 3: a size no set may have (the read raises there)
        st.lists(st.tuples(st.integers(0, 0xFFFF), st.integers(0, 0xFF)), max_size=4),
    ),
    max_size=5,
)


def _section(sets: list[tuple[int, int, list[tuple[int, int]]]], little: bool) -> bytes:
    order = "<" if little else ">"
    data = b""
    for unit_offset, address_size, tuples in sets:
        header = struct.pack(order + "HIBB", 2, unit_offset, address_size, 0)
        body = header + b"\0" * (-(4 + len(header)) % (2 * address_size))
        for low, length in [*tuples, (0, 0)]:
            body += low.to_bytes(address_size, "little" if little else "big")
            body += length.to_bytes(address_size, "little" if little else "big")
        data += struct.pack(order + "I", len(body)) + body
    return data


def _read(data: bytes, little: bool, units: set[int] | None) -> tuple[list[tuple[int, int, int]], str | None]:
    read: list[tuple[int, int, int]] = []
    try:
        for entry in iter_aranges(data, little, units):
            read.append(entry)
    except Exception as error:  # what is raised is what is compared
        return read, f"{type(error).__name__}: {error}"
    return read, None


@settings(max_examples=300, deadline=None)
@given(sets=_SETS, units=st.sets(st.sampled_from([0, 0x40, 0x80])), little=st.booleans(),
       cut=st.integers(0, 8))  # fmt: skip
def test_the_sets_of_some_units_read_as_from_all(
    sets: list[tuple[int, int, list[tuple[int, int]]]], units: set[int], little: bool, cut: int
) -> None:
    data = _section(sets, little)
    data = data[: len(data) - cut]  # and a section that ends inside its last set
    every, every_error = _read(data, little, None)
    some, some_error = _read(data, little, units)
    assert some == [entry for entry in every if entry[0] in units]
    assert some_error == every_error
