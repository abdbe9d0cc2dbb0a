"""The set of DWARF sections one unit reads from.

A normal unit reads everything from one file. A split unit (DWARF 5, 3.1.3)
reads its DIEs, abbreviations, strings and range lists from a ``.dwo`` (or its
slice of a ``.dwp``) but its addresses and line rows from the skeleton's file,
so the two are combined here once and the decoders see a single set.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

SectionGetter = Callable[[str], "bytes | memoryview | None"]

_EMPTY = b""


def section_bytes(getter: SectionGetter, name: str) -> bytes:
    """A section as bytes (empty when absent)."""
    data = getter(name)
    if data is None:
        return _EMPTY
    return data if isinstance(data, bytes) else bytes(data)


@dataclass(frozen=True)
class DwarfSections:
    path: Path
    info: bytes
    abbrev: bytes
    str: bytes
    line_str: bytes
    str_offsets: bytes
    addr: bytes
    ranges: bytes
    rnglists: bytes
    line: bytes
    aranges: bytes
    little_endian: bool = True
    # .debug_str of the dwz supplementary file, for DW_FORM_GNU_strp_alt.
    supplementary_str: bytes = b""
    # The container's address size in bytes: no address range reaches past its last address.
    address_size: int = 8

    @property
    def last_address(self) -> int:
        return (1 << (8 * self.address_size)) - 1

    @classmethod
    def from_getter(
        cls, getter: SectionGetter, path: Path, little_endian: bool = True, address_size: int = 8
    ) -> DwarfSections:
        names = ("info", "abbrev", "str", "line_str", "str_offsets", "addr", "ranges", "rnglists", "line", "aranges")
        values = {name: section_bytes(getter, "debug_" + name) for name in names}
        return cls(path=path, little_endian=little_endian, address_size=address_size, **values)

    @classmethod
    def from_dwo_getter(cls, getter: SectionGetter, path: Path, skeleton: DwarfSections) -> DwarfSections:
        """A split unit's sections: DIE data from the .dwo, addresses and lines from the skeleton."""
        names = ("info", "abbrev", "str", "str_offsets", "rnglists", "line")
        dwo = {name: section_bytes(getter, f"debug_{name}.dwo") for name in names}
        return replace(
            skeleton,
            path=path,
            info=dwo["info"],
            abbrev=dwo["abbrev"],
            str=dwo["str"],
            str_offsets=dwo["str_offsets"],
            rnglists=dwo["rnglists"],
            # The skeleton's .debug_ranges (DWARF 4 GNU split) and .debug_addr stay.
        )
