"""Untyped symbols name code where they label it, as llvm-symbolizer 14 names them.

Hand-written assembly (``fixtures/src/asmdemo.S``, like BLAKE3's routines in cargo) leaves global
labels with no ``.type`` or ``.size``: ``STT_NOTYPE`` symbols of size 0 in ``.text``, which
llvm-symbolizer names up to the next symbol (``tests/test_differential.py`` compares every
address of ``asmdemo`` with it). The linker's untyped symbols outside code (``__data_start``,
``_edata``, ``__bss_start``) must not become function names. The symbol facts come from
pyelftools, not from our reader.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile
from elftools.elf.sections import SymbolTableSection

from symbolize.formats.elf import ElfFile
from tests.fixtures_data import FIXTURES

SHF_EXECINSTR = 0x4
ELF_VARIANTS = sorted(
    name
    for name, variant in json.loads((FIXTURES / "manifest.json").read_text())["variants"].items()
    if not any(".dw" in file for file in variant["files"])
)


def _has_symtab(path: Path) -> bool:
    with path.open("rb") as stream:
        return ELFFile(stream).get_section_by_name(".symtab") is not None


def _typed_symbols(binary: Path) -> dict[str, set[tuple[str, bool]]]:
    """Symbol name -> (type, whether its section is executable), for every defined symbol."""
    found: dict[str, set[tuple[str, bool]]] = {}
    with binary.open("rb") as stream:
        elf = ELFFile(stream)
        sections = list(elf.iter_sections())
        for table in sections:
            if not isinstance(table, SymbolTableSection):
                continue
            for symbol in table.iter_symbols():
                index = symbol["st_shndx"]
                if not isinstance(index, int) or index == 0 or index >= len(sections):
                    continue
                in_code = bool(sections[index]["sh_flags"] & SHF_EXECINSTR)
                name = symbol.name.partition("@")[0]
                found.setdefault(name, set()).add((symbol["st_info"]["type"], in_code))
    return found


def test_untyped_labels_in_code_are_named_up_to_the_next_symbol() -> None:
    binary = FIXTURES / "bin" / "asmdemo"
    typed = _typed_symbols(binary)
    labels = sorted(name for name, kinds in typed.items() if ("STT_NOTYPE", True) in kinds)
    assert labels == ["asm_scale", "asm_sum"]
    with ElfFile(binary) as elf:
        by_name = {symbol.name: symbol for symbol in elf.symbols()}
        starts = sorted(symbol.vaddr for symbol in elf.symbols())
        for name in labels:
            label = by_name[name]
            assert label.size == 0
            following = next(start for start in starts if start > label.vaddr)
            for vaddr in (label.vaddr, following - 1):
                found = elf.symbol_at(vaddr)
                assert found is not None and found.name == name
        table = by_name["asm_table"]
        assert ("STT_OBJECT", True) in typed["asm_table"] and table.size == 16


@pytest.mark.parametrize("variant", ELF_VARIANTS)
def test_untyped_and_data_symbols_outside_code_name_nothing(variant: str) -> None:
    files = json.loads((FIXTURES / "manifest.json").read_text())["variants"][variant]["files"]
    # The first file with a full symbol table: a binary stripped to its .dynsym (libalias.so) has
    # none of the linker's symbols, its debug file all of them.
    binary = next(path for path in (FIXTURES / file for file in files) if _has_symtab(path))
    typed = _typed_symbols(binary)
    outside_code = {
        name
        for name, kinds in typed.items()
        if all(kind in ("STT_NOTYPE", "STT_OBJECT") and not in_code for kind, in_code in kinds)
    }
    # Every fixture has some (``_DYNAMIC``, ``__data_start``, ``__bss_start``, ...): the test has teeth.
    assert outside_code
    with ElfFile(binary) as elf:
        assert not {symbol.name for symbol in elf.symbols()} & outside_code
