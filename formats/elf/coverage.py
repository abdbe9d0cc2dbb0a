"""What an ELF file tells the debug-info auditor: its sections, and what its names cover.

- Sections: every entry of the section header table (gABI chapter 4, "Sections"): code where
  ``SHF_EXECINSTR`` is set, compressed where ``SHF_COMPRESSED`` is set or the name is a GNU
  ``.zdebug_*`` one, without bytes in the file for ``SHT_NOBITS`` (``.bss``, and the code
  sections a separate debug file keeps as headers only).
- Symbols: the function symbols as the reader's symbol index names addresses (``symtab.py``:
  ``.symtab``, ``.dynsym`` and MiniDebugInfo). The table is full when ``.symtab`` keeps local
  functions (``STB_LOCAL``); ``strip -x`` leaves the global ones only.
- DWARF: the file's own, measured by ``formats/dwarf/coverage.py``. DWARF that cannot be read
  covers nothing and is named in ``broken_units``; the symbol table still names what it names.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from symbolize.formats.elf.headers import SHF_COMPRESSED, SHF_EXECINSTR, SHT_NOBITS
from symbolize.formats.elf.symtab import MINIDEBUGINFO_RANK, SYMTAB_RANK
from symbolize.formats.errors import MalformedInputError
from symbolize.formats.facts import Coverage, SectionFact, SymbolTable, merge_ranges

if TYPE_CHECKING:
    from symbolize.formats.elf.file import ElfFile


def elf_section_facts(elf: ElfFile) -> tuple[SectionFact, ...]:
    """Every section: name, address, size, whether it holds code, whether it is compressed."""
    return tuple(
        SectionFact(
            section.name,
            section.sh_addr,
            section.sh_size,
            bool(section.sh_flags & SHF_EXECINSTR),
            bool(section.sh_flags & SHF_COMPRESSED) or section.name.startswith(".zdebug"),
            section.sh_type == SHT_NOBITS,
        )
        for section in elf._headers.sections
    )


def elf_coverage(elf: ElfFile) -> Coverage:
    """What the file's symbol index and DWARF cover (see symbolize.formats.facts)."""
    from symbolize.formats.dwarf.coverage import dwarf_coverage

    index = elf._symbol_index()
    symbols = merge_ranges(zip(index.starts, index.ends, strict=True))
    try:
        dwarf = elf._dwarf_info()
        found = dwarf_coverage(dwarf) if dwarf is not None else Coverage()
    except MalformedInputError as err:
        found = Coverage(broken_units=(str(err),))
    return found._replace(symbols=symbols, symbol_table=_symbol_table(elf))


def _symbol_table(elf: ElfFile) -> SymbolTable:
    """Which table the function symbols come from: .symtab with local functions is full; one
    that lost them (``strip -x``) names external functions only, as .dynsym alone does."""
    entries = elf._all_function_symbols()
    tables = {entry.order[0] for entry in entries}
    if any(entry.is_local and entry.order[0] == SYMTAB_RANK for entry in entries):
        return SymbolTable.FULL
    if MINIDEBUGINFO_RANK in tables:
        return SymbolTable.MINIDEBUGINFO
    if SYMTAB_RANK in tables:
        return SymbolTable.EXTERNAL
    return SymbolTable.DYNAMIC if tables else SymbolTable.NONE
