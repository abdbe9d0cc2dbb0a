"""The lazy DIE scan (formats/dwarf/scan.py, skip.py) on generated trees, with and without DW_AT_sibling.

Each tree is built here from a model (namespaces, types with members, declarations,
functions with parameters, nested inlined calls and lexical blocks), so the
expected chain at every address follows from the model by construction: at
each level, the first inlined call in DIE order whose range holds the address.
The same tree is encoded twice, as GCC does (every parent links its sibling)
and as Clang and rustc do (no links, so subtrees are skipped DIE by DIE).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from symbolize.formats.dwarf import DwarfInfo
from symbolize.formats.dwarf import constants as c
from symbolize.formats.dwarf.answers import DwarfSymbolAnswers
from symbolize.formats.dwarf.reader import read_uleb
from symbolize.formats.dwarf.skip import SubtreeSkipper
from symbolize.formats.dwarf.unit import Unit
from symbolize.formats.types import Frame
from tests.dwarf_builder import answering, getter, uleb

PATH = Path(__file__).with_name("synthetic-lazy.elf")
_FLAG_PRESENT = c.DW_FORM_flag_present
_DW_AT_data_member_location = 0x38
_DW_AT_location = 0x02

# code: (tag, has children, attributes); attribute forms are fixed per code.
_ABBREVS: dict[int, tuple[int, bool, tuple[tuple[int, int], ...]]] = {
    1: (c.DW_TAG_compile_unit, True, ((c.DW_AT_name, c.DW_FORM_string), (c.DW_AT_low_pc, c.DW_FORM_addr),
                                      (c.DW_AT_high_pc, c.DW_FORM_data4))),
    2: (c.DW_TAG_namespace, True, ((c.DW_AT_name, c.DW_FORM_string),)),
    3: (c.DW_TAG_structure_type, True, ((c.DW_AT_name, c.DW_FORM_string),)),
    4: (0x0D, False, ((c.DW_AT_name, c.DW_FORM_string), (_DW_AT_data_member_location, c.DW_FORM_exprloc))),
    5: (c.DW_TAG_subprogram, True, ((c.DW_AT_name, c.DW_FORM_string), (c.DW_AT_low_pc, c.DW_FORM_addr),
                                    (c.DW_AT_high_pc, c.DW_FORM_data4))),
    6: (c.DW_TAG_subprogram, True, ((c.DW_AT_name, c.DW_FORM_string), (c.DW_AT_declaration, _FLAG_PRESENT))),
    7: (0x05, False, ((_DW_AT_location, c.DW_FORM_exprloc), (c.DW_AT_decl_line, c.DW_FORM_udata))),
    8: (c.DW_TAG_inlined_subroutine, True, ((c.DW_AT_name, c.DW_FORM_string), (c.DW_AT_low_pc, c.DW_FORM_addr),
                                            (c.DW_AT_high_pc, c.DW_FORM_data4), (c.DW_AT_call_line, c.DW_FORM_data1))),
    9: (c.DW_TAG_lexical_block, True, ((c.DW_AT_low_pc, c.DW_FORM_addr), (c.DW_AT_high_pc, c.DW_FORM_data4))),
}
_SIBLING_CODE_OFFSET = 20  # code + 20: the same abbreviation with DW_AT_sibling first


def _abbrev_section(with_siblings: bool) -> bytes:
    table = bytearray()
    for code, (tag, has_children, attributes) in _ABBREVS.items():
        linked = with_siblings and has_children and code != 1
        table += uleb(code + (_SIBLING_CODE_OFFSET if linked else 0)) + uleb(tag) + bytes([has_children])
        if linked:
            table += uleb(c.DW_AT_sibling) + uleb(c.DW_FORM_ref4)
        for attribute, form in attributes:
            table += uleb(attribute) + uleb(form)
        table += b"\x00\x00"
    return bytes(table + b"\x00")


@dataclass
class Die:
    code: int
    values: tuple[object, ...]
    children: list[Die] = field(default_factory=list)


def _encode_value(form: int, value: object) -> bytes:
    if form == c.DW_FORM_string:
        assert isinstance(value, str)
        return value.encode() + b"\0"
    assert isinstance(value, int)
    if form == c.DW_FORM_addr:
        return struct.pack("<Q", value)
    if form == c.DW_FORM_data4:
        return struct.pack("<I", value)
    if form == c.DW_FORM_data1:
        return bytes([value])
    if form == c.DW_FORM_udata:
        return uleb(value)
    if form == c.DW_FORM_exprloc:
        return uleb(value) + bytes(value)  # a location expression of ``value`` bytes
    return b""  # flag_present


def _encode(die: Die, offset: int, with_siblings: bool) -> bytes:
    """The DIE and its subtree, starting at unit offset ``offset``."""
    _, has_children, attributes = _ABBREVS[die.code]
    linked = with_siblings and has_children and die.code != 1
    head = uleb(die.code + (_SIBLING_CODE_OFFSET if linked else 0))
    body = b"".join(_encode_value(form, value) for (_, form), value in zip(attributes, die.values, strict=True))
    head_size = len(head) + (4 if linked else 0) + len(body)
    children = bytearray()
    if has_children:
        for child in die.children:
            children += _encode(child, offset + head_size + len(children), with_siblings)
        children += b"\x00"
    sibling = struct.pack("<I", offset + head_size + len(children)) if linked else b""
    return head + sibling + body + bytes(children)


def _unit(root: Die, with_siblings: bool) -> bytes:
    header_size = 11  # unit_length, version, debug_abbrev_offset, address_size
    body = _encode(root, header_size, with_siblings)
    return struct.pack("<IHIB", 7 + len(body), 4, 0, 8) + body


# The model: a function's inline tree as (name, low, size, children) with nested, disjoint ranges.
@dataclass
class Call:
    name: str
    low: int
    size: int
    in_block: bool
    children: list[Call] = field(default_factory=list)


@st.composite
def _calls(draw: st.DrawFn, low: int, size: int, depth: int, prefix: str) -> list[Call]:
    calls: list[Call] = []
    cursor = low
    for index in range(draw(st.integers(0, 3 if depth < 4 else 0))):
        gap = draw(st.integers(0, 4))
        call_size = draw(st.integers(1, 24))
        if cursor + gap + call_size > low + size:
            break
        name = f"{prefix}_{index}"
        call = Call(name, cursor + gap, call_size, draw(st.booleans()))
        call.children = draw(_calls(call.low, call.size, depth + 1, name))
        calls.append(call)
        cursor = call.low + call.size
    return calls


def _parameters(draw: st.DrawFn) -> list[Die]:
    return [Die(7, (draw(st.integers(0, 200)), draw(st.integers(0, 300)))) for _ in range(draw(st.integers(0, 2)))]


def _call_dies(calls: list[Call], draw: st.DrawFn) -> list[Die]:
    dies = _parameters(draw)
    for call in calls:
        die = Die(8, (call.name, call.low, call.size, 7), _parameters(draw) + _call_dies(call.children, draw))
        # A lexical block around an inlined call is transparent to the chain.
        dies.append(Die(9, (call.low, call.size), [die]) if call.in_block else die)
    return dies


@st.composite
def _trees(draw: st.DrawFn) -> tuple[Die, list[tuple[str, int, int, list[Call]]]]:
    functions: list[tuple[str, int, int, list[Call]]] = []
    namespace_children: list[Die] = []
    low = 0x1000
    for index in range(draw(st.integers(1, 4))):
        size = draw(st.integers(8, 120))
        name = f"f{index}"
        calls = draw(_calls(low, size, 0, name))
        functions.append((name, low, size, calls))
        members = [Die(4, (f"m{i}", draw(st.integers(0, 140)))) for i in range(draw(st.integers(0, 3)))]
        if draw(st.booleans()):
            members.append(Die(3, ("Inner", ), [Die(4, ("x", 1))]))  # a nested type: the skip stops there
        namespace_children.append(Die(3, (f"T{index}",), members))
        namespace_children.append(Die(6, (f"decl{index}", 0), _parameters(draw)))
        namespace_children.append(Die(5, (name, low, size), _call_dies(calls, draw)))
        low += size + draw(st.integers(0, 16))
    root = Die(1, ("lazy.c", 0x1000, low - 0x1000), [Die(2, ("ns",), namespace_children)])
    return root, functions


def _expected(functions: list[tuple[str, int, int, list[Call]]], vaddr: int) -> list[str] | None:
    for name, low, size, calls in functions:
        if low <= vaddr < low + size:
            chain = [name]
            while True:
                inner = next((call for call in calls if call.low <= vaddr < call.low + call.size), None)
                if inner is None:
                    return ["ns::" + frame for frame in reversed(chain)]
                chain.append(inner.name)
                calls = inner.children
    return None


def _dwarf(root: Die, with_siblings: bool) -> DwarfInfo:
    sections = {"debug_info": _unit(root, with_siblings), "debug_abbrev": _abbrev_section(with_siblings)}
    return DwarfInfo(getter(sections), PATH)


@settings(max_examples=60, deadline=None)
@given(_trees(), st.booleans(), st.randoms(use_true_random=False))
def test_chain_at_every_address_matches_the_model(tree: tuple[Die, list], with_siblings: bool, rng) -> None:  # type: ignore[no-untyped-def, type-arg]
    root, functions = tree
    info = _dwarf(root, with_siblings)
    end = functions[-1][1] + functions[-1][2] + 4
    addresses = list(range(0x1000 - 2, end))
    rng.shuffle(addresses)  # expansion order must not change any answer
    answers = answering(info)
    for vaddr in addresses:
        frames = answers.frames_at(vaddr)
        assert (_functions(frames) if frames else None) == _expected(functions, vaddr), hex(vaddr)


def _functions(frames: list[Frame] | tuple[Frame, ...]) -> list[str | None]:
    return [frame.function for frame in frames]


@settings(max_examples=40, deadline=None)
@given(_trees(), st.booleans())
def test_whole_unit_runs_after_a_lookup_match_the_model(tree: tuple[Die, list], with_siblings: bool) -> None:  # type: ignore[type-arg]
    """The index's whole-unit build, after a lookup expanded part of the unit, finds every node."""
    root, functions = tree
    answers = answering(_dwarf(root, with_siblings))
    answers.frames_at(functions[0][1])  # expand part of the unit first, as a lookup would
    runs = answers.answers(0)
    end = functions[-1][1] + functions[-1][2] + 4
    for vaddr in range(0x1000 - 2, end):
        run = runs.run_at(vaddr)
        assert (_functions(run.frames) if run is not None else None) == _expected(functions, vaddr), hex(vaddr)
    model = {call.name for call in _model_nodes([call for _, _, _, calls in functions for call in calls])}
    named = {frame.function for run in runs for frame in run.frames}
    assert named == {"ns::" + name for name in model} | {"ns::" + name for name, _, _, _ in functions}


def _model_nodes(calls: list[Call]):  # type: ignore[no-untyped-def]
    for call in calls:
        yield call
        yield from _model_nodes(call.children)


def _reference_subtree_end(unit: Unit, offset: int) -> int:
    """Past the children at ``offset``, by decoding every attribute of every DIE."""
    depth = 1
    while depth:
        abbrev, _ = unit.read_die_attributes(offset)
        _, after_code = read_uleb(unit.sections.info, offset)
        if abbrev is None:
            depth -= 1
            offset = after_code
            continue
        offset = after_code
        for _, form, implicit in abbrev.attributes:
            _, offset = unit.read_value(form, implicit, offset)
        depth += abbrev.has_children
    return offset


@settings(max_examples=40, deadline=None)
@given(_trees())
def test_skipper_ends_where_a_full_decode_ends_or_stops(tree: tuple[Die, list]) -> None:  # type: ignore[type-arg]
    root, _ = tree
    info = _dwarf(root, with_siblings=False)
    info._load_units()
    assert info._states is not None
    unit = info._states[0].unit
    skipper = SubtreeSkipper(unit)
    data = unit.sections.info
    offset = unit.first_die
    checked = 0
    while offset < unit.end:
        abbrev, _ = unit.read_die_attributes(offset)
        _, offset = read_uleb(data, offset)
        if abbrev is None:
            continue
        for _, form, implicit in abbrev.attributes:
            _, offset = unit.read_value(form, implicit, offset)
        if abbrev.has_children and abbrev.tag in (c.DW_TAG_subprogram, c.DW_TAG_inlined_subroutine):
            found = skipper.subtree_end(offset, unit.end, inner=False)
            # Only a function or type nested inside may stop the skip; this model has none there.
            assert found == _reference_subtree_end(unit, offset)
            checked += 1
        if abbrev.tag == c.DW_TAG_structure_type and abbrev.has_children:
            found = skipper.subtree_end(offset, unit.end, inner=False)
            assert found in (-1, _reference_subtree_end(unit, offset))
    assert checked >= 1


def test_skip_stops_at_the_end_of_a_truncated_unit() -> None:
    root = Die(1, ("t.c", 0x1000, 16), [Die(5, ("f", 0x1000, 16), [Die(7, (3, 1)), Die(7, (2, 2))])])
    info = _dwarf(root, with_siblings=False)
    info._load_units()
    assert info._states is not None
    unit = info._states[0].unit
    skipper = SubtreeSkipper(unit)
    children = unit.first_die + len(_encode(Die(1, ("t.c", 0x1000, 16)), 0, False)) - 1
    function_children = children + len(_encode(Die(5, ("f", 0x1000, 16)), 0, False)) - 1
    # The parameters end well before the unit does, but the function's null entry is cut off.
    cut = _reference_subtree_end(unit, function_children) - 1
    assert skipper.subtree_end(function_children, cut, inner=False) == cut


@settings(max_examples=40, deadline=None)
@given(_trees(), st.booleans(), st.randoms(use_true_random=False))
def test_types_local_to_a_function_never_qualify_names(tree: tuple[Die, list], with_siblings: bool, rng) -> None:  # type: ignore[no-untyped-def, type-arg]
    """Scopes are the same before and after any expansion, so lazy and exported names agree."""
    root, functions = tree
    for die in root.children[0].children:
        if die.code == 5:
            die.children.insert(0, Die(3, ("Local",), [Die(4, ("x", 1))]))
    info = _dwarf(root, with_siblings)
    info._load_units()
    assert info._states is not None
    state = info._states[0]
    assert info._ensure_decoded(state) and state.index is not None
    index = state.index
    scopes = (list(index.scope_start), list(index.scope_end), list(index.scope_name), list(index.scope_parent))
    addresses = list(range(0x1000, functions[-1][1] + functions[-1][2]))
    rng.shuffle(addresses)
    answers = answering(info)
    for vaddr in addresses:
        frames = answers.frames_at(vaddr)
        assert (_functions(frames) if frames else None) == _expected(functions, vaddr)
    assert (index.scope_start, index.scope_end, index.scope_name, index.scope_parent) == scopes
    assert "Local" not in index.scope_name


@settings(max_examples=40, deadline=None)
@given(_trees(), st.booleans(), st.randoms(use_true_random=False))
def test_a_whole_unit_walk_gives_the_runs_lazy_expansion_does(tree: tuple[Die, list], with_siblings: bool, rng) -> None:  # type: ignore[no-untyped-def, type-arg]
    root, functions = tree
    lazy: DwarfSymbolAnswers = answering(_dwarf(root, with_siblings))
    addresses = list(range(0x1000, functions[-1][1] + functions[-1][2]))
    for vaddr in rng.sample(addresses, min(len(addresses), 12)):
        lazy.frames_at(vaddr)  # decode the unit lazily and expand some nodes, as lookups would
    expanded = list(lazy.answers(0))
    whole = list(answering(_dwarf(root, with_siblings)).answers(0))
    assert whole == expanded
