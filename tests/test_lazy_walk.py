"""The rule the compiled lazy unit keeps (native/src/dwarf/tree.rs): a function's subtree is walked
when an address lands in the function, as the reference's lookup scan (formats/dwarf/scan.py) defers
it, so damage inside a function no address falls in is seen by neither, and damage inside one an
address falls in leaves the unit to the reference. Checked on fixture copies damaged by hand: the
first child DIE of one deferred function given an abbreviation code its table does not define."""

from __future__ import annotations

from pathlib import Path

import pytest

from symbolize.formats.dwarf import DwarfInfo
from symbolize.formats.dwarf.answers import DwarfSymbolAnswers
from symbolize.formats.native import kernels
from tests.dwarf_builder import answering, getter

if kernels is None:
    pytest.skip("the compiled kernels are not built or not enabled", allow_module_level=True)

from tests.test_compiled_dwarf import _lookup_case
from tests.test_compiled_lazy import _edges, _lookups

# GCC links siblings (DW_AT_sibling), so both scans jump over a function's children.
GCC_FIXTURES = ["cdemo-gcc-dwarf5-pie", "cdemo-gcc-dwarf4-pie", "cdemo-gcc-dwarf5-nopie"]


def _damaged(name: str) -> tuple[DwarfSymbolAnswers, int, int, int]:
    """A copy of fixture ``name`` with one deferred function's first child damaged: the copy, the
    unit's offset, an address of the damaged function and one of another function of its unit."""
    fixture = _lookup_case(name, None).source.dwarf
    sections = {section.lstrip("."): bytes(data) for section, data in fixture.sections_by_name().items()}
    dwarf = DwarfInfo(getter(sections), Path(name))  # its own scans: none expanded by another test
    for state in dwarf._load_units():
        if state.error is not None or not dwarf._ensure_decoded(state) or state.index is None:
            continue
        index = state.index
        codes = set(state.unit.abbrevs)
        unused = max(codes) + 1
        for node, (first_child, _) in index.deferred.items():
            ranges = index.node_ranges[node]
            others = [low for low, _, other in index.function_ranges if other != node]
            one_byte_code = 0 < sections["debug_info"][first_child] < 0x80 and unused < 0x80
            if index.node_parent[node] >= 0 or not ranges or not others or not one_byte_code:
                continue
            info = bytearray(sections["debug_info"])
            info[first_child] = unused
            copy = dict(sections, debug_info=bytes(info))
            return answering(DwarfInfo(getter(copy), Path(name))), state.unit.offset, ranges[0][0], others[0]
    raise AssertionError(f"{name}: no deferred function with a child to damage")


@pytest.mark.parametrize("name", GCC_FIXTURES)
def test_damage_where_no_address_lands_is_seen_by_neither(name: str) -> None:
    source, unit_offset, victim, other = _damaged(name)
    reference = _lookups(source, [other, victim], compiled=False)
    assert isinstance(reference[0], list) and reference[0], "the reference answers the undamaged function"
    assert reference[1][0] == "raised", "the reference finds the damage where an address lands"
    units = source._compiled_units()
    assert units is not None
    lazy = units.lazy_unit(unit_offset, False)
    assert lazy is not None, "the compiled unit opens: the damaged subtree was not walked"
    assert lazy.run_at(other) is not None
    with pytest.raises(kernels.CompiledDwarfDeferred):
        lazy.run_at(victim)


@pytest.mark.parametrize("name", GCC_FIXTURES)
def test_a_damaged_copy_looks_up_as_the_reference(name: str) -> None:
    source, _, victim, other = _damaged(name)
    for vaddrs in ([other, victim, other], [victim, other], [*_edges(source), victim]):
        assert _lookups(source, vaddrs, compiled=True) == _lookups(source, vaddrs, compiled=False)
