"""One pass over a unit's DIE tree that keeps only what naming needs (DWARF 5, 3.3 and 3.3.8).

The scan records:

* every subprogram and inlined subroutine with code, as a *node* in pre-order
  (ranges, parent, end of its subtree, the attributes that name it and, for
  inlined subroutines, the call site);
* every namespace, class, structure, union and enumeration outside a function
  as a *scope* interval of DIE offsets, so the qualified name of any
  declaration can be rebuilt from its offset alone. (A type local to a
  function qualifies nothing, as in llvm-symbolizer; so the scopes are known
  before any function is entered, and names never depend on which were.)

Subtrees that cannot hold code are skipped whole through ``DW_AT_sibling``
where the producer emitted it (GCC does, Clang and rustc do not), else by
``skip.py``, which steps over their DIEs without decoding them; the DIEs the
scan does visit are read through the per-abbreviation plans of ``abbrev.py``.
A function, and an inlined call, is not entered until a lookup lands in it:
most DIEs of optimised code (parameters, variables, call sites, inlined calls)
sit under functions, and a profile touches few of them. So a lookup expands
one level of the inline tree at a time, only along the chain that holds it.
The index builder, which wants everything, asks for whole units instead.
"""

from __future__ import annotations

from bisect import bisect_right
from typing import Any

from symbolize.formats.dwarf import constants as c
from symbolize.formats.dwarf.abbrev import (
    KIND_FIXED,
    KIND_IMPLICIT,
    LEB_KINDS,
    Abbrev,
)
from symbolize.formats.dwarf.ranges import decode_ranges
from symbolize.formats.dwarf.reader import DwarfFormatError, UIntReader, read_uleb
from symbolize.formats.dwarf.skip import ShapeKey, SkipLayout, SubtreeSkipper, shape_key
from symbolize.formats.dwarf.unit import Unit

_FUNCTION_TAGS = frozenset({c.DW_TAG_subprogram, c.DW_TAG_inlined_subroutine})
_SCOPE_TAGS = frozenset(
    {c.DW_TAG_namespace, c.DW_TAG_class_type, c.DW_TAG_structure_type, c.DW_TAG_union_type,
     c.DW_TAG_enumeration_type}
)
# DIEs whose children may hold code, besides functions and scopes.
_CONTAINER_TAGS = frozenset({c.DW_TAG_lexical_block, c.DW_TAG_compile_unit, c.DW_TAG_partial_unit,
                             c.DW_TAG_skeleton_unit})

# The attributes the scan keeps, each in a slot: a node's attributes are {slot: (form, raw value)}.
SLOT_SIBLING = 0
SLOT_NAME = 1
SLOT_LINKAGE_NAME = 2  # DW_AT_linkage_name or DW_AT_MIPS_linkage_name
SLOT_LOW_PC = 3
SLOT_HIGH_PC = 4
SLOT_RANGES = 5
SLOT_ABSTRACT_ORIGIN = 6
SLOT_SPECIFICATION = 7
SLOT_CALL_FILE = 8
SLOT_CALL_LINE = 9
SLOT_CALL_COLUMN = 10
SLOT_DECL_LINE = 11
SLOT_DECL_FILE = 12
# DW_AT_GNU_discriminator of an inlined call: the discriminator of the place it was called from.
SLOT_CALL_DISCRIMINATOR = 13
_SLOTS = {
    c.DW_AT_sibling: SLOT_SIBLING,
    c.DW_AT_name: SLOT_NAME,
    c.DW_AT_linkage_name: SLOT_LINKAGE_NAME,
    c.DW_AT_MIPS_linkage_name: SLOT_LINKAGE_NAME,
    c.DW_AT_low_pc: SLOT_LOW_PC,
    c.DW_AT_high_pc: SLOT_HIGH_PC,
    c.DW_AT_ranges: SLOT_RANGES,
    c.DW_AT_abstract_origin: SLOT_ABSTRACT_ORIGIN,
    c.DW_AT_specification: SLOT_SPECIFICATION,
    c.DW_AT_call_file: SLOT_CALL_FILE,
    c.DW_AT_call_line: SLOT_CALL_LINE,
    c.DW_AT_call_column: SLOT_CALL_COLUMN,
    c.DW_AT_decl_line: SLOT_DECL_LINE,
    c.DW_AT_decl_file: SLOT_DECL_FILE,
    c.DW_AT_GNU_discriminator: SLOT_CALL_DISCRIMINATOR,
}
# What each role keeps besides a function's every slot: a scope its name, the others only the
# sibling link that saves walking their children.
_SCOPE_SLOTS = frozenset({SLOT_SIBLING, SLOT_NAME})
_OTHER_SLOTS = frozenset({SLOT_SIBLING})

ROLE_SKIP = 0
ROLE_FUNCTION = 1
ROLE_SCOPE = 2
ROLE_CONTAINER = 3
# A subprogram or inlined call whose abbreviation has no address attribute: never a node.
ROLE_NO_CODE = 4
_CODE_ATTRIBUTES = frozenset({c.DW_AT_low_pc, c.DW_AT_ranges})


class Plan:
    """How to walk one abbreviation's attributes in one unit.

    ``skips``: when every kept attribute has a fixed size and a fixed place in the DIE, the
    variable-size attributes as (fixed bytes before it, kind, form, implicit constant), then
    ``tail`` fixed bytes; None when some kept attribute is not at a fixed place. ``peeks`` (with
    ``skips``): the kept attributes as (slot, bytes from the DIE's first attribute, form, reader).
    ``steps``: (slot or -1, kind, size, form, implicit constant, fixed-size reader or None) per
    attribute.
    """

    # Plain classes with __slots__ here, not dataclasses: ``import dataclasses`` (inspect, ast,
    # dis, tokenize) is about a tenth of a one-address cold lookup's instructions.
    __slots__ = ("has_children", "peeks", "role", "skips", "steps", "tag", "tail")

    def __init__(
        self,
        tag: int,
        has_children: bool,
        role: int,
        skips: tuple[tuple[int, int, int, int], ...] | None,
        tail: int,
        peeks: tuple[tuple[int, int, int, UIntReader], ...],
        steps: tuple[tuple[int, int, int, int, int, UIntReader | None], ...],
    ) -> None:
        self.tag = tag
        self.has_children = has_children
        self.role = role
        self.skips = skips
        self.tail = tail
        self.peeks = peeks
        self.steps = steps


def compile_plan(unit: Unit, abbrev: Abbrev) -> Plan:
    tag = abbrev.tag
    if tag in _FUNCTION_TAGS:
        if any(attribute in _CODE_ATTRIBUTES for attribute, _, _ in abbrev.attributes):
            role, wanted = ROLE_FUNCTION, None
        else:
            role, wanted = ROLE_NO_CODE, _OTHER_SLOTS
    elif tag in _SCOPE_TAGS:
        role, wanted = ROLE_SCOPE, _SCOPE_SLOTS
    elif tag in _CONTAINER_TAGS:
        role, wanted = ROLE_CONTAINER, _OTHER_SLOTS
    else:
        # A leaf is skipped whole; only a parent's sibling link can save walking its children.
        role, wanted = ROLE_SKIP, _OTHER_SLOTS if abbrev.has_children else frozenset()
    steps = []
    skips: list[tuple[int, int, int, int]] = []
    peeks: list[tuple[int, int, int, UIntReader]] = []
    pending = 0
    # Bytes from the first attribute to the current one, while every attribute before it is fixed-size.
    place: int | None = 0
    peekable = True
    for attribute, form, implicit in abbrev.attributes:
        kind, size = unit.layout(form)
        slot = _SLOTS.get(attribute, -1)
        if slot >= 0 and wanted is not None and slot not in wanted:
            slot = -1
        reader = unit.fixed_reader(size) if kind == KIND_FIXED and slot >= 0 and size in (1, 2, 4, 8) else None
        if slot >= 0:
            if reader is not None and place is not None:
                peeks.append((slot, place, form, reader))
            else:
                peekable = False
        if kind == KIND_FIXED:
            pending += size
            if place is not None:
                place += size
        else:
            skips.append((pending, kind, form, implicit))
            pending = 0
            place = None
        steps.append((slot, kind, size, form, implicit, reader))
    return Plan(tag, abbrev.has_children, role, tuple(skips) if peekable else None, pending, tuple(peeks),
                tuple(steps))


class SharedTables:
    """Plans and skip layouts by abbreviation shape and unit encoding, for all the units of a file.

    Compilers repeat the same abbreviations in every unit's table (libpython's 12,860 are
    1,003 shapes), so each shape is compiled once rather than once per unit.
    """

    __slots__ = ("plans", "skip_layouts", "skippers")

    def __init__(self) -> None:
        self.plans: dict[ShapeKey, Plan] = {}
        self.skip_layouts: dict[ShapeKey, SkipLayout] = {}
        # (abbreviation table, encoding, .debug_info) -> the skipper of every unit that has them; the
        # table and section are held so their ids stay theirs.
        self.skippers: dict[tuple[int, tuple[int, int, int, bool], int], tuple[object, SubtreeSkipper]] = {}

    def skipper_for(self, unit: Unit) -> SubtreeSkipper:
        key = (id(unit.abbrevs), unit.encoding, id(unit.sections.info))
        found = self.skippers.get(key)
        if found is None:
            found = self.skippers[key] = ((unit.abbrevs, unit.sections.info), SubtreeSkipper(unit, self.skip_layouts))
        return found[1]


class UnitIndex:
    """What a scan of one unit found.

    Node lists are parallel. The nodes under a node are the indexes
    ``node_first[n]`` to ``node_end[n]`` (exclusive), in DIE pre-order, each
    followed by its own subtree up to ``node_next``; a node listed in
    ``deferred`` has not had its subtree scanned yet, and expanding it later
    appends that subtree at the end of the lists and points ``node_first`` and
    ``node_end`` there (``node_next`` keeps its place among its siblings).
    """

    def __init__(self, unit: Unit) -> None:
        self.unit = unit
        self.node_ranges: list[list[tuple[int, int]] | None] = []
        self.node_parent: list[int] = []
        self.node_first: list[int] = []
        self.node_end: list[int] = []
        self.node_next: list[int] = []
        self.node_die: list[int] = []
        # Raw naming attributes per node: slot -> (form, value).
        self.node_attrs: list[dict[int, tuple[int, Any]]] = []
        # Node -> (offset of its first child DIE, offset just past its subtree).
        self.deferred: dict[int, tuple[int, int]] = {}
        # Node -> why its subtree could not be scanned (see _expand); such a node has no children.
        self.failed: dict[int, str] = {}
        # Sorted (low, high, node) for every range of every outermost function node.
        self.function_ranges: list[tuple[int, int, int]] = []
        self.function_lows: list[int] = []
        self.function_max_high: list[int] = []
        # Scopes: start offset, end offset, name, parent scope index (-1: the unit).
        self.scope_start: list[int] = []
        self.scope_end: list[int] = []
        self.scope_name: list[str | None] = []
        self.scope_parent: list[int] = []
        self.scope_is_namespace: list[bool] = []
        self.plans: dict[int, Plan] = {}
        self.shared = SharedTables()
        # Nodes the scan itself found are 0 to top_end; expansions append after.
        self.top_end = 0
        self.skipper: SubtreeSkipper | None = None
        # Walk every function subtree at once instead of deferring it (see scan_unit).
        self.whole = False

    def finish(self) -> None:
        self.function_ranges.sort()
        self.function_lows = [low for low, _, _ in self.function_ranges]
        running = 0
        self.function_max_high = []
        for _, high, _ in self.function_ranges:
            running = max(running, high)
            self.function_max_high.append(running)

    def function_at(self, vaddr: int) -> int:
        position = bisect_right(self.function_lows, vaddr) - 1
        while position >= 0 and self.function_max_high[position] > vaddr:
            low, high, node = self.function_ranges[position]
            if low <= vaddr < high:
                return node
            position -= 1
        return -1

    def chain_at(self, vaddr: int) -> list[int]:
        """Node indexes of the function holding vaddr and its inlined calls, outermost first."""
        node = self.function_at(vaddr)
        if node < 0:
            return []
        chain = [node]
        ranges = self.node_ranges
        parents = self.node_parent
        node_next = self.node_next
        deferred = self.deferred
        failed = self.failed
        while True:
            if node in deferred or node in failed:
                self._expand(node)
            index = self.node_first[node]
            end = self.node_end[node]
            while index < end:
                if parents[index] == node:
                    node_ranges = ranges[index]
                    if node_ranges is None:
                        node_ranges = ranges[index] = _node_ranges(self.unit, self.node_attrs[index])
                    if any(low <= vaddr < high for low, high in node_ranges):
                        break
                index = node_next[index]
            else:
                return chain
            chain.append(index)
            node = index

    def _expand(self, node: int) -> None:
        """Scan the subtree of deferred ``node``; raises DwarfFormatError, IndexError or struct.error
        on bad data, and then again on every later call for the same node.

        A failed expansion is undone (the lists are as before it, the node has no children) and its
        error kept in ``failed``: what the index builder and a lookup find under the node never
        depends on which of them asked first, or how far the walk got.
        """
        failed = self.failed.get(node)
        if failed is not None:
            raise DwarfFormatError(failed)
        children_start, subtree_end = self.deferred.pop(node)
        first = len(self.node_ranges)
        functions_before = len(self.function_ranges)
        # No node on the stack: the node's own place (node_next) is already set.
        stack = [(ROLE_FUNCTION, -1, -1, -1)]
        try:
            _walk(self, children_start, subtree_end, stack, node, -1)
        except Exception as error:
            self._undo(first, functions_before)
            self.node_first[node] = self.node_end[node] = first
            self.failed[node] = str(error)
            raise
        self.node_first[node] = first
        self.node_end[node] = len(self.node_ranges)
        if len(self.function_ranges) != functions_before:
            self.finish()  # a nested function with code of its own

    def _undo(self, first: int, functions_before: int) -> None:
        """Drop the nodes from ``first`` on and the function ranges from ``functions_before`` on:
        what a walk that stopped part way appended. (Inside a function no scope is recorded.)"""
        for column in (self.node_ranges, self.node_parent, self.node_first, self.node_end, self.node_next,
                       self.node_die, self.node_attrs):
            del column[first:]
        del self.function_ranges[functions_before:]
        for deferred_node in [deferred_node for deferred_node in self.deferred if deferred_node >= first]:
            del self.deferred[deferred_node]

    def scope_of(self, die_offset: int) -> int:
        """Innermost scope whose subtree holds die_offset, -1 for none."""
        scope = bisect_right(self.scope_start, die_offset) - 1
        while scope >= 0 and not (self.scope_start[scope] < die_offset < self.scope_end[scope]):
            scope = self.scope_parent[scope]
        return scope


def scan_unit(unit: Unit, whole: bool = False, shared: SharedTables | None = None) -> UnitIndex:
    """Walk the unit's DIE tree once; raises DwarfFormatError, IndexError or struct.error on bad data.

    Function subtrees wait for a lookup to reach them, unless ``whole`` asks for
    every one now (the index builder's case: one walk beats one walk per node).
    """
    index = UnitIndex(unit)
    index.whole = whole
    if shared is not None:
        index.shared = shared
    _walk(index, unit.first_die, unit.end, [], -1, -1)
    index.top_end = len(index.node_ranges)
    index.finish()
    return index


def _walk(
    index: UnitIndex,
    offset: int,
    end: int,
    stack: list[tuple[int, int, int, int]],
    current_node: int,
    current_scope: int,
) -> None:
    """Walk DIEs from ``offset`` until the subtree that ``stack`` describes closes.

    Stack entries are (role, node or scope index, enclosing node, enclosing scope);
    node -1 marks a function without code, which hides the functions around it.
    """
    unit = index.unit
    data = unit.sections.info
    plans = index.plans
    shared_plans = index.shared.plans
    abbrevs = unit.abbrevs
    read_value = unit.read_value
    skip_value = unit.skip_value
    node_ranges = index.node_ranges
    node_parent = index.node_parent
    node_first = index.node_first
    node_end = index.node_end
    node_next = index.node_next
    node_die = index.node_die
    node_attrs = index.node_attrs
    deferred = index.deferred
    function_ranges = index.function_ranges
    scope_start = index.scope_start
    scope_end = index.scope_end
    scope_name = index.scope_name
    scope_parent = index.scope_parent
    scope_is_namespace = index.scope_is_namespace
    whole = index.whole
    skipper = index.skipper
    if skipper is None:
        skipper = index.skipper = index.shared.skipper_for(unit)
    subtree_end_at = skipper.subtree_end
    sibling_slot = SLOT_SIBLING  # a local: compared once per attribute kept
    # How many entries of ``stack`` are functions: a scope inside one is not recorded.
    functions_open = sum(1 for entry in stack if entry[0] == ROLE_FUNCTION)
    # A whole walk enters a node's subtree rather than jump over it by its DW_AT_sibling, as a
    # lookup's scan does; where the two would part (damaged data), the whole walk stops, and the
    # unit is scanned as for lookups (DwarfInfo._scan). Stack depth -> the sibling link of the
    # node open there.
    sibling_ends: dict[int, int] = {}
    while offset < end:
        die_offset = offset
        code = data[offset]
        if code < 0x80:
            offset += 1
        else:
            code, offset = read_uleb(data, offset)
        if code == 0:
            if not stack:
                return
            role, item, current_node, current_scope = stack.pop()
            if role == ROLE_FUNCTION:
                functions_open -= 1
                if item >= 0:
                    node_end[item] = node_next[item] = len(node_ranges)
                    if sibling_ends and sibling_ends.pop(len(stack), offset) != offset:
                        raise DwarfFormatError(
                            f"the children of DIE at {node_die[item]:#x} end at {offset:#x}, not at its DW_AT_sibling"
                        )
            elif role == ROLE_SCOPE:
                scope_end[item] = offset
            if not stack:
                return
            continue
        plan = plans.get(code)
        if plan is None:
            abbrev = abbrevs.get(code)
            if abbrev is None:
                raise DwarfFormatError(f"DIE at {die_offset:#x} uses undefined abbreviation {code}")
            key = shape_key(unit, abbrev)
            plan = shared_plans.get(key)
            if plan is None:
                plan = shared_plans[key] = compile_plan(unit, abbrev)
            plans[code] = plan
        skips = plan.skips
        values: dict[int, tuple[int, Any]] | None = None
        sibling = 0
        if skips is not None:
            peeks = plan.peeks
            if peeks:
                for slot, place, form, read_fixed in peeks:
                    value: Any = read_fixed(data, offset + place)
                    if slot == sibling_slot:
                        sibling = unit.reference(form, value) or 0
                        continue
                    if values is None:
                        values = {}
                    values[slot] = (form, value)
            for advance, kind, form, implicit in skips:
                offset += advance
                if kind in LEB_KINDS:
                    # Signed and unsigned LEB128 share their continuation bit.
                    while data[offset] & 0x80:
                        offset += 1
                    offset += 1
                elif kind != KIND_IMPLICIT:
                    offset = skip_value(kind, form, implicit, offset)
            offset += plan.tail
            if not peeks and not plan.has_children:
                continue
        else:
            for slot, kind, size, form, implicit, reader in plan.steps:
                if slot < 0:
                    if kind == KIND_FIXED:
                        offset += size
                    elif kind in LEB_KINDS:
                        while data[offset] & 0x80:
                            offset += 1
                        offset += 1
                    elif kind != KIND_IMPLICIT:
                        offset = skip_value(kind, form, implicit, offset)
                    continue
                if reader is not None:
                    value = reader(data, offset)
                    offset += size
                else:
                    value, offset = read_value(form, implicit, offset)
                if slot == sibling_slot:
                    sibling = unit.reference(form, value) or 0
                    continue
                if values is None:
                    values = {}
                values[slot] = (form, value)
        role = plan.role
        if role == ROLE_NO_CODE:
            if plan.has_children:
                subtree_end = sibling if offset < sibling <= end else subtree_end_at(offset, end, False)
                if subtree_end >= 0:
                    offset = subtree_end
                    continue
                stack.append((ROLE_FUNCTION, -1, current_node, current_scope))
                functions_open += 1
                current_node = -1
        elif role == ROLE_FUNCTION:
            node = -1
            tag = plan.tag
            if (
                values is not None
                and (SLOT_LOW_PC in values or SLOT_RANGES in values)
                and (tag == c.DW_TAG_subprogram or current_node >= 0)
            ):
                inlined = tag == c.DW_TAG_inlined_subroutine
                # An inlined call's ranges are decoded only if a lookup reaches it (chain_at).
                ranges = None if inlined else _node_ranges(unit, values)
                if inlined or ranges:
                    node = len(node_ranges)
                    node_ranges.append(ranges)
                    parent = current_node if inlined else -1
                    node_parent.append(parent)
                    node_first.append(node + 1)
                    node_end.append(node + 1)
                    node_next.append(node + 1)
                    node_die.append(die_offset)
                    node_attrs.append(values)
                    if ranges is not None:
                        for low, high in ranges:
                            function_ranges.append((low, high, node))
            if plan.has_children:
                # A node's subtree waits for a lookup (unless the whole unit is wanted); one
                # without code (a declaration, an abstract instance) hides its parameters and
                # blocks, which hold no code.
                if whole and node >= 0:
                    subtree_end = -1
                else:
                    subtree_end = sibling if offset < sibling <= end else subtree_end_at(offset, end, False)
                if subtree_end >= 0:
                    if node >= 0:
                        deferred[node] = (offset, subtree_end)
                    offset = subtree_end
                    continue
                if whole and node >= 0 and offset < sibling <= end:
                    sibling_ends[len(stack)] = sibling
                stack.append((ROLE_FUNCTION, node, current_node, current_scope))
                functions_open += 1
                current_node = node
        elif role == ROLE_SCOPE:
            if plan.has_children and functions_open:
                # A type local to a function does not qualify names (llvm-symbolizer does not
                # either), so a function's scopes are the same whether or not it was expanded.
                subtree_end = sibling if offset < sibling <= end else subtree_end_at(offset, end, current_node >= 0)
                if subtree_end >= 0:
                    offset = subtree_end
                    continue
                stack.append((ROLE_CONTAINER, -1, current_node, current_scope))
            elif plan.has_children:
                scope = len(scope_start)
                scope_start.append(die_offset)
                scope_end.append(end)
                name = values.get(SLOT_NAME) if values is not None else None
                scope_name.append(unit.string(*name) if name is not None else None)
                scope_parent.append(current_scope)
                is_namespace = plan.tag == c.DW_TAG_namespace
                scope_is_namespace.append(is_namespace)
                if not is_namespace:
                    # Producers that link siblings (GCC) put every definition with code at
                    # namespace level, so a type's members are declarations: skip them whole.
                    subtree_end = (
                        sibling if offset < sibling <= end else subtree_end_at(offset, end, current_node >= 0)
                    )
                    if subtree_end >= 0:
                        scope_end[scope] = subtree_end
                        offset = subtree_end
                        continue
                stack.append((ROLE_SCOPE, scope, current_node, current_scope))
                current_scope = scope
        elif plan.has_children:
            if role == ROLE_SKIP:
                # Nothing under a type, variable or call site holds code.
                subtree_end = sibling if offset < sibling <= end else subtree_end_at(offset, end, current_node >= 0)
                if subtree_end >= 0:
                    offset = subtree_end
                    continue
            stack.append((role, -1, current_node, current_scope))
    # The walk ran to ``end`` with subtrees open (damaged data): they end there, as an expanded
    # node's subtree ends at its bound (UnitIndex._expand), so a whole walk and a lookup's scan
    # give a node the same children. A node whose sibling link said otherwise: see sibling_ends.
    for depth, (role, item, _, _) in enumerate(stack):
        if role == ROLE_FUNCTION and item >= 0:
            if sibling_ends.get(depth, end) != end:
                raise DwarfFormatError(f"the children of DIE at {node_die[item]:#x} run past its DW_AT_sibling")
            node_end[item] = node_next[item] = len(node_ranges)


def _node_ranges(unit: Unit, values: dict[int, tuple[int, Any]]) -> list[tuple[int, int]]:
    """A node's ranges, from its kept attributes: ``DW_AT_ranges``, else ``DW_AT_low_pc`` and ``DW_AT_high_pc``."""
    ranges_value = values.get(SLOT_RANGES)
    if ranges_value is not None:
        return decode_ranges(unit, *ranges_value)
    low = values.get(SLOT_LOW_PC)
    high = values.get(SLOT_HIGH_PC)
    if low is None or high is None:
        return []
    bounds = unit.pc_bounds({c.DW_AT_low_pc: low, c.DW_AT_high_pc: high})
    if bounds is None or bounds[1] <= bounds[0]:
        return []
    return [bounds]
