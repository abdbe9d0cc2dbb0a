"""The per-address inline-chain walk over an exported unit: the reference the index's intervals stand for."""

from __future__ import annotations

from bisect import bisect_right

from symbolize.formats.dwarf.export import ExportedUnit


def chain_at(unit: ExportedUnit, vaddr: int) -> tuple[int, ...]:
    """UnitIndex.chain_at, one address at a time.

    The function range with the greatest low that holds ``vaddr``, then at each
    level the first child in DIE order whose ranges hold it.
    """
    lows = [low for low, _, _ in unit.function_ranges]
    position = bisect_right(lows, vaddr) - 1
    node = -1
    while position >= 0:
        low, high, candidate = unit.function_ranges[position]
        if low <= vaddr < high:
            node = candidate
            break
        position -= 1
    if node < 0:
        return ()
    chain = [node]
    index, end = unit.node_first[node], unit.node_end[node]
    while index < end:
        if unit.node_parent[index] == chain[-1] and any(low <= vaddr < high for low, high in unit.node_ranges[index]):
            chain.append(index)
            index += 1
        else:
            index = unit.node_end[index]
    return tuple(chain)
