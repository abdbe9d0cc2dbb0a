"""The line-program decoder of lines.py answers alike whether it drops rows or keeps them all.

``_run_program`` drops a row whose address the next row repeats unless asked to keep every
row, and stops (returning False) where an address steps back inside a sequence, for
``decode_line_table`` to decode again keeping every row. Whatever the bytes, dropping rows must
not change a lookup's answer, nor whether the program is damaged (DwarfFormatError); and the
decoder never reads past the program's end.
"""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from symbolize.formats.dwarf import constants as c
from symbolize.formats.dwarf.lines import LineTable, _run_program, decode_line_table
from symbolize.formats.dwarf.reader import DwarfFormatError
from symbolize.formats.dwarf.sections import DwarfSections
from symbolize.formats.dwarf.unit import Unit
from tests.dwarf_builder import line_program, uleb

OPCODE_BASE = 13
MIN_LENGTH = 1
LINE_BASE = -5
LINE_RANGE = 14
STANDARD_LENGTHS = [0, 1, 1, 1, 1, 0, 0, 0, 1, 0, 0, 1]
SET_ADDRESS = b"\x00\x09" + bytes([c.DW_LNE_set_address])
END_SEQUENCE = b"\x00\x01" + bytes([c.DW_LNE_end_sequence])

# What a decode came to, besides a table: the program is damaged, or addresses step back.
DAMAGED = "DwarfFormatError"
STEPS_BACK = "steps back"


def _unit(line_section: bytes) -> Unit:
    sections = DwarfSections.from_getter(
        lambda name: line_section if name == "debug_line" else None, Path(__file__), little_endian=True
    )
    return Unit(sections=sections, offset=0, end=0, version=4, unit_type=c.DW_UT_compile, addr_size=8,
                offset_size=4, abbrev_offset=0, first_die=0)


def _run(data: bytes, start: int, end: int, *, keep_every_row: bool) -> tuple[LineTable, bool]:
    table = LineTable(files=[])
    completed = _run_program(table, data, 0, start, end, _unit(data), MIN_LENGTH, LINE_BASE, LINE_RANGE, OPCODE_BASE,
                             STANDARD_LENGTHS, keep_every_row=keep_every_row)
    return table, completed


def _decode(data: bytes, start: int, end: int, *, keep_every_row: bool) -> LineTable | str:
    """The table, as decode_line_table would finish it, or what stopped the decode."""
    try:
        table, completed = _run(data, start, end, keep_every_row=keep_every_row)
    except DwarfFormatError:
        return DAMAGED
    if not completed:
        return STEPS_BACK
    if min(table.lines, default=0) < 0:
        return DAMAGED  # decode_line_table's check on the rows kept
    table.finish()
    return table


def _answers(outcomes: list[LineTable | str]) -> list[object]:
    """What a reader of each outcome can observe, at every address any table holds and around it."""
    probes: set[int] = set()
    for outcome in outcomes:
        if isinstance(outcome, LineTable):
            for address in [*outcome.addresses, *(bound for sequence in outcome.sequences for bound in sequence[:2])]:
                probes.update((address - 1, address, address + 1))
    return [
        ([(low, high) for low, high, _, _ in outcome.sequences], [outcome.lookup(probe) for probe in sorted(probes)])
        if isinstance(outcome, LineTable) else outcome
        for outcome in outcomes
    ]


def _instruction() -> st.SearchStrategy[bytes]:
    operand = st.one_of(st.integers(min_value=0, max_value=8), st.integers(min_value=0, max_value=1 << 20)).map(uleb)
    return st.one_of(
        st.integers(min_value=OPCODE_BASE, max_value=255).map(lambda opcode: bytes([opcode])),
        # Row after row at one address, the case dropping is for.
        st.integers(min_value=0, max_value=LINE_RANGE - 1).map(lambda line: bytes([OPCODE_BASE + line])),
        st.sampled_from([c.DW_LNS_copy, c.DW_LNS_negate_stmt, c.DW_LNS_const_add_pc, c.DW_LNS_set_basic_block])
        .map(lambda opcode: bytes([opcode])),
        st.tuples(st.sampled_from([c.DW_LNS_set_column, c.DW_LNS_set_file, c.DW_LNS_advance_pc,
                                   c.DW_LNS_advance_line, c.DW_LNS_set_isa]), operand)
        .map(lambda pair: bytes([pair[0]]) + pair[1]),
        st.integers(min_value=-20, max_value=20).map(lambda delta: bytes([c.DW_LNS_advance_line, delta & 0x7F])),
        st.integers(min_value=0, max_value=0xFFFF).map(lambda delta: bytes([c.DW_LNS_fixed_advance_pc])
                                                       + struct.pack("<H", delta)),
        # Mostly near one another, so that stepping back lands among the rows already emitted.
        st.one_of(st.integers(min_value=0x1000, max_value=0x1020), st.integers(min_value=0, max_value=1 << 40))
        .map(lambda address: SET_ADDRESS + struct.pack("<Q", address)),
        st.just(END_SEQUENCE),
        st.integers(min_value=0, max_value=1 << 40).map(
            lambda value: b"\x00" + uleb(len(uleb(value)) + 1) + bytes([c.DW_LNE_set_discriminator]) + uleb(value)),
        st.binary(min_size=1, max_size=6).map(lambda operands: b"\x00" + uleb(len(operands)) + operands),
        st.binary(min_size=1, max_size=4),  # anything at all
    )


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    lead=st.binary(max_size=3),
    program=st.lists(_instruction(), max_size=40).map(b"".join),
    cut=st.integers(min_value=0, max_value=12),
    trail=st.binary(max_size=10),
)
def test_dropping_repeated_rows_changes_no_answer(lead: bytes, program: bytes, cut: int, trail: bytes) -> None:
    # The program may end mid-instruction (cut) and be followed by other bytes of the section (trail).
    end = len(lead) + max(len(program) - cut, 0)
    data = lead + program + trail
    dropping = _decode(data, len(lead), end, keep_every_row=False)
    keeping = _decode(data, len(lead), end, keep_every_row=True)
    alone = _decode(data[:end], len(lead), end, keep_every_row=False)
    event(dropping if isinstance(dropping, str) else "decoded")
    if isinstance(dropping, LineTable) and isinstance(keeping, LineTable):
        event("rows dropped" if len(dropping.addresses) < len(keeping.addresses) else "no row dropped")
    assert keeping != STEPS_BACK
    if dropping != STEPS_BACK:  # decode_line_table takes the keeping decode then
        assert _answers([dropping, keeping])[0] == _answers([dropping, keeping])[1]
    # Bytes after the program's end change nothing.
    assert _answers([dropping, alone])[0] == _answers([dropping, alone])[1]


@pytest.mark.parametrize(
    "cut_instruction",
    [
        bytes([c.DW_LNS_set_column]) + b"\x85",  # a ULEB128 operand continued past the end
        b"\x00\x02" + bytes([c.DW_LNE_end_sequence]),  # an end_sequence whose (unused) operand byte lies past the end
        SET_ADDRESS + b"\x00\x30",  # a set_address with most of its address past the end
        bytes([c.DW_LNS_fixed_advance_pc, 0x10]),
        bytes([c.DW_LNS_advance_line, 0xFF, 0xFF]),
    ],
)
@pytest.mark.parametrize("keep_every_row", [False, True])
def test_a_program_that_ends_inside_an_instruction_is_damaged(cut_instruction: bytes, keep_every_row: bool) -> None:
    first = SET_ADDRESS + struct.pack("<Q", 0x1000) + bytes([c.DW_LNS_copy, 0x21]) + END_SEQUENCE
    second = SET_ADDRESS + struct.pack("<Q", 0x2000) + bytes([c.DW_LNS_copy]) + cut_instruction
    # What follows is another program's bytes, which would complete the cut instruction.
    data = first + second + b"\x01" + b"\x00" * 8
    with pytest.raises(DwarfFormatError, match="ends inside an instruction"):
        _run(data, 0, len(first) + len(second), keep_every_row=keep_every_row)


@pytest.mark.parametrize(
    "rows",
    [
        # A row at line -4 and one at line 12, both at 0x1000, emitted by DW_LNS_copy ...
        bytes([c.DW_LNS_advance_line, 0x7B, c.DW_LNS_copy, c.DW_LNS_advance_line, 0x10, c.DW_LNS_copy]),
        # ... and by special opcodes that advance the line only (-5, then +8).
        bytes([OPCODE_BASE, OPCODE_BASE + LINE_RANGE - 1]),
    ],
)
def test_a_row_below_line_0_is_damaged_even_where_it_is_dropped(rows: bytes) -> None:
    program = SET_ADDRESS + struct.pack("<Q", 0x1000) + rows + END_SEQUENCE
    with pytest.raises(DwarfFormatError, match="steps below line 0"):
        _run(program, 0, len(program), keep_every_row=False)
    table, completed = _run(program, 0, len(program), keep_every_row=True)
    assert completed and min(table.lines) < 0  # decode_line_table's own check raises on these


@pytest.mark.parametrize(
    ("setting", "what"),
    [
        (bytes([c.DW_LNS_set_column]) + b"\xff" * 9 + b"\x01", "column"),
        (bytes([c.DW_LNS_set_file]) + b"\x80" * 9 + b"\x01", "file"),
        (bytes([c.DW_LNS_advance_line]) + b"\x80" * 9 + b"\x01", "line"),
        (bytes([c.DW_LNS_advance_line]) + b"\x80" * 9 + b"\x7e", "below line 0"),
        # An address past 1 << 64 cannot be stored in a row.
        (bytes([c.DW_LNS_advance_pc]) + uleb(1 << 64), "address"),
    ],
)
@pytest.mark.parametrize("keep_every_row", [False, True])
def test_a_value_too_large_to_store_is_damaged(setting: bytes, what: str, keep_every_row: bool) -> None:
    # The row that holds the value is dropped, hidden by the next one at its address.
    program = (SET_ADDRESS + struct.pack("<Q", 0x1000) + setting
               + bytes([c.DW_LNS_copy, c.DW_LNS_set_column, 1, c.DW_LNS_copy]) + END_SEQUENCE)
    with pytest.raises(DwarfFormatError, match=what):
        _run(program, 0, len(program), keep_every_row=keep_every_row)


@pytest.mark.parametrize(
    "rows",
    [
        [(0x1000, 1), (0x1002, 2), (0x1000, 3), (0x1003, 4), (0x1006, 5), (0x1003, 6), (0x1003, 7), (0x1005, 8)],
        [(0x2000, 10), (0x1000, 20), (0x1000, 30), (0x3000, 40)],
    ],
)
def test_a_program_whose_addresses_step_back_is_decoded_keeping_every_row(rows: list[tuple[int, int]]) -> None:
    data = line_program(rows)
    unit = _unit(data)
    program_start = 4 + 2 + 4 + struct.unpack_from("<I", data, 6)[0]
    assert _run(data, program_start, len(data), keep_every_row=False)[1] is False
    keeping, completed = _run(data, program_start, len(data), keep_every_row=True)
    assert completed and len(keeping.addresses) == len(rows)
    keeping.finish()
    decoded = decode_line_table(unit, 0)
    assert list(decoded.addresses) == list(keeping.addresses)
    keeping.files = decoded.files
    assert _answers([decoded])[0] == _answers([keeping])[0]


def _discriminator(value: bytes) -> bytes:
    return b"\x00" + uleb(len(value) + 1) + bytes([c.DW_LNE_set_discriminator]) + value


def test_a_row_takes_the_discriminator_set_before_it_and_the_next_starts_at_0() -> None:
    """DWARF 5, 6.2.5.1: the discriminator goes back to 0 after each row; a value past 32 bits
    keeps its low 32 bits (llvm-symbolizer's uint32_t); a repeated row takes the last one's."""
    step = bytes([OPCODE_BASE + (1 - LINE_BASE) + LINE_RANGE * 4])  # 4 bytes and 1 line on, a row
    same = bytes([OPCODE_BASE + (1 - LINE_BASE)])  # a row at the same address
    program = (
        SET_ADDRESS + struct.pack("<Q", 0x1000) + _discriminator(uleb(3)) + step + step
        + _discriminator(uleb((1 << 32) + 9)) + step + _discriminator(uleb(2)) + same + step + END_SEQUENCE
    )  # fmt: skip
    table, completed = _run(program, 0, len(program), keep_every_row=False)
    assert completed
    assert list(table.addresses) == [0x1004, 0x1008, 0x100C, 0x1010]
    assert list(table.discriminators) == [3, 0, 2, 0]  # 9 at 0x100c, repeated by a row with 2
    kept, _ = _run(program, 0, len(program), keep_every_row=True)
    assert list(kept.discriminators) == [3, 0, 9, 2, 0]
