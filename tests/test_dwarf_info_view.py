"""``.debug_info`` read in place at open (formats/dwarf/sections.py, DwarfInfo._prepare_unit).

Where the compiled source answers, an ELF file's ``.debug_info`` reaches the Python reader as a
view of the mapping: the unit headers and root DIEs are read from it, and the section is copied
to bytes only when the Python reader decodes a unit's DIEs. A cold lookup in libpython copied its
9.2 MB for 146 unit headers. These check that the view stays a view through an open, that the
copy, once made, serves every unit, and that reading from a view gives what reading from bytes
gives: the same units, names and ranges, and the same errors where a root DIE runs off the section
(an IndexError reads differently from a view).
"""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from symbolize.formats.dwarf import DwarfInfo
from symbolize.formats.dwarf import constants as c
from symbolize.formats.elf.file import ElfFile
from symbolize.formats.native import kernels
from tests.dwarf_builder import Function, abbrev_table, compile_unit, getter, uleb
from tests.fixtures_data import ROOT

BINARY = ROOT / "fixtures" / "bin" / "cppdemo-gcc-dwarf5-pie"


def _viewed(sections: dict[str, bytes]):  # type: ignore[no-untyped-def]
    return lambda name: memoryview(sections[name]) if name in sections else None


def _units(info: DwarfInfo) -> list[tuple[object, ...]]:
    return [
        (s.unit.offset, s.unit.name, s.unit.comp_dir, s.unit.low_pc, s.unit.stmt_list, s.error)
        for s in info._load_units()
    ]


@pytest.mark.skipif(kernels is None, reason="the view is taken where the compiled source answers")
def test_open_reads_the_unit_headers_from_the_mapping_and_copies_on_first_decode() -> None:
    with ElfFile(BINARY) as elf:
        dwarf = elf._dwarf_info()
        assert dwarf is not None
        sections = dwarf._sections
        assert sections is not None and isinstance(sections.info, memoryview)
        assert sections.rnglists and isinstance(sections.rnglists, memoryview)
        states = dwarf._load_units()
        assert all(state.unit.sections is sections for state in states)
        reference = DwarfInfo(elf.section_data, elf.path)  # no views: every section as bytes
        assert _units(dwarf) == _units(reference)
        assert dwarf._unit_ranges == reference._unit_ranges

        assert dwarf._ensure_decoded(states[0])
        copied = dwarf._sections
        assert copied is not None
        assert isinstance(copied.info, bytes) and copied.info == bytes(sections.info)
        assert isinstance(copied.rnglists, bytes) and copied.rnglists == bytes(sections.rnglists)
        assert all(state.unit.sections is copied for state in states)
        del sections, copied, states, dwarf, reference


def _sections(info: bytes) -> dict[str, bytes]:
    return {"debug_info": info, "debug_abbrev": abbrev_table()}


def test_a_root_die_with_an_inline_string_is_read_from_bytes() -> None:
    # dwarf_builder's root DIEs carry DW_FORM_string names: a slice the reader keeps as bytes.
    sections = _sections(
        compile_unit("a.c", [Function("f", 0x1000, 0x10)]) + compile_unit("b.c", [Function("g", 0x2000, 8)])
    )
    viewed = DwarfInfo(getter(sections), Path("t"), views=_viewed(sections))
    plain = DwarfInfo(getter(sections), Path("t"))
    assert _units(viewed) == _units(plain)
    assert [state.unit.name for state in viewed._load_units()] == ["a.c", "b.c"]
    assert viewed._sections is not None and isinstance(viewed._sections.info, bytes)


def _numbers_only_unit(cut: int) -> dict[str, bytes]:
    """One DWARF 4 unit whose root DIE (low_pc addr, high_pc data4) holds numbers alone, its last
    ``cut`` bytes missing from the section though the unit's length agrees with it."""
    abbrev = uleb(1) + uleb(c.DW_TAG_compile_unit) + b"\x00"
    abbrev += uleb(c.DW_AT_low_pc) + uleb(c.DW_FORM_addr) + uleb(c.DW_AT_high_pc) + uleb(c.DW_FORM_data4)
    abbrev += b"\x00\x00\x00"
    body = uleb(1) + struct.pack("<QI", 0x1000, 0x40)
    body = body[: len(body) - cut]
    header = struct.pack("<HIB", 4, 0, 8)
    return {"debug_info": struct.pack("<I", len(header) + len(body)) + header + body, "debug_abbrev": abbrev}


def _read_both_ways(sections: dict[str, bytes]) -> tuple[DwarfInfo, DwarfInfo]:
    """``sections`` read through views and from bytes, checked to give the same units and ranges."""
    viewed = DwarfInfo(getter(sections), Path("t"), views=_viewed(sections))
    plain = DwarfInfo(getter(sections), Path("t"))
    assert _units(viewed) == _units(plain)
    assert viewed._unit_ranges == plain._unit_ranges
    return viewed, plain


@pytest.mark.parametrize("cut", [0, 2, 4, 12, 13])
def test_a_root_die_read_from_a_view_answers_and_fails_as_from_bytes(cut: int) -> None:
    sections = _numbers_only_unit(cut)
    viewed, _plain = _read_both_ways(sections)
    if cut == 0:
        assert viewed._unit_ranges == [(0x1000, 0x1040, 0)]
        assert viewed._sections is not None and isinstance(viewed._sections.info, memoryview)
    else:
        assert viewed._load_units()[0].error is not None


def _unit_with_ranges(rnglists: bytes) -> dict[str, bytes]:
    """One DWARF 5 unit whose root DIE (low_pc addr, ranges sec_offset) holds numbers alone, its
    ranges at offset 0 of ``rnglists``."""
    abbrev = uleb(1) + uleb(c.DW_TAG_compile_unit) + b"\x00"
    abbrev += uleb(c.DW_AT_low_pc) + uleb(c.DW_FORM_addr) + uleb(c.DW_AT_ranges) + uleb(c.DW_FORM_sec_offset)
    abbrev += b"\x00\x00\x00"
    body = uleb(1) + struct.pack("<QI", 0x1000, 0)
    header = struct.pack("<HBBI", 5, c.DW_UT_compile, 8, 0)
    info = struct.pack("<I", len(header) + len(body)) + header + body
    return {"debug_info": info, "debug_abbrev": abbrev, "debug_rnglists": rnglists}


@pytest.mark.parametrize(
    "rnglists",
    [
        bytes([c.DW_RLE_offset_pair]) + uleb(0x10) + uleb(0x20) + bytes([c.DW_RLE_end_of_list]),
        bytes([c.DW_RLE_offset_pair]) + uleb(0x10),  # runs off the section: an IndexError
        bytes([c.DW_RLE_offset_pair]) + uleb(0x10) + uleb(0x20),  # no end of list
    ],
)
def test_root_ranges_read_from_a_view_answer_and_fail_as_from_bytes(rnglists: bytes) -> None:
    sections = _unit_with_ranges(rnglists)
    viewed, plain = _read_both_ways(sections)
    if rnglists.endswith(bytes([c.DW_RLE_end_of_list])):
        assert viewed._unit_ranges == [(0x1010, 0x1020, 0)]
        assert viewed._sections is not None and isinstance(viewed._sections.rnglists, memoryview)
    else:
        assert plain._load_units()[0].error == "compile unit at 0x0: index out of range"


def test_a_unit_header_read_from_a_view_fails_as_from_bytes() -> None:
    # A 64-bit DWARF 4 header cut one byte short at the section's end: its address size is read
    # by index one past the end, an IndexError whose message a view gives otherwise.
    info = b"\xff\xff\xff\xff" + struct.pack("<QHQ", 10, 4, 0)
    sections = {"debug_info": info, "debug_abbrev": b"\x00"}
    viewed = DwarfInfo(getter(sections), Path("t"), views=_viewed(sections))
    plain = DwarfInfo(getter(sections), Path("t"))
    assert _units(viewed) == _units(plain)
    assert plain._load_units()[0].error == "unit at 0x0: index out of range"
    assert viewed.unplaced_error == plain.unplaced_error
