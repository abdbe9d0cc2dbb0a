"""The set of DWARF sections one unit reads from.

A normal unit reads everything from one file. A split unit (DWARF 5, 3.1.3)
reads its DIEs, abbreviations, strings and range lists from a ``.dwo`` (or its
slice of a ``.dwp``) but its addresses and line rows from the skeleton's file,
so the two are combined here once and the decoders see a single set.

``.debug_info``, ``.debug_str``, ``.debug_line``, ``.debug_ranges`` and ``.debug_rnglists`` may be
views of the file's mapping rather than ``bytes`` (``DwarfSections.from_getter``'s ``views``): where
the compiled answer source reads a file, the Python reader reads unit headers, root DIEs, their
ranges and a few unit names from them at open and, for most files, nothing else, and a copy of
each would cost its whole size in fresh memory (a cold lookup copied 9.2 MB of ``.debug_info`` in
libpython for its 146 unit headers, 24 MB and 3.9 MB of ranges in rustgen, 62 MB and 3 MB in
cppcheck). The readers take strings through :func:`cstring_at` and the line program through
:meth:`DwarfSections.line_bytes`, which serve both; the DIE decoders want ``.debug_info`` as bytes
(they search and slice it), and the range lists are read alike from both but for the message of
a read past the section's end (an IndexError says "index out of range" of bytes, "index out of
bounds on dimension 1" of a view): both come as bytes (:meth:`DwarfSections.with_bytes`) to the
decoders of DIEs, and to a root DIE whose read from the views fails so (see DwarfInfo).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

SectionGetter = Callable[[str], "bytes | memoryview | None"]

_EMPTY = b""
# DwarfSections' fields, in its constructor's order.
_FIELDS = ("path", "info", "abbrev", "str", "line_str", "str_offsets", "addr", "ranges", "rnglists", "line", "aranges",
           "little_endian", "supplementary_str", "address_size")  # fmt: skip
# The fields that may be views and that DwarfSections.with_bytes copies (.debug_str and .debug_line
# have readers of their own that serve views).
_VIEWED_FOR_BYTES = ("info", "ranges", "rnglists")
# The first piece of a view searched for a string's end: most names are shorter.
_STRING_PIECE = 256


def section_bytes(getter: SectionGetter, name: str) -> bytes:
    """A section as bytes (empty when absent)."""
    data = getter(name)
    if data is None:
        return _EMPTY
    return data if isinstance(data, bytes) else bytes(data)


def cstring_at(data: bytes | memoryview, offset: int) -> str | None:
    """The NUL-terminated UTF-8 string at ``offset`` of ``data``; None when ``offset`` is past its
    end or no NUL ends it. A view is searched piece by piece, so a name copies only its own bytes."""
    if offset >= len(data):
        return None
    if isinstance(data, bytes):
        end = data.find(b"\0", offset)
        return data[offset:end].decode("utf-8", "replace") if end >= 0 else None
    pieces = []
    start, size = offset, _STRING_PIECE
    while start < len(data):
        piece = bytes(data[start : start + size])
        end = piece.find(b"\0")
        if end >= 0:
            pieces.append(piece[:end])
            return b"".join(pieces).decode("utf-8", "replace")
        pieces.append(piece)
        start, size = start + size, size * 2
    return None


class DwarfSections:
    """The sections, as read; a value (:meth:`replace` makes a changed copy, nothing changes one).

    A plain class with __slots__, not a frozen dataclass: ``import dataclasses`` (inspect, ast, dis,
    tokenize) is about a tenth of a one-address cold lookup's instructions.
    """

    __slots__ = (*_FIELDS, "_line_bytes")

    def __init__(
        self,
        path: Path,
        info: bytes | memoryview,
        abbrev: bytes,
        str: bytes | memoryview,
        line_str: bytes,
        str_offsets: bytes,
        addr: bytes,
        ranges: bytes | memoryview,
        rnglists: bytes | memoryview,
        line: bytes | memoryview,
        aranges: bytes,
        little_endian: bool = True,
        supplementary_str: bytes = b"",
        address_size: int = 8,
    ) -> None:
        self.path = path
        # bytes, or a view of the mapping (see the module docstring): the unit headers and root DIEs
        # are read from either; any other DIE is read from bytes (with_bytes).
        self.info = info
        self.abbrev = abbrev
        # bytes, or a view of the mapping (see the module docstring): read through cstring_at.
        self.str = str
        self.line_str = line_str
        self.str_offsets = str_offsets
        self.addr = addr
        # bytes, or views of the mapping (see the module docstring).
        self.ranges = ranges
        self.rnglists = rnglists
        # bytes, or a view of the mapping: read through line_bytes.
        self.line = line
        self.aranges = aranges
        self.little_endian = little_endian
        # .debug_str of the dwz supplementary file, for DW_FORM_GNU_strp_alt.
        self.supplementary_str = supplementary_str
        # The container's address size in bytes: no address range reaches past its last address.
        self.address_size = address_size
        # .debug_line as bytes, once a line program is decoded from a view of it (line_bytes).
        self._line_bytes: list[bytes] = []

    def replace(self, **changes: object) -> DwarfSections:
        """A copy with ``changes`` (field name -> value) made, as ``dataclasses.replace`` would."""
        fields: dict[str, Any] = {name: getattr(self, name) for name in _FIELDS}
        fields.update(changes)
        return DwarfSections(**fields)

    @property
    def last_address(self) -> int:
        return (1 << (8 * self.address_size)) - 1

    def with_bytes(self) -> DwarfSections:
        """These sections with ``.debug_info`` and the range lists as bytes (see the module
        docstring): itself where they already are, else a copy with each view copied once."""
        viewed = {name: bytes(data) for name in _VIEWED_FOR_BYTES if not isinstance(data := getattr(self, name), bytes)}
        return self.replace(**viewed) if viewed else self

    def line_bytes(self) -> bytes:
        """``.debug_line`` as bytes: the Python line program decoder searches it. A view is copied
        once, on the first unit whose lines the Python reader decodes."""
        if isinstance(self.line, bytes):
            return self.line
        if not self._line_bytes:
            self._line_bytes.append(bytes(self.line))
        return self._line_bytes[0]

    @classmethod
    def from_getter(
        cls,
        getter: SectionGetter,
        path: Path,
        little_endian: bool = True,
        address_size: int = 8,
        views: SectionGetter | None = None,
    ) -> DwarfSections:
        """The sections ``getter`` gives, as bytes; ``.debug_info``, ``.debug_str``, ``.debug_line``
        and the range lists as ``views`` gives them (a view of the mapping, where the compiled source
        reads the file), when given."""
        names = ("abbrev", "line_str", "str_offsets", "addr", "aranges")
        values = {name: section_bytes(getter, "debug_" + name) for name in names}

        def viewed(name: str) -> bytes | memoryview:
            data = views("debug_" + name) if views is not None else None
            return data if data is not None else section_bytes(getter, "debug_" + name)

        return cls(
            path=path, little_endian=little_endian, address_size=address_size, info=viewed("info"), str=viewed("str"),
            line=viewed("line"), ranges=viewed("ranges"), rnglists=viewed("rnglists"), **values,
        )  # fmt: skip

    @classmethod
    def from_dwo_getter(cls, getter: SectionGetter, path: Path, skeleton: DwarfSections) -> DwarfSections:
        """A split unit's sections: DIE data from the .dwo, addresses and lines from the skeleton."""
        names = ("info", "abbrev", "str", "str_offsets", "rnglists", "line")
        dwo = {name: section_bytes(getter, f"debug_{name}.dwo") for name in names}
        return skeleton.replace(
            path=path,
            info=dwo["info"],
            abbrev=dwo["abbrev"],
            str=dwo["str"],
            str_offsets=dwo["str_offsets"],
            rnglists=dwo["rnglists"],
            # The skeleton's .debug_ranges (DWARF 4 GNU split) and .debug_addr stay.
        )
