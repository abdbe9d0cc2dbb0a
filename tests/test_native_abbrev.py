"""The compiled abbreviation-table parser (``native/src/abbrev.rs``) against its Python reference,
``abbrev._parse_abbrev_table``.

``abbrev.read_abbrev_table`` runs the kernel and, where it returns None, the reference: so the
table it returns, where it says the table ends, the entries it leaves in the ``shapes`` memo,
and any error it raises must be the reference's. Checked on every table of every fixture binary
(one memo across a file's tables, as ``DwarfInfo`` shares it, and the kernel deciding every one
of them itself), on hypothesis-made tables (codes, tags, attributes and forms past 64 bits,
implicit constants at the edges of ``i64``, padded LEB128, duplicate codes, cut short) and on
hypothesis-mutated fixture tables.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from symbolize.formats.dwarf import abbrev
from symbolize.formats.dwarf import constants as c
from symbolize.formats.dwarf.abbrev import Abbrev, ShapeBytes
from tests.dwarf_builder import sleb, uleb
from tests.fixtures_data import BIN
from tests.kernel_twins import OBJECT_FILES, kernels_in, object_units

_kernels = pytest.importorskip("symbolize.formats._kernels", reason="the compiled kernels were not built")

FIXTURES = BIN.parent


def _outcome(compiled: bool, data: bytes, offset: int, shapes: ShapeBytes) -> tuple[object, ...]:
    """What a parse returned, or raised, and the memo it left (a copy of ``shapes``, which it fills)."""
    try:
        with kernels_in(_kernels if compiled else None, abbrev):
            table, end = abbrev.read_abbrev_table(data, offset, shapes)
    except Exception as error:  # any type: the two must raise the same one
        return ("raised", type(error), str(error), shapes)
    # Values and their order, each entry an Abbrev, and where the table ends.
    return ("returned", list(table.items()), [type(entry) for entry in table.values()], end, shapes)


def _assert_alike(data: bytes, offset: int, shapes: ShapeBytes | None = None) -> None:
    compiled = _outcome(True, data, offset, dict(shapes or {}))
    reference = _outcome(False, data, offset, dict(shapes or {}))
    assert compiled == reference


@cache
def _fixture_tables(path: Path) -> tuple[tuple[bytes, int], ...]:
    """(.debug_abbrev, offset) of each distinct table the units of ``path`` use."""
    tables = {(id(unit.sections.abbrev), unit.abbrev_offset): (unit.sections.abbrev, unit.abbrev_offset)
              for unit in object_units(path)}
    return tuple(tables.values())


@pytest.mark.parametrize("path", OBJECT_FILES, ids=lambda path: str(path.relative_to(FIXTURES)))
def test_every_fixture_table_parses_alike(path: Path) -> None:
    tables = _fixture_tables(path)
    if not tables:
        pytest.skip("no DWARF units")
    compiled_shapes: ShapeBytes = {}
    reference_shapes: ShapeBytes = {}
    for data, offset in tables:
        compiled = _outcome(True, data, offset, compiled_shapes)
        assert compiled == _outcome(False, data, offset, reference_shapes)
        # The kernel parsed it itself: real tables hold nothing it hands back.
        assert _kernels.parse_abbrev_table(data, offset, dict(compiled_shapes), Abbrev) is not None


_EDGES = [0, 1, 0x7F, 0x80, 0x3FFF, (1 << 32), (1 << 63) - 1, 1 << 63, (1 << 64) - 1, 1 << 64, 1 << 70]
_SIGNED_EDGES = [0, -1, 1, -64, 63, -(1 << 63), (1 << 63) - 1, -(1 << 63) - 1, 1 << 63, 1 << 80, -(1 << 80)]


def _padded_uleb(value: int, padding: int) -> bytes:
    encoded = uleb(value)
    if not padding:
        return encoded
    return encoded[:-1] + bytes([encoded[-1] | 0x80]) + b"\x80" * (padding - 1) + b"\x00"


@st.composite
def _table(draw: st.DrawFn) -> bytes:
    number = st.one_of(st.integers(0, 0x90), st.sampled_from(_EDGES))
    body = b""
    for _ in range(draw(st.integers(0, 6))):
        body += _padded_uleb(draw(st.one_of(st.integers(1, 8), number)), draw(st.sampled_from([0, 0, 0, 2, 12])))
        body += uleb(draw(st.one_of(st.sampled_from([c.DW_TAG_subprogram, c.DW_TAG_inlined_subroutine]), number)))
        body += bytes([draw(st.sampled_from([0, 1, 2]))])
        for _ in range(draw(st.integers(0, 4))):
            form = draw(st.one_of(st.sampled_from([c.DW_FORM_implicit_const, c.DW_FORM_strp, c.DW_FORM_data1]),
                                  number))
            body += uleb(draw(st.one_of(st.sampled_from([c.DW_AT_name, c.DW_AT_low_pc]), number))) + uleb(form)
            if form == c.DW_FORM_implicit_const:
                value = sleb(draw(st.one_of(st.integers(-300, 300), st.sampled_from(_SIGNED_EDGES))))
                body += value if draw(st.integers(0, 5)) else value[:-1] + bytes([value[-1] | 0x80]) + b"\x7f"
        body += b"\0\0"
    body += b"\0"
    if draw(st.booleans()):
        body = body[: draw(st.integers(0, len(body)))]
    return body


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(table=_table(), prefix=st.binary(max_size=3), memo=st.booleans())
def test_made_tables_parse_alike(table: bytes, prefix: bytes, memo: bool) -> None:
    shapes: ShapeBytes = {}
    if memo:  # a memo filled by another table of the same bytes, as DwarfInfo shares one
        _outcome(False, table, 0, shapes)
    _assert_alike(prefix + table, len(prefix), shapes)


MUTATED_CASES = ("cppdemo-gcc-dwarf5-pie", "cppdemo-clang-dwarf4-pie", "rustdemo-full")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), case=st.sampled_from(MUTATED_CASES))
def test_mutated_fixture_tables_parse_alike(data: st.DataObject, case: str) -> None:
    tables = _fixture_tables(BIN / case)
    section, offset = data.draw(st.sampled_from(tables))
    mutated = bytearray(section)
    window = min(len(mutated), offset + 600)
    for _ in range(data.draw(st.integers(1, 6))):
        at = data.draw(st.integers(offset, max(window - 1, offset)))
        if at < len(mutated):
            mutated[at] = data.draw(st.sampled_from([0, 1, 0x21, 0x7F, 0x80, 0xFF, data.draw(st.integers(0, 255))]))
    cut = data.draw(st.sampled_from([len(mutated), data.draw(st.integers(offset, window))]))
    _assert_alike(bytes(mutated[:cut]), offset)
