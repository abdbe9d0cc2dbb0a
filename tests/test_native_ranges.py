"""The compiled range list decoder (``native/src/ranges.rs``) against ``ranges.decode_ranges``.

``_kernels.decode_ranges`` must return the ranges the reference returns or raise its
DwarfFormatError with its message; it may return None where the reference fails another way (a
read past a section) or a value outgrows 64 bits, and the reference then decides. Checked on every
``DW_AT_ranges`` of every fixture unit and on hypothesis-made lists in both sections, in both byte
orders, with odd bases, indexes and offsets. Skipped where the kernels are not built or enabled.
"""

from __future__ import annotations

import struct
from dataclasses import replace
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from symbolize.formats.dwarf import constants as c
from symbolize.formats.dwarf.unit import Unit
from symbolize.formats.native import kernels
from tests.dwarf_builder import uleb
from tests.fixtures_data import FIXTURES
from tests.kernel_twins import node_ranges_outcome, object_units, ranges_outcome, scan_outcome

if kernels is None:
    pytest.skip("the compiled kernels are not built or not enabled", allow_module_level=True)

MAGICS = (b"\x7fELF", b"\xcf\xfa\xed\xfe", b"\xce\xfa\xed\xfe", b"\xca\xfe\xba\xbe")
OBJECT_FILES = sorted(path for path in FIXTURES.rglob("*") if path.is_file() and path.read_bytes()[:4] in MAGICS)


class _Recording:
    """Stands for the kernels module in scan.py and ranges.py; records what each twin returned."""

    def __init__(self) -> None:
        self.returned: list[object] = []

    def _record(self, twin: Any, *args: Any) -> object:
        self.returned.append("raised")
        returned = twin(*args)
        self.returned[-1] = returned
        return returned

    def decode_ranges(self, *args: Any) -> object:
        return self._record(kernels.decode_ranges, *args)  # type: ignore[union-attr]

    def node_ranges(self, *args: Any) -> object:
        return self._record(kernels.node_ranges, *args)  # type: ignore[union-attr]


def _assert_alike(unit: Unit, form: Any, value: Any) -> object:
    recording = _Recording()
    reference = ranges_outcome(unit, form, value, None)
    assert ranges_outcome(unit, form, value, recording) == reference
    return recording.returned[0]


def _assert_nodes_alike(unit: Unit, values: dict[int, tuple[int, Any]]) -> object:
    recording = _Recording()
    reference = node_ranges_outcome(unit, values, None)
    assert node_ranges_outcome(unit, values, recording) == reference
    return recording.returned[0]


@pytest.mark.parametrize("path", OBJECT_FILES, ids=lambda path: str(path.relative_to(FIXTURES)))
def test_every_fixture_node_and_range_list_decodes_alike(path: Path) -> None:
    checked = 0
    for unit in object_units(path):
        outcome = scan_outcome(unit, True, None)
        if outcome[0] != "scanned":
            continue
        for attributes in outcome[1][6]:  # type: ignore[union-attr]
            values = dict(attributes)
            assert _assert_nodes_alike(unit, values) is not None  # decided by the kernel itself
            checked += 1
            if 5 in values:
                assert _assert_alike(unit, *values[5]) is not None
    if not checked:
        pytest.skip("no functions with code in this file")


@cache
def _template(name: str) -> Unit:
    return object_units(FIXTURES / "bin" / name)[0]


def _address(value: int, size: int, little: bool) -> bytes:
    return (value % (1 << (8 * size))).to_bytes(size, "little" if little else "big")


@st.composite
def _made(draw: st.DrawFn) -> tuple[Unit, int, Any]:
    version = draw(st.sampled_from([5, 4]))
    unit = _template("cdemo-gcc-dwarf5-pie" if version == 5 else "cdemo-gcc-dwarf4-pie")
    little = draw(st.booleans())
    addr_size = draw(st.sampled_from([8, 8, 4, 2]))
    offset_size = draw(st.sampled_from([4, 4, 8]))
    value_int = st.one_of(st.integers(0, 0x200), st.sampled_from([0, (1 << 32) - 1, (1 << 64) - 1, 1 << 64, 1 << 70]),
                          st.integers(0, (1 << 64) - 1))
    addr = b"".join(_address(draw(value_int), addr_size, little) for _ in range(draw(st.integers(0, 6))))
    entries = bytearray()
    for _ in range(draw(st.integers(0, 8))):
        kind = draw(st.integers(0, 9))
        entries.append(kind)
        if kind in (c.DW_RLE_offset_pair, c.DW_RLE_startx_endx, c.DW_RLE_startx_length):
            entries += uleb(draw(value_int)) + uleb(draw(value_int))
        elif kind == c.DW_RLE_base_addressx:
            entries += uleb(draw(value_int))
        elif kind in (c.DW_RLE_base_address, c.DW_RLE_start_end, c.DW_RLE_start_length):
            for _ in range(1 if kind != c.DW_RLE_start_end else 2):
                entries += _address(draw(value_int), addr_size, little)
            if kind == c.DW_RLE_start_length:
                entries += uleb(draw(value_int))
    if draw(st.booleans()):
        entries.append(c.DW_RLE_end_of_list)
    offsets = struct.pack(("<" if little else ">") + ("I" if offset_size == 4 else "Q"), draw(st.integers(0, 12)))
    rnglists = offsets + bytes(entries) + draw(st.binary(max_size=4))
    pairs = bytearray()
    for _ in range(draw(st.integers(0, 5))):
        start = draw(st.one_of(value_int, st.just((1 << (8 * addr_size)) - 1)))
        pairs += _address(start, addr_size, little) + _address(draw(value_int), addr_size, little)
    if draw(st.booleans()):
        pairs += bytes(2 * addr_size)
    debug_ranges = bytes(pairs) + draw(st.binary(max_size=4))
    sections = replace(unit.sections, rnglists=rnglists, ranges=debug_ranges, addr=addr, little_endian=little,
                       address_size=draw(st.sampled_from([8, 4])))
    made = replace(unit, sections=sections, addr_size=addr_size, offset_size=offset_size,
                   low_pc=draw(value_int), addr_base=draw(st.integers(0, 16)), rnglists_base=draw(st.integers(0, 8)),
                   ranges_base=draw(st.integers(0, 16)))
    form = draw(st.sampled_from([c.DW_FORM_sec_offset, c.DW_FORM_rnglistx, c.DW_FORM_data4, c.DW_FORM_udata]))
    return made, form, draw(_raw_value())


def _raw_value() -> st.SearchStrategy[Any]:
    return st.one_of(st.integers(0, 24), st.sampled_from([1 << 64, -1, -(1 << 63) - 1, b"\x01", b"12", True]),
                     st.integers(-(1 << 66), 1 << 66))


_ADDRESS_FORMS = [c.DW_FORM_addr, c.DW_FORM_addrx, c.DW_FORM_addrx1, c.DW_FORM_addrx4, c.DW_FORM_GNU_addr_index,
                  c.DW_FORM_data1, c.DW_FORM_data8, c.DW_FORM_udata, c.DW_FORM_sdata, c.DW_FORM_implicit_const,
                  c.DW_FORM_block1, c.DW_FORM_string]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=_made())
def test_made_range_lists_decode_alike(case: tuple[Unit, int, Any]) -> None:
    _assert_alike(*case)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=_made(), data=st.data())
def test_made_node_attributes_decode_alike(case: tuple[Unit, int, Any], data: st.DataObject) -> None:
    unit, form, value = case
    values: dict[int, tuple[int, Any]] = {}
    for slot in data.draw(st.permutations([3, 4, 5, 1]))[: data.draw(st.integers(0, 4))]:
        if slot == 5:
            values[5] = (form, value)
        elif slot == 1:
            values[1] = (c.DW_FORM_strp, 0)
        else:
            values[slot] = (data.draw(st.sampled_from(_ADDRESS_FORMS)), data.draw(_raw_value()))
    _assert_nodes_alike(unit, values)
