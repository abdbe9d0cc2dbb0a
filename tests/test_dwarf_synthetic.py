"""The DWARF reader on hand-made sections: exact answers by construction, and every kind of breakage."""

from __future__ import annotations

from pathlib import Path

import pytest

from symbolize.formats.dwarf import DwarfInfo
from symbolize.formats.dwarf.answers import DwarfSymbolAnswers
from symbolize.formats.errors import MalformedInputError
from tests.dwarf_builder import Function, abbrev_table, answering, compile_unit, getter, line_program

PATH = Path("synthetic.elf")


def _info(**overrides: bytes) -> DwarfSymbolAnswers:
    lines = line_program([(0x1000, 10), (0x1010, 12), (0x1020, 20)])
    sections = {
        "debug_info": compile_unit("a.c", [Function("outer", 0x1000, 0x40, [("helper", 0x1010, 0x10, 7)])]),
        "debug_abbrev": abbrev_table(),
        "debug_line": lines,
    }
    sections.update(overrides)
    return answering(DwarfInfo(getter(sections), PATH))


def test_inline_chain_is_innermost_first_with_call_site_lines() -> None:
    frames = _info().frames_at(0x1014)
    assert frames is not None
    assert [f.function for f in frames] == ["helper", "outer"]
    assert (frames[0].file, frames[0].line) == ("/src/a.c", 12)
    # The caller's frame is at the call site the inlined subroutine records.
    assert (frames[1].file, frames[1].line) == ("/src/a.c", 7)


def test_outside_inline_range_names_only_the_function() -> None:
    frames = _info().frames_at(0x1024)
    assert frames is not None and [(f.function, f.line) for f in frames] == [("outer", 20)]


def test_address_outside_every_unit_is_unnamed() -> None:
    assert _info().frames_at(0x5000) == []


def test_truncated_unit_length_is_a_typed_error_naming_the_file() -> None:
    broken = compile_unit("a.c", [Function("outer", 0x1000, 0x40)])[:-7]
    with pytest.raises(MalformedInputError) as raised:
        _info(debug_info=broken).frames_at(0x1000)
    assert raised.value.path == PATH


def test_undefined_abbreviation_breaks_only_its_unit() -> None:
    good = compile_unit("a.c", [Function("outer", 0x1000, 0x40)])
    bad_body = bytearray(compile_unit("b.c", [Function("other", 0x2000, 0x40)]))
    # The subprogram's abbreviation code comes right after the CU DIE; make it undefined.
    cu_die_length = 1 + len(b"b.c\0/src\0") + 16
    bad_body[11 + cu_die_length] = 0x7F
    info = _info(debug_info=good + bytes(bad_body))
    frames = info.frames_at(0x1004)
    assert frames is not None and frames[0].function == "outer"
    with pytest.raises(MalformedInputError, match="abbreviation"):
        info.frames_at(0x2004)


def test_unknown_form_is_reported_not_crashing() -> None:
    info = _info(debug_abbrev=abbrev_table(extra_form=0x7E), debug_info=compile_unit(
        "a.c", [Function("outer", 0x1000, 0x40)], extra_value=b"\x01"))
    with pytest.raises(MalformedInputError, match="form"):
        info.frames_at(0x1004)


def test_line_table_offset_past_the_section_is_reported() -> None:
    info = _info(debug_info=compile_unit("a.c", [Function("outer", 0x1000, 0x40)], stmt_list=0x9999))
    with pytest.raises(MalformedInputError, match="line table"):
        info.frames_at(0x1004)


def test_a_line_program_stepping_below_line_zero_is_reported() -> None:
    # advance_line takes any signed delta; line_program encodes 1 -> -3 as one.
    info = _info(debug_line=line_program([(0x1000, 10), (0x1010, -3), (0x1020, 20)]))
    with pytest.raises(MalformedInputError, match="below line 0"):
        info.frames_at(0x1014)


def test_abbreviation_offset_past_the_section_is_reported() -> None:
    info = _info(debug_info=compile_unit("a.c", [Function("outer", 0x1000, 0x40)], abbrev_offset=0x5000))
    # The unit's ranges cannot be read, so no unit covers the address: nothing to name, nothing claimed.
    assert info.frames_at(0x1004) == []


def test_unsupported_version_is_reported() -> None:
    unit = bytearray(compile_unit("a.c", [Function("outer", 0x1000, 0x40)]))
    unit[4] = 9
    with pytest.raises(MalformedInputError, match="version"):
        _info(debug_info=bytes(unit)).frames_at(0x1004)

