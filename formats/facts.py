"""What a reader tells the debug-info auditor about a file, in format-neutral values.

Two questions only a reader can answer: which sections the file has (names,
addresses, whether they hold code, whether they are compressed), and which
object addresses each kind of name source covers (function symbols, line
tables, function entries of the debug info, inlined calls); and, for a Mach-O
binary without a dSYM, which object files its debug map names. Each format's
``coverage.py`` measures them; ``formats/coverage.py`` is the one entry. The auditor in
``symbolize/audit`` does the arithmetic over these ranges; readers measure,
they do not judge.

Ranges are half-open ``(low, high)`` pairs of object addresses (vaddr),
merged and sorted by :func:`merge_ranges`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from enum import Enum
from typing import NamedTuple

AddressRange = tuple[int, int]


class SectionFact(NamedTuple):
    """One section as the auditor sees it. ``vaddr`` is 0 for sections not loaded."""

    name: str
    vaddr: int
    size: int
    executable: bool
    compressed: bool = False
    # The section's bytes are absent from the file (ELF SHT_NOBITS: .bss, or code sections kept
    # only as headers in a separate debug file).
    without_bytes: bool = False


class SymbolTable(Enum):
    """Which table a file's function symbols come from, the most complete first (``rank``).

    What a profile can name without debug info: a full table names local (static)
    functions too; the others name only what the file exports, and an address in an
    internal function takes the nearest preceding exported name, or none.
    """

    FULL = "full"  # local functions named too (ELF .symtab, Mach-O nlists, PE COFF symbols, PDB procedures)
    MINIDEBUGINFO = "minidebuginfo"  # ELF .dynsym, plus local functions in .gnu_debugdata
    EXTERNAL = "external"  # external symbols only: ELF or Mach-O after strip -x, a PDB with publics only
    DYNAMIC = "dynamic"  # ELF .dynsym only
    EXPORTS = "exports"  # the PE export table only
    NONE = "none"

    @property
    def rank(self) -> int:
        return list(SymbolTable).index(self)


class Coverage(NamedTuple):
    """The object addresses each name source of one file covers, merged and sorted.

    ``symbols``: function symbols, as the symbol index reads them (a size-0
    symbol reaches the next one). ``lines``: line-table rows that name a
    source line (line 0 rows, code no line owns, left out).
    ``functions``: the debug info's out-of-line function entries
    (DW_TAG_subprogram with code), from which inline chains are decoded.
    ``inlined``: addresses inside at least one inlined call.

    The ``*_entries`` and ``*_range_bytes`` figures count as ``llvm-dwarfdump
    --statistics`` does (``#inlined functions``, ``#bytes within functions``,
    ``#bytes within inlined functions``): every entry's ranges summed, dead
    code's included; for inlined calls, only the outermost call of each chain
    adds bytes. (Its ``#functions`` counts distinct names, abstract ones too.)
    ``symbol_table`` says which table ``symbols`` come from.
    ``broken_units`` lists the units whose debug info could not be decoded (their ranges are missing from the above);
    ``split_units`` the skeleton units and whether their split units resolved.
    """

    symbols: tuple[AddressRange, ...] = ()
    lines: tuple[AddressRange, ...] = ()
    functions: tuple[AddressRange, ...] = ()
    inlined: tuple[AddressRange, ...] = ()
    function_entries: int = 0
    inlined_entries: int = 0
    function_range_bytes: int = 0
    inlined_range_bytes: int = 0
    broken_units: tuple[str, ...] = ()
    # Split-DWARF skeleton units: (DW_AT_dwo_name, whether its .dwo/.dwp unit was found).
    split_units: tuple[tuple[str, bool], ...] = ()
    symbol_table: SymbolTable = SymbolTable.NONE
    # The DWARF versions of the units measured (a debug map's objects' too).
    dwarf_versions: tuple[int, ...] = ()


class DebugMapFacts(NamedTuple):
    """The object files a binary's debug map names (Mach-O ``N_OSO`` stabs), in stab order, and
    why each one not used was refused (``refused``: name -> reason)."""

    object_names: tuple[str, ...]
    refused: Mapping[str, str]


def merge_ranges(ranges: Iterable[AddressRange]) -> tuple[AddressRange, ...]:
    """``ranges`` sorted, empty ones dropped, overlapping and touching ones joined."""
    merged: list[list[int]] = []
    for low, high in sorted(ranges):
        if high <= low:
            continue
        if merged and low <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], high)
        else:
            merged.append([low, high])
    return tuple((low, high) for low, high in merged)


def covered_bytes(ranges: Sequence[AddressRange], within: Sequence[AddressRange]) -> int:
    """How many bytes of ``within`` the ranges cover; both merged and sorted (see merge_ranges)."""
    return sum(high - low for low, high in _overlaps(ranges, within))


def intersect_ranges(ranges: Sequence[AddressRange], within: Sequence[AddressRange]) -> tuple[AddressRange, ...]:
    """The parts of ``ranges`` inside ``within``, merged; both merged and sorted (see merge_ranges)."""
    return merge_ranges(list(_overlaps(ranges, within)))


def _overlaps(ranges: Sequence[AddressRange], within: Sequence[AddressRange]) -> Iterator[AddressRange]:
    """Each overlap of a range of ``ranges`` with one of ``within``, in order: one sweep of both."""
    position = 0
    for low, high in within:
        while position < len(ranges) and ranges[position][1] <= low:
            position += 1
        scan = position
        while scan < len(ranges) and ranges[scan][0] < high:
            yield max(low, ranges[scan][0]), min(high, ranges[scan][1])
            scan += 1
