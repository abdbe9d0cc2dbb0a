"""The compiled line-program decoder (``native/src/line_program.rs``) against its Python reference.

``_kernels.run_line_program`` must do what ``lines._run_program`` does with the same arguments:
append the same rows and sequences and return the same value (True, or False where an address
steps back, rows so far kept), or raise the same exception with the same message. It may instead
return None, leaving the table untouched, where a value outgrows 64 bits; ``decode_line_table``
then runs the reference. Checked end to end on every line program of every fixture binary, and
directly on hypothesis-made programs (extreme values and odd headers) and on hypothesis-mutated
fixture programs. The module is skipped where the kernels were not built (no cargo); CI builds
them and checks that they load (``.ci/run``).
"""

from __future__ import annotations

import os
import re
import struct
import subprocess
import sys
from collections.abc import Callable
from functools import cache
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from hypothesis.control import currently_in_test_context

from symbolize.formats.dwarf import constants as c
from symbolize.formats.dwarf import lines
from symbolize.formats.dwarf.lines import LineTable, decode_line_table
from symbolize.formats.dwarf.unit import Unit
from symbolize.formats.native import PURE_PYTHON_VARIABLE
from tests.dwarf_builder import sleb, uleb
from tests.fixtures_data import FIXTURES
from tests.kernel_twins import file_units, kernel_environment, kernels_in

_kernels = pytest.importorskip("symbolize.formats._kernels", reason="the compiled kernels were not built")

BIN = FIXTURES / "bin"
# ELF files and Mach-O files (thin, universal, dSYM DWARF files and objects): every reader of DWARF.
MAGICS = (b"\x7fELF", b"\xcf\xfa\xed\xfe", b"\xce\xfa\xed\xfe", b"\xca\xfe\xba\xbe")
OBJECT_FILES = sorted(path for path in FIXTURES.rglob("*") if path.is_file() and path.read_bytes()[:4] in MAGICS)

# The arguments of _run_program after the table.
Program = tuple[bytes, int, int, int, Unit, int, int, int, int, list[int]]
Runner = Callable[..., "bool | None"]


def _table_state(table: LineTable) -> tuple[object, ...]:
    return (table.files, list(table.addresses), list(table.file_indexes), list(table.lines), list(table.columns),
            list(table.discriminators), table.sequences)


def _outcome(run: Runner, program: Program, *, keep_every_row: bool) -> tuple[object, ...]:
    """What a decode returned and appended, or the exception it raised (type and message)."""
    table = LineTable(files=[])
    try:
        returned = run(table, *program, keep_every_row=keep_every_row)
    except Exception as error:  # any type: the two must raise the same one
        return ("raised", type(error), str(error))
    return ("returned", returned, *_table_state(table))


def _kind(message: object) -> str:
    return re.sub(r"0x[0-9a-f]+|\d+", "N", str(message))


def _assert_alike(program: Program) -> None:
    note = event if currently_in_test_context() else (lambda value: None)
    for keep_every_row in (False, True):
        reference = _outcome(lines._run_program, program, keep_every_row=keep_every_row)
        compiled = _outcome(_kernels.run_line_program, program, keep_every_row=keep_every_row)
        note(f"reference {reference[0]} {reference[1] if reference[0] == 'returned' else _kind(reference[2])}")
        if compiled[1] is None and compiled[0] == "returned":
            # Handed back: the table must be untouched, and the reference decides.
            note("left to the reference")
            assert compiled == ("returned", None, *_table_state(LineTable(files=[])))
            continue
        assert compiled == reference


# Every fixture program, end to end -------------------------------------------------------------


class _RecordingKernels:
    """Stands for the kernels module in lines.py and records what the kernel returned."""

    def __init__(self) -> None:
        self.returned: list[bool | None] = []
        self.line_file_names = _kernels.line_file_names  # the header's file names (test_native_line_header)

    def run_line_program(self, *args: Any, **kwargs: Any) -> bool | None:
        returned: bool | None = _kernels.run_line_program(*args, **kwargs)
        self.returned.append(returned)
        return returned


def _line_units(path: Path) -> list[Unit]:
    """The units with a line program, of every slice of ``path``."""
    return file_units(path, lambda state: state.unit.stmt_list is not None)


def _decoded(unit: Unit) -> tuple[object, ...]:
    assert unit.stmt_list is not None
    try:
        return _table_state(decode_line_table(unit, unit.stmt_list))
    except Exception as error:
        return ("raised", type(error), str(error))


@pytest.mark.parametrize("path", OBJECT_FILES, ids=lambda path: str(path.relative_to(FIXTURES)))
def test_every_fixture_program_decodes_alike(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    units = _line_units(path)
    if not units:
        pytest.skip("no line programs (a file without DWARF, or a .dwo)")
    with kernels_in(None, lines):
        reference = [_decoded(unit) for unit in units]
    recording = _RecordingKernels()
    with kernels_in(recording, lines):
        compiled = [_decoded(unit) for unit in units]
    assert compiled == reference
    # The kernel decoded them all itself (nothing in a real program outgrows 64 bits).
    assert recording.returned and None not in recording.returned


# Made programs ---------------------------------------------------------------------------------

# Around the edges the kernel must decode exactly (2**62: the line check, 2**63: column and file
# checks, 2**64: where it hands back) and far past them.
EDGES = [0, 1, 0x7F, 0x80, 0x3FFF, 0x4000, (1 << 31), (1 << 32), (1 << 62) - 1, 1 << 62, (1 << 63) - 1, 1 << 63,
         (1 << 64) - 1, 1 << 64, 1 << 70, 1 << 200]


def _padded(encoded: bytes, padding: int, negative: bool) -> bytes:
    """``encoded`` (a LEB128 number) with ``padding`` redundant bytes, as some producers write them."""
    if not padding:
        return encoded
    fill = 0x7F if negative else 0x00
    return encoded[:-1] + bytes([encoded[-1] | 0x80]) + bytes([fill | 0x80] * (padding - 1)) + bytes([fill])


def _uleb() -> st.SearchStrategy[bytes]:
    value = st.one_of(st.integers(0, 300), st.sampled_from(EDGES), st.integers(0, 1 << 80))
    return st.tuples(value, st.integers(0, 10)).map(lambda pair: _padded(uleb(pair[0]), pair[1], False))


def _sleb() -> st.SearchStrategy[bytes]:
    magnitude = st.one_of(st.integers(0, 300), st.sampled_from(EDGES), st.integers(0, 1 << 80))
    value = st.tuples(magnitude, st.booleans(), st.sampled_from([0, 0, 1, -1])).map(
        lambda parts: (-parts[0] if parts[1] else parts[0]) + parts[2])
    return st.tuples(value, st.integers(0, 10)).map(lambda pair: _padded(sleb(pair[0]), pair[1], pair[0] < 0))


def _instruction() -> st.SearchStrategy[bytes]:
    operand_opcodes = [c.DW_LNS_set_column, c.DW_LNS_set_file, c.DW_LNS_advance_pc, c.DW_LNS_set_isa, 12]
    return st.one_of(
        st.integers(0, 255).map(lambda opcode: bytes([opcode])),  # any opcode, special or not
        st.integers(13, 40).map(lambda opcode: bytes([opcode])),  # rows at one address, or near
        st.tuples(st.sampled_from(operand_opcodes), _uleb()).map(lambda pair: bytes([pair[0]]) + pair[1]),
        _sleb().map(lambda operand: bytes([c.DW_LNS_advance_line]) + operand),
        st.integers(0, 0xFFFF).map(lambda delta: bytes([c.DW_LNS_fixed_advance_pc]) + struct.pack("<H", delta)),
        # set_address of any size with any bytes, mostly 8 bytes near one another.
        st.integers(0x1000, 0x1020).map(lambda address: b"\x00\x09\x02" + struct.pack("<Q", address)),
        st.binary(min_size=0, max_size=17).map(lambda operand: b"\x00" + uleb(len(operand) + 1) + b"\x02" + operand),
        st.binary(max_size=3).map(lambda operand: b"\x00" + uleb(len(operand) + 1) + b"\x01" + operand),
        st.tuples(st.integers(0, 255), st.binary(max_size=6)).map(
            lambda pair: b"\x00" + uleb(len(pair[1]) + 1) + bytes([pair[0]]) + pair[1]),
        # set_discriminator: a ULEB of any length, past 32 bits, or cut by the operand's length.
        st.tuples(_uleb(), st.integers(0, 2)).map(
            lambda pair: b"\x00" + uleb(max(len(pair[0]) + 1 - pair[1], 1)) + b"\x04" + pair[0]),
        # An extended opcode whose length is 0, or longer than any program.
        _uleb().map(lambda length: b"\x00" + length + b"\x01"),
    )


def _unit(little_endian: bool, addr_size: int) -> Unit:
    """What the decoders read of a unit; a stand-in, since a Unit refuses the odd address sizes."""
    return SimpleNamespace(addr_size=addr_size, sections=SimpleNamespace(little_endian=little_endian))  # type: ignore[return-value]


@st.composite
def _made_program(draw: st.DrawFn) -> Program:
    opcode_base = draw(st.one_of(st.sampled_from([13, 13, 13, 10, 1, 0, 4, 14, 255]), st.integers(0, 255)))
    standard_lengths = draw(st.lists(st.integers(0, 3), max_size=max(opcode_base - 1, 0)))
    if draw(st.booleans()):
        standard_lengths = [0, 1, 1, 1, 1, 0, 0, 0, 1, 0, 0, 1, 0, 0][: max(opcode_base - 1, 0)]
    min_length = draw(st.one_of(st.sampled_from([1, 1, 4, 0, 255]), st.integers(0, 255)))
    line_base = draw(st.one_of(st.sampled_from([-5, -5, -3, -128, 127, 0]), st.integers(-128, 127)))
    line_range = draw(st.one_of(st.sampled_from([14, 14, 12, 1, 255]), st.integers(1, 255)))
    addr_size = draw(st.sampled_from([8, 8, 8, 4, 2, 1, 0, 3, 9, 16]))
    little_endian = draw(st.booleans())
    lead = draw(st.binary(max_size=3))
    body = b"".join(draw(st.lists(_instruction(), max_size=40)))
    trail = draw(st.binary(max_size=8))
    data = lead + body + trail
    position = len(lead)
    end = position + max(len(body) - draw(st.integers(0, 12)), 0)
    if draw(st.integers(0, 19)) == 0:
        position, end = draw(st.sampled_from([(end + 1, end), (position, len(data) + 5), (1 << 64, 1 << 65)]))
    offset = draw(st.integers(0, 1 << 40))
    return (data, offset, position, end, _unit(little_endian, addr_size), min_length, line_base, line_range,
            opcode_base, standard_lengths)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(program=_made_program())
def test_made_programs_decode_alike(program: Program) -> None:
    _assert_alike(program)


SET_ADDRESS = b"\x00\x09\x02" + struct.pack("<Q", 0x1000)
END_SEQUENCE = b"\x00\x01\x01"
COPY = bytes([c.DW_LNS_copy])


def _ops(opcode: int, operand: bytes) -> bytes:
    return bytes([opcode]) + operand


@pytest.mark.parametrize(
    ("body", "reference", "decided_by_kernel"),
    [
        # Values too large to store, each on either side of 64 bits.
        (_ops(c.DW_LNS_set_column, uleb(1 << 63)), "sets column 9223372036854775808, too large to store", True),
        (_ops(c.DW_LNS_set_column, uleb((1 << 63) - 1)) + COPY, None, True),
        (_ops(c.DW_LNS_set_column, uleb(1 << 64)), "sets column 18446744073709551616, too large to store", False),
        (_ops(c.DW_LNS_set_file, uleb((1 << 64) - 1)), "sets file 18446744073709551615, too large to store", True),
        (_ops(c.DW_LNS_advance_line, sleb(1 << 62)), "advances to line 4611686018427387905, too large to store",
         True),
        (_ops(c.DW_LNS_advance_line, sleb((1 << 62) - 2)) + COPY, None, True),
        (_ops(c.DW_LNS_advance_line, sleb(-(1 << 62) - 1)), "steps below line 0", True),
        (_ops(c.DW_LNS_advance_line, sleb(1 << 70)), "advances to line 1180591620717411303425, too large to store",
         False),
        # Redundant LEB128 bytes change no value.
        (_ops(c.DW_LNS_set_column, _padded(uleb(5), 12, False)) + _ops(c.DW_LNS_advance_line,
         _padded(sleb(-1), 12, True)) + _ops(c.DW_LNS_advance_pc, _padded(uleb(3), 12, False)) + COPY, None, True),
        # An address past 64 bits: an error once a row holds it, a sequence end otherwise.
        (_ops(c.DW_LNS_advance_pc, uleb(1 << 64)) + COPY, "advances past a 64-bit address", False),
        (COPY + _ops(c.DW_LNS_advance_pc, uleb(1 << 64)) + END_SEQUENCE, None, False),
        (b"\x00\x09\x02" + b"\xff" * 8 + bytes([c.DW_LNS_const_add_pc]) + COPY, "advances past a 64-bit address",
         False),
        # An extended opcode longer than any program.
        (b"\x00" + uleb(1 << 64) + b"\x01", "ends inside an instruction", True),
    ],
    ids=["column-2**63", "column-2**63-1", "column-2**64", "file-2**64-1", "line-2**62", "line-2**62-1",
         "line-below-0", "line-2**70", "padded-lebs", "row-past-2**64", "sequence-end-past-2**64",
         "const-add-past-2**64", "extended-2**64-long"],
)
def test_values_at_the_edges_of_64_bits(body: bytes, reference: str | None, decided_by_kernel: bool) -> None:
    program: Program = (SET_ADDRESS + body, 0x40, 0, len(SET_ADDRESS + body), _unit(True, 8), 1, -5, 14, 13,
                        [0, 1, 1, 1, 1, 0, 0, 0, 1, 0, 0, 1])
    outcome = _outcome(lines._run_program, program, keep_every_row=False)
    if reference is None:
        assert outcome[:2] == ("returned", True)
    else:
        assert outcome[0] == "raised" and outcome[2] == f"line program at 0x40 {reference}"
    compiled = _outcome(_kernels.run_line_program, program, keep_every_row=False)
    assert (compiled[1] is not None) == decided_by_kernel
    _assert_alike(program)


# Mutated fixture programs ----------------------------------------------------------------------

MUTATED_CASES = ("cppdemo-gcc-dwarf5-pie", "cppdemo-clang-dwarf4-pie", "cdemo-gcc-dwarf4-pie")


@cache
def _fixture_programs(name: str) -> tuple[Program, ...]:
    """The arguments decode_line_table passes _run_program for each program of a fixture."""
    captured: list[Program] = []
    reference = lines._run_program

    def capture(table: LineTable, *program: Any, keep_every_row: bool) -> bool:
        captured.append(program)  # type: ignore[arg-type]
        return reference(table, *program, keep_every_row=keep_every_row)

    with kernels_in(None, lines), pytest.MonkeyPatch.context() as patch:
        patch.setattr(lines, "_run_program", capture)
        for unit in _line_units(BIN / name):
            _decoded(unit)
    return tuple(captured)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), case=st.sampled_from(MUTATED_CASES))
def test_mutated_fixture_programs_decode_alike(data: st.DataObject, case: str) -> None:
    programs = _fixture_programs(case)
    original = data.draw(st.sampled_from(programs))
    section, offset, position, end, *header = original
    body = bytearray(section[position:end])
    for _ in range(data.draw(st.integers(1, 6))):
        at = data.draw(st.integers(0, max(len(body) - 1, 0)))
        edit = data.draw(st.sampled_from(["overwrite", "insert", "delete"]))
        if edit == "overwrite" and body:
            body[at] = data.draw(st.integers(0, 255))
        elif edit == "insert":
            body[at:at] = data.draw(_instruction())
        elif body:
            del body[at : at + data.draw(st.integers(1, 8))]
    cut = data.draw(st.integers(0, len(body)))
    mutated = section[:position] + bytes(body) + section[end:]
    _assert_alike((mutated, offset, position, position + cut, *header))  # type: ignore[arg-type]


# The switch ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("variable", "expected"), [(None, "compiled kernels: yes"),
                                                    ("1", f"compiled kernels: no ({PURE_PYTHON_VARIABLE} is set)")])
def test_the_environment_variable_forces_the_python_path(variable: str | None, expected: str) -> None:
    environment = kernel_environment(os.environ, pure_python=variable is not None)
    script = ("import symbolize, symbolize.formats.dwarf.lines as lines;"
              "print(symbolize.native_status(), lines.kernels is None)")
    printed = subprocess.run([sys.executable, "-c", script], env=environment, capture_output=True, text=True,
                             check=True).stdout.split("\n")[0]
    assert printed == f"{expected} {variable is not None}"


def test_version_names_the_kernels_status() -> None:
    from importlib.metadata import version

    from typer.testing import CliRunner

    from symbolize import native_status
    from symbolize.cli.app import app

    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.output == f"symbolize {version('pprof-symbolize')}\n{native_status()}\n"
