"""Finding where a DIE's subtree ends without decoding it (DWARF 5, 2.3 and 7.5.2-7.5.3).

A DIE's children run to a null entry (abbreviation code 0); ``DW_AT_sibling``
says where the next sibling starts, but Clang and rustc do not emit it. Without
it the only way past a subtree is to step over every DIE in it, so this module
does nothing else: per abbreviation code, the total size of a DIE whose
attributes all have fixed sizes (skipped by one addition) or the few
variable-size attributes to step over, and whether it opens children.

The walk stops (returns -1) at a DIE the caller must see itself: a subprogram
that may have code of its own; outside a function, a scope with children (its
name qualifies declarations); inside one (an ``inner`` walk), an inlined call. The caller then walks the
subtree DIE by DIE as before, so skipping never changes what a scan finds.

Linear, whatever the nesting: after a walk stopped, or when an
inlined call is expanded, the caller asks again for subtrees *inside* the one
just walked, and a nested chain of n DIEs with children would be walked n
times (20,000 nested DIEs took 33 s). So a request that lands inside a recent
walk walks that range once more, this time noting where every subtree in it
ends (or that it holds a stopping DIE), and every later request inside it is a
lookup. One skipper serves every unit that shares an abbreviation table and an
encoding, so 8,000 units of one table build its tables once.
"""

from __future__ import annotations

from symbolize.formats.dwarf import constants as c
from symbolize.formats.dwarf.abbrev import (
    KIND_BLOCK_ULEB,
    KIND_FIXED,
    KIND_IMPLICIT,
    KIND_INDIRECT,
    LEB_KINDS,
    Abbrev,
    UnknownFormError,
)
from symbolize.formats.dwarf.reader import read_uleb
from symbolize.formats.dwarf.unit import Unit

_STOP = -2
_VARIABLE = -1
# Codes past this are left to the full walk, so the tables stay dense lists; real codes stay far below.
_MAX_DENSE_CODE = 1 << 16

_SCOPE_TAGS = frozenset(
    {c.DW_TAG_namespace, c.DW_TAG_class_type, c.DW_TAG_structure_type, c.DW_TAG_union_type,
     c.DW_TAG_enumeration_type}
)
_CODE_ATTRIBUTES = frozenset({c.DW_AT_low_pc, c.DW_AT_ranges})


# How many of the latest walks a request is checked against before it walks on its own.
_RECENT_WALKS = 8


class SubtreeSkipper:
    """Skip tables for one abbreviation table in one unit encoding (any unit that has both)."""

    __slots__ = ("_children", "_data", "_ends", "_inner_sizes", "_outer_sizes", "_steps", "_stopped_at", "_tails",
                 "_unit", "_walks")

    def __init__(self, unit: Unit, shared: dict[ShapeKey, SkipLayout] | None = None) -> None:
        """``shared``: layouts by abbreviation shape and encoding, kept across the units of a file."""
        self._unit = unit
        self._data = unit.sections.info
        outer, inner, children, steps, tails = _skip_tables(unit, shared)
        self._outer_sizes = outer
        self._inner_sizes = inner
        self._children = children
        self._steps = steps
        self._tails = tails
        # Per walk kind (outer, inner): children start -> subtree end, or -1 (it holds a DIE that
        # stops a walk); and the latest walks not yet noted, as (start, where it ended).
        self._ends: tuple[dict[int, int], dict[int, int]] = ({}, {})
        self._walks: tuple[list[tuple[int, int]], list[tuple[int, int]]] = ([], [])
        self._stopped_at = 0  # where the latest walk met a DIE that stops it

    def subtree_end(self, offset: int, end: int, inner: bool) -> int:
        """Offset just past the children that start at ``offset`` (after their null entry).

        ``inner``: the subtree lies inside a function, where an inlined call is recorded too.
        Returns ``end`` when the unit ends first, and -1 when a DIE the caller must see (or
        bad data, which the caller's own walk then reports) comes first.
        """
        ends = self._ends[inner]
        known = ends.get(offset)
        if known is None:
            walks = self._walks[inner]
            for position in range(len(walks) - 1, max(-1, len(walks) - 1 - _RECENT_WALKS), -1):
                start, reached = walks[position]
                if start < offset < reached:
                    del walks[position]
                    self._walk(start, end, inner, ends)
                    known = ends.get(offset)
                    break
        if known is not None:
            # A subtree noted under a wider bound may close past this one (only in bad data).
            return min(known, end)
        reached = self._walk(offset, end, inner, None)
        walks = self._walks[inner]
        walks.append((offset, reached if reached >= 0 else self._stopped_at))
        if len(walks) > 2 * _RECENT_WALKS:
            del walks[:_RECENT_WALKS]
        return reached

    def _walk(self, offset: int, end: int, inner: bool, ends: dict[int, int] | None) -> int:
        """The walk :meth:`subtree_end` describes; with ``ends``, note every subtree's end in it."""
        data = self._data
        sizes = self._inner_sizes if inner else self._outer_sizes
        children = self._children
        steps = self._steps
        tails = self._tails
        skip_value = self._unit.skip_value
        depth = 1
        # With ``ends``: the children starts of the subtrees open at this point of the walk.
        open_starts = [offset]
        try:
            while offset < end:
                die_offset = offset
                code = data[offset]
                if code < 0x80:
                    offset += 1
                else:
                    code, offset = read_uleb(data, offset)
                if not code:
                    depth -= 1
                    if ends is not None:
                        ends[open_starts.pop()] = offset
                    if not depth:
                        return offset
                    continue
                size = sizes[code]
                if size >= 0:
                    offset += size
                elif size == _VARIABLE:
                    for advance, kind, form, implicit in steps[code]:
                        offset += advance
                        if kind == KIND_BLOCK_ULEB and data[offset] < 0x80:
                            offset += 1 + data[offset]
                        elif kind in LEB_KINDS:
                            # Signed and unsigned LEB128 share their continuation bit.
                            while data[offset] & 0x80:
                                offset += 1
                            offset += 1
                        else:
                            offset = skip_value(kind, form, implicit, offset)
                    offset += tails[code]
                else:
                    self._note_stop(die_offset, ends, open_starts)
                    return -1
                if children[code]:
                    depth += 1
                    if ends is not None:
                        open_starts.append(offset)
        except IndexError:
            self._note_stop(offset, ends, open_starts)
            return -1
        return end

    def _note_stop(self, stop_offset: int, ends: dict[int, int] | None, open_starts: list[int]) -> None:
        self._stopped_at = stop_offset
        if ends is not None:
            for start in open_starts:
                ends[start] = -1


_Steps = tuple[tuple[int, int, int, int], ...]
# (tag, has children, attributes, unit encoding): what a skip layout or a scan plan depends on.
ShapeKey = tuple[int, bool, tuple[tuple[int, int, int], ...], tuple[int, int, int, bool]]
# (size in outer walks, size in inner walks, 1 if it has children, variable steps, fixed tail).
SkipLayout = tuple[int, int, int, _Steps, int]
# The five per-code lists of a skipper (see _skip_tables).
SkipTables = tuple[list[int], list[int], list[int], list[_Steps], list[int]]


def _skip_tables(unit: Unit, shared: dict[ShapeKey, SkipLayout] | None) -> SkipTables:
    """Per code: (size in outer walks, size in inner walks, 1 if it has children, variable steps,
    fixed tail)."""
    codes = [code for code in unit.abbrevs if code < _MAX_DENSE_CODE]
    count = max(codes, default=0) + 1
    outer = [_STOP] * count
    inner = [_STOP] * count
    children = [0] * count
    steps: list[_Steps] = [()] * count
    tails = [0] * count
    layouts = shared if shared is not None else {}
    for code in codes:
        abbrev = unit.abbrevs[code]
        key = shape_key(unit, abbrev)
        layout = layouts.get(key)
        if layout is None:
            layout = layouts[key] = _skip_layout(unit, abbrev)
        outer[code], inner[code], children[code], steps[code], tails[code] = layout
    return outer, inner, children, steps, tails


def shape_key(unit: Unit, abbrev: Abbrev) -> ShapeKey:
    """What an abbreviation's scan plan and skip layout depend on: all of it but its code."""
    return abbrev.tag, abbrev.has_children, abbrev.attributes, unit.encoding


def _skip_layout(unit: Unit, abbrev: Abbrev) -> SkipLayout:
    size, steps, tail = _layout(unit, abbrev.attributes)
    has_code = any(attribute in _CODE_ATTRIBUTES for attribute, _, _ in abbrev.attributes)
    tag = abbrev.tag
    if tag == c.DW_TAG_subprogram and has_code:
        return _STOP, _STOP, int(abbrev.has_children), steps, tail
    # Inside a function a type qualifies nothing (scan.py), so only outer walks stop at one.
    outer = _STOP if tag in _SCOPE_TAGS and abbrev.has_children else size
    inner = _STOP if tag == c.DW_TAG_inlined_subroutine and has_code else size
    return outer, inner, int(abbrev.has_children), steps, tail


def _layout(unit: Unit, attributes: tuple[tuple[int, int, int], ...]) -> tuple[int, _Steps, int]:
    """(total size or _VARIABLE or _STOP, variable steps, fixed tail) of one abbreviation."""
    steps: list[tuple[int, int, int, int]] = []
    pending = 0
    for _, form, implicit in attributes:
        try:
            kind, size = unit.layout(form)
        except UnknownFormError:
            return _STOP, (), 0  # reported by the full walk, if a DIE uses it
        if kind == KIND_FIXED:
            pending += size
        elif kind == KIND_INDIRECT:
            return _STOP, (), 0  # the real form is in the data; leave it to the full walk
        elif kind != KIND_IMPLICIT:
            steps.append((pending, kind, form, implicit))
            pending = 0
    if not steps:
        return pending, (), 0
    return _VARIABLE, tuple(steps), pending
