"""The addresses a file's DWARF covers: line-table sequences, function entries, inlined calls.

Measured over the same decode the persistent index stores (``export.py``):
the line-table rows that name a line (DWARF 5, 6.2.5: a row reaches the next
row of its sequence, the last one the ``DW_LNE_end_sequence``; line 0 means
no source line), ``DW_TAG_subprogram`` entries with code
and ``DW_TAG_inlined_subroutine`` entries (3.3.8.2) with their ranges. A unit
that fails to decode is named in ``broken_units`` and covers nothing; a
skeleton unit (3.1.2) is listed with whether its split unit was found.
"""

from __future__ import annotations

from symbolize.formats.dwarf.export import export_dwarf
from symbolize.formats.dwarf.info import DwarfInfo
from symbolize.formats.facts import AddressRange, Coverage, merge_ranges


def _rows_with_lines(
    sequences: list[tuple[int, int, int, int]], addresses: list[int], lines: list[int]
) -> list[AddressRange]:
    """The ranges of the rows that name a source line: each row reaches the next row of its
    sequence (the last one, the sequence's end); line 0 (code no source line owns) names none."""
    found: list[AddressRange] = []
    for _low, high, first, end in sequences:
        for row in range(first, end):
            if lines[row] > 0:
                found.append((addresses[row], addresses[row + 1] if row + 1 < end else high))
    return found


def dwarf_coverage(info: DwarfInfo) -> Coverage:
    """Line, function and inlined-call ranges of every unit of ``info`` (``symbols`` left empty).

    Raises MalformedInputError only when ``.debug_info`` itself cannot be walked.
    """
    lines: list[AddressRange] = []
    functions: list[AddressRange] = []
    inlined: list[AddressRange] = []
    function_entries = inlined_entries = function_bytes = inlined_bytes = 0
    broken: list[str] = []
    for unit in export_dwarf(info).units:
        if unit.error is not None:
            broken.append(unit.error)
            continue
        lines.extend(_rows_with_lines(unit.sequences, unit.row_addresses, unit.row_lines))
        for parent, ranges in zip(unit.node_parent, unit.node_ranges, strict=True):
            size = sum(max(0, high - low) for low, high in ranges)
            if parent < 0:
                function_entries += 1
                function_bytes += size
                functions.extend(ranges)
            else:
                inlined_entries += 1
                if unit.node_parent[parent] < 0:
                    inlined_bytes += size  # outermost calls only, as llvm-dwarfdump counts them
                inlined.extend(ranges)
    # Decoding a skeleton unit looked for its split unit; what it found stays in the unit's state.
    split_units = tuple(
        (state.unit.dwo_name, state.die_unit is not None and state.die_unit is not state.unit)
        for state in info._load_units()
        if state.unit.dwo_name is not None
    )
    return Coverage(
        lines=merge_ranges(lines),
        functions=merge_ranges(functions),
        inlined=merge_ranges(inlined),
        function_entries=function_entries,
        inlined_entries=inlined_entries,
        function_range_bytes=function_bytes,
        inlined_range_bytes=inlined_bytes,
        broken_units=tuple(broken),
        split_units=split_units,
        dwarf_versions=tuple(info.versions()),
    )
