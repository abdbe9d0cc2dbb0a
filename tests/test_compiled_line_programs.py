"""Hand-made line programs through the compiled DWARF source (native/src/dwarf/) and the Python reference.

One unit: a compile unit over [0x1000, 0x1100) holding one function, ``main`` over [0x1000, 0x1040),
whose line program (one file, ``/src/a.c``) is written out or drawn by hypothesis. Where the compiled
source answers the unit (``DwarfUnits.unit_runs``), its runs are the reference's, rows answering
everywhere and only inside functions (``functions_only``); a cold lookup through its lazy unit
(``lookup_runs``) answers as the Python runs do, errors included. Where it leaves the unit to the
reference it says why: a program whose address steps back, one that ends inside an instruction, a
line past 32 bits. (These were Rust tests over the same bytes, which compared with nothing.)
Skipped where the kernels are not built or not enabled.
"""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from symbolize.formats.answers import AnswerLookup
from symbolize.formats.dwarf import DwarfInfo
from symbolize.formats.dwarf import answers as dwarf_answers
from symbolize.formats.dwarf import constants as c
from symbolize.formats.dwarf.answers import DwarfSymbolAnswers
from symbolize.formats.native import kernels
from symbolize.formats.symbols import SymbolIndex
from symbolize.formats.types import Frame
from tests import hostile_dwarf as h
from tests.dwarf_builder import getter, uleb
from tests.kernel_twins import compiled_unit_runs, kernels_in, reference_runs
from tests.test_compiled_dwarf import frames_each
from tests.test_dwarf_line_program import _instruction

if kernels is None:
    pytest.skip("the compiled kernels are not built or not enabled", allow_module_level=True)

SET_ADDRESS_0X1000 = b"\x00\x09" + bytes([c.DW_LNE_set_address]) + struct.pack("<Q", 0x1000)
END_SEQUENCE = b"\x00\x01" + bytes([c.DW_LNE_end_sequence])
COPY = bytes([c.DW_LNS_copy])


def advance_pc(delta: int) -> bytes:
    return bytes([c.DW_LNS_advance_pc]) + uleb(delta)


def advance_line(delta: bytes) -> bytes:
    """DW_LNS_advance_line by the SLEB128 ``delta``, as written (some deltas below are not minimal)."""
    return bytes([c.DW_LNS_advance_line]) + delta


def line_section(program: bytes) -> bytes:
    """A DWARF 4 line program: minimum instruction length 1, line base -5, line range 14, opcode
    base 13; include directory ``/src``, file 1 ``a.c`` in it; then ``program``."""
    header = bytes([1, 1, 1, 0xFB, 14, 13, 0, 1, 1, 1, 1, 0, 0, 0, 1, 0, 0, 1]) + b"/src\0\0a.c\0\x01\0\0\0"
    rest = struct.pack("<HI", 4, len(header)) + header + program
    return struct.pack("<I", len(rest)) + rest


def one_function_unit(program: bytes, functions_only: bool = False) -> DwarfSymbolAnswers:
    body = h.cu_lines_die("a.c", 0x1000, 0x100) + h.function_die("main", 0x1000, 0x40) + b"\0"
    sections = {"debug_info": h.unit(body), "debug_abbrev": h.common_abbrevs(), "debug_line": line_section(program)}
    info = DwarfInfo(getter(sections), Path("one-function-unit"))
    return DwarfSymbolAnswers(info.path, info, SymbolIndex([]), functions_only=functions_only)


def answered(source: DwarfSymbolAnswers) -> list[tuple[int, int, tuple[Frame, ...]]]:
    """The unit's runs by the compiled source, checked to be the reference's."""
    compiled = compiled_unit_runs(source, 0)
    assert compiled is not None, f"deferred: {deferral(source)}"
    assert compiled == reference_runs(source, 0)
    _, runs, broken = compiled
    assert broken == []
    return runs  # type: ignore[no-any-return]


def deferral(source: DwarfSymbolAnswers) -> str | None:
    """Why the compiled source leaves the unit to the reference (None: it answers it)."""
    units = source._compiled_units()
    assert units is not None
    return units.deferral(0, source.functions_only)


def test_a_row_whose_address_the_next_repeats_never_answers() -> None:
    # Rows at 0x1000 (line 1), again at 0x1000 (line 3), at 0x1010 (line 3, special opcode 242:
    # 16 bytes on, line unchanged); the sequence ends at 0x1040.
    runs = answered(one_function_unit(SET_ADDRESS_0X1000 + COPY + advance_line(b"\x02") + COPY + b"\xf2"
                                      + advance_pc(0x30) + END_SEQUENCE))
    assert [(low, high) for low, high, _ in runs] == [(0x1000, 0x1010), (0x1010, 0x1040)]
    # main's entry: its DW_AT_low_pc; its declaration line: 1.
    assert [frames for _, _, frames in runs] == [(Frame("main", "/src/a.c", 3, 0, 1, None, 0x1000),)] * 2


@pytest.mark.parametrize(
    ("program", "why"),
    [
        # 0x1000, then set_address 0x800.
        (SET_ADDRESS_0X1000 + COPY + b"\x00\x09\x02" + struct.pack("<Q", 0x800) + COPY + END_SEQUENCE, "steps back"),
        (SET_ADDRESS_0X1000 + COPY + bytes([c.DW_LNS_advance_pc]), "ends inside an instruction"),
        # Line 1 advanced by 2^32: past the table's 32-bit column.
        (SET_ADDRESS_0X1000 + advance_line(b"\x80\x80\x80\x80\x10") + COPY + END_SEQUENCE, "past 32 bits"),
    ],
    ids=["steps back", "ends inside an instruction", "line past 32 bits"],
)
def test_a_program_the_compiled_source_does_not_read_as_the_reference_is_left_to_it(program: bytes, why: str) -> None:
    for functions_only in (False, True):
        source = one_function_unit(program, functions_only)
        assert compiled_unit_runs(source, 0) is None
        found = deferral(source)
        assert found is not None
        if why != "ends inside an instruction":  # gimli's error, which says less
            assert why in found, found


def test_a_line_just_below_2_to_the_32_answers() -> None:
    program = SET_ADDRESS_0X1000 + advance_line(b"\xfd\xff\xff\xff\x0f") + COPY + advance_pc(0x40) + END_SEQUENCE
    runs = answered(one_function_unit(program))
    assert [(low, high, frames[0].line) for low, high, frames in runs] == [(0x1000, 0x1040, (1 << 32) - 2)]


def test_functions_only_leaves_rows_between_functions_unanswered() -> None:
    # One sequence over [0x1000, 0x1080), rows at 0x1000 and 0x1060: past main's end at 0x1040 only
    # the rows' own answer (no function) is given, and only without functions_only.
    program = SET_ADDRESS_0X1000 + COPY + advance_pc(0x60) + COPY + advance_pc(0x20) + END_SEQUENCE
    everywhere = answered(one_function_unit(program))
    assert [(low, high) for low, high, _ in everywhere] == [(0x1000, 0x1040), (0x1040, 0x1060), (0x1060, 0x1080)]
    assert [frames[0].function for _, _, frames in everywhere] == ["main", None, None]
    inside = answered(one_function_unit(program, functions_only=True))
    assert [(low, high) for low, high, _ in inside] == [(0x1000, 0x1040)]


def _lookups(source: DwarfSymbolAnswers, vaddrs: list[int], compiled: bool) -> list[object]:
    with kernels_in(kernels if compiled else None, dwarf_answers):
        return frames_each(AnswerLookup(source.answer_regions(), source.lookup_runs), vaddrs)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(program=st.lists(_instruction(), max_size=30).map(b"".join), ends=st.booleans(), functions_only=st.booleans())
def test_drawn_programs_answer_as_the_reference_or_are_left_to_it(program: bytes, ends: bool,
                                                                  functions_only: bool) -> None:
    source = one_function_unit(SET_ADDRESS_0X1000 + program + (END_SEQUENCE if ends else b""), functions_only)
    compiled = compiled_unit_runs(source, 0)
    event("deferred" if compiled is None else "answered")
    if compiled is not None:
        assert compiled == reference_runs(source, 0)
    vaddrs = [0xFFF, 0x1000, 0x1001, 0x100F, 0x1010, 0x101F, 0x103F, 0x1040, 0x1041, 0x10FF, 0x1100]
    assert _lookups(source, vaddrs, compiled=True) == _lookups(source, vaddrs, compiled=False)
