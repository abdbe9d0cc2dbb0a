"""The compiled walk to an abbreviation table's end (``native/src/abbrev.rs``) against the
reference, ``abbrev.read_abbrev_table``.

``abbrev.lazy_abbrev_table`` takes the walk's end and root entry where it answers, and the
reference parses the table whole where it returns None: so where the walk answers, the reference
must parse the table (not raise), end where it ends and hold the same entry under the root code
(the last of a repeated code). Checked on every table of every fixture binary (where the walk must
answer: real tables are what it is for), on hypothesis-made tables (codes, tags, attributes and
forms past 64 bits, implicit constants at the edges of ``i64``, padded LEB128, duplicate codes,
cut short) and on hypothesis-mutated fixture tables.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from symbolize.formats.dwarf import abbrev
from symbolize.formats.dwarf import constants as c
from tests.dwarf_builder import sleb, uleb
from tests.fixtures_data import BIN
from tests.kernel_twins import OBJECT_FILES, kernels_in, object_units

_kernels = pytest.importorskip("symbolize.formats._kernels", reason="the compiled kernels were not built")

FIXTURES = BIN.parent


def _assert_alike(data: bytes, offset: int, root_code: int | None = None) -> bool:
    """Whether the walk answered for the table at ``offset``; where it did, it answers as the reference."""
    try:
        whole, end = abbrev.read_abbrev_table(data, offset, {})
    except IndexError:
        whole = None
    with kernels_in(_kernels, abbrev):
        # The first code of the table and one it lacks, unless one is asked.
        codes = [root_code] if root_code is not None else [*list(whole or {})[:1], 1 << 40]
        for code in codes:
            lazy = abbrev.lazy_abbrev_table(data, offset, code, {})
            if lazy is None:
                return False
            assert whole is not None, "the walk answered where the reference raises"
            table, lazy_end = lazy
            assert lazy_end == end
            assert table.get(code) == whole.get(code)
    return True


@cache
def _fixture_tables(path: Path) -> tuple[tuple[bytes, int], ...]:
    """(.debug_abbrev, offset) of each distinct table the units of ``path`` use."""
    tables = {(id(unit.sections.abbrev), unit.abbrev_offset): (unit.sections.abbrev, unit.abbrev_offset)
              for unit in object_units(path)}
    return tuple(tables.values())


@pytest.mark.parametrize("path", OBJECT_FILES, ids=lambda path: str(path.relative_to(FIXTURES)))
def test_every_fixture_table_walks_alike(path: Path) -> None:
    tables = _fixture_tables(path)
    if not tables:
        pytest.skip("no DWARF units")
    for data, offset in tables:
        # The walk answered itself: real tables hold nothing it leaves to the reference.
        assert _assert_alike(data, offset)


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
@given(table=_table(), prefix=st.binary(max_size=3), root_code=st.one_of(st.none(), st.integers(0, 0x90)))
def test_made_tables_walk_alike(table: bytes, prefix: bytes, root_code: int | None) -> None:
    _assert_alike(prefix + table, len(prefix), root_code)


MUTATED_CASES = ("cppdemo-gcc-dwarf5-pie", "cppdemo-clang-dwarf4-pie", "rustdemo-full")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), case=st.sampled_from(MUTATED_CASES))
def test_mutated_fixture_tables_walk_alike(data: st.DataObject, case: str) -> None:
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
