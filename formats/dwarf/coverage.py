"""The addresses a file's DWARF covers: line-table sequences, function entries, inlined calls.

Measured over the same decode the answer runs are built from (``info.py``, ``scan.py``): the
line-table rows that name a line (DWARF 5, 6.2.5: a row reaches the next row of its sequence,
the last one the ``DW_LNE_end_sequence``; line 0 means no source line), ``DW_TAG_subprogram``
entries with code and ``DW_TAG_inlined_subroutine`` entries (3.3.8.2) with their ranges. A unit
that fails to decode is named in ``broken_units`` and covers nothing; a skeleton unit (3.1.2) is
listed with whether its split unit was found. Units are decoded one at a time, and a unit decoded
only for this is dropped once measured, so a large binary's whole decode never has to fit in
memory at once.
"""

from __future__ import annotations

from collections.abc import Sequence

from symbolize.formats.dwarf.info import _DECODE_ERRORS, DwarfInfo, _UnitState
from symbolize.formats.dwarf.scan import _node_ranges
from symbolize.formats.facts import AddressRange, Coverage, merge_ranges


class _UnitFacts:
    """What one decoded unit covers: rows naming a line, and each inline-tree node's parent and ranges."""

    def __init__(self) -> None:
        self.lines: list[AddressRange] = []
        self.node_parent: list[int] = []
        self.node_ranges: list[list[tuple[int, int]]] = []


def _rows_with_lines(
    sequences: Sequence[tuple[int, int, int, int]], addresses: Sequence[int], lines: Sequence[int]
) -> list[AddressRange]:
    """The ranges of the rows that name a source line: each row reaches the next row of its
    sequence (the last one, the sequence's end); line 0 (code no source line owns) names none."""
    found: list[AddressRange] = []
    for _low, high, first, end in sequences:
        for row in range(first, end):
            if lines[row] > 0:
                found.append((addresses[row], addresses[row + 1] if row + 1 < end else high))
    return found


def _unit_facts(info: DwarfInfo, state: _UnitState) -> _UnitFacts | None:
    """The unit decoded whole (every inlined call expanded); None when it cannot be."""
    if not info._ensure_decoded(state, whole=True):
        return None
    index = state.index
    assert index is not None
    while index.deferred:  # expanding a node defers its inlined calls in turn
        index._expand(next(iter(index.deferred)))
    facts = _UnitFacts()
    lines = state.lines
    if lines is not None:
        facts.lines = _rows_with_lines(lines.sequences, lines.addresses, lines.lines)
    for node, parent in enumerate(index.node_parent):
        ranges = index.node_ranges[node]
        if ranges is None:
            ranges = index.node_ranges[node] = _node_ranges(index.unit, index.node_attrs[node])
        facts.node_parent.append(parent)
        facts.node_ranges.append(ranges)
    return facts


def dwarf_coverage(info: DwarfInfo) -> Coverage:
    """Line, function and inlined-call ranges of every unit of ``info`` (``symbols`` left empty).

    Raises MalformedInputError only when the DWARF cannot be read at all.
    """
    lines: list[AddressRange] = []
    functions: list[AddressRange] = []
    inlined: list[AddressRange] = []
    function_entries = inlined_entries = function_bytes = inlined_bytes = 0
    broken: list[str] = []
    for state in info._load_units():
        was_decoded = state.index is not None
        try:
            facts = _unit_facts(info, state)
        except _DECODE_ERRORS as error:
            state.error = state.error or f"compile unit at {state.unit.offset:#x}: {error}"
            facts = None
        if not was_decoded:
            state.index = state.lines = None
        if facts is None or state.error is not None:
            broken.append(state.error or f"compile unit at {state.unit.offset:#x} cannot be decoded")
            continue
        lines.extend(facts.lines)
        for parent, ranges in zip(facts.node_parent, facts.node_ranges, strict=True):
            size = sum(max(0, high - low) for low, high in ranges)
            if parent < 0:
                function_entries += 1
                function_bytes += size
                functions.extend(ranges)
            else:
                inlined_entries += 1
                if facts.node_parent[parent] < 0:
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
