"""What a PE image tells the debug-info auditor: its sections, and what its own names cover.

A PE image names code through its COFF symbol table (MinGW keeps one, with static functions:
a full table) or else its export table (Microsoft PE/COFF specification, "The .edata
Section"): exported functions only, each reaching the next export, so an address inside an
internal function takes the nearest export before it. MinGW images also carry DWARF, measured
as ELF's is (``formats/dwarf/coverage.py``). An MSVC or lld-link image keeps its names in the
PDB its CodeView record names, measured by ``formats/pdb/coverage.py``.

A section's code bytes are its ``VirtualSize`` where the file stores them (``SizeOfRawData``
is padded to the file alignment; a section with no raw data holds no bytes in the file).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from symbolize.formats.errors import MalformedInputError
from symbolize.formats.facts import Coverage, SectionFact, SymbolTable, merge_ranges

if TYPE_CHECKING:
    from symbolize.formats.pe.file import PeFile


def pe_section_facts(image: PeFile) -> tuple[SectionFact, ...]:
    """Every section of ``image``: name (long names resolved), vaddr, code size, whether executable."""
    return tuple(
        SectionFact(
            name=segment.name,
            vaddr=segment.vaddr,
            size=min(segment.memsz, segment.filesz) if segment.filesz else segment.memsz,
            executable=segment.executable,
            without_bytes=segment.filesz == 0,
        )
        for segment in image.segments()
    )


def pe_coverage(image: PeFile) -> Coverage:
    """The ranges ``image``'s symbols (as lookups answer them) and its DWARF (MinGW) cover."""
    from symbolize.formats.dwarf.coverage import dwarf_coverage

    symbols = merge_ranges((symbol.vaddr, symbol.vaddr + symbol.size) for symbol in image.symbols())
    table = SymbolTable.FULL if image.coff_symbols() else SymbolTable.EXPORTS if image.exports() else SymbolTable.NONE
    try:
        info = image._dwarf_info()
        found = dwarf_coverage(info) if info is not None else Coverage()
    except MalformedInputError as err:
        found = Coverage(broken_units=(str(err),))
    return found._replace(symbols=symbols, symbol_table=table)
