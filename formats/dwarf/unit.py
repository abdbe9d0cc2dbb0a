"""Unit headers and attribute values (DWARF 5, 7.5.1 and 7.5.4-7.5.6; DWARF 4, 7.5.1).

A :class:`Unit` knows its encoding (version, address and offset size), its
abbreviation table and the bases its indexed forms are relative to
(``DW_AT_str_offsets_base``, ``DW_AT_addr_base``, ``DW_AT_rnglists_base``), and
turns raw attribute values into strings, addresses and section offsets.
"""

from __future__ import annotations

from typing import Any

from symbolize.formats.dwarf import constants as c
from symbolize.formats.dwarf.abbrev import (
    KIND_BLOCK1,
    KIND_BLOCK2,
    KIND_BLOCK4,
    KIND_BLOCK_ULEB,
    KIND_CSTRING,
    KIND_FIXED,
    KIND_IMPLICIT,
    KIND_INDIRECT,
    KIND_SLEB,
    KIND_ULEB,
    Abbrev,
    form_layout,
)
from symbolize.formats.dwarf.reader import (
    DwarfFormatError,
    UIntReader,
    read_initial_length,
    read_sleb,
    read_uleb,
    uint_reader,
)
from symbolize.formats.dwarf.sections import DwarfSections, cstring_at

# Forms whose value is an offset relative to the unit's start.
_UNIT_REF_FORMS = frozenset({c.DW_FORM_ref1, c.DW_FORM_ref2, c.DW_FORM_ref4, c.DW_FORM_ref8, c.DW_FORM_ref_udata})
_STRX_FORMS = frozenset(
    {c.DW_FORM_strx, c.DW_FORM_strx1, c.DW_FORM_strx2, c.DW_FORM_strx3, c.DW_FORM_strx4, c.DW_FORM_GNU_str_index}
)
_ADDRX_FORMS = frozenset(
    {c.DW_FORM_addrx, c.DW_FORM_addrx1, c.DW_FORM_addrx2, c.DW_FORM_addrx3, c.DW_FORM_addrx4, c.DW_FORM_GNU_addr_index}
)
_CONSTANT_FORMS = frozenset(
    {c.DW_FORM_data1, c.DW_FORM_data2, c.DW_FORM_data4, c.DW_FORM_data8, c.DW_FORM_udata, c.DW_FORM_sdata,
     c.DW_FORM_implicit_const}
)


class Unit:
    # A plain class, not a dataclass: ``import dataclasses`` (inspect, ast, dis, tokenize) is about
    # a tenth of a one-address cold lookup's instructions.
    def __init__(
        self,
        sections: DwarfSections,
        offset: int,  # of the unit header in .debug_info
        end: int,  # one past the unit's last byte
        version: int,
        unit_type: int,
        addr_size: int,
        offset_size: int,
        abbrev_offset: int,
        first_die: int,
        dwo_id: int | None = None,
    ) -> None:
        self.sections = sections
        self.offset = offset
        self.end = end
        self.version = version
        self.unit_type = unit_type
        self.addr_size = addr_size
        self.offset_size = offset_size
        self.abbrev_offset = abbrev_offset
        self.first_die = first_die
        self.dwo_id = dwo_id
        self.abbrevs: dict[int, Abbrev] = {}
        # Bases and facts filled in from the unit DIE.
        self.low_pc = 0
        self.str_offsets_base = 0
        self.addr_base = 0
        self.rnglists_base = 0
        # Added to this unit's own .debug_ranges offsets: its skeleton's DW_AT_GNU_ranges_base in a
        # DWARF 4 split unit, else 0. A skeleton's own DW_AT_ranges counts from the section's start.
        self.ranges_base = 0
        self.split_ranges_base = 0  # DW_AT_GNU_ranges_base of a DWARF 4 skeleton, for its split unit
        self.stmt_list: int | None = None
        self.comp_dir: str | None = None
        self.name: str | None = None
        self.dwo_name: str | None = None
        little = sections.little_endian
        self.read_addr: UIntReader = uint_reader(addr_size, little)
        self.read_offset: UIntReader = uint_reader(offset_size, little)
        self._readers = _READERS_BY_ORDER[little]
        # Everything a form's layout and reader depend on: units alike in it decode an
        # abbreviation alike (scan.py and skip.py share their per-abbreviation tables by it).
        self.encoding = (version, addr_size, offset_size, little)
        # (kind, size) per form, specialised to this encoding: shared by the units alike in it
        # (an open reads every unit's root DIE; libpython's 146 units have one encoding).
        self.layouts: dict[int, tuple[int, int]] = _LAYOUTS.setdefault(self.encoding, {})

    def fixed_reader(self, size: int) -> UIntReader:
        return self._readers[size]

    def layout(self, form: int) -> tuple[int, int]:
        found = self.layouts.get(form)
        if found is None:
            found = self.layouts[form] = form_layout(form, self.addr_size, self.offset_size, self.version)
        return found

    def skip_value(self, kind: int, form: int, implicit: int, offset: int) -> int:
        """Offset past one attribute of layout ``kind`` (from :meth:`layout`), its value not built.

        The DIE walks keep LEB128 and fixed sizes inline, their common case; the rest comes here.
        """
        data = self.sections.info
        if kind == KIND_BLOCK_ULEB:
            length, offset = read_uleb(data, offset)
            return offset + length
        if kind == KIND_BLOCK1:
            return offset + 1 + data[offset]
        if kind == KIND_CSTRING:
            # A view of .debug_info is read for numbers alone (DwarfInfo._prepare_unit): bytes here.
            return data.index(0, offset) + 1  # type: ignore[misc]
        return self.read_value(form, implicit, offset)[1]

    def read_value(self, form: int, implicit: int, offset: int) -> tuple[Any, int]:
        """Raw value of one attribute: an int, or bytes for strings and blocks."""
        data = self.sections.info
        kind, size = self.layout(form)
        if kind == KIND_FIXED:
            if size == 16:
                return data[offset : offset + 16], offset + 16
            if size == 0:
                return 1, offset
            return self._readers[size](data, offset), offset + size
        if kind == KIND_ULEB:
            return read_uleb(data, offset)
        if kind == KIND_SLEB:
            return read_sleb(data, offset)
        if kind == KIND_CSTRING:
            # A view of .debug_info is read for numbers alone (DwarfInfo._prepare_unit): bytes here.
            end = data.index(0, offset)  # type: ignore[misc]
            return data[offset:end], end + 1
        if kind == KIND_IMPLICIT:
            return implicit, offset
        if kind == KIND_INDIRECT:
            real_form, offset = read_uleb(data, offset)
            return self.read_value(real_form, implicit, offset)
        if kind == KIND_BLOCK_ULEB:
            length, offset = read_uleb(data, offset)
        elif kind == KIND_BLOCK1:
            length, offset = data[offset], offset + 1
        elif kind == KIND_BLOCK2:
            length, offset = self._readers[2](data, offset), offset + 2
        elif kind == KIND_BLOCK4:
            length, offset = self._readers[4](data, offset), offset + 4
        else:  # pragma: no cover - layouts only produce the kinds above
            raise DwarfFormatError(f"bad form layout {kind}")
        return data[offset : offset + length], offset + length

    def read_die_attributes(self, die_offset: int) -> tuple[Abbrev | None, dict[int, tuple[int, Any]]]:
        """Decode the DIE at ``die_offset``: its abbreviation and {attribute: (form, raw value)}."""
        code, offset = read_uleb(self.sections.info, die_offset)
        if code == 0:
            return None, {}
        abbrev = self.abbrevs.get(code)
        if abbrev is None:
            raise DwarfFormatError(f"DIE at {die_offset:#x} uses undefined abbreviation {code}")
        values: dict[int, tuple[int, Any]] = {}
        for attribute, form, implicit in abbrev.attributes:
            value, offset = self.read_value(form, implicit, offset)
            if form == c.DW_FORM_indirect:
                form = c.DW_FORM_udata  # the real form was consumed by read_value
            values[attribute] = (form, value)
        return abbrev, values

    # Interpreting raw values -------------------------------------------------

    def string(self, form: int, value: Any) -> str | None:
        if isinstance(value, bytes):
            return value.decode("utf-8", "replace")
        sections = self.sections
        if form == c.DW_FORM_strp:
            return _cstring_at(sections.str, value)
        if form == c.DW_FORM_line_strp:
            return _cstring_at(sections.line_str, value)
        if form in _STRX_FORMS:
            position = self.str_offsets_base + value * self.offset_size
            if position + self.offset_size > len(sections.str_offsets):
                raise DwarfFormatError(f"string index {value} outside .debug_str_offsets")
            return _cstring_at(sections.str, self.read_offset(sections.str_offsets, position))
        if form == c.DW_FORM_GNU_strp_alt and sections.supplementary_str:
            return _cstring_at(sections.supplementary_str, value)
        return None  # a supplementary string with no supplementary file found

    def address(self, form: int, value: int) -> int:
        if form in _ADDRX_FORMS:
            position = self.addr_base + value * self.addr_size
            if position + self.addr_size > len(self.sections.addr):
                raise DwarfFormatError(f"address index {value:d} outside .debug_addr")
            return self.read_addr(self.sections.addr, position)
        return int(value)

    def reference(self, form: int, value: int) -> int | None:
        """Section offset of the DIE a reference attribute points to."""
        if form in _UNIT_REF_FORMS:
            return self.offset + value
        if form == c.DW_FORM_ref_addr:
            return int(value)
        return None  # signatures and references into supplementary files

    def pc_bounds(self, values: dict[int, tuple[int, Any]]) -> tuple[int, int] | None:
        low = values.get(c.DW_AT_low_pc)
        high = values.get(c.DW_AT_high_pc)
        if low is None or high is None:
            return None
        low_pc = self.address(*low)
        high_form, high_value = high
        high_pc = low_pc + high_value if high_form in _CONSTANT_FORMS else self.address(high_form, high_value)
        # An offset can carry the end past the address space; it ends at the last address.
        return low_pc, min(high_pc, self.sections.last_address)


# Unit.layouts by encoding: form_layout depends on nothing else.
_LAYOUTS: dict[tuple[int, int, int, bool], dict[int, tuple[int, int]]] = {}
# Unit._readers by byte order (little endian or not): the same functions for every unit, never changed.
_READERS_BY_ORDER = {little: {size: uint_reader(size, little) for size in (1, 2, 3, 4, 8)} for little in (True, False)}


def _cstring_at(data: bytes | memoryview, offset: int) -> str:
    found = cstring_at(data, offset)
    if found is None:
        raise DwarfFormatError(f"string offset {offset:#x} outside its section")
    return found


def parse_unit_header(sections: DwarfSections, offset: int) -> Unit:
    """Read the header of the unit at ``offset`` in ``sections.info``."""
    data = sections.info
    little = sections.little_endian
    offset_size, position, end = read_initial_length(data, offset, little, "unit")
    if position + 7 > end:
        raise DwarfFormatError(f"unit header at {offset:#x} is truncated")
    version = uint_reader(2, little)(data, position)
    position += 2
    if not 2 <= version <= 5:
        raise DwarfFormatError(f"unit at {offset:#x} has unsupported DWARF version {version}")
    read_offset = uint_reader(offset_size, little)
    dwo_id = None
    if version == 5:
        unit_type = data[position]
        addr_size = data[position + 1]
        abbrev_offset = read_offset(data, position + 2)
        position += 2 + offset_size
        if unit_type in (c.DW_UT_skeleton, c.DW_UT_split_compile):
            dwo_id = uint_reader(8, little)(data, position)
            position += 8
        elif unit_type in (c.DW_UT_type, c.DW_UT_split_type):
            position += 8 + offset_size
    else:
        unit_type = c.DW_UT_compile
        abbrev_offset = read_offset(data, position)
        addr_size = data[position + offset_size]
        position += offset_size + 1
    if addr_size not in (2, 4, 8):
        raise DwarfFormatError(f"unit at {offset:#x} has address size {addr_size}")
    return Unit(
        sections=sections,
        offset=offset,
        end=end,
        version=version,
        unit_type=unit_type,
        addr_size=addr_size,
        offset_size=offset_size,
        abbrev_offset=abbrev_offset,
        first_die=position,
        dwo_id=dwo_id,
    )
