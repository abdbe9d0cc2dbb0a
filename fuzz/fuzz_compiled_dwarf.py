"""Differential fuzz target: the compiled DWARF answer source against the Python runs, unit by unit.

``python fuzz/fuzz_compiled_dwarf.py [libFuzzer options] [corpus dir]``. An input is a fixture's
DWARF with some sections replaced: byte 0 picks the template (its low bits, one of
:data:`TEMPLATES`) and whether line rows answer only inside functions (its high bit, as for a
debug-map object), then ``.debug_abbrev``, ``.debug_line``, ``.debug_str`` and the unit's range list
section (``.debug_rnglists`` or ``.debug_ranges``), each as a little-endian u16 length and that many
bytes (length 0xFFFF: the template's own), then the rest of the input is ``.debug_info``. The
template's symbol table stays, so runs are cut at its symbols as in the file. The seeds are the
templates themselves, built at start from the fixtures (nothing copied into ``fuzz/seeds``).

For every unit of the input (the first :data:`MAX_UNITS`), the compiled source
(``DwarfUnits.unit_runs``) either leaves the unit to the reference (None) or gives the runs the
Python reference (``DwarfSymbolAnswers.answers``) gives: the same addresses and frames, and no
answer where the reference finds the unit broken. A different answer, or anything the compiled
source raises, is a finding (AssertionError); an input the reader refuses as a whole (a
SymbolizeError) is fine.
"""

from __future__ import annotations

import struct
import sys
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fuzz.harness import KEEP_SECTION, REPO, Target, main, replaced_sections

if TYPE_CHECKING:  # imported by the target, once atheris instruments the package (fuzz/harness.py)
    from symbolize.formats.dwarf.answers import DwarfSymbolAnswers
    from symbolize.formats.symbols import SymbolIndex

# ELF (GCC and Clang, DWARF 4 and 5, C and C++), Cargo's split-debuginfo skeletons (their
# DW_AT_GNU_ranges_base and [0x1,0x1) tombstones), a dSYM's DWARF and a MinGW PE's.
TEMPLATES = (
    "bin/cdemo-gcc-dwarf4-pie", "bin/cdemo-clang-dwarf5-pie", "bin/cppdemo-gcc-dwarf5-pie",
    "bin/cppdemo-clang-dwarf4-pie", "bin/rs-cargo-packed",
    "bin/macos/cppdemo-x86_64.dSYM/Contents/Resources/DWARF/cppdemo-x86_64", "bin/windows/mingwapp.exe",
)  # fmt: skip
SECTIONS = ("debug_abbrev", "debug_line", "debug_str", "ranges")
KEEP = KEEP_SECTION
FUNCTIONS_ONLY = 0x80
MAX_UNITS = 4


class Template(NamedTuple):
    path: Path
    sections: dict[str, bytes]
    symbols: SymbolIndex
    address_size: int
    little_endian: bool


@cache
def template(index: int) -> Template:
    """The DWARF sections and symbols of template ``index``, as its reader gives them."""
    from symbolize.formats.dwarf.answers import DwarfSymbolAnswers
    from symbolize.formats.open import open_object
    from symbolize.formats.region_answers import AnsweredByRegions

    path = REPO / "fixtures" / TEMPLATES[index]
    reader = open_object(path)
    assert isinstance(reader, AnsweredByRegions), f"{path}: no reader of DWARF"
    source = reader._answers()
    assert isinstance(source, DwarfSymbolAnswers), f"{path} has no DWARF"
    dwarf = source.dwarf
    sections = {name.removeprefix("."): bytes(data) for name, data in dwarf.sections_by_name().items()}
    return Template(path, sections, source.symbols, dwarf.address_size, dwarf.little_endian)


def seeds() -> list[bytes]:
    found = []
    for index in range(len(TEMPLATES)):
        sections = template(index).sections
        keep_all = struct.pack("<HHHH", KEEP, KEEP, KEEP, KEEP)
        found.append(bytes([index]) + keep_all + sections["debug_info"])
        found.append(bytes([index | FUNCTIONS_ONLY]) + keep_all + sections["debug_info"])
        abbrev = sections["debug_abbrev"][:KEEP - 1]
        found.append(bytes([index]) + struct.pack("<H", len(abbrev)) + abbrev + struct.pack("<HHH", KEEP, KEEP, KEEP)
                     + sections["debug_info"])
    return found


def sections_of(data: bytes) -> tuple[Template, dict[str, bytes], bool] | None:
    """The input's template, its sections and whether rows answer only inside functions; None for
    an input too short to say."""
    if not data:
        return None
    chosen = template((data[0] & ~FUNCTIONS_ONLY) % len(TEMPLATES))
    sections = replaced_sections(dict(chosen.sections), data, SECTIONS)
    if sections is None:
        return None
    return chosen, sections, bool(data[0] & FUNCTIONS_ONLY)


def template_answers(chosen: Template, sections: dict[str, bytes], functions_only: bool) -> DwarfSymbolAnswers:
    """A fresh answer source over ``sections`` with ``chosen``'s symbols: each side of a comparison
    gets its own DwarfInfo, so the reference's decoding leaves nothing the compiled side reads."""
    from symbolize.formats.dwarf import DwarfInfo
    from symbolize.formats.dwarf.answers import DwarfSymbolAnswers

    info = DwarfInfo(sections.get, chosen.path, address_size=chosen.address_size, little_endian=chosen.little_endian)
    return DwarfSymbolAnswers(chosen.path, info, chosen.symbols, functions_only=functions_only)


def compare(chosen: Template, sections: dict[str, bytes], functions_only: bool) -> int:
    """Both sides on the first units of ``sections``; the number of units the compiled source answered."""
    from tests.kernel_twins import compiled_unit_runs, reference_runs

    reference_source = template_answers(chosen, sections, functions_only)
    compiled_source = template_answers(chosen, sections, functions_only)
    units = reference_source.dwarf._load_units()  # raises MalformedInputError: refused as a whole
    answered = 0
    for key in range(min(len(units), MAX_UNITS)):
        try:
            compiled = compiled_unit_runs(compiled_source, key)
        except Exception as error:  # any type: the compiled source defers, it does not raise
            raise AssertionError(f"the compiled source raised on the unit at {units[key].unit.offset:#x}: "
                                 f"{type(error).__name__}: {error}") from error
        if compiled is None:
            continue
        reference = reference_runs(reference_source, key)
        if compiled != reference:
            raise AssertionError(f"the unit at {units[key].unit.offset:#x} answers differently: "
                                 f"{str(compiled)[:400]} against the reference's {str(reference)[:400]}")
        answered += 1
    return answered


def make_target() -> Target:
    from symbolize.formats.native import kernels, status

    if kernels is None:
        raise SystemExit(f"fuzz_compiled_dwarf: nothing to compare ({status()})")

    def one_input(data: bytes) -> object:
        found = sections_of(data)
        return compare(*found) if found is not None else None

    return one_input


if __name__ == "__main__":
    main("compiled-dwarf", make_target, sys.argv, built_seeds=seeds)
