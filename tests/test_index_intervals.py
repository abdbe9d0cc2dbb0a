"""The index's inline-chain intervals against the per-address walk they stand for.

``_unit_intervals`` settles, for whole address intervals at once, the choice
``UnitIndex.chain_at`` makes at one address: the function range with the
greatest low that holds it, then at each level the first child in DIE order
whose ranges hold it. Random trees here have overlapping function ranges,
children with several ranges, overlapping siblings and children that reach
outside their parent, which real DWARF has only now and then.
"""

from __future__ import annotations

from itertools import pairwise

from hypothesis import given, settings
from hypothesis import strategies as st

from symbolize.formats.dwarf.export import ExportedUnit
from symbolize.index.indexed import _unit_intervals
from tests.exported_units import chain_at

SPAN = 64


@st.composite
def _units(draw: st.DrawFn) -> ExportedUnit:
    unit = ExportedUnit()
    ranges = st.lists(
        st.tuples(st.integers(0, SPAN - 1), st.integers(1, 24)).map(lambda r: (r[0], min(SPAN, r[0] + r[1]))),
        min_size=0,
        max_size=3,
    )

    def add(parent: int, depth: int) -> None:
        node = len(unit.node_parent)
        unit.node_parent.append(parent)
        unit.node_first.append(node + 1)
        unit.node_end.append(node + 1)
        unit.node_ranges.append(draw(ranges))
        if depth < 3:
            for _ in range(draw(st.integers(0, 3))):
                add(node, depth + 1)
        unit.node_end[node] = len(unit.node_parent)

    functions = []
    for _ in range(draw(st.integers(1, 4))):
        node = len(unit.node_parent)
        add(-1, 0)
        functions += [(low, high, node) for low, high in draw(ranges)]
    unit.function_ranges = sorted(functions)
    return unit


@settings(max_examples=300, deadline=None)
@given(_units())
def test_intervals_give_the_chain_the_walk_gives_at_every_address(unit: ExportedUnit) -> None:
    intervals = _unit_intervals(unit)
    expected = {vaddr: chain_at(unit, vaddr) for vaddr in range(SPAN + 1)}
    found = dict.fromkeys(range(SPAN + 1), ())
    for low, high, chain in intervals:
        assert low < high
        for vaddr in range(low, high):
            found[vaddr] = chain
    assert found == expected
    # Sorted, disjoint and maximal: neighbours that touch differ in their chain.
    for (_, high, chain), (low, _, next_chain) in pairwise(intervals):
        assert high <= low
        assert high < low or chain != next_chain
