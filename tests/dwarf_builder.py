"""Hand-made DWARF 4 sections for malformed-input tests: small, exact, and easy to break."""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from symbolize.formats.dwarf import DwarfInfo
from symbolize.formats.dwarf import constants as c
from symbolize.formats.dwarf.answers import DwarfSymbolAnswers
from symbolize.formats.symbols import SymbolIndex


def uleb(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


ABBREV_CU = 1
ABBREV_SUBPROGRAM = 2
ABBREV_INLINED = 3


def abbrev_table(extra_form: int | None = None) -> bytes:
    """CU (name, low_pc, high_pc, stmt_list), subprogram with children, inlined subroutine."""
    table = bytearray()
    table += uleb(ABBREV_CU) + uleb(c.DW_TAG_compile_unit) + b"\x01"
    for attribute, form in ((c.DW_AT_name, c.DW_FORM_string), (c.DW_AT_comp_dir, c.DW_FORM_string),
                            (c.DW_AT_low_pc, c.DW_FORM_addr), (c.DW_AT_high_pc, c.DW_FORM_data4),
                            (c.DW_AT_stmt_list, c.DW_FORM_sec_offset)):
        table += uleb(attribute) + uleb(form)
    table += b"\x00\x00"
    table += uleb(ABBREV_SUBPROGRAM) + uleb(c.DW_TAG_subprogram) + b"\x01"
    for attribute, form in ((c.DW_AT_name, c.DW_FORM_string), (c.DW_AT_low_pc, c.DW_FORM_addr),
                            (c.DW_AT_high_pc, c.DW_FORM_data4)):
        table += uleb(attribute) + uleb(form)
    if extra_form is not None:
        table += uleb(0x3E) + uleb(extra_form)  # DW_AT_encoding with whatever form the test wants
    table += b"\x00\x00"
    table += uleb(ABBREV_INLINED) + uleb(c.DW_TAG_inlined_subroutine) + b"\x00"
    for attribute, form in ((c.DW_AT_name, c.DW_FORM_string), (c.DW_AT_low_pc, c.DW_FORM_addr),
                            (c.DW_AT_high_pc, c.DW_FORM_data4), (c.DW_AT_call_file, c.DW_FORM_data1),
                            (c.DW_AT_call_line, c.DW_FORM_data1)):
        table += uleb(attribute) + uleb(form)
    table += b"\x00\x00\x00"
    return bytes(table)


@dataclass
class Function:
    name: str
    low: int
    size: int
    inlined: list[tuple[str, int, int, int]] = field(default_factory=list)  # name, low, size, call line


def compile_unit(name: str, functions: list[Function], stmt_list: int = 0, abbrev_offset: int = 0,
                 extra_value: bytes = b"") -> bytes:
    low = min(f.low for f in functions)
    high = max(f.low + f.size for f in functions)
    body = bytearray()
    body += uleb(ABBREV_CU) + name.encode() + b"\0" + b"/src\0" + struct.pack("<QII", low, high - low, stmt_list)
    for function in functions:
        body += uleb(ABBREV_SUBPROGRAM) + function.name.encode() + b"\0"
        body += struct.pack("<QI", function.low, function.size)
        body += extra_value
        for inlined_name, inlined_low, inlined_size, call_line in function.inlined:
            body += uleb(ABBREV_INLINED) + inlined_name.encode() + b"\0"
            body += struct.pack("<QIBB", inlined_low, inlined_size, 1, call_line)
        body += b"\x00"
    body += b"\x00"
    header = struct.pack("<HIB", 4, abbrev_offset, 8)
    return struct.pack("<I", len(header) + len(body)) + header + bytes(body)


def line_program(rows: list[tuple[int, int]], file_name: str = "a.c") -> bytes:
    """A DWARF 4 line program with one sequence: (address, line) rows, then end_sequence."""
    opcode_base = 13
    standard_lengths = bytes([0, 1, 1, 1, 1, 0, 0, 0, 1, 0, 0, 1])
    header_rest = struct.pack("<BBBbBB", 1, 1, 1, -5, 14, opcode_base) + standard_lengths
    header_rest += b"\x00"  # no include directories
    header_rest += file_name.encode() + b"\0" + b"\x00\x00\x00" + b"\x00"
    program = bytearray()
    line = 1
    for address, row_line in rows:
        program += b"\x00" + uleb(9) + bytes([c.DW_LNE_set_address]) + struct.pack("<Q", address)
        program += bytes([c.DW_LNS_advance_line]) + sleb(row_line - line)
        line = row_line
        program += bytes([c.DW_LNS_copy])
    last = rows[-1][0] + 16
    program += b"\x00" + uleb(9) + bytes([c.DW_LNE_set_address]) + struct.pack("<Q", last)
    program += b"\x00\x01" + bytes([c.DW_LNE_end_sequence])
    after_length = struct.pack("<HI", 4, len(header_rest)) + header_rest + bytes(program)
    return struct.pack("<I", len(after_length)) + after_length


def sleb(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        done = (value == 0 and not byte & 0x40) or (value == -1 and byte & 0x40)
        out.append(byte | (0 if done else 0x80))
        if done:
            return bytes(out)


def getter(sections: dict[str, bytes]):  # type: ignore[no-untyped-def]
    return lambda name: sections.get(name)


def answering(info: DwarfInfo) -> DwarfSymbolAnswers:
    """``info`` answering through the run builder every container uses (formats/dwarf/answers.py),
    with no symbol table: ``frames_at`` gives [] where no unit names an address, and raises
    MalformedInputError where a broken unit (or debug info unread) is all that covers it."""
    return DwarfSymbolAnswers(info.path, info, SymbolIndex([]))
