"""What a Mach-O file tells the debug-info auditor: its sections, and what its names cover.

- Sections: every section of the slice, code where the section holds instructions
  (``S_ATTR_PURE_INSTRUCTIONS``/``S_ATTR_SOME_INSTRUCTIONS``: ``__text``, ``__stubs``; the
  ``__TEXT`` segment also holds headers and constants). A dSYM keeps the binary's section
  headers without their bytes (file offset 0), zero-fill sections have none either.
- Symbols: the function symbols as the reader's symbol index names addresses (a symbol with
  a size from ``LC_FUNCTION_STARTS`` covers that far, one without reaches the next symbol or
  its section's end). The table is full when it keeps local functions (an nlist without ``N_EXT``,
  ``<mach-o/nlist.h>``); ``strip -x`` leaves the external ones only.
- DWARF: this file's own (a dSYM's, an object file's), measured as ELF's is
  (``formats/dwarf/coverage.py``); else that of the objects the binary's debug map names
  (``formats/macho/debugmap.py``), each object range moved to the binary's addresses through
  the mapped function holding it, as dsymutil links it: line rows outside the object's
  function entries (alignment padding) are left out, as dsymutil leaves them out.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from symbolize.formats.errors import MalformedInputError
from symbolize.formats.facts import (
    AddressRange,
    Coverage,
    DebugMapFacts,
    SectionFact,
    SymbolTable,
    intersect_ranges,
    merge_ranges,
)
from symbolize.formats.macho.symtab import N_EXT, N_SECT, N_STAB, N_TYPE

if TYPE_CHECKING:
    from symbolize.formats.macho.debugmap import DebugMapSource
    from symbolize.formats.macho.file import MachOFile



def macho_section_facts(binary: MachOFile) -> tuple[SectionFact, ...]:
    """Every section of the slice: name (``__text``), vaddr, size, whether it holds code."""
    return tuple(
        SectionFact(
            name=section.name,
            vaddr=section.vaddr,
            size=section.size,
            executable=section.has_instructions,
            without_bytes=section.zero_fill or section.file_offset == 0,
        )
        for section in binary.sections()
    )


def macho_coverage(binary: MachOFile) -> Coverage:
    """The ranges the slice's function symbols and its DWARF (or its debug map's) cover."""
    from symbolize.formats.dwarf.coverage import dwarf_coverage

    try:
        debug_map = binary.debug_map()
        if debug_map is not None:
            found = _debug_map_coverage(debug_map)
        else:
            info = binary.dwarf_info()
            found = dwarf_coverage(info) if info is not None else Coverage()
    except MalformedInputError as err:
        found = Coverage(broken_units=(str(err),))
    return found._replace(symbols=_symbol_ranges(binary), symbol_table=_symbol_table(binary))


def _symbol_ranges(binary: MachOFile) -> tuple[AddressRange, ...]:
    """How far each function symbol names addresses, as the reader's symbol index answers them."""
    index = binary.symbol_index()
    return merge_ranges(zip(index.starts, index.ends, strict=True))


def _symbol_table(binary: MachOFile) -> SymbolTable:
    functions = {(symbol.name, symbol.vaddr) for symbol in binary.symbols()}
    if not functions:
        return SymbolTable.NONE
    for entry in binary._all_nlists():  # the n_type bits the reader's Symbol leaves out
        if entry.n_type & N_STAB or entry.n_type & N_TYPE != N_SECT or entry.n_type & N_EXT:
            continue
        name = entry.name[1:] if entry.name.startswith("_") else entry.name
        if (name, entry.value) in functions:
            return SymbolTable.FULL
    return SymbolTable.EXTERNAL


def _debug_map_coverage(debug_map: DebugMapSource) -> Coverage:
    """The debug map's objects measured, each range moved to the binary's addresses.

    The llvm-dwarfdump-style counts are the objects' own, summed: what
    ``llvm-dwarfdump --statistics`` says of each object file (and of the dSYM dsymutil links).
    """
    from symbolize.formats.dwarf.coverage import dwarf_coverage

    lines: list[AddressRange] = []
    functions: list[AddressRange] = []
    inlined: list[AddressRange] = []
    totals = Coverage()
    broken: list[str] = []
    measured: dict[Path, Coverage | None] = {}
    for low, high, object_low, obj in debug_map.mapped_regions():
        if obj.path not in measured:
            measured[obj.path] = None
            try:
                info = obj.dwarf_info()
            except MalformedInputError as err:
                broken.append(str(err))
                continue
            if info is None:
                continue
            one = dwarf_coverage(info)
            # dsymutil keeps only the line rows inside a function's DWARF ranges.
            one = one._replace(lines=intersect_ranges(one.lines, one.functions))
            measured[obj.path] = one
            broken.extend(one.broken_units)
            totals = totals._replace(
                function_entries=totals.function_entries + one.function_entries,
                inlined_entries=totals.inlined_entries + one.inlined_entries,
                function_range_bytes=totals.function_range_bytes + one.function_range_bytes,
                inlined_range_bytes=totals.inlined_range_bytes + one.inlined_range_bytes,
            )
        found = measured[obj.path]
        if found is None:
            continue
        window = (object_low, object_low + high - low)
        shift = low - object_low
        lines += _moved(found.lines, window, shift)
        functions += _moved(found.functions, window, shift)
        inlined += _moved(found.inlined, window, shift)
    versions = sorted({version for found in measured.values() if found is not None for version in found.dwarf_versions})
    return totals._replace(
        dwarf_versions=tuple(versions),
        lines=merge_ranges(lines),
        functions=merge_ranges(functions),
        inlined=merge_ranges(inlined),
        broken_units=tuple(broken),
    )


def _moved(ranges: tuple[AddressRange, ...], window: AddressRange, shift: int) -> list[AddressRange]:
    """The parts of ``ranges`` inside ``window``, moved by ``shift``."""
    low, high = window
    return [
        (max(start, low) + shift, min(end, high) + shift) for start, end in ranges if start < high and end > low
    ]


def macho_debug_map_facts(binary: MachOFile) -> DebugMapFacts | None:
    """The objects the binary's debug map names and why any was refused; None without a debug map
    (a file with DWARF of its own, or none)."""
    debug_map = binary.debug_map()
    if debug_map is None:
        return None
    return DebugMapFacts(tuple(debug_map.object_names()), dict(debug_map.refused))
