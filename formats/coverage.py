"""The debug-info auditor's one entry to the readers: a file's facts, by the coverage module of its format.

A reader answers lookups; what the auditor (``symbolize/audit``) asks of a file is measured
apart, by its format's ``coverage.py``, in the values of ``facts.py``: the sections the file has,
which addresses each of its name sources covers, and the object files a Mach-O binary's debug
map names. Each coverage module implements its format's part (ELF's section header table, PE's
section table and export table, Mach-O's sections, nlists and stabs, a PDB's module streams),
and DWARF is measured once for all containers (``dwarf/coverage.py``).

The reader is chosen by type here, inside ``formats/``, and each format's modules are imported
only for a file of that format: an ELF audit never loads pefile or macholib.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import NamedTuple

from symbolize.formats.errors import UnsupportedFormatError
from symbolize.formats.facts import Coverage, DebugMapFacts, SectionFact
from symbolize.formats.types import ObjectFile


class _Measures(NamedTuple):
    """How one file is measured: its sections, what its name sources cover."""

    section_facts: Callable[[], tuple[SectionFact, ...]]
    coverage: Callable[[], Coverage]


def auditable(reader: ObjectFile) -> bool:
    """Whether the auditor can measure ``reader``'s file (its format has a coverage module)."""
    return _measures(reader) is not None


def section_facts(reader: ObjectFile) -> tuple[SectionFact, ...]:
    """Every section of ``reader``'s file: name, vaddr, size, whether it holds code, compressed or not.

    Raises UnsupportedFormatError for a reader that is not :func:`auditable`.
    """
    return _measured(reader).section_facts()


def coverage(reader: ObjectFile) -> Coverage:
    """What each name source of ``reader``'s file covers (see ``facts.Coverage``).

    Raises UnsupportedFormatError for a reader that is not :func:`auditable`.
    """
    return _measured(reader).coverage()


def debug_map_facts(reader: ObjectFile) -> DebugMapFacts | None:
    """The object files ``reader``'s debug map names, and why any was refused; None for a file
    without a debug map (every format but Mach-O, and a Mach-O file with DWARF of its own)."""
    if reader.format != "macho":
        return None
    from symbolize.formats.macho.coverage import macho_debug_map_facts
    from symbolize.formats.macho.file import MachOFile

    return macho_debug_map_facts(reader) if isinstance(reader, MachOFile) else None


def producers(reader: ObjectFile) -> tuple[str, ...]:
    """The toolchains that say they built ``reader``'s file: an ELF file's ``.comment`` entries
    (``GCC: (Debian 12.2.0-14) 12.2.0``, ``rustc version 1.95.0 (...)``), which ``strip`` keeps;
    () for other formats or a file without them."""
    if reader.format != "elf":
        return ()
    from symbolize.formats.elf.file import ElfFile

    comment = reader.section_data("comment") if isinstance(reader, ElfFile) else None
    if comment is None:
        return ()
    entries = bytes(comment).split(b"\0")
    return tuple(entry.decode("utf-8", "replace") for entry in entries if entry)


def _measured(reader: ObjectFile) -> _Measures:
    found = _measures(reader)
    if found is None:
        raise UnsupportedFormatError(f"no auditor yet for {reader.format} files", reader.path)
    return found


def _measures(reader: ObjectFile) -> _Measures | None:
    """The coverage module's functions for ``reader``, None for a format no auditor reads."""
    if reader.format == "elf":
        from symbolize.formats.elf.coverage import elf_coverage, elf_section_facts
        from symbolize.formats.elf.file import ElfFile

        if isinstance(reader, ElfFile):
            return _Measures(partial(elf_section_facts, reader), partial(elf_coverage, reader))
    elif reader.format == "pe":
        from symbolize.formats.pe.coverage import pe_coverage, pe_section_facts
        from symbolize.formats.pe.file import PeFile

        if isinstance(reader, PeFile):
            return _Measures(partial(pe_section_facts, reader), partial(pe_coverage, reader))
    elif reader.format == "macho":
        from symbolize.formats.macho.coverage import macho_coverage, macho_section_facts
        from symbolize.formats.macho.file import MachOFile

        if isinstance(reader, MachOFile):
            return _Measures(partial(macho_section_facts, reader), partial(macho_coverage, reader))
    elif reader.format == "pdb":
        from symbolize.formats.pdb.coverage import pdb_coverage, pdb_section_facts
        from symbolize.formats.pdb.deferred import DeferredPdb
        from symbolize.formats.pdb.pdb import PdbFile

        # A PDB known by its identity alone opens its reader for the measuring.
        pdb = reader.opened() if isinstance(reader, DeferredPdb) else reader
        if isinstance(pdb, PdbFile):
            return _Measures(partial(pdb_section_facts, pdb), partial(pdb_coverage, pdb))
    return None
