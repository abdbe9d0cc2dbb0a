"""The auditor's facts come from each format's coverage module, through one entry
(formats/coverage.py): readers answer lookups and carry no auditor methods; a PDB known by its
identity alone is measured as its reader; a format without a coverage module is refused by name."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from symbolize.formats.coverage import auditable, coverage, debug_map_facts, section_facts
from symbolize.formats.errors import UnsupportedFormatError
from symbolize.formats.open import open_object
from symbolize.formats.pdb import PdbFile
from symbolize.formats.pdb.deferred import DeferredPdb, read_pdb_identity
from symbolize.formats.types import (
    AnswerRegion,
    AnswerRun,
    DebugHint,
    DebugInfoSummary,
    Frame,
    ReaderDefaults,
    Segment,
    Symbol,
)
from tests.fixtures_data import BIN

READERS = {
    "elf": BIN / "cdemo-clang-dwarf5-pie",
    "pe": BIN / "windows" / "mingwapp.exe",
    "pdb": BIN / "windows" / "winapp.pdb",
    "macho": BIN / "macos" / "cppdemo-universal",
}


@pytest.mark.parametrize("format_name", sorted(READERS))
def test_each_reader_is_measured_by_its_formats_module(format_name: str) -> None:
    reader = open_object(READERS[format_name])
    try:
        assert reader.format == format_name
        assert auditable(reader)
        facts = section_facts(reader)
        assert any(fact.executable for fact in facts)
        measured = coverage(reader)
        assert measured.symbols and measured.symbol_table.value != "none"
        # The reader plays the image and source roles only: the auditor's questions are asked apart.
        assert not hasattr(reader, "section_facts") and not hasattr(reader, "coverage")
    finally:
        reader.close()


def test_a_deferred_pdb_is_measured_as_its_reader() -> None:
    path = READERS["pdb"]
    identity = read_pdb_identity(path)
    assert identity is not None
    deferred = DeferredPdb(path, identity, image_base=0x140000000)
    whole = PdbFile(path, image_base=0x140000000)
    assert auditable(deferred)
    assert section_facts(deferred) == section_facts(whole)
    assert coverage(deferred) == coverage(whole)


def test_only_a_mach_o_file_has_debug_map_facts() -> None:
    elf = open_object(READERS["elf"])
    dsym_served = open_object(READERS["macho"])  # a binary opened alone: no debug map found for it
    try:
        assert debug_map_facts(elf) is None
        assert debug_map_facts(dsym_served) is None
    finally:
        elf.close()
        dsym_served.close()


class _InMemory(ReaderDefaults):
    """A reader of a format no coverage module measures."""

    format = "in-memory"
    arch = "x86_64"
    debug_id = None
    load_base = 0
    position_dependent = False

    def __init__(self, path: Path) -> None:
        self.path = path

    def segments(self) -> Sequence[Segment]:
        return ()

    def debug_hints(self) -> Sequence[DebugHint]:
        return ()

    def symbols(self) -> Sequence[Symbol]:
        return ()

    def debug_info(self) -> DebugInfoSummary:
        return DebugInfoSummary(False, False, False, False)

    def answer_regions(self) -> Sequence[AnswerRegion]:
        return ()

    def answers(self, key: int) -> Sequence[AnswerRun]:
        return ()

    def frames_at(self, vaddr: int) -> list[Frame]:
        return []

    def close(self) -> None:
        return None


def test_a_format_without_a_coverage_module_is_refused_by_name(tmp_path: Path) -> None:
    reader = _InMemory(tmp_path / "image.mem")
    assert not auditable(reader)
    assert debug_map_facts(reader) is None
    with pytest.raises(UnsupportedFormatError, match="no auditor yet for in-memory files"):
        section_facts(reader)
    with pytest.raises(UnsupportedFormatError, match="no auditor yet for in-memory files"):
        coverage(reader)
