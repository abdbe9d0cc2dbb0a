"""The Mach-O symbol table: nlist entries, their stabs, function symbols and function starts.

From ``<mach-o/nlist.h>`` (``nlist``/``nlist_64``: ``n_strx``, ``n_type``, ``n_sect``,
``n_desc``, ``n_value``), ``<mach-o/stab.h>`` (the ``N_STAB`` debugging entries a debug map is
made of: ``N_SO``, ``N_OSO``, ``N_FUN``, ...) and ``LC_FUNCTION_STARTS`` (``<mach-o/loader.h>``:
ULEB128 deltas from the ``__TEXT`` vmaddr). Hand-written: the table and its string table are
read in one pass with every offset checked (macholib's ``SymbolTable`` builds one structure per
entry and reads names past the table's end).
"""

from __future__ import annotations

import struct
from bisect import bisect_right
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from symbolize.formats.errors import MalformedInputError
from symbolize.formats.macho.load_commands import Section
from symbolize.formats.types import Symbol

N_STAB = 0xE0
N_TYPE = 0x0E
N_SECT = 0x0E
N_EXT = 0x01
N_GSYM = 0x20
N_FUN = 0x24
N_STSYM = 0x26
N_BNSYM = 0x2E
N_SO = 0x64
N_OSO = 0x66
N_ENSYM = 0x4E


class Nlist(NamedTuple):
    """One entry of the symbol table, its name read from the string table."""

    n_type: int
    n_sect: int
    n_desc: int
    value: int
    name: str
    # Where the entry sits in the file (a malformed debug map names it).
    file_offset: int


# A debugging entry (``<mach-o/stab.h>``, ``n_type & N_STAB``): N_SO, N_OSO, N_FUN, ...
Stab = Nlist


def nlist_layout(little_endian: bool, address_size: int) -> struct.Struct:
    """The layout of one entry: ``nlist_64`` in a 64-bit file (``address_size`` 8), else ``nlist``."""
    return struct.Struct(("<" if little_endian else ">") + ("IBBHQ" if address_size == 8 else "IBBHI"))


def read_nlists(
    table: memoryview,
    strings: bytes,
    little_endian: bool,
    address_size: int,
    table_file_offset: int,
) -> list[Nlist]:
    """Every entry of the symbol ``table`` (bytes of ``nsyms`` nlists), in table order;
    ``table_file_offset`` is where the table sits in the file."""
    layout = nlist_layout(little_endian, address_size)
    return [
        Nlist(
            n_type,
            n_sect,
            n_desc,
            n_value,
            _c_string(strings, n_strx),
            table_file_offset + position * layout.size,
        )
        for position, (n_strx, n_type, n_sect, n_desc, n_value) in enumerate(layout.iter_unpack(table))
    ]


def stabs(nlists: Sequence[Nlist]) -> list[Stab]:
    """The debugging entries, in table order (a debug map, when the linker kept one)."""
    return [entry for entry in nlists if entry.n_type & N_STAB]


def defined_symbols(nlists: Sequence[Nlist]) -> list[Symbol]:
    """Every defined, non-debugging symbol (functions and data, any section), size 0, by address.

    The names as stored, leading ``_`` dropped: what a debug map or llvm-symbolizer's own
    symbol-size rule (the next symbol of any kind) works from.
    """
    found = [
        Symbol(_without_underscore(entry.name), entry.value, 0)
        for entry in nlists
        if not entry.n_type & N_STAB and entry.n_type & N_TYPE == N_SECT and entry.name
    ]
    return sorted(found, key=lambda symbol: symbol.vaddr)


def function_starts(data: memoryview, text_vmaddr: int, path: Path, file_offset: int) -> list[int]:
    """Vaddrs listed by ``LC_FUNCTION_STARTS`` data (ULEB128 deltas from ``text_vmaddr``), sorted;
    ``file_offset`` is where the data sits in the file (a malformed delta names it)."""
    starts = []
    address = text_vmaddr
    value = shift = 0
    for byte in data:
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte & 0x80:
            if shift > 63:
                raise MalformedInputError("function start delta is too long", path, file_offset)
            continue
        if value == 0:
            break  # the table is padded with zeros to a word boundary
        address += value
        starts.append(address)
        value = shift = 0
    return starts


def function_symbols(nlists: Sequence[Nlist], sections: Sequence[Section], starts: Sequence[int]) -> list[Symbol]:
    """Function symbols (defined in a section holding instructions), by address, leading ``_`` dropped.

    A symbol's size reaches the next of ``starts`` (``LC_FUNCTION_STARTS``) or its section's end;
    without starts it is 0, and the symbol reaches the next symbol.
    """
    found: dict[tuple[str, int], Symbol] = {}
    for entry in nlists:
        if entry.n_type & N_STAB or entry.n_type & N_TYPE != N_SECT or not entry.name:
            continue
        if not 0 < entry.n_sect <= len(sections):
            continue
        home = sections[entry.n_sect - 1]
        if not home.has_instructions or not home.vaddr <= entry.value < home.vaddr + max(home.size, 1):
            continue
        size = 0
        if starts:
            following = bisect_right(starts, entry.value)
            end = starts[following] if following < len(starts) else home.vaddr + home.size
            size = min(end, home.vaddr + home.size) - entry.value
        name = _without_underscore(entry.name)
        found.setdefault((name, entry.value), Symbol(name, entry.value, max(size, 0)))
    return sorted(found.values(), key=lambda symbol: (symbol.vaddr, symbol.name))


def _without_underscore(name: str) -> str:
    """A C name as written in the source: the linker's leading ``_`` dropped."""
    return name.removeprefix("_")


def _c_string(table: bytes, offset: int) -> str:
    if offset >= len(table):
        return ""
    end = table.find(b"\0", offset)
    return table[offset : end if end >= 0 else len(table)].decode("utf-8", "surrogateescape")
