"""Split DWARF: a skeleton unit's ``.dwo`` file or its slice of a ``.dwp`` package.

A ``.dwp`` concatenates many ``.dwo`` files; ``.debug_cu_index`` (DWARF 5,
7.3.5; version 2 is the GNU pre-standard layout) maps each unit's DWO ID to its
contribution (offset and size) in each section. The slices are cut here so the
rest of the reader sees an ordinary ``.dwo``.
"""

from __future__ import annotations

import struct
from pathlib import Path

from symbolize.formats.dwarf import constants as c
from symbolize.formats.dwarf.abbrev import UnknownFormError, parse_abbrev_table
from symbolize.formats.dwarf.reader import DwarfFormatError, uint_reader
from symbolize.formats.dwarf.sections import DwarfSections, SectionGetter
from symbolize.formats.dwarf.unit import parse_unit_header

# What reading a hostile candidate file can raise; any of them means "does not hold the unit".
_DECODE_ERRORS = (DwarfFormatError, UnknownFormError, IndexError, ValueError, struct.error, TypeError, OverflowError)
# A .dwo holds one compile unit (and maybe type units); a file with more is not worth walking.
_MAX_DWO_UNITS = 1024
_U64 = (1 << 64) - 1

# Section identifiers to the .dwo section they slice, per index version.
_SECTIONS_V5 = {1: "debug_info.dwo", 3: "debug_abbrev.dwo", 4: "debug_line.dwo", 5: "debug_loclists.dwo",
                6: "debug_str_offsets.dwo", 7: "debug_macro.dwo", 8: "debug_rnglists.dwo"}
_SECTIONS_V2 = {1: "debug_info.dwo", 2: "debug_types.dwo", 3: "debug_abbrev.dwo", 4: "debug_line.dwo",
                5: "debug_loc.dwo", 6: "debug_str_offsets.dwo", 7: "debug_macinfo.dwo", 8: "debug_macro.dwo"}


def _as_bytes(data: bytes | memoryview | None) -> bytes:
    if data is None:
        return b""
    return data if isinstance(data, bytes) else bytes(data)


def package_contributions(index: bytes, dwo_id: int, little_endian: bool = True) -> dict[str, tuple[int, int]]:
    """{section name: (offset, size)} of the unit ``dwo_id`` in a package, {} when absent."""
    read32 = uint_reader(4, little_endian)
    read64 = uint_reader(8, little_endian)
    if len(index) < 16:
        raise DwarfFormatError(".debug_cu_index is truncated")
    version = read32(index, 0) & 0xFFFF if read32(index, 0) & 0xFFFF == 5 else read32(index, 0)
    names = _SECTIONS_V5 if version == 5 else _SECTIONS_V2
    column_count = read32(index, 4)
    unit_count = read32(index, 8)
    slot_count = read32(index, 12)
    hashes = 16
    rows = hashes + 8 * slot_count
    columns = rows + 4 * slot_count
    offsets = columns + 4 * column_count
    sizes = offsets + 4 * column_count * unit_count
    if sizes + 4 * column_count * unit_count > len(index) or slot_count == 0:
        raise DwarfFormatError(".debug_cu_index is truncated")
    mask = slot_count - 1
    slot = dwo_id & mask
    step = ((dwo_id >> 32) & mask) | 1
    for _ in range(slot_count):
        signature = read64(index, hashes + 8 * slot)
        row = read32(index, rows + 4 * slot)
        if row == 0 and signature == 0:
            return {}
        if signature == dwo_id and row:
            found = {}
            for column in range(column_count):
                section = names.get(read32(index, columns + 4 * column))
                cell = 4 * ((row - 1) * column_count + column)
                if section is not None:
                    found[section] = (read32(index, offsets + cell), read32(index, sizes + cell))
            return found
        slot = (slot + step) & mask
    return {}


def load_split_sections(
    getter: SectionGetter, path: Path, skeleton: DwarfSections, dwo_id: int | None
) -> DwarfSections | None:
    """Sections of the split unit ``dwo_id`` from a .dwo or .dwp ``getter`` serves."""
    index = getter("debug_cu_index")
    if index is None or len(index) == 0:
        return DwarfSections.from_dwo_getter(getter, path, skeleton)
    if dwo_id is None:
        return None
    contributions = package_contributions(_as_bytes(index), dwo_id, skeleton.little_endian)
    if not contributions:
        return None
    cache: dict[str, bytes] = {}

    def sliced(name: str) -> bytes | None:
        if name not in cache:
            whole = _as_bytes(getter(name))
            span = contributions.get(name)
            cache[name] = whole[span[0] : span[0] + span[1]] if span is not None else whole
        return cache[name]

    return DwarfSections.from_dwo_getter(sliced, path, skeleton)


def holds_split_unit(getter: SectionGetter, path: Path, dwo_id: int, little_endian: bool = True) -> bool:
    """Whether the .dwo or .dwp ``getter`` serves holds the split compile unit ``dwo_id``.

    A package answers from its ``.debug_cu_index``; a ``.dwo`` from its units' DWO IDs
    (the DWARF 5 split unit header, or ``DW_AT_GNU_dwo_id`` on a DWARF 4 GNU unit's root DIE).
    A file that cannot be read does not hold it. The sections the unit would be read from are
    read here, so a section that cannot be (past the decompression cap) raises
    MalformedInputError now, refusing the file, rather than breaking the unit later.
    """
    try:
        index = getter("debug_cu_index")
        if index is not None and len(index) > 0:
            if not package_contributions(_as_bytes(index), dwo_id, little_endian):
                return False
            for name in sorted({*_SECTIONS_V5.values(), *_SECTIONS_V2.values()}):
                getter(name)
            return True
        empty = DwarfSections.from_getter(lambda _name: None, path, little_endian)
        sections = DwarfSections.from_dwo_getter(getter, path, empty)
        offset = 0
        for _ in range(_MAX_DWO_UNITS):
            if offset >= len(sections.info):
                return False
            unit = parse_unit_header(sections, offset)
            offset = unit.end
            if unit.dwo_id is None and unit.unit_type == c.DW_UT_compile:
                unit.abbrevs = parse_abbrev_table(sections.abbrev, unit.abbrev_offset, {})
                _, values = unit.read_die_attributes(unit.first_die)
                if c.DW_AT_GNU_dwo_id in values:
                    unit.dwo_id = int(values[c.DW_AT_GNU_dwo_id][1])
            if unit.dwo_id is not None and unit.dwo_id & _U64 == dwo_id & _U64:
                return True
    except _DECODE_ERRORS:
        return False
    return False
