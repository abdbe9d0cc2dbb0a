"""On damaged DWARF the index and uncached lookups give the same answer at every address.

Damage under one function breaks that function's addresses alone, in both paths: its subtree
that cannot be scanned, a child whose ranges cannot be decoded, a name that cannot be read. The
index used to build a unit whole and fail it whole (every address of it then took the symbol
table's name, or the unit's error), where a lookup still named all it reached; and a lookup that
met the damage first broke the whole unit for the lookups after it. Over the twenty seeds below,
714 of 30,000 addresses differed before the fix (by seed: 0, 9, 3, 0, 77, 0, 0, 89, 92, 44, 0,
101, 46, 0, 57, 47, 1, 50, 1, 97); the synthetic tests each failed before it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from symbolize.formats.dwarf import DwarfInfo
from symbolize.formats.dwarf import constants as c
from symbolize.formats.dwarf.scan import scan_unit
from symbolize.formats.elf import ElfFile
from symbolize.formats.errors import BrokenSpanError, MalformedInputError
from symbolize.formats.symbols import RankedSymbol, Symbol, SymbolIndex
from tests import damaged_agreement
from tests import hostile_dwarf as h
from tests.dwarf_builder import answering, uleb

GOOD, BROKEN, AFTER = 0x1004, 0x2004, 0x3004


@pytest.mark.parametrize("seed", range(1, 21))
def test_mutated_fixtures_answer_alike_indexed_and_uncached(seed: int) -> None:
    compared, differing, indexed, found = damaged_agreement.count_differences(seed)
    assert indexed >= 25  # the index was built for (nearly) every mutant: the comparison is real
    assert compared == 1500
    assert differing == 0, found[:3]


def test_the_mutants_do_damage_what_the_addresses_name() -> None:
    """Not vacuous: the mutants of the seeds above change many answers from the undamaged file's."""
    changed = 0
    for mutant in damaged_agreement.mutants(5, 30, 50):
        with ElfFile(damaged_agreement.FIXTURES / mutant.case) as original:
            before = [damaged_agreement.answer(original, vaddr) for vaddr in mutant.vaddrs]
        with ElfFile(Path(mutant.case), data=mutant.data) as damaged:
            after = [damaged_agreement.answer(damaged, vaddr) for vaddr in mutant.vaddrs]
        changed += sum(1 for old, new in zip(before, after, strict=True) if old != new)
    assert changed >= 50


# Synthetic units: "good" at 0x1000, "broken" at 0x2000 (its damage in each case below), "after"
# at 0x3000; each 0x100 bytes. Abbreviation codes past the common table's.
NAME_STRP, PARENT_SIBLING, INLINED_RANGES, UNDEFINED = 20, 21, 22, 0x70
_PREFIX = h.cu_die("d.c", 0x1000, 0x2100) + h.function_die("good", 0x1000, 0x100)
_HEADER_SIZE = len(h.unit(b""))


def _abbrevs() -> bytes:
    code = [(c.DW_AT_low_pc, c.DW_FORM_addr), (c.DW_AT_high_pc, c.DW_FORM_data4)]
    call = [(c.DW_AT_call_file, c.DW_FORM_data1), (c.DW_AT_call_line, c.DW_FORM_data4)]
    return h.common_abbrevs()[:-1] + b"".join([
        h.abbrev(NAME_STRP, c.DW_TAG_subprogram, False, [(c.DW_AT_name, c.DW_FORM_strp), *code]),
        h.abbrev(PARENT_SIBLING, c.DW_TAG_subprogram, True,
                 [(c.DW_AT_sibling, c.DW_FORM_ref4), (c.DW_AT_name, c.DW_FORM_string), *code]),
        h.abbrev(INLINED_RANGES, c.DW_TAG_inlined_subroutine, False,
                 [(c.DW_AT_name, c.DW_FORM_string), (c.DW_AT_ranges, c.DW_FORM_sec_offset), *call]),
    ]) + b"\0"


def _unit(broken: bytes) -> dict[str, bytes]:
    """The unit, ``broken`` the bytes of the DIE at 0x2000 and its subtree."""
    body = _PREFIX + broken + h.function_die("after", 0x3000, 0x100) + b"\0"
    return {"debug_info": h.unit(body), "debug_abbrev": _abbrevs(), "debug_str": b"\0", "debug_ranges": b"\0" * 16}


# Where the children of "broken" start, in _with_sibling's unit.
CHILDREN = _HEADER_SIZE + len(_PREFIX) + len(uleb(PARENT_SIBLING)) + 4 + len(b"broken\0") + 8 + 4


def _with_sibling(children: bytes, sibling: int | None = None) -> dict[str, bytes]:
    """``broken`` a function with ``children`` and a DW_AT_sibling link (GCC's way): to ``sibling``,
    by default to the DIE just past its subtree."""
    link = CHILDREN + len(children) + 1 if sibling is None else sibling
    head = uleb(PARENT_SIBLING) + link.to_bytes(4, "little") + b"broken\0"
    return _unit(head + (0x2000).to_bytes(8, "little") + (0x100).to_bytes(4, "little") + children + b"\0")


def _inlined(ranges_offset: int | None = None) -> bytes:
    """An inlined call at 0x2000, by its bounds, or by a DW_AT_ranges at ``ranges_offset``."""
    if ranges_offset is None:
        return h.inlined_die("inl", 0x2000, 0x10, parent=False, call_line=h.LE4.u(4, 3))
    return uleb(INLINED_RANGES) + b"inl\0" + ranges_offset.to_bytes(4, "little") + b"\x01" + h.LE4.u(4, 3)


CASES = {
    # DW_AT_name through DW_FORM_strp, at an offset past .debug_str.
    "name": _unit(uleb(NAME_STRP) + (0xFFFF).to_bytes(4, "little") + (0x2000).to_bytes(8, "little")
                  + (0x100).to_bytes(4, "little")),
    # A child DIE with an abbreviation code the table does not define.
    "subtree": _with_sibling(uleb(UNDEFINED) + b"\0" * 8),
    # An inlined call whose DW_AT_ranges lies past .debug_ranges.
    "child ranges": _with_sibling(_inlined(0xFFFF)),
}


def _frames_or_error(answers: object, vaddr: int) -> str:
    try:
        frames = answers.frames_at(vaddr)  # type: ignore[attr-defined]
    except MalformedInputError as error:
        return f"error: {error.reason}"
    return frames[0].function if frames else "none"


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("broken_first", [True, False], ids=["broken first", "good first"])
def test_damage_under_one_function_leaves_the_others_named(case: str, broken_first: bool) -> None:
    order = [BROKEN, GOOD, AFTER] if broken_first else [GOOD, AFTER, BROKEN]
    lazy = answering(DwarfInfo(CASES[case].get, Path(case)))
    answers = {vaddr: _frames_or_error(lazy, vaddr) for vaddr in order}
    assert answers[GOOD] == "good"
    assert answers[AFTER] == "after"
    assert answers[BROKEN].startswith("error: compile unit at 0x0: ")
    # The index's flattened answers (formats/answers.py): the same at each address.
    whole = answering(DwarfInfo(CASES[case].get, Path(case)))
    table = whole.answers(0)
    assert [(low, high) for low, high, _ in table.broken] == [(0x2000, 0x2100)]
    assert all(isinstance(error, BrokenSpanError) for _, _, error in table.broken)
    assert f"error: {table.broken[0][2].reason}" == answers[BROKEN]
    assert {run.frames[0].function for run in table} == {"good", "after"}


def test_a_broken_span_falls_back_to_the_symbol_table() -> None:
    """Where the broken function has a symbol, the symbol names it, as for a broken unit."""
    info = DwarfInfo(CASES["subtree"].get, Path("subtree"))
    symbols = SymbolIndex([RankedSymbol(Symbol("broken_symbol", 0x2000, 0x80), None)])
    from symbolize.formats.dwarf.answers import DwarfSymbolAnswers

    lazy = DwarfSymbolAnswers(Path("subtree"), info, symbols)
    assert _frames_or_error(lazy, BROKEN) == "broken_symbol"
    assert _frames_or_error(lazy, 0x2090).startswith("error: ")  # past the symbol: the span's error
    assert _frames_or_error(lazy, GOOD) == "good"


def test_a_failed_expansion_is_undone_and_fails_again_alike() -> None:
    info = DwarfInfo(CASES["subtree"].get, Path("subtree"))
    state = info._load_units()[0]
    index = scan_unit(state.unit)
    before = (list(index.node_die), list(index.function_ranges), dict(index.deferred))
    (node,) = [node for node in index.deferred if index.node_die[node] > 0]
    messages = []
    for _ in range(2):
        with pytest.raises(Exception) as raised:
            index._expand(node)
        messages.append(str(raised.value))
    assert messages[0] == messages[1]
    assert "undefined abbreviation" in messages[0]
    assert (list(index.node_die), list(index.function_ranges)) == before[:2]
    assert index.node_first[node] == index.node_end[node]  # no children, not half of them
    assert node not in index.deferred and node in index.failed


def test_a_whole_scan_that_fails_is_done_again_function_by_function() -> None:
    info = DwarfInfo(CASES["subtree"].get, Path("subtree"))
    with pytest.raises(Exception, match="undefined abbreviation"):
        scan_unit(info._load_units()[0].unit, whole=True)
    answers = answering(info)
    assert {run.frames[0].function for run in answers.answers(0)} == {"good", "after"}


@pytest.mark.parametrize("sibling", [0x7E0000, CHILDREN], ids=["past the unit", "inside the subtree"])
def test_a_sibling_link_the_children_contradict_gives_one_answer(sibling: int) -> None:
    """A DW_AT_sibling past the unit is not believed; one that lands inside the subtree is where a
    lookup's scan goes next, and the index's whole walk, finding the children end elsewhere, scans
    the unit as lookups do."""
    sections = _with_sibling(_inlined(), sibling)
    lazy = answering(DwarfInfo(sections.get, Path("s")))
    uncached = {vaddr: _frames_or_error(lazy, vaddr) for vaddr in (BROKEN, GOOD, AFTER, 0x2010)}
    table = answering(DwarfInfo(sections.get, Path("s"))).answers(0)
    indexed = {}
    for vaddr in uncached:
        run = table.run_at(vaddr)
        broken = [error.reason for low, high, error in table.broken if low <= vaddr < high]
        indexed[vaddr] = run.frames[0].function if run is not None else f"error: {broken[0]}" if broken else "none"
    assert indexed == uncached
    if sibling > CHILDREN:
        assert uncached[AFTER] == "after"  # the link past the unit did not hide the functions after it
        assert uncached[BROKEN] == "inl"


def test_subtrees_the_unit_ends_inside_hold_the_same_children_in_both_scans() -> None:
    """No null closes "broken" and its inlined call (Clang's way: no sibling links): both run to the
    unit's end. The whole walk left them without children, where a lookup's scan gave them theirs."""
    body = _PREFIX + h.function_die("broken", 0x2000, 0x100, parent=True)
    body += h.inlined_die("inl", 0x2000, 0x20, parent=True, call_line=h.LE4.u(4, 3))
    body += h.inlined_die("inner", 0x2000, 0x10, parent=False, call_line=h.LE4.u(4, 4))
    sections = {"debug_info": h.unit(body), "debug_abbrev": _abbrevs()}
    lazy = answering(DwarfInfo(sections.get, Path("open")))
    uncached = [[frame.function for frame in lazy.frames_at(vaddr)] for vaddr in (0x2004, 0x2014, 0x2084, GOOD)]
    assert uncached == [["inner", "inl", "broken"], ["inl", "broken"], ["broken"], ["good"]]
    table = answering(DwarfInfo(sections.get, Path("open"))).answers(0)
    indexed = [[frame.function for frame in run.frames] if (run := table.run_at(vaddr)) else []
               for vaddr in (0x2004, 0x2014, 0x2084, GOOD)]
    assert indexed == uncached


def test_a_debug_map_keeps_an_objects_broken_span_to_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    """A mapped function whose object has a broken span there is that span's error alone in the
    index's runs (a lookup's, through the object's AnswerLookup, is too); an object broken as a
    whole still breaks the function."""
    from symbolize.formats.answers import Block
    from symbolize.formats.macho import debugmap as macho_debugmap
    from symbolize.formats.macho.file import MachOFile

    macos = damaged_agreement.FIXTURES / "macos"
    with MachOFile(macos / "cdemo-x86_64") as binary, MachOFile(macos / "obj" / "cdemo-x86_64.o") as obj:
        source = macho_debugmap.DebugMapSource(binary, {entry.name: obj for entry in
                                                        macho_debugmap.parse_debug_map(binary.stabs(), binary.path)})
        region = source._regions[0]
        span_error = BrokenSpanError("compile unit at 0x0: bad", obj.path)
        blocks = [Block(region.object_low + 2, region.object_low + 6, None, error=span_error)]
        monkeypatch.setattr(macho_debugmap._ObjectAnswers, "blocks", lambda self: blocks)
        table = source.answers(0)
        assert table.broken == [(region.low + 2, region.low + 6, span_error)]
        blocks[0] = blocks[0]._replace(error=MalformedInputError("the whole unit", obj.path))
        with pytest.raises(MalformedInputError, match="the whole unit"):
            source.answers(0)
