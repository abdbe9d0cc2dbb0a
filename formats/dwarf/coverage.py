"""The addresses a file's DWARF covers: line-table sequences, function entries, inlined calls.

Measured over the same decode the persistent index stores (``export.py``):
line sequences as the line program gives them (DWARF 5, 6.2.5: each sequence
ends at its ``DW_LNE_end_sequence``), ``DW_TAG_subprogram`` entries with code
and ``DW_TAG_inlined_subroutine`` entries (3.3.8.2) with their ranges. A unit
that fails to decode is named in ``broken_units`` and covers nothing; a
skeleton unit (3.1.2) is listed with whether its split unit was found.
"""

from __future__ import annotations

from symbolize.formats.dwarf.export import export_dwarf
from symbolize.formats.dwarf.info import DwarfInfo
from symbolize.formats.facts import AddressRange, Coverage, merge_ranges


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
        lines.extend((low, high) for low, high, _first, _end in unit.sequences)
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
    )
