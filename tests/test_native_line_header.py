"""The compiled file-name decoder of line program headers (``native/src/line_header.rs``) against
its Python reference, ``lines._file_names``.

``lines.file_names`` runs the kernel and, where it returns None, the reference: so what it returns
or raises must be what the reference returns or raises, on every header of every fixture binary,
on hypothesis-made DWARF 5 entry tables (every form the reader takes, strx and unknown forms,
counts past the bytes, names that are not UTF-8, Windows directories) and DWARF 4 lists, and on
hypothesis-mutated fixture headers. A kernel that hands back everything would pass those, so the
fixtures' headers must also be decided by the kernel itself.
"""

from __future__ import annotations

from contextlib import suppress
from dataclasses import replace
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from symbolize.formats.dwarf import constants as c
from symbolize.formats.dwarf import lines
from symbolize.formats.dwarf.unit import Unit
from tests.dwarf_builder import uleb
from tests.kernel_twins import kernels_in
from tests.test_native_kernels import BIN, OBJECT_FILES, _line_units

_kernels = pytest.importorskip("symbolize.formats._kernels", reason="the compiled kernels were not built")

FIXTURES = BIN.parent
# The arguments of _file_names after the unit.
Header = tuple[bytes, int, int, int, int]


def _outcome(compiled: bool, unit: Unit, header: Header) -> tuple[object, ...]:
    try:
        with kernels_in(_kernels if compiled else None, lines):
            return ("returned", lines.file_names(unit, *header))
    except Exception as error:  # any type: the two must raise the same one
        return ("raised", type(error), str(error))


def _assert_alike(unit: Unit, header: Header) -> None:
    assert _outcome(True, unit, header) == _outcome(False, unit, header)


@cache
def _fixture_headers(path: Path) -> tuple[tuple[Unit, Header], ...]:
    """(unit, arguments) of every file_names call decode_line_table makes for ``path``."""
    captured: list[tuple[Unit, Header]] = []
    reference = lines.file_names

    def capture(unit: Unit, *header: Any) -> list[str | None]:
        captured.append((unit, header))  # type: ignore[arg-type]
        return reference(unit, *header)

    saved = lines.file_names
    lines.file_names = capture  # type: ignore[assignment]
    try:
        for unit in _line_units(path):
            assert unit.stmt_list is not None
            # A damaged fixture's error is the decoder's concern, not this test's.
            with suppress(Exception):
                lines.decode_line_table(unit, unit.stmt_list)
    finally:
        lines.file_names = saved
    return tuple(captured)


@pytest.mark.parametrize("path", OBJECT_FILES, ids=lambda path: str(path.relative_to(FIXTURES)))
def test_every_fixture_header_names_files_alike(path: Path) -> None:
    headers = _fixture_headers(path)
    if not headers:
        pytest.skip("no line programs")
    decided = 0
    for unit, header in headers:
        _assert_alike(unit, header)
        sections = unit.sections
        decided += _kernels.line_file_names(*header, unit.comp_dir, sections.little_endian, sections.line_str,
                                            sections.str) is not None
    # The fixtures' names are UTF-8 and their forms the common ones: the kernel decides them all.
    assert decided == len(headers)


# Made headers ----------------------------------------------------------------------------------

_STRINGS = [b"", b"a.c", b"/abs/x.h", b"C:\\win\\y.h", b"\\\\share\\z", b"dir/", b"d\\", b"\xff\xfe", b"\xed\xa0\x80",
            "caf\u00e9".encode(), b"x:"]
_FORMS = [c.DW_FORM_string, c.DW_FORM_line_strp, c.DW_FORM_strp, c.DW_FORM_udata, c.DW_FORM_data1,
          c.DW_FORM_data2, c.DW_FORM_data4, c.DW_FORM_data8, c.DW_FORM_data16, c.DW_FORM_block, c.DW_FORM_strx1,
          c.DW_FORM_sdata, 0x7F]
_CONTENT = [c.DW_LNCT_path, c.DW_LNCT_directory_index, 3, 5, 0x2001]


def _unit(little_endian: bool, comp_dir: str | None, line_str: bytes, strings: bytes) -> Unit:
    """A fixture unit with other string sections and comp_dir (the header bytes are passed apart)."""
    unit, _ = _fixture_headers(BIN / "cppdemo-gcc-dwarf5-pie")[0]
    sections = replace(unit.sections, little_endian=little_endian, line_str=line_str, str=strings)
    return replace(unit, sections=sections, comp_dir=comp_dir)


@st.composite
def _value(draw: st.DrawFn, form: int, little_endian: bool, offset_size: int, pool_offsets: list[int]) -> bytes:
    order = "little" if little_endian else "big"
    if form == c.DW_FORM_string:
        return draw(st.sampled_from(_STRINGS)) + b"\0"
    if form in (c.DW_FORM_line_strp, c.DW_FORM_strp):
        where = draw(st.sampled_from([*pool_offsets, 1 << 20, 2**32 - 1]))
        return (where % (1 << (8 * offset_size))).to_bytes(offset_size, order)
    if form == c.DW_FORM_udata:
        return uleb(draw(st.sampled_from([0, 1, 2, 3, 200, 2**64 - 1, 2**70])))
    sizes = {c.DW_FORM_data1: 1, c.DW_FORM_data2: 2, c.DW_FORM_data4: 4, c.DW_FORM_data8: 8, c.DW_FORM_data16: 16}
    if form in sizes:
        return draw(st.integers(0, 3)).to_bytes(sizes[form], order)
    if form == c.DW_FORM_block:
        length = draw(st.integers(0, 4))
        return uleb(length) + bytes(length)
    return draw(st.binary(max_size=2))


@st.composite
def _v5_header(draw: st.DrawFn) -> tuple[Unit, Header]:
    little_endian = draw(st.booleans())
    offset_size = draw(st.sampled_from([4, 8]))
    pool = b""
    pool_offsets = []
    for text in draw(st.lists(st.sampled_from(_STRINGS), max_size=4)):
        pool_offsets.append(len(pool))
        pool += text + b"\0"
    if draw(st.booleans()):
        pool += b"unterminated"
        pool_offsets.append(len(pool) - 3)
    body = b""
    for _table in range(2):
        formats = draw(st.lists(st.tuples(st.sampled_from(_CONTENT), st.sampled_from(_FORMS)), max_size=3))
        count = draw(st.integers(0, 4))
        body += bytes([len(formats)]) + b"".join(uleb(kind) + uleb(form) for kind, form in formats)
        body += uleb(draw(st.sampled_from([count, count, 2**33, 2**64 + 1])))
        for _ in range(count):
            for _, form in formats:
                body += draw(_value(form, little_endian, offset_size, pool_offsets))
    cut = draw(st.integers(0, len(body)))
    data = draw(st.binary(max_size=3)) if draw(st.integers(0, 9)) == 0 else b""
    start = len(data)
    data += body
    end = start + draw(st.sampled_from([len(body), cut, len(body) + 5]))
    data = data[: start + draw(st.sampled_from([len(body), cut]))]
    comp_dir = draw(st.sampled_from([None, "", "/build", "C:\\src", "/b/\udcff"]))
    unit = _unit(little_endian, comp_dir, pool, pool[::-1] if draw(st.booleans()) else pool)
    return unit, (data, start, end, offset_size, 5)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(made=_v5_header())
def test_made_dwarf5_tables_name_files_alike(made: tuple[Unit, Header]) -> None:
    _assert_alike(*made)


@st.composite
def _v4_header(draw: st.DrawFn) -> tuple[Unit, Header]:
    body = b""
    for text in draw(st.lists(st.sampled_from(_STRINGS[1:]), max_size=3)):
        body += text + b"\0"
    body += b"\0"
    for text in draw(st.lists(st.sampled_from(_STRINGS[1:]), max_size=4)):
        body += text + b"\0" + uleb(draw(st.sampled_from([0, 1, 2, 5, 2**64]))) + uleb(draw(st.integers(0, 300))) * 2
    body += b"\0"
    data = body[: draw(st.integers(0, len(body)))] if draw(st.booleans()) else body
    comp_dir = draw(st.sampled_from([None, "", "/build", "C:\\src"]))
    version = draw(st.sampled_from([2, 3, 4]))
    return _unit(True, comp_dir, b"", b""), (data, 0, len(data), 4, version)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(made=_v4_header())
def test_made_dwarf4_lists_name_files_alike(made: tuple[Unit, Header]) -> None:
    _assert_alike(*made)


# Mutated fixture headers -----------------------------------------------------------------------

MUTATED_CASES = ("cppdemo-gcc-dwarf5-pie", "cppdemo-clang-dwarf4-pie", "cdemo-gcc-dwarf4-pie")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), case=st.sampled_from(MUTATED_CASES))
def test_mutated_fixture_headers_name_files_alike(data: st.DataObject, case: str) -> None:
    unit, (section, position, end, offset_size, version) = data.draw(st.sampled_from(_fixture_headers(BIN / case)))
    window = min(end, position + 400)
    mutated = bytearray(section)
    for _ in range(data.draw(st.integers(1, 6))):
        at = data.draw(st.integers(position, max(window - 1, position)))
        if at < len(mutated):
            mutated[at] = data.draw(st.sampled_from([0, 1, 0x7F, 0x80, 0xFF, data.draw(st.integers(0, 255))]))
    cut = data.draw(st.sampled_from([len(mutated), data.draw(st.integers(position, window))]))
    _assert_alike(unit, (bytes(mutated[:cut]), position, end, offset_size, version))
