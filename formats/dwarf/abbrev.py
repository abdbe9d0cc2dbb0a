"""Abbreviation tables (DWARF 5, 7.5.3) and per-unit attribute plans.

A DIE is an abbreviation code followed by one value per attribute the
abbreviation lists. The scanner never interprets a form generically on the hot
path: each abbreviation is compiled once per unit encoding into a *plan* that
says, attribute by attribute, how many bytes to skip or how to read the value.
An abbreviation whose attributes are all fixed-size and of no interest is
skipped with one addition.
"""

from typing import Any, NamedTuple

from symbolize.formats.dwarf import constants as c
from symbolize.formats.dwarf.reader import read_sleb, read_uleb
from symbolize.formats.native import kernels

# How a form's value is laid out in .debug_info.
KIND_FIXED = 0
KIND_ULEB = 1
KIND_SLEB = 2
KIND_CSTRING = 3
KIND_BLOCK_ULEB = 4
KIND_BLOCK1 = 5
KIND_BLOCK2 = 6
KIND_BLOCK4 = 7
KIND_IMPLICIT = 8
KIND_INDIRECT = 9
# Signed and unsigned LEB128 share their continuation bit, so the walks skip both alike.
LEB_KINDS = frozenset({KIND_ULEB, KIND_SLEB})

_FIXED_SIZES = {
    c.DW_FORM_data1: 1, c.DW_FORM_ref1: 1, c.DW_FORM_flag: 1, c.DW_FORM_strx1: 1, c.DW_FORM_addrx1: 1,
    c.DW_FORM_data2: 2, c.DW_FORM_ref2: 2, c.DW_FORM_strx2: 2, c.DW_FORM_addrx2: 2,
    c.DW_FORM_strx3: 3, c.DW_FORM_addrx3: 3,
    c.DW_FORM_data4: 4, c.DW_FORM_ref4: 4, c.DW_FORM_strx4: 4, c.DW_FORM_addrx4: 4, c.DW_FORM_ref_sup4: 4,
    c.DW_FORM_data8: 8, c.DW_FORM_ref8: 8, c.DW_FORM_ref_sig8: 8, c.DW_FORM_ref_sup8: 8,
    c.DW_FORM_data16: 16,
    c.DW_FORM_flag_present: 0,
}
_OFFSET_SIZED = {
    c.DW_FORM_strp, c.DW_FORM_line_strp, c.DW_FORM_sec_offset, c.DW_FORM_strp_sup,
    c.DW_FORM_GNU_ref_alt, c.DW_FORM_GNU_strp_alt,
}
_ULEB_FORMS = {
    c.DW_FORM_udata, c.DW_FORM_ref_udata, c.DW_FORM_strx, c.DW_FORM_addrx, c.DW_FORM_loclistx,
    c.DW_FORM_rnglistx, c.DW_FORM_GNU_addr_index, c.DW_FORM_GNU_str_index,
}
_BLOCK_KINDS = {
    c.DW_FORM_block: KIND_BLOCK_ULEB, c.DW_FORM_exprloc: KIND_BLOCK_ULEB,
    c.DW_FORM_block1: KIND_BLOCK1, c.DW_FORM_block2: KIND_BLOCK2, c.DW_FORM_block4: KIND_BLOCK4,
}


# The forms whose value is a number (fixed size up to 8 bytes, LEB128, implicit): not a slice of the
# section (data16, string, block), nor a form read only when met (indirect).
NUMBER_FORMS = frozenset(
    {*(form for form, size in _FIXED_SIZES.items() if size <= 8), *_OFFSET_SIZED, c.DW_FORM_addr,
     c.DW_FORM_ref_addr, *_ULEB_FORMS, c.DW_FORM_sdata, c.DW_FORM_implicit_const}
)  # fmt: skip


class UnknownFormError(Exception):
    """Internal: a form this reader does not know; the unit is reported broken."""

    def __init__(self, form: int) -> None:
        super().__init__(f"unknown attribute form {form:#x}")
        self.form = form


def form_layout(form: int, addr_size: int, offset_size: int, version: int) -> tuple[int, int]:
    """(kind, fixed size) of a form in a unit with the given encoding."""
    size = _FIXED_SIZES.get(form)
    if size is not None:
        return KIND_FIXED, size
    if form in _OFFSET_SIZED:
        return KIND_FIXED, offset_size
    if form == c.DW_FORM_addr:
        return KIND_FIXED, addr_size
    if form == c.DW_FORM_ref_addr:
        # DWARF 2 sized DW_FORM_ref_addr like an address, later versions like an offset.
        return KIND_FIXED, addr_size if version == 2 else offset_size
    if form in _ULEB_FORMS:
        return KIND_ULEB, 0
    if form == c.DW_FORM_sdata:
        return KIND_SLEB, 0
    if form == c.DW_FORM_string:
        return KIND_CSTRING, 0
    block = _BLOCK_KINDS.get(form)
    if block is not None:
        return block, 0
    if form == c.DW_FORM_implicit_const:
        return KIND_IMPLICIT, 0
    if form == c.DW_FORM_indirect:
        return KIND_INDIRECT, 0
    raise UnknownFormError(form)


class Abbrev(NamedTuple):
    # A tuple, not a frozen dataclass: a large unit's table has thousands of entries, each
    # built on open, and a tuple is built several times faster.
    code: int
    tag: int
    has_children: bool
    # (attribute, form, implicit constant) in the order the DIE stores them.
    attributes: tuple[tuple[int, int, int], ...]


# An abbreviation's bytes after its code (tag, children flag, attributes, terminator) -> what they
# say; see parse_abbrev_table.
ShapeBytes = dict[bytes, tuple[int, bool, tuple[tuple[int, int, int], ...]]]


def parse_abbrev_table(data: bytes, offset: int, shapes: ShapeBytes | None = None) -> dict[int, Abbrev]:
    """The table at ``offset`` up to its terminating 0 code (see :func:`read_abbrev_table`)."""
    return read_abbrev_table(data, offset, shapes)[0]


def read_abbrev_table(data: bytes, offset: int, shapes: ShapeBytes | None = None) -> tuple[dict[int, Abbrev], int]:
    """The table at ``offset`` up to its terminating 0 code, and the offset past that code (what
    a file's tables cost to read is bounded by the bytes they span: see DwarfInfo).

    ``shapes`` remembers entries already parsed, by their bytes, across the tables of a file:
    each unit's table repeats most of the others' entries under other codes, and looking an
    entry up by its bytes up to the first two zero bytes (where the attribute list usually
    ends) costs far less than decoding it. A match is exact by construction, since the same
    bytes decode the same way; an entry whose first two zero bytes are not its end (an
    implicit constant of 0 last) is simply decoded each time.

    No compiled twin: where the kernels run, an open reads each table's end and root entry alone
    (:func:`lazy_abbrev_table`), and a whole table is built only for the reference's own reads.

    Raises IndexError on a table that runs off the section; the caller wraps it.
    """
    table: dict[int, Abbrev] = {}
    if shapes is None:
        shapes = {}
    while True:
        code = data[offset]
        if code < 0x80:
            offset += 1
        else:
            code, offset = read_uleb(data, offset)
        if code == 0:
            return table, offset
        end = data.find(b"\0\0", offset) + 2
        if end > 1:
            shape = shapes.get(data[offset:end])
            if shape is not None:
                table[code] = Abbrev(code, *shape)
                offset = end
                continue
        start = offset
        tag, has_children, attributes, offset = _parse_entry(data, offset)
        shapes[data[start:offset]] = (tag, has_children, attributes)
        table[code] = Abbrev(code, tag, has_children, attributes)


def _parse_entry(data: bytes, offset: int) -> tuple[int, bool, tuple[tuple[int, int, int], ...], int]:
    """(tag, has children, attributes, offset past the entry) of the entry after a code."""
    implicit_const = c.DW_FORM_implicit_const
    tag, offset = read_uleb(data, offset)
    has_children = data[offset] != 0
    offset += 1
    attributes: list[tuple[int, int, int]] = []
    while True:
        # Most attribute and form numbers fit in one LEB128 byte.
        attribute = data[offset]
        if attribute < 0x80:
            offset += 1
        else:
            attribute, offset = read_uleb(data, offset)
        form = data[offset]
        if form < 0x80:
            offset += 1
        else:
            form, offset = read_uleb(data, offset)
        if attribute == 0 and form == 0:
            return tag, has_children, tuple(attributes), offset
        implicit = 0
        if form == implicit_const:
            implicit, offset = read_sleb(data, offset)
        attributes.append((attribute, form, implicit))


def _filled_first(read: Any) -> Any:
    """``read`` (a dict method) of a :class:`LazyAbbrevTable`, after filling it."""

    def filled(table: "LazyAbbrevTable", *args: Any) -> Any:
        table._fill()
        return read(table, *args)

    return filled


class LazyAbbrevTable(dict[int, Abbrev]):
    """An abbreviation table parsed whole on its first use past its units' root entries.

    Opening a file reads each unit's root DIE; where the compiled source answers, the rest of the
    unit's DIEs are read in Rust, so building every entry of every table at open is wasted. The
    table was walked to its end when this was made (``lazy_abbrev_table``): it parses, and it
    ends where the whole parse ends, so nothing the reference would raise at open is deferred.
    """

    __slots__ = ("_data", "_filled", "_offset", "_roots", "_shapes")

    def __init__(self, data: bytes, offset: int, shapes: ShapeBytes, root: Abbrev | None) -> None:
        super().__init__()
        self._data, self._offset, self._shapes = data, offset, shapes
        self._roots = {root.code: root} if root is not None else {}
        self._filled = False

    def add_root(self, code: int) -> None:
        """Hold entry ``code`` too, the rest still unparsed: the root DIE of another unit that shares
        the table uses it (a Rust binary's units share tables and differ in their root's entry;
        parsing each such table whole cost an open of one ~15M instructions)."""
        if self._filled or code in self._roots or kernels is None or code >> 64:
            return
        extent: tuple[int, int | None] | None = kernels.abbrev_table_extent(self._data, self._offset, code)
        if extent is not None and extent[1] is not None:
            self._roots[code] = Abbrev(code, *_parse_entry(self._data, extent[1])[:3])

    def _fill(self) -> None:
        if not self._filled:
            self._filled = True
            super().update(read_abbrev_table(self._data, self._offset, self._shapes)[0])

    def get(self, code: int, default: Any = None) -> Any:
        if not self._filled:
            root = self._roots.get(code)
            if root is not None:
                return root
        self._fill()
        return super().get(code, default)

    # Every other read fills the table first, then reads it as a dict.
    __getitem__ = _filled_first(dict.__getitem__)
    __contains__ = _filled_first(dict.__contains__)
    __iter__ = _filled_first(dict.__iter__)
    __len__ = _filled_first(dict.__len__)
    keys = _filled_first(dict.keys)
    values = _filled_first(dict.values)
    items = _filled_first(dict.items)


def lazy_abbrev_table(
    data: bytes, offset: int, root_code: int, shapes: ShapeBytes
) -> tuple[LazyAbbrevTable, int] | None:
    """The table at ``offset`` as a :class:`LazyAbbrevTable` holding only entry ``root_code``, and
    the offset past its 0 code; None where it must be read whole now (no compiled kernels, or a
    table the compiled walk leaves to the reference: :func:`read_abbrev_table` raises what it raises;
    a root code past 64 bits, which no table the walk reads holds)."""
    if kernels is None or root_code >> 64:
        return None
    extent: tuple[int, int | None] | None = kernels.abbrev_table_extent(data, offset, root_code)
    if extent is None:
        return None
    end, entry = extent
    # The last entry of the code, as a dict built in table order keeps it.
    root = Abbrev(root_code, *_parse_entry(data, entry)[:3]) if entry is not None else None
    return LazyAbbrevTable(data, offset, shapes, root), end
