"""A file's DWARF (DWARF 4 and 5), decoded lazily, unit by unit: what answers are built from.

Opening reads unit headers and each unit's root DIE to learn which addresses the
unit covers. The first lookup inside a unit scans that unit's DIE tree
(``scan.py``) and decodes its line program (``lines.py``); both are cached, as
are failures, so a broken unit costs one attempt and makes only its own
addresses unnamed. No lookup decodes a unit that does not hold its address.
The answers themselves (which row, which inline chain, which name) are decided
in ``answers.py``, for whole runs of addresses, for every container alike; this
module names a unit's functions and call sites for it.

Why not pyelftools' DIE objects: they parse every attribute of every DIE through
a generic struct engine and keep them all, about 100x slower than
llvm-symbolizer on large binaries; the scanner here decodes only the attributes
naming needs and skips the rest by precompiled per-abbreviation plans.
"""

from __future__ import annotations

import struct
from bisect import bisect_right
from pathlib import Path
from typing import TYPE_CHECKING, Any

from symbolize.formats.dwarf import constants as c
from symbolize.formats.dwarf.abbrev import (
    NUMBER_FORMS,
    LazyAbbrevTable,
    ShapeBytes,
    UnknownFormError,
    lazy_abbrev_table,
    read_abbrev_table,
)
from symbolize.formats.dwarf.ranges import decode_ranges
from symbolize.formats.dwarf.reader import DwarfFormatError, read_initial_length, read_uleb
from symbolize.formats.dwarf.scan import (
    SLOT_ABSTRACT_ORIGIN,
    SLOT_CALL_COLUMN,
    SLOT_CALL_DISCRIMINATOR,
    SLOT_CALL_FILE,
    SLOT_CALL_LINE,
    SLOT_DECL_FILE,
    SLOT_DECL_LINE,
    SLOT_LINKAGE_NAME,
    SLOT_LOW_PC,
    SLOT_NAME,
    SLOT_SPECIFICATION,
    SharedTables,
    UnitIndex,
    scan_unit,
)
from symbolize.formats.dwarf.sections import DwarfSections, SectionGetter, section_bytes
from symbolize.formats.dwarf.unit import _ADDRX_FORMS, Unit, parse_unit_header
from symbolize.formats.errors import MalformedInputError
from symbolize.formats.types import DebugHint, DebugId, DebugIdKind, HintKind, SectionSource

if TYPE_CHECKING:
    from symbolize.formats.dwarf.lines import LineTable

_U64 = (1 << 64) - 1

# What decoding hostile bytes raises: our own checks; reads past a section's end (IndexError,
# struct.error); and an attribute whose form has the wrong class for its meaning (a block where a
# section offset belongs), which surfaces as TypeError where the value is used.
_DECODE_ERRORS = (DwarfFormatError, UnknownFormError, IndexError, ValueError, struct.error, TypeError, OverflowError)
_MAX_REFERENCE_DEPTH = 16
# The bytes a file's abbreviation tables may span together, past their section's own size: each
# unit's table runs from its offset to the next 0 code (DWARF 5, 7.5.3), so units whose offsets
# point at different places in one long table each parse the rest of it (8,000 such units read
# 8,000 times the table: 26-40 s and 5.8 GB). Producers give each table its own bytes (their sum
# is at most the section) or share one offset (parsed once); a file past this much overlap keeps
# the tables already read and reports the other units broken.
_ABBREV_OVERLAP_FACTOR = 2
_ABBREV_OVERLAP_SLACK = 1 << 16
# Source lines and columns are unsigned 32-bit values in llvm-symbolizer (DILineInfo) and in the
# answers stored downstream. A DW_AT_call_line, DW_AT_call_column or DW_AT_decl_line is read as
# llvm-symbolizer 14 reads it (DWARFFormValue::getAsUnsignedConstant, stored in a uint32_t): an
# unsigned constant (data1-8, udata, implicit_const, a flag) modulo 2^32, so a data8 of 2^32 + 7
# reads 7 and one of 2^64 - 1 reads 4294967295; DW_FORM_sdata, which LLVM does not take as an
# unsigned constant whatever its sign, and any other form read 0, "unknown", as a missing one.
# Either way the value fits protobuf's int64 fields and the index's unsigned arrays.
_LINE_FORMS = frozenset({c.DW_FORM_data1, c.DW_FORM_data2, c.DW_FORM_data4, c.DW_FORM_data8, c.DW_FORM_udata,
                         c.DW_FORM_implicit_const, c.DW_FORM_flag, c.DW_FORM_flag_present})
_LINE_MASK = (1 << 32) - 1


# What a function is called and where it is declared: (name, DW_AT_decl_line, DW_AT_decl_file's
# name), each from the first DIE of its abstract-origin and specification chain that has it.
Name = tuple[str | None, int, str | None]
# A DW_AT_decl_file is a file number in the line table of the unit holding the DIE: any constant
# form (llvm-symbolizer 22 reads a DW_FORM_implicit_const one as no file, a bug of its
# DWARFFormValue::getAsFile, whose value made from the abbreviation has no unit; see
# symbolize/cli/llvm_protocol.py).
_FILE_FORMS = _LINE_FORMS - {c.DW_FORM_flag, c.DW_FORM_flag_present} | {c.DW_FORM_sdata}


# The forms of an address (DWARF 5, 7.5.5, class address).
_ADDRESS_FORMS = frozenset({c.DW_FORM_addr, *_ADDRX_FORMS})


def source_line(form: int, value: Any) -> int:
    """A line or column attribute ``(form, value)`` as a Frame carries it (see :data:`_LINE_FORMS`)."""
    return value & _LINE_MASK if form in _LINE_FORMS and isinstance(value, int) else 0


class _UnitState:
    """Lazily built facts about one unit; ``error`` remembers why it could not be read."""

    __slots__ = ("die_unit", "error", "index", "lines", "unit")

    def __init__(self, unit: Unit) -> None:
        self.unit = unit
        # The unit whose DIEs describe the code: the unit itself, or a split unit in a .dwo.
        self.die_unit: Unit | None = None
        self.index: UnitIndex | None = None
        self.lines: LineTable | None = None
        self.error: str | None = None


class DwarfInfo:
    """The units, line tables and names of the DWARF sections ``sections`` serves."""

    def __init__(
        self,
        sections: SectionGetter,
        path: Path,
        *,
        address_size: int = 8,
        little_endian: bool = True,
        follows_split_units: bool = False,
        supplementary: SectionSource | None = None,
        views: SectionGetter | None = None,
    ) -> None:
        """``follows_split_units``: a skeleton unit's region needs its .dwo or .dwp (ELF); without
        it, or until the file is supplied (:meth:`supply_split_unit`), the unit answers from its
        skeleton alone. ``supplementary``: the dwz common file (.gnu_debugaltlink), when found.
        ``views``: the sections without a copy (views of the file's mapping), for those the Python
        reader reads little of where the compiled source answers (``DwarfSections.from_getter``)."""
        self.path = path
        self._getter = sections
        self._views = views
        self._address_size = address_size
        self._little_endian = little_endian
        self._follows_split_units = follows_split_units
        # The .dwo or .dwp supplied for each split unit's hint (None: looked for, not found).
        self._split_files: dict[DebugHint, SectionSource | None] = {}
        # The dwz common file: its strings read when units load, its DIEs decoded on first use.
        self._supplementary_found: tuple[SectionGetter, Path] | None = (
            (supplementary.section_data, supplementary.path) if supplementary is not None else None
        )
        self._supplementary: DwarfInfo | None = None
        self._sections: DwarfSections | None = None
        self._states: list[_UnitState] | None = None
        self._unit_offsets: list[int] = []
        # Tables by (section, offset): units of a file often share one, and each is parsed once.
        self._abbrev_cache: dict[tuple[int, int], dict[int, Any]] = {}
        # Bytes of each abbreviation section its distinct tables spanned, by id(section).
        self._abbrev_read: dict[int, int] = {}
        # An error whose addresses are not known: the chain of unit headers broke off (a length ran
        # past the section), a unit's header is unreadable and .debug_aranges does not place it, or
        # units were left unread past the abbreviation tables' overlap cap (_abbrevs).
        # It is the answer for an address no readable unit covers.
        self._unplaced_error: str | None = None
        self._abbrev_shapes: ShapeBytes = {}
        # Sorted (low, high, state index) over every unit's ranges.
        self._unit_ranges: list[tuple[int, int, int]] = []
        self._unit_lows: list[int] = []
        self._unit_max_high: list[int] = []
        self._names: dict[tuple[int, int], Name] = {}
        self._shared_tables = SharedTables()
        # --relativenames: each unit's file names without the compilation directory, by unit offset.
        self._relative_names: dict[int, dict[str, str]] = {}

    # Public ------------------------------------------------------------------

    def load(self) -> None:
        """Read every section the units need, and each unit's header and root DIE, now.

        Raises MalformedInputError when the DWARF cannot be read at all (a section
        that does not decompress, a first unit without a length); a broken unit
        past the first is kept as its own error and raises nothing here.
        """
        self._load_units()

    @property
    def unplaced_error(self) -> str | None:
        """Why some addresses cannot be named though no readable unit says which: the chain of unit
        headers broke off, or a unit's header is unreadable and ``.debug_aranges`` does not place it."""
        self._load_units()
        return self._unplaced_error

    @property
    def address_size(self) -> int:
        """The container's address size in bytes."""
        return self._address_size

    @property
    def little_endian(self) -> bool:
        return self._little_endian

    def sections_by_name(self) -> dict[str, bytes | memoryview]:
        """The DWARF sections the units read, by name (``.debug_info``, ...), as the getter gave them
        (decompressed; views of the mapping where ``views`` gave them); absent and empty ones left
        out: what the compiled answer source reads, without copying them."""
        self._load_units()
        sections = self._sections
        assert sections is not None
        names = ("info", "abbrev", "str", "line_str", "str_offsets", "addr", "ranges", "rnglists", "line", "aranges")
        return {f".debug_{name}": data for name in names if (data := getattr(sections, name))}

    def relative_file_names(self, vaddr: int) -> dict[str, str]:
        """Each file name the line tables of the units covering ``vaddr`` give, mapped to the name
        without the compilation directory (``lines.relative_file_names``), where they differ; the
        first unit's (by low address), where units overlap. A unit whose line header cannot be read
        gives none. Read on first use per unit: only ``--relativenames`` asks."""
        states = self._load_units()
        found: dict[str, str] = {}
        stop = bisect_right(self._unit_lows, vaddr)
        for low, high, state_index in self._unit_ranges[:stop]:
            if low <= vaddr < high:
                for name, relative in self._relative_names_of(states[state_index]).items():
                    found.setdefault(name, relative)
        return found

    def _relative_names_of(self, state: _UnitState) -> dict[str, str]:
        stmt_list = state.unit.stmt_list
        found = self._relative_names.get(state.unit.offset)
        if found is None:
            found = self._relative_names[state.unit.offset] = {}
            if stmt_list is not None and state.error is None:
                from symbolize.formats.dwarf.lines import relative_file_names

                try:
                    pairs = relative_file_names(state.unit, stmt_list)
                except _DECODE_ERRORS:
                    pairs = []
                for name, relative in pairs:
                    if name is not None and relative is not None and relative != name:
                        found.setdefault(name, relative)
        return found

    def versions(self) -> tuple[int, ...]:
        return tuple(sorted({state.unit.version for state in self._load_units() if state.unit.version}))

    def has_split_units(self) -> bool:
        """Whether any unit is a skeleton whose DIEs live in a .dwo or .dwp."""
        return any(state.unit.dwo_name is not None for state in self._load_units())

    def unit_needs(self, state_index: int) -> tuple[DebugHint, ...]:
        """The files unit ``state_index``'s answers need: a skeleton's .dwo or .dwp, as a
        SPLIT_DWARF hint (its DWO name, comp_dir and DWO ID); () for a unit that holds its DIEs."""
        unit = self._load_units()[state_index].unit
        if not self._follows_split_units or not _is_skeleton(unit):
            return ()
        return (_split_hint(unit),)

    def supply_split_unit(self, hint: DebugHint, found: SectionSource | None) -> None:
        """The .dwo or .dwp found for a unit's need (:meth:`unit_needs`), or None when none was:
        units decoded from now on read their DIEs from it."""
        self._split_files[hint] = found

    # Units -------------------------------------------------------------------

    def _load_units(self) -> list[_UnitState]:
        if self._states is not None:
            return self._states
        sections = DwarfSections.from_getter(
            self._getter, self.path, self._little_endian, self._address_size, views=self._views
        )
        if self._supplementary_found is not None:
            try:
                common_strings = section_bytes(self._supplementary_found[0], "debug_str")
            except MalformedInputError:
                # A dwz file that cannot be read is as good as missing: this file's own DWARF stays.
                self._supplementary_found, common_strings = None, b""
            sections = sections.replace(supplementary_str=common_strings)
        self._sections = sections
        states: list[_UnitState] = []
        ranges: list[tuple[int, int, int]] = []
        offset = 0
        info = sections.info
        while offset < len(info):
            try:
                _, _, end = read_initial_length(info, offset, self._little_endian, "unit")
            except DwarfFormatError as error:
                if offset == 0:
                    raise MalformedInputError(f".debug_info: {error}", self.path, offset) from error
                # Without a length there is no next unit to find: the units before stay.
                self._unplaced_error = f".debug_info: {error}"
                break
            try:
                unit = self._unit_header(offset, states)
            except _DECODE_ERRORS as error:
                # A header this reader cannot read (a version or address size it does not know)
                # with its length intact: the unit is skipped, its error kept for the addresses
                # .debug_aranges gives it, and the units after it read as usual.
                states.append(_broken_unit(self._sections, offset, end, f"unit at {offset:#x}: {error}"))
                offset = end
                continue
            offset = unit.end
            if unit.unit_type not in (c.DW_UT_compile, c.DW_UT_partial, c.DW_UT_skeleton):
                continue
            state = _UnitState(unit)
            states.append(state)
            try:
                for low, high in self._prepare_unit(unit, states):
                    ranges.append((low, high, len(states) - 1))
            except _DECODE_ERRORS as error:
                state.error = f"compile unit at {unit.offset:#x}: {error}"
        self._add_aranges(states, ranges)
        placed = {state_index for _, _, state_index in ranges}
        for state_index, state in enumerate(states):
            if not state.unit.version and state_index not in placed:
                self._unplaced_error = self._unplaced_error or state.error
        ranges.sort()
        self._unit_ranges = ranges
        self._unit_lows = [low for low, _, _ in ranges]
        running = 0
        for _, high, _ in ranges:
            running = max(running, high)
            self._unit_max_high.append(running)
        self._unit_offsets = [state.unit.offset for state in states]
        self._states = states
        return states

    def _unit_header(self, offset: int, states: list[_UnitState]) -> Unit:
        """The header of the unit at ``offset``; one whose read from a view of .debug_info runs off
        the section is read again from bytes, so its error is the bytes' own (see _prepare_unit)."""
        sections = self._sections
        assert sections is not None
        try:
            return parse_unit_header(sections, offset)
        except IndexError:
            if not self._sections_as_bytes(states):
                raise
            assert self._sections is not None
            return parse_unit_header(self._sections, offset)

    def _abbrevs(self, sections: DwarfSections, offset: int, root_code: int | None = None) -> dict[int, Any]:
        """The abbreviation table at ``offset``; given the code of the unit's root DIE, parsed whole
        only on first use past that entry (``LazyAbbrevTable``), where the compiled kernels run."""
        key = (id(sections.abbrev), offset)
        table = self._abbrev_cache.get(key)
        if table is None:
            if offset >= len(sections.abbrev):
                raise DwarfFormatError(f"abbreviation offset {offset:#x} outside .debug_abbrev")
            read = self._abbrev_read.get(key[0], 0)
            allowed = _ABBREV_OVERLAP_FACTOR * len(sections.abbrev) + _ABBREV_OVERLAP_SLACK
            if read > allowed:
                refusal = (
                    f"abbreviation table at {offset:#x} not read: the units' tables overlap, and those read "
                    f"span {read} bytes of a {len(sections.abbrev)}-byte .debug_abbrev (at most {allowed} are read)"
                )
                # Units left unread may cover any address the others do not: those say why.
                self._unplaced_error = self._unplaced_error or refusal
                raise DwarfFormatError(refusal)
            lazy = (lazy_abbrev_table(sections.abbrev, offset, root_code, self._abbrev_shapes)
                    if root_code is not None else None)
            table, end = lazy if lazy is not None else read_abbrev_table(sections.abbrev, offset, self._abbrev_shapes)
            self._abbrev_cache[key] = table
            self._abbrev_read[key[0]] = read + end - offset
        elif root_code is not None and isinstance(table, LazyAbbrevTable):
            table.add_root(root_code)
        return table

    def _prepare_unit(self, unit: Unit, states: list[_UnitState]) -> list[tuple[int, int]]:
        """Read the root DIE: bases, line table offset, names, and the unit's address ranges.

        From a view of ``.debug_info`` (``views``) where the DIE holds numbers alone, as producers'
        root DIEs do; one with an inline string or a block (slices, which the reader keeps as
        bytes), or a read of it or of its ranges that runs off a section (an IndexError, whose
        message differs between a view and bytes), is read from bytes, so the values and errors
        are the bytes' own.
        """
        try:
            root_code: int | None = read_uleb(unit.sections.info, unit.first_die)[0]
        except _DECODE_ERRORS:
            root_code = None  # the whole table is read, and the DIE's read says what is wrong
        unit.abbrevs = self._abbrevs(unit.sections, unit.abbrev_offset, root_code)
        if not isinstance(unit.sections.info, bytes):
            root = unit.abbrevs.get(root_code) if root_code is not None else None
            # A number reads alike from a view and from bytes.
            if root is not None and not NUMBER_FORMS.issuperset([form for _, form, _ in root.attributes]):
                self._sections_as_bytes(states)
        try:
            return self._read_root(unit)
        except IndexError:
            if not self._sections_as_bytes(states):
                raise
            return self._read_root(unit)  # the same reads from bytes, what they set set again alike

    def _read_root(self, unit: Unit) -> list[tuple[int, int]]:
        _, values = unit.read_die_attributes(unit.first_die)
        _apply_bases(unit, values)
        bounds = unit.pc_bounds(values)
        if bounds is not None:
            unit.low_pc = bounds[0]
        elif c.DW_AT_low_pc in values:
            unit.low_pc = unit.address(*values[c.DW_AT_low_pc])
        for attribute, target in ((c.DW_AT_name, "name"), (c.DW_AT_comp_dir, "comp_dir")):
            if attribute in values:
                setattr(unit, target, unit.string(*values[attribute]))
        for attribute in (c.DW_AT_dwo_name, c.DW_AT_GNU_dwo_name):
            if attribute in values:
                unit.dwo_name = unit.string(*values[attribute])
        if c.DW_AT_GNU_dwo_id in values and unit.dwo_id is None:
            unit.dwo_id = int(values[c.DW_AT_GNU_dwo_id][1])
        if c.DW_AT_ranges in values:
            return decode_ranges(unit, *values[c.DW_AT_ranges])
        if bounds is not None and bounds[1] > bounds[0]:
            return [bounds]
        return []

    def _sections_as_bytes(self, states: list[_UnitState]) -> bool:
        """``.debug_info`` and the range lists as bytes from now on, for every unit of this file
        (``states``: all read so far): the DIE decoders search and slice them (sections.py). Until
        a unit is decoded here (where the compiled source answers, only a unit it leaves to the
        reference) the header pass reads the views, and a cold lookup copies none of them.
        False where they were bytes already."""
        sections = self._sections
        assert sections is not None
        whole = sections.with_bytes()
        if whole is sections:
            return False
        for state in states:
            if state.unit.sections is sections:
                state.unit.sections = whole
        self._sections = whole
        return True

    def _add_aranges(self, states: list[_UnitState], ranges: list[tuple[int, int, int]]) -> None:
        """Units whose root DIE gives no ranges may still be listed in .debug_aranges."""
        covered = {state_index for _, _, state_index in ranges}
        missing = {state.unit.offset: i for i, state in enumerate(states) if i not in covered}
        assert self._sections is not None
        data = self._sections.aranges
        if not missing or not data:
            return
        from symbolize.formats.dwarf.aranges import iter_aranges

        try:
            for unit_offset, low, length in iter_aranges(data, self._little_endian, missing):
                state_index = missing.get(unit_offset)
                if state_index is not None and length > 0:
                    ranges.append((low, low + length, state_index))
        except _DECODE_ERRORS:
            return  # .debug_aranges is only a hint; the units stay as their DIEs describe them

    def _unit_at_offset(self, die_offset: int) -> _UnitState | None:
        states = self._load_units()
        position = bisect_right(self._unit_offsets, die_offset) - 1
        if position < 0:
            return None
        state = states[position]
        return state if die_offset < state.unit.end else None

    def _ensure_decoded(self, state: _UnitState, whole: bool = False) -> bool:
        if state.error is not None:
            return False
        if state.index is not None:
            return True
        self._sections_as_bytes(self._load_units())
        unit = state.unit
        try:
            die_unit: Unit | None = unit
            if _is_skeleton(unit):
                die_unit = self._split_unit(unit)
            state.die_unit = die_unit
            state.lines = _line_table(unit) if unit.stmt_list is not None else None
            state.index = self._scan(die_unit, whole) if die_unit is not None else UnitIndex(unit)
        except (*_DECODE_ERRORS, MalformedInputError) as error:
            # MalformedInputError: the unit's .dwo (or its slice of a .dwp) cannot be read. The unit
            # alone breaks, with its reason; the other units and the symbol table stay.
            state.error = f"compile unit at {unit.offset:#x}: {error}"
            return False
        return True

    def _scan(self, unit: Unit, whole: bool) -> UnitIndex:
        """The unit's DIE tree scanned (``scan_unit``); raises on bad data in its top level.

        A whole scan that fails is done again as lookups do it, function subtrees deferred: damage
        under one function then breaks that function's addresses alone (its expansion fails, see
        ``UnitRuns``), as for a lookup, instead of the whole unit.
        """
        if whole:
            try:
                return scan_unit(unit, True, self._shared_tables)
            except _DECODE_ERRORS:
                pass
        return scan_unit(unit, False, self._shared_tables)

    def _split_unit(self, skeleton: Unit) -> Unit | None:
        """The .dwo unit a skeleton stands for, or None when its file was not supplied or found."""
        if not self._follows_split_units or skeleton.dwo_name is None:
            return None
        found = self._split_files.get(_split_hint(skeleton))
        if found is None:
            return None
        assert self._sections is not None
        from symbolize.formats.dwarf.split import load_split_sections  # only a split unit's file needs it

        sections = load_split_sections(found.section_data, found.path, self._sections, skeleton.dwo_id)
        if sections is None:
            return None
        offset = 0
        while offset < len(sections.info):
            unit = parse_unit_header(sections, offset)
            offset = unit.end
            if unit.unit_type in (c.DW_UT_type, c.DW_UT_split_type):
                continue
            unit.abbrevs = self._abbrevs(sections, unit.abbrev_offset)
            _, values = unit.read_die_attributes(unit.first_die)
            dwo_id = unit.dwo_id
            if dwo_id is None and c.DW_AT_GNU_dwo_id in values:
                dwo_id = int(values[c.DW_AT_GNU_dwo_id][1])
            if skeleton.dwo_id is not None and dwo_id is not None and dwo_id != skeleton.dwo_id:
                continue
            # Indexed forms in a split unit resolve through the skeleton's bases (DWARF 5, 3.1.3).
            unit.addr_base = skeleton.addr_base
            unit.ranges_base = skeleton.split_ranges_base
            unit.low_pc = skeleton.low_pc
            # Without the attributes, the bases are just past the tables' headers (DWARF 5, 7.26
            # and 7.28): an initial length (4 bytes, or 12 in 64-bit DWARF), then 4 bytes of
            # version and padding, or 8 of version, sizes and offset count.
            length_size = 4 if unit.offset_size == 4 else 12
            unit.str_offsets_base = length_size + 4 if unit.version >= 5 else 0
            unit.rnglists_base = length_size + 8 if unit.version >= 5 else 0
            _apply_bases(unit, values)
            unit.comp_dir = skeleton.comp_dir
            return unit
        return None

    # Names -------------------------------------------------------------------

    def node_name(self, state: _UnitState, node: int) -> Name:
        """(name, decl line, decl file) of a function or inlined-call node of a decoded unit.

        The scan kept the node's naming attributes, so only its origin is decoded again.
        """
        index = state.index
        assert index is not None
        attrs = index.node_attrs[node]
        decl = attrs.get(SLOT_DECL_LINE)
        decl_file = attrs.get(SLOT_DECL_FILE)
        return self._resolve_name(
            index.unit,
            index.node_die[node],
            attrs.get(SLOT_LINKAGE_NAME),
            attrs.get(SLOT_NAME),
            source_line(*decl) if decl is not None else 0,
            self._file_of(state.lines, decl_file) if decl_file is not None else None,
            attrs.get(SLOT_ABSTRACT_ORIGIN) or attrs.get(SLOT_SPECIFICATION),
            0,
        )

    def node_entry(self, state: _UnitState, node: int) -> int | None:
        """A node's own DW_AT_low_pc (llvm-symbolizer's StartAddress of its frame), None without one."""
        index = state.index
        assert index is not None
        low = index.node_attrs[node].get(SLOT_LOW_PC)
        if low is None or low[0] not in _ADDRESS_FORMS:
            return None  # llvm-symbolizer reads only an address form's (getAsSectionedAddress)
        try:
            return index.unit.address(*low)
        except _DECODE_ERRORS:
            return None  # as llvm-symbolizer: an entry it cannot read is none, the frame stays

    def call_site(self, state: _UnitState, node: int) -> tuple[str | None, int, int, int]:
        """(file, line, column, discriminator) an inlined-call node was called from."""
        assert state.index is not None
        attrs = state.index.node_attrs[node]
        call_file = attrs.get(SLOT_CALL_FILE)
        file = self._call_file(state, int(call_file[1])) if call_file is not None else None
        line = source_line(*attrs[SLOT_CALL_LINE]) if SLOT_CALL_LINE in attrs else 0
        column = source_line(*attrs[SLOT_CALL_COLUMN]) if SLOT_CALL_COLUMN in attrs else 0
        discriminator = attrs.get(SLOT_CALL_DISCRIMINATOR)
        return file, line, column, source_line(*discriminator) if discriminator is not None else 0

    def _call_file(self, state: _UnitState, file_index: int) -> str | None:
        return state.lines.file_name(file_index) if state.lines is not None else None

    def _file_of(self, lines: LineTable | None, attribute: tuple[int, Any]) -> str | None:
        """The name of file number ``attribute`` (a DW_AT_decl_file) in ``lines``, None if none."""
        form, value = attribute
        if form not in _FILE_FORMS or not isinstance(value, int) or lines is None:
            return None
        return lines.file_name(value)

    def _lines_of(self, unit: Unit) -> LineTable | None:
        """The line table whose file numbers ``unit``'s DIEs use: its own, or for a split unit its
        skeleton's (llvm-symbolizer's linked unit); None when it has none or it cannot be read."""
        if unit.sections is self._sections:
            state = self._unit_at_offset(unit.offset)
        else:
            state = next((s for s in self._load_units() if s.die_unit is unit), None)
        if state is None:
            return None
        if state.lines is None and state.unit.stmt_list is not None and state.error is None:
            try:
                state.lines = _line_table(state.unit)
            except _DECODE_ERRORS:
                return None
        return state.lines

    def _die_name(self, unit: Unit, die_offset: int, depth: int = 0) -> Name:
        """(name, decl line, decl file) of a function DIE: its linkage name, else its qualified name.

        All follow DW_AT_abstract_origin and DW_AT_specification, as
        llvm-symbolizer does: the linkage name and the declaration line often
        sit on different DIEs of the chain (a concrete instance, its abstract
        origin, the in-class declaration). Every DIE of a chain is cached, so the
        thousands of inlined copies of one function resolve its origin once.
        """
        key = (id(unit.sections), die_offset)
        cached = self._names.get(key)
        if cached is not None:
            return cached
        _, values = unit.read_die_attributes(die_offset)
        linkage = values.get(c.DW_AT_linkage_name) or values.get(c.DW_AT_MIPS_linkage_name)
        reference = values.get(c.DW_AT_abstract_origin) or values.get(c.DW_AT_specification)
        decl_file = values.get(c.DW_AT_decl_file)
        result = self._resolve_name(
            unit, die_offset, linkage, values.get(c.DW_AT_name), _decl_line(values),
            self._file_of(self._lines_of(unit), decl_file) if decl_file is not None else None, reference, depth,
        )  # fmt: skip
        self._names[key] = result
        return result

    def _resolve_name(
        self,
        unit: Unit,
        die_offset: int,
        linkage_value: tuple[int, Any] | None,
        name_value: tuple[int, Any] | None,
        decl_line: int,
        decl_file: str | None,
        reference: tuple[int, Any] | None,
        depth: int,
    ) -> Name:
        linkage = unit.string(*linkage_value) or None if linkage_value is not None else None
        name = unit.string(*name_value) if name_value is not None else None
        if (linkage is None or not decl_line or decl_file is None) and reference is not None and (
            depth < _MAX_REFERENCE_DEPTH
        ):
            origin = self._origin_name(unit, reference, depth)
            if origin is not None:
                origin_name, origin_decl, origin_file = origin
                decl_line = decl_line or origin_decl
                decl_file = decl_file if decl_file is not None else origin_file
                if linkage is None and (name is None or origin_name is not None):
                    # The origin's answer is a linkage name or an already qualified name.
                    name, linkage = None, origin_name
        if linkage is None and name is not None:
            linkage = self._qualify(unit, die_offset, name)
        return linkage, decl_line, decl_file

    def _origin_name(self, unit: Unit, reference: tuple[int, Any], depth: int) -> Name | None:
        """The name of the DIE an abstract origin or specification points to, in this file or
        (DW_FORM_GNU_ref_alt) in the dwz supplementary file; None when it cannot be reached."""
        form, value = reference
        if form == c.DW_FORM_GNU_ref_alt:
            supplementary = self._supplementary_info()
            return supplementary.name_at(int(value)) if supplementary is not None else None
        target_unit, target = self._unit_for_reference(unit, unit.reference(form, value))
        if target_unit is None or target is None:
            return None
        return self._die_name(target_unit, target, depth + 1)

    def name_at(self, die_offset: int) -> Name | None:
        """(name, decl line, decl file) of the function DIE at a .debug_info offset, None if no unit holds it."""
        state = self._unit_at_offset(die_offset)
        return self._die_name(state.unit, die_offset) if state is not None and state.error is None else None

    def _supplementary_info(self) -> DwarfInfo | None:
        if self._supplementary is None and self._supplementary_found is not None:
            getter, path = self._supplementary_found
            supplementary = DwarfInfo(getter, path, little_endian=self._little_endian)
            try:
                supplementary.load()
            except MalformedInputError:
                # Unreadable, it names nothing: the references into it stay unnamed, as when missing.
                self._supplementary_found = None
                return None
            self._supplementary = supplementary
        return self._supplementary

    def _unit_for_reference(self, unit: Unit, target: int | None) -> tuple[Unit | None, int | None]:
        if target is None:
            return None, None
        if unit.offset <= target < unit.end:
            return unit, target
        if unit.sections is not self._sections:
            return None, None  # split units do not reach into other units
        state = self._unit_at_offset(target)
        return (state.unit, target) if state is not None else (None, None)

    def _qualify(self, unit: Unit, die_offset: int, name: str) -> str:
        """``name`` prefixed with its enclosing namespaces and types, as C++ and Rust spell them.

        An anonymous namespace reads ``(anonymous namespace)``; an unnamed type
        (a lambda's closure, an anonymous struct) ends the prefix, since no
        spelling of it would be one a reader recognises.
        """
        index = self._index_for(unit)
        if index is None:
            return name
        parts = [name]
        scope = index.scope_of(die_offset)
        while scope >= 0:
            scope_name = index.scope_name[scope]
            if not scope_name:
                if not index.scope_is_namespace[scope]:
                    break
                scope_name = "(anonymous namespace)"
            parts.append(scope_name)
            scope = index.scope_parent[scope]
        return "::".join(reversed(parts))

    def _index_for(self, unit: Unit) -> UnitIndex | None:
        state = self._unit_at_offset(unit.offset) if unit.sections is self._sections else None
        if state is None:
            state = next((s for s in self._load_units() if s.die_unit is unit), None)
        if state is None or not self._ensure_decoded(state):
            return None
        return state.index


def _is_skeleton(unit: Unit) -> bool:
    """Whether ``unit``'s DIEs live in a .dwo or .dwp: a DWARF 5 skeleton unit, or a DWARF 4 unit
    with the GNU extension's DW_AT_GNU_dwo_name."""
    return unit.dwo_name is not None and (unit.unit_type == c.DW_UT_skeleton or unit.version < 5)


def _split_hint(skeleton: Unit) -> DebugHint:
    """The SPLIT_DWARF hint of a skeleton unit: its DWO name, relative to its comp_dir, and its DWO ID."""
    dwo_id = skeleton.dwo_id
    debug_id = DebugId(DebugIdKind.DWO_ID, (dwo_id & _U64).to_bytes(8, "big")) if dwo_id is not None else None
    return DebugHint(HintKind.SPLIT_DWARF, skeleton.dwo_name or "", debug_id, directory=skeleton.comp_dir or "")


def _line_table(unit: Unit) -> LineTable:
    """The line table at the unit's DW_AT_stmt_list (it has one), decoded by the Python reader:
    lines.py is imported on the first, since where the compiled source answers a cold lookup
    decodes none here."""
    from symbolize.formats.dwarf.lines import decode_line_table

    assert unit.stmt_list is not None
    return decode_line_table(unit, unit.stmt_list)


def _decl_line(values: dict[int, tuple[int, Any]]) -> int:
    found = values.get(c.DW_AT_decl_line)
    return source_line(*found) if found is not None else 0


def _broken_unit(sections: DwarfSections, offset: int, end: int, error: str) -> _UnitState:
    """The state of a unit whose header could not be read: no DIEs, only its extent and error."""
    unit = Unit(
        sections=sections, offset=offset, end=end, version=0, unit_type=c.DW_UT_compile, addr_size=8,
        offset_size=4, abbrev_offset=0, first_die=end,
    )
    state = _UnitState(unit)
    state.error = error
    return state


def _apply_bases(unit: Unit, values: dict[int, tuple[int, Any]]) -> None:
    if c.DW_AT_str_offsets_base in values:
        unit.str_offsets_base = int(values[c.DW_AT_str_offsets_base][1])
    for attribute in (c.DW_AT_addr_base, c.DW_AT_GNU_addr_base):
        if attribute in values:
            unit.addr_base = int(values[attribute][1])
    if c.DW_AT_rnglists_base in values:
        unit.rnglists_base = int(values[c.DW_AT_rnglists_base][1])
    if c.DW_AT_GNU_ranges_base in values:
        # The GNU split-DWARF extension (gcc's -gsplit-dwarf with DWARF 4, rustc's split debug info):
        # the base of the split unit's range lists, never of the skeleton's own DW_AT_ranges (LLVM's
        # DWARFUnit::parseDWO hands it to the split unit alone; the skeleton's ranges start at 0).
        unit.split_ranges_base = int(values[c.DW_AT_GNU_ranges_base][1])
    if c.DW_AT_stmt_list in values:
        unit.stmt_list = int(values[c.DW_AT_stmt_list][1])
