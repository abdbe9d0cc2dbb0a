"""Abbreviation tables parsed with and without the entries of earlier tables remembered by their bytes.

``parse_abbrev_table`` may answer an entry from ``shapes`` (the tables a file's
units read before); whatever the tables hold, the answer must be the one a
parse from nothing gives.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from symbolize.formats.dwarf import constants as c
from symbolize.formats.dwarf.abbrev import ShapeBytes, lazy_abbrev_table, parse_abbrev_table, read_abbrev_table
from symbolize.formats.native import kernels
from tests.dwarf_builder import sleb, uleb

# Small numbers, numbers past one LEB128 byte, and the forms that change how an entry is laid out.
_DW_TAG_variable = 0x34
_NUMBERS = st.one_of(st.integers(min_value=1, max_value=0x7F), st.integers(min_value=0x80, max_value=0x3FFF))
_FORMS = st.one_of(st.sampled_from([c.DW_FORM_implicit_const, c.DW_FORM_data1, c.DW_FORM_strp, 0]), _NUMBERS)


@st.composite
def _entry(draw: st.DrawFn) -> bytes:
    """One entry after its code: tag, children flag, attributes (some implicit constants, often 0)."""
    entry = bytearray(uleb(draw(st.one_of(_NUMBERS, st.just(0)))) + bytes([draw(st.sampled_from([0, 1]))]))
    for _ in range(draw(st.integers(min_value=0, max_value=4))):
        attribute = draw(st.one_of(_NUMBERS, st.just(0)))
        form = draw(_FORMS)
        if attribute == 0 and form == 0:
            form = c.DW_FORM_data1
        entry += uleb(attribute) + uleb(form)
        if form == c.DW_FORM_implicit_const:
            entry += sleb(draw(st.sampled_from([0, 1, -1, 300])))
    return bytes(entry + b"\x00\x00")


@settings(max_examples=150, deadline=None)
@given(
    entries=st.lists(_entry(), min_size=1, max_size=6),
    tables=st.lists(st.lists(st.tuples(st.integers(min_value=1, max_value=300), st.integers(min_value=0)),
                             max_size=8), min_size=1, max_size=4),
)
def test_remembered_entries_parse_as_from_nothing(entries: list[bytes], tables: list[list[tuple[int, int]]]) -> None:
    # Several tables drawing on one pool of entries under various codes, as a file's units do.
    section = bytearray()
    offsets = []
    for table in tables:
        offsets.append(len(section))
        for code, pick in table:
            section += uleb(code) + entries[pick % len(entries)]
        section += b"\x00"
    data = bytes(section)
    shapes: ShapeBytes = {}
    for offset in offsets:
        assert parse_abbrev_table(data, offset, shapes) == parse_abbrev_table(data, offset)


def test_an_implicit_constant_of_zero_last_is_not_taken_for_the_end() -> None:
    # The first two zero bytes of this entry are the constant and the first byte of its terminator.
    entry = uleb(_DW_TAG_variable) + b"\x00" + uleb(c.DW_AT_decl_file) + uleb(c.DW_FORM_implicit_const) + b"\x00"
    entry += b"\x00\x00"
    other = uleb(_DW_TAG_variable) + b"\x00" + uleb(c.DW_AT_decl_file) + uleb(c.DW_FORM_data1) + b"\x00\x00"
    data = b"\x01" + entry + b"\x02" + other + b"\x03" + entry + b"\x00"
    shapes: ShapeBytes = {}
    first = parse_abbrev_table(data, 0, shapes)
    assert first == parse_abbrev_table(data, 0, shapes) == parse_abbrev_table(data, 0)
    assert sorted(first) == [1, 2, 3]


# Codes a unit's root may name: small ones, and ones past 64 bits (which the compiled walk cannot hold).
_CODES = st.one_of(st.integers(min_value=1, max_value=300), st.integers(min_value=2**64, max_value=2**70))


@settings(max_examples=150, deadline=None)
@given(
    entries=st.lists(_entry(), min_size=1, max_size=6),
    table=st.lists(st.tuples(_CODES, st.integers(min_value=0)), max_size=8),
    root_code=_CODES,
    cut=st.integers(min_value=0, max_value=40),
)
def test_a_lazy_table_reads_as_the_whole_table(
    entries: list[bytes], table: list[tuple[int, int]], root_code: int, cut: int
) -> None:
    # Where the compiled kernels run, an open reads each unit's root entry alone (LazyAbbrevTable):
    # it must end where the whole parse ends, answer the root code as the whole table does (the last
    # entry of a code repeated), read as the whole table once used past it, and leave a table the
    # whole parse fails on (one cut short) to that parse.
    if kernels is None:
        pytest.skip("the lazy table is made where the compiled kernels run")
    section = b"".join(uleb(code) + entries[pick % len(entries)] for code, pick in table) + b"\x00"
    for data in (section, section[: max(0, len(section) - cut)]):
        try:
            whole, end = read_abbrev_table(data, 0, {})
        except IndexError:
            whole = None
        lazy = lazy_abbrev_table(data, 0, root_code, {})
        if root_code >> 64:
            assert lazy is None  # left to the whole parse, which answers it as any other code
        if whole is None:
            assert lazy is None
            continue
        if lazy is None:
            continue  # left to the whole parse, as the compiled twin leaves it (a number past 64 bits)
        table_read, lazy_end = lazy
        assert lazy_end == end
        assert table_read.get(root_code) == whole.get(root_code)
        assert not table_read._filled or root_code not in whole
        assert dict(table_read.items()) == whole
        assert len(table_read) == len(whole) and sorted(table_read) == sorted(whole)
