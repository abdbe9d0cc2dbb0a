"""Small synthetic DWARF built to be hostile: deep nesting, shared tables, absurd values.

Any byte order, 32- or 64-bit DWARF, versions 4 and 5. Each ``*_case`` function returns
``(sections, vaddr)``: the sections of one file and an address whose lookup exercises the case.
Used by tests/test_hostile_input.py and, in a subprocess under memory and time limits, by
tests/hostile_run.py.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from symbolize.formats.dwarf import constants as c
from tests.dwarf_builder import sleb, uleb

DW_TAG_array_type = 0x01
DW_TAG_lexical_block = 0x0B
DW_TAG_variable = 0x34


class Encoding(NamedTuple):
    version: int = 4
    dwarf64: bool = False
    little: bool = True
    addr_size: int = 8

    @property
    def order(self) -> str:
        return "<" if self.little else ">"

    def offset(self, value: int) -> bytes:
        return struct.pack(self.order + ("Q" if self.dwarf64 else "I"), value)

    def addr(self, value: int) -> bytes:
        return value.to_bytes(self.addr_size, "little" if self.little else "big")

    def u(self, size: int, value: int) -> bytes:
        return value.to_bytes(size, "little" if self.little else "big")

    def initial_length(self, length: int) -> bytes:
        if self.dwarf64:
            return struct.pack(self.order + "IQ", 0xFFFFFFFF, length)
        return struct.pack(self.order + "I", length)


LE4 = Encoding()


def abbrev(code: int, tag: int, children: bool, attributes: list[tuple[int, int]]) -> bytes:
    out = uleb(code) + uleb(tag) + bytes([1 if children else 0])
    for attribute, form in attributes:
        out += uleb(attribute) + uleb(form)
    return out + b"\0\0"


def unit(body: bytes, encoding: Encoding = LE4, abbrev_offset: int = 0, unit_type: int = c.DW_UT_compile,
         dwo_id: int | None = None) -> bytes:
    """A unit: its header in ``encoding`` (with ``dwo_id`` for a DWARF 5 skeleton or split unit), then ``body``."""
    if encoding.version >= 5:
        header = encoding.u(2, encoding.version) + bytes([unit_type, encoding.addr_size])
        header += encoding.offset(abbrev_offset)
        if dwo_id is not None:
            header += encoding.u(8, dwo_id)
    else:
        header = encoding.u(2, encoding.version) + encoding.offset(abbrev_offset) + bytes([encoding.addr_size])
    return encoding.initial_length(len(header) + len(body)) + header + body


# Abbreviation codes of the common table below.
CU, SUBPROGRAM, SUBPROGRAM_PARENT, INLINED, INLINED_PARENT, ARRAY_PARENT, CU_LINES = 1, 2, 3, 4, 5, 6, 7
_CODE = [(c.DW_AT_low_pc, c.DW_FORM_addr), (c.DW_AT_high_pc, c.DW_FORM_data4)]
_CALL = [(c.DW_AT_call_file, c.DW_FORM_data1), (c.DW_AT_call_line, c.DW_FORM_data4)]


def common_abbrevs(*, call_line_form: int = c.DW_FORM_data4, decl_line_form: int = c.DW_FORM_data4) -> bytes:
    call = [(c.DW_AT_call_file, c.DW_FORM_data1), (c.DW_AT_call_line, call_line_form)]
    function = [(c.DW_AT_name, c.DW_FORM_string), (c.DW_AT_decl_line, decl_line_form), *_CODE]
    return b"".join(
        [
            abbrev(CU, c.DW_TAG_compile_unit, True, [(c.DW_AT_name, c.DW_FORM_string), *_CODE]),
            abbrev(SUBPROGRAM, c.DW_TAG_subprogram, False, function),
            abbrev(SUBPROGRAM_PARENT, c.DW_TAG_subprogram, True, function),
            abbrev(INLINED, c.DW_TAG_inlined_subroutine, False, [(c.DW_AT_name, c.DW_FORM_string), *_CODE, *call]),
            abbrev(INLINED_PARENT, c.DW_TAG_inlined_subroutine, True,
                   [(c.DW_AT_name, c.DW_FORM_string), *_CODE, *call]),
            abbrev(ARRAY_PARENT, DW_TAG_array_type, True, []),
            abbrev(CU_LINES, c.DW_TAG_compile_unit, True,
                   [(c.DW_AT_name, c.DW_FORM_string), *_CODE, (c.DW_AT_stmt_list, c.DW_FORM_sec_offset)]),
        ]
    ) + b"\0"


def cu_die(name: str, low: int, size: int, encoding: Encoding = LE4) -> bytes:
    return uleb(CU) + name.encode() + b"\0" + encoding.addr(low) + encoding.u(4, size)


def cu_lines_die(name: str, low: int, size: int, encoding: Encoding = LE4, stmt_list: int = 0) -> bytes:
    fields = encoding.addr(low) + encoding.u(4, size) + encoding.offset(stmt_list)
    return uleb(CU_LINES) + name.encode() + b"\0" + fields


def function_die(name: str, low: int, size: int, *, parent: bool = False, decl_line: bytes | None = None,
                 encoding: Encoding = LE4) -> bytes:
    decl = decl_line if decl_line is not None else encoding.u(4, 1)
    code = SUBPROGRAM_PARENT if parent else SUBPROGRAM
    return uleb(code) + name.encode() + b"\0" + decl + encoding.addr(low) + encoding.u(4, size)


def inlined_die(name: str, low: int, size: int, *, parent: bool, call_line: bytes, encoding: Encoding = LE4) -> bytes:
    code = INLINED_PARENT if parent else INLINED
    return uleb(code) + name.encode() + b"\0" + encoding.addr(low) + encoding.u(4, size) + b"\x01" + call_line


# The cases -------------------------------------------------------------------


def deep_skip_case(depth: int = 20_000) -> tuple[dict[str, bytes], int]:
    """A function under ``depth`` nested DIEs with children that hold no code (the skipper's worst case)."""
    body = cu_die("deep.c", 0x1000, 0x100) + uleb(ARRAY_PARENT) * depth
    body += function_die("buried", 0x1000, 0x100) + b"\0" * (depth + 1)
    return {"debug_info": unit(body), "debug_abbrev": common_abbrevs()}, 0x1010


def shared_table_case(units: int = 8_000, table_size: int = 2_000) -> tuple[dict[str, bytes], list[int]]:
    """``units`` units all pointing at one large abbreviation table; one address per unit."""
    filler = b"".join(
        abbrev(100 + code, DW_TAG_variable, False, [(c.DW_AT_name, c.DW_FORM_string)]) for code in range(table_size)
    )
    table = common_abbrevs()[:-1] + filler + b"\0"
    info = bytearray()
    vaddrs = []
    for number in range(units):
        low = 0x10000 + number * 0x10
        info += unit(cu_die("u.c", low, 0x10) + function_die(f"f{number}", low, 0x10) + b"\0")
        vaddrs.append(low + 4)
    return {"debug_info": bytes(info), "debug_abbrev": table}, vaddrs


def abbrev_offsets_apart_case(units: int = 8_000) -> tuple[dict[str, bytes], list[int]]:
    """``units`` units each pointing at its own place in one long abbreviation table, whose only
    terminating 0 code is at its end: each unit's table runs from its offset to that end."""
    fillers = [abbrev(100 + number, DW_TAG_variable, False, [(c.DW_AT_name, c.DW_FORM_string)])
               for number in range(units)]
    offsets = [0]
    for filler in fillers[:-1]:
        offsets.append(offsets[-1] + len(filler))
    table = b"".join(fillers) + common_abbrevs()
    info = bytearray()
    vaddrs = []
    for number, offset in enumerate(offsets):
        low = 0x10000 + number * 0x10
        info += unit(cu_die("u.c", low, 0x10) + function_die(f"f{number}", low, 0x10) + b"\0", abbrev_offset=offset)
        vaddrs.append(low + 4)
    return {"debug_info": bytes(info), "debug_abbrev": table}, vaddrs


def nested_inlines_case(depth: int = 6_000) -> tuple[dict[str, bytes], int]:
    """``depth`` inlined calls nested in each other, all covering the looked-up address."""
    body = cu_die("inl.c", 0x1000, 0x100) + function_die("outer", 0x1000, 0x100, parent=True)
    for level in range(depth):
        body += inlined_die(f"i{level}", 0x1000, 0x100, parent=level < depth - 1, call_line=LE4.u(4, level + 1))
    body += b"\0" * depth + b"\0"
    return {"debug_info": unit(body), "debug_abbrev": common_abbrevs()}, 0x1010


def huge_lines_case() -> tuple[dict[str, bytes], int]:
    """A call line of 2^64-1 (data8) and a negative declaration line (sdata)."""
    return lines_case((c.DW_FORM_data8, LE4.u(8, (1 << 64) - 1)), (c.DW_FORM_sdata, sleb(-5)))


def lines_case(call_line: tuple[int, bytes], decl_line: tuple[int, bytes]) -> tuple[dict[str, bytes], int]:
    """``inner`` inlined into ``outer`` with the call line and outer's declaration line given as
    (form, encoded value)."""
    abbrevs = common_abbrevs(call_line_form=call_line[0], decl_line_form=decl_line[0])
    body = cu_die("big.c", 0x1000, 0x100)
    body += function_die("outer", 0x1000, 0x100, parent=True, decl_line=decl_line[1])
    body += inlined_die("inner", 0x1000, 0x100, parent=False, call_line=call_line[1])
    body += b"\0\0"
    return {"debug_info": unit(body), "debug_abbrev": abbrevs}, 0x1010


def past_address_space_case(addr_size: int = 8) -> tuple[dict[str, bytes], int]:
    """A unit and a function whose ranges end past the last address (low + size > 2^(8*addr_size))."""
    encoding = Encoding(addr_size=addr_size)
    top = 1 << (8 * addr_size)
    body = cu_die("top.c", top - 0x10, 0x100, encoding) + function_die("wraps", top - 0x10, 0x100, encoding=encoding)
    body += b"\0"
    return {"debug_info": unit(body, encoding), "debug_abbrev": common_abbrevs()}, top - 8


def bad_header_case(*, version: int = 9, addr_size: int = 8) -> tuple[dict[str, bytes], int]:
    """A unit whose header has an unknown version or address size (its length intact), then a good unit."""
    bad = bytearray(unit(cu_die("bad.c", 0x1000, 0x100) + function_die("lost", 0x1000, 0x100) + b"\0"))
    bad[4:6] = struct.pack("<H", version)
    bad[10] = addr_size
    good = unit(cu_die("good.c", 0x2000, 0x100) + function_die("kept", 0x2000, 0x100) + b"\0")
    return {"debug_info": bytes(bad) + good, "debug_abbrev": common_abbrevs()}, 0x2010


def line_header_v5(*, directory_formats: bytes, directory_count: int, directories: bytes = b"",
                   encoding: Encoding = LE4, program: bytes = b"") -> bytes:
    """A DWARF 5 line program: the given directory formats, count and entries, one file, then ``program``."""
    opcode_base = 13
    rest = bytes([1, 1, 1, (-5) & 0xFF, 14, opcode_base]) + bytes([0, 1, 1, 1, 1, 0, 0, 0, 1, 0, 0, 1])
    rest += directory_formats + uleb(directory_count) + directories
    rest += bytes([1]) + uleb(c.DW_LNCT_path) + uleb(c.DW_FORM_string) + uleb(1) + b"a.c\0"
    header = encoding.u(2, 5) + bytes([encoding.addr_size, 0]) + encoding.offset(len(rest)) + rest
    return encoding.initial_length(len(header) + len(program)) + header + program


def line_program_rows(rows: list[tuple[int, int]], encoding: Encoding = LE4, fixed_step: int | None = None) -> bytes:
    """Opcodes for rows (address, line): set_address, advance_line, copy; with ``fixed_step``, each
    row after the first is reached by DW_LNS_fixed_advance_pc instead of set_address."""
    program = bytearray()
    line = 1
    for number, (address, row_line) in enumerate(rows):
        if fixed_step is not None and number:
            program += bytes([c.DW_LNS_fixed_advance_pc]) + encoding.u(2, fixed_step)
        else:
            program += b"\0" + uleb(1 + encoding.addr_size) + bytes([c.DW_LNE_set_address]) + encoding.addr(address)
        program += bytes([c.DW_LNS_advance_line]) + sleb(row_line - line) + bytes([c.DW_LNS_copy])
        line = row_line
    program += bytes([c.DW_LNS_advance_pc]) + uleb(16) + b"\0\x01" + bytes([c.DW_LNE_end_sequence])
    return bytes(program)
