"""Cargo's split debug info (``split-debuginfo = "packed"`` and ``"unpacked"``), read as llvm-symbolizer reads it.

The fixtures (``fixtures/build_cargo_split.sh``) come from ``fixtures/cargo/splitdemo``: four DWARF 4
skeleton units, three with ``DW_AT_GNU_ranges_base``. The differential tests compare every stored
address of both builds with llvm-symbolizer; these tests cover how the files are found.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from typer.testing import CliRunner

from symbolize.api import lookup
from symbolize.cli.app import app
from symbolize.module import Unknown
from tests.fixtures_data import FIXTURES, load_expected

runner = CliRunner()
UNPACKED = FIXTURES / "bin" / "cargo-unpacked"

Chain = list[tuple[str | None, str | None, int, int]]


def _expected_chains(variant: str) -> tuple[list[str], list[Chain]]:
    expected = load_expected(variant)
    addresses = [f"{entry.vaddr:#x}" for entry in expected.addresses]
    chains = [[(f.function, f.file, f.line, f.column) for f in entry.frames] for entry in expected.addresses]
    return addresses, [[] if chain == [(None, None, 0, 0)] else chain for chain in chains]


def _cli_chains(binary: Path, addresses: list[str], *options: str) -> list[Chain]:
    result = runner.invoke(
        app, ["lookup", "--obj", str(binary), "--json", "--demangle", "none", *options, *addresses]
    )
    assert result.exit_code == 0, result.output
    answers = [json.loads(line) for line in result.stdout.splitlines()]
    return [[(f["function"], f["file"], f["line"], f["column"]) for f in answer["frames"]] for answer in answers]


def test_unpacked_dwo_files_are_found_in_a_search_path(tmp_path: Path) -> None:
    """The skeletons name their .dwo by an absolute path under Cargo's target directory, which
    exists nowhere; a --search-path directory holding the files is where they are found."""
    (tmp_path / "bin").mkdir()
    (tmp_path / "deps").mkdir()
    binary = tmp_path / "bin" / "rs-cargo-unpacked"
    shutil.copy(UNPACKED / "rs-cargo-unpacked", binary)
    for dwo in UNPACKED.glob("*.dwo"):
        shutil.copy(dwo, tmp_path / "deps" / dwo.name)
    addresses, expected = _expected_chains("rs-cargo-unpacked")
    found = _cli_chains(binary, addresses, "--no-cache", "--search-path", str(tmp_path / "deps"))
    assert found == expected
    assert sum(len(chain) > 4 for chain in found) > 20  # the deep inline chains came from the .dwo files


def test_a_unit_whose_code_the_linker_discarded_names_nothing_at_address_zero() -> None:
    """The codegen unit holding only ``splitdemo_unused`` (never called, dropped by --gc-sections)
    keeps ``DW_AT_low_pc`` 0 and its size: it claims ``[0, 0x12e)``, where this PIE has no code
    (its executable segment starts at 0x1830). llvm-symbolizer names that dead function there;
    nothing is there to name."""
    binary = FIXTURES / "bin" / "rs-cargo-packed"
    results = lookup(binary, [0x0, 0x10, 0x100, 0x12d], use_cache=False)
    assert all(isinstance(result, Unknown) for result in results)
    # The live code of the same build is named as before (every address: the differential tests).
    assert not isinstance(lookup(binary, [0x1dd5], use_cache=False)[0], Unknown)
