"""Everything a DwarfInfo can answer, decoded at once into plain lists.

The persistent index (``symbolize/index``) stores this and answers lookups
from it exactly as :meth:`DwarfInfo.frames_at` would: the same unit ranges,
line sequences and rows, function ranges and inline trees, with names and
call-site files already resolved to strings. A unit that fails to decode (or
any of whose functions fails to expand) is exported with its error and no
contents, so its addresses raise the same MalformedInputError.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from symbolize.formats.dwarf.info import _DECODE_ERRORS, DwarfInfo, _UnitState
from symbolize.formats.dwarf.scan import UnitIndex, _node_ranges


@dataclass
class ExportedUnit:
    error: str | None = None
    # Line table: sequences (low, high, first row, end row) sorted by low; rows as parallel lists.
    has_lines: bool = False
    sequences: list[tuple[int, int, int, int]] = field(default_factory=list)
    row_addresses: list[int] = field(default_factory=list)
    row_files: list[str | None] = field(default_factory=list)
    row_lines: list[int] = field(default_factory=list)
    row_columns: list[int] = field(default_factory=list)
    # Function ranges (low, high, node) sorted by low, and the nodes in the order chain_at walks.
    function_ranges: list[tuple[int, int, int]] = field(default_factory=list)
    node_parent: list[int] = field(default_factory=list)
    node_first: list[int] = field(default_factory=list)
    node_end: list[int] = field(default_factory=list)
    node_ranges: list[list[tuple[int, int]]] = field(default_factory=list)
    node_name: list[str | None] = field(default_factory=list)
    node_decl_line: list[int] = field(default_factory=list)
    node_call_file: list[str | None] = field(default_factory=list)
    node_call_line: list[int] = field(default_factory=list)
    node_call_column: list[int] = field(default_factory=list)


@dataclass
class DwarfExport:
    # (low, high, unit) sorted by low: which units cover which addresses.
    unit_ranges: list[tuple[int, int, int]]
    # One ExportedUnit per unit, in unit order, decoded as the iterator is consumed.
    units: Iterator[ExportedUnit]


def export_dwarf(info: DwarfInfo) -> DwarfExport:
    """Decode every unit of ``info`` completely. Raises MalformedInputError only for a broken .debug_info.

    Units are decoded one at a time as ``units`` is consumed, and each unit's
    decoded state is dropped once exported: a large binary's whole decode
    never has to fit in memory at once. (A later lookup in ``info`` decodes
    the unit again.)
    """
    states = info._load_units()
    return DwarfExport(list(info._unit_ranges), _export_units(info, states))


def _export_units(info: DwarfInfo, states: list[_UnitState]) -> Iterator[ExportedUnit]:
    for state in states:
        exported = ExportedUnit()
        try:
            _export_unit(info, state, exported)
        except _DECODE_ERRORS as error:
            state.error = state.error or f"compile unit at {state.unit.offset:#x}: {error}"
        if state.error is not None:
            exported = ExportedUnit(error=state.error)
        else:
            state.index = state.lines = None
        yield exported


def _export_unit(info: DwarfInfo, state: _UnitState, exported: ExportedUnit) -> None:
    if not info._ensure_decoded(state, whole=True):
        return
    index = state.index
    assert index is not None
    # Expanding a node defers its inlined calls in turn.
    while index.deferred:
        index._expand(next(iter(index.deferred)))
    lines = state.lines
    if lines is not None:
        exported.has_lines = True
        exported.sequences = list(lines.sequences)
        exported.row_addresses = list(lines.addresses)
        exported.row_files = [lines.file_name(i) for i in lines.file_indexes]
        exported.row_lines = list(lines.lines)
        exported.row_columns = list(lines.columns)
    order, subtree_sizes = _pre_order(index)
    renumbered = {node: position for position, node in enumerate(order)}
    renumbered[-1] = -1
    exported.function_ranges = [(low, high, renumbered[node]) for low, high, node in index.function_ranges]
    for position, node in enumerate(order):
        ranges = index.node_ranges[node]
        if ranges is None:
            ranges = index.node_ranges[node] = _node_ranges(index.unit, index.node_attrs[node])
        name, decl_line = info.node_name(state, node)
        file, line, column = info.call_site(state, node) if index.node_parent[node] >= 0 else (None, 0, 0)
        exported.node_parent.append(renumbered[index.node_parent[node]])
        exported.node_first.append(position + 1)
        exported.node_end.append(position + 1 + subtree_sizes[node])
        exported.node_ranges.append(ranges)
        exported.node_name.append(name)
        exported.node_decl_line.append(decl_line)
        exported.node_call_file.append(file)
        exported.node_call_line.append(line)
        exported.node_call_column.append(column)


def _pre_order(index: UnitIndex) -> tuple[list[int], dict[int, int]]:
    """A fully expanded unit's nodes in DIE pre-order, and how many nodes each one's subtree holds.

    Expansion appended subtrees out of order; the export lays them out again so that a
    node's subtree directly follows it, the layout ``_chain_at`` of the index walks.
    """
    order: list[int] = []
    sizes: dict[int, int] = {}
    # (node, position in order) of the nodes whose subtree is being laid out, and the
    # next node to visit at each depth with the end of its range.
    open_nodes: list[tuple[int, int]] = []
    ranges: list[tuple[int, int]] = [(0, index.top_end)]
    while ranges:
        position, end = ranges[-1]
        if position < end:
            ranges[-1] = (index.node_next[position], end)
            open_nodes.append((position, len(order)))
            order.append(position)
            ranges.append((index.node_first[position], index.node_end[position]))
            continue
        ranges.pop()
        if open_nodes and len(ranges) == len(open_nodes):
            node, start = open_nodes.pop()
            sizes[node] = len(order) - start - 1
    return order, sizes
