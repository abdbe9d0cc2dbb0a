"""The answers of a file that pairs DWARF with a symbol table: ELF, MinGW PE, a Mach-O slice or dSYM.

Apart from formats/symbols.py, which the DWARF run builder (formats/dwarf/answers.py) builds on:
this module ties the two together, and imports the DWARF package only for a file that has DWARF.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from symbolize.formats.errors import MalformedInputError
from symbolize.formats.symbols import SymbolAnswers, SymbolIndex

if TYPE_CHECKING:
    from symbolize.formats.dwarf.info import DwarfInfo


def paired_answers(
    path: Path,
    symbols: SymbolIndex,
    open_dwarf: Callable[[], DwarfInfo | None],
    broken: MalformedInputError | None = None,
    beneath: SymbolIndex | None = None,
    zero_is_discarded: bool = False,
) -> SymbolAnswers:
    """The answers of a file that pairs DWARF with a symbol table (ELF, MinGW PE, a Mach-O slice or
    dSYM), through one run builder (formats/dwarf/answers.py): as llvm-symbolizer does, the
    outermost frame takes its name from the symbol of ``symbols`` covering the address.
    ``beneath`` names addresses neither ``symbols`` nor the DWARF names (see formats/symbols.py's docstring).
    ``zero_is_discarded``: unit ranges starting at address 0 are discarded code (DwarfSymbolAnswers).

    DWARF that cannot be read at all hides nothing the symbols know: its error is the
    answer only where no symbol covers the address. ``broken`` is damage found before the DWARF
    (a symbol table that did not read), answered the same way.
    """
    try:
        dwarf = open_dwarf()
    except MalformedInputError as err:
        return SymbolAnswers(path, symbols, broken=err, beneath=beneath)
    if dwarf is None:
        return SymbolAnswers(path, symbols, broken=broken, beneath=beneath)
    # Imported here so a file without DWARF never loads the DWARF package.
    from symbolize.formats.dwarf.answers import DwarfSymbolAnswers

    answers = DwarfSymbolAnswers(path, dwarf, symbols, zero_is_discarded=zero_is_discarded)
    answers.broken = broken
    answers.beneath = beneath
    return answers
