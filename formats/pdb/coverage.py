"""What a PDB covers of its image's code, measured from its module streams.

For the debug-info auditor, in the figures ``formats/dwarf/coverage.py`` gives for DWARF
(``symbolize.formats.facts.Coverage``), read from each module's stream as LLVM's "The Module
Information Stream" and "CodeView Symbol Records" pages lay it out (``codeview.py``):

- functions: every ``S_GPROC32``/``S_LPROC32`` (and the ``_ID`` and DPC forms), from its
  ``Segment:CodeOffset`` over ``CodeSize`` bytes; ``function_range_bytes`` sums them;
- inlined calls: every ``S_INLINESITE``, over the code ranges its binary annotations give,
  offsets from the start of the procedure it is in; ``inlined_range_bytes`` sums only the
  sites that are not inside another site, as llvm-dwarfdump sums only the outermost
  ``DW_TAG_inlined_subroutine`` of each chain;
- lines: the C13 ``DEBUG_S_LINES`` rows that name a line, each reaching the next row of its
  file block, the last one its fragment's end; a block's code starts at its fragment's start,
  as the reader answers it (``module_stream.py``). Line 0 and the "hidden" lines 0xFEEFEE and 0xF00F00
  name none;
- symbols: the publics (``S_PUB32``), each reaching the next public or its section's end, as
  the reader names addresses in no procedure.

A module whose stream does not decode is named in ``broken_units`` and covers nothing.
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING

from symbolize.formats.facts import AddressRange, Coverage, SectionFact, SymbolTable, merge_ranges
from symbolize.formats.pdb import codeview
from symbolize.formats.pdb.codeview import CodeViewError
from symbolize.formats.pdb.streams import NO_STREAM

if TYPE_CHECKING:
    from symbolize.formats.pdb.pdb import PdbFile
    from symbolize.formats.pdb.streams import ModuleInfo

_IMAGE_SCN_MEM_EXECUTE = 0x20000000
# CodeView's "no source line" markers (cvinfo.h: the line numbers a debugger steps over).
_HIDDEN_LINES = frozenset({0, 0xFEEFEE, 0xF00F00})


class _ModuleCoverage:
    """The ranges and counts gathered over one module stream."""

    def __init__(self) -> None:
        self.lines: list[AddressRange] = []
        self.functions: list[AddressRange] = []
        self.inlined: list[AddressRange] = []
        self.function_entries = 0
        self.inlined_entries = 0
        self.function_bytes = 0
        self.inlined_bytes = 0


def pdb_section_facts(pdb: PdbFile) -> tuple[SectionFact, ...]:
    """The image's sections as the PDB records them: none of their bytes are in the PDB."""
    return tuple(
        SectionFact(
            section.name,
            pdb.image_base + section.rva,
            section.virtual_size,
            bool(section.characteristics & _IMAGE_SCN_MEM_EXECUTE),
            without_bytes=True,
        )
        for section in pdb.sections
    )


def pdb_coverage(pdb: PdbFile) -> Coverage:
    """Functions, inlined calls, lines and publics of every module, at ``pdb``'s vaddrs."""
    found = _ModuleCoverage()
    broken: list[str] = []
    with_procedures = False
    for module in pdb.dbi.modules:
        if module.stream == NO_STREAM:
            continue
        one = _ModuleCoverage()
        try:
            _measure_module(pdb, module, pdb.stream(module.stream), one)
        except (CodeViewError, struct.error) as err:
            broken.append(f"module {module.number} ({module.name}): {err}")
            continue
        with_procedures = with_procedures or one.function_entries > 0
        found.lines += one.lines
        found.functions += one.functions
        found.inlined += one.inlined
        found.function_entries += one.function_entries
        found.inlined_entries += one.inlined_entries
        found.function_bytes += one.function_bytes
        found.inlined_bytes += one.inlined_bytes
    publics = pdb.symbols()
    # Procedures name local functions too; publics alone (/PDBSTRIPPED) name external ones only.
    table = SymbolTable.FULL if with_procedures else SymbolTable.EXTERNAL if publics else SymbolTable.NONE
    return Coverage(
        symbols=merge_ranges((symbol.vaddr, symbol.vaddr + symbol.size) for symbol in publics),
        lines=merge_ranges(found.lines),
        functions=merge_ranges(found.functions),
        inlined=merge_ranges(found.inlined),
        function_entries=found.function_entries,
        inlined_entries=found.inlined_entries,
        function_range_bytes=found.function_bytes,
        inlined_range_bytes=found.inlined_bytes,
        broken_units=tuple(broken),
        symbol_table=table,
    )


def _measure_module(pdb: PdbFile, module: ModuleInfo, stream: bytes, found: _ModuleCoverage) -> None:
    symbols_end = module.symbols_size
    c13_start = symbols_end + module.c11_size
    c13_end = c13_start + module.c13_size
    if c13_end > len(stream):
        raise CodeViewError(f"symbols, C11 and C13 sizes exceed the {len(stream)}-byte stream", 0)
    _measure_symbols(pdb, stream, codeview.C13_SIGNATURE if symbols_end >= 4 else 0, symbols_end, found)
    for kind, data, offset in codeview.iter_subsections(stream, c13_start, c13_end):
        if kind == codeview.DEBUG_S_LINES:
            _measure_lines(pdb, codeview.parse_lines(data, offset), found)


def _measure_symbols(pdb: PdbFile, stream: bytes, start: int, end: int, found: _ModuleCoverage) -> None:
    """Procedures and inline sites, in record order.

    Scopes are tracked by their End fields: a scope holds the records before its closing
    record, so one whose End lies behind the current record is closed. Each record is read
    once, whatever the End fields say.
    """
    procedure_base: int | None = None
    procedure_end = -1
    site_ends: list[int] = []  # End fields of the inline sites open around the current record
    for record in codeview.iter_symbol_records(stream, start, end):
        if record.offset > procedure_end:
            procedure_base = None
            site_ends.clear()
        while site_ends and site_ends[-1] < record.offset:
            site_ends.pop()
        if record.kind in codeview.PROC_KINDS:
            procedure = codeview.parse_procedure(record)
            low = pdb.vaddr_of(procedure.section, procedure.offset)
            procedure_base, procedure_end = low, procedure.end_offset
            site_ends.clear()
            if low is None:
                continue
            found.function_entries += 1
            found.function_bytes += procedure.size
            found.functions.append((low, low + procedure.size))
        elif record.kind in codeview.INLINE_SITE_KINDS:
            site = codeview.parse_inline_site(record)
            outermost = not site_ends
            site_ends.append(site.end_offset)
            if procedure_base is None:
                continue
            found.inlined_entries += 1
            for row in codeview.annotation_rows(site.annotations, 0, 0):
                found.inlined.append((procedure_base + row.low, procedure_base + row.high))
                if outermost:
                    found.inlined_bytes += row.high - row.low


def _measure_lines(pdb: PdbFile, fragment: codeview.LineFragment, found: _ModuleCoverage) -> None:
    base = pdb.vaddr_of(fragment.section, fragment.offset)
    if base is None:
        return
    for block in fragment.blocks:
        offsets, lines, _columns = block.rows
        for index, line in enumerate(lines):
            if line in _HIDDEN_LINES:
                continue
            low = 0 if index == 0 else offsets[index]  # the block's code starts at its fragment's start
            high = offsets[index + 1] if index + 1 < len(offsets) else fragment.code_size
            found.lines.append((base + low, base + high))
