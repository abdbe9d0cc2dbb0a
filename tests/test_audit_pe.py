"""The auditor on the PE fixtures (fixtures/bin/windows, fixtures/README.md "Windows"): the report
each one's build recipe implies, from what the PE and PDB readers measure (their coverage() is
checked against llvm-pdbutil in test_audit.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from symbolize.audit import ProfileView, Requirement, audit_binaries, audit_binary
from symbolize.audit.report import BinaryAudit, SymbolTableKind, UnreadableBinary
from symbolize.formats.coverage import section_facts
from tests.fixtures_data import BIN, FIXTURES

WINDOWS = BIN / "windows"


def _audit(path: Path, **options: object) -> BinaryAudit:
    result = audit_binary(path, **options)  # type: ignore[arg-type]
    assert not isinstance(result, UnreadableBinary), result
    return result


def _file(audit: BinaryAudit, how: str) -> tuple[bool, bool | None]:
    found = next(found for found in audit.debug_info.files if found.how == how)
    return found.found, found.matches


@pytest.mark.parametrize(
    ("name", "arch"),
    [("winapp.exe", "x86_64"), ("winlib.dll", "x86_64"), ("win32demo.exe", "i386"), ("winarm64.exe", "aarch64")],
)
def test_pdb_beside_the_image(name: str, arch: str) -> None:
    # clang -g -gcodeview -O2, lld-link /DEBUG: the PDB beside the image names, lines, inlines.
    audit = _audit(WINDOWS / name)
    assert audit.identity.format == "pe" and audit.identity.arch == arch
    assert audit.identity.debug_id_kind == "pdb"
    assert _file(audit, "pdb") == (True, True)
    assert audit.verdict.shows.rank >= ProfileView.NAMES_LINES.rank
    assert audit.frame_pointers.sampled > 0  # x64 and i386 prologues both decoded


def test_pe_whose_pdb_is_missing(tmp_path: Path) -> None:
    shipped = tmp_path / "winapp.exe"
    shutil.copy(WINDOWS / "winapp.exe", shipped)
    audit = _audit(shipped)
    assert _file(audit, "pdb") == (False, None)
    assert audit.verdict.shows is ProfileView.BARE_HEX  # an .exe exports nothing; its names are in the PDB
    assert any("pdb" in reason for reason in audit.verdict.reasons)
    assert any(".pdb" in fix for fix in audit.verdict.fixes)
    report = audit_binaries([shipped], require=Requirement.NAMES)
    assert report.exit_code == 1
    # Given explicitly, the PDB brings everything back; the DLL's PDB does not belong.
    assert _audit(shipped, debug_files=[WINDOWS / "winapp.pdb"]).verdict.shows is ProfileView.WITH_INLINES
    wrong = _audit(shipped, debug_files=[WINDOWS / "winlib.pdb"])
    assert _file(wrong, "given") == (True, False) and wrong.verdict.shows is ProfileView.BARE_HEX


def test_dll_without_its_pdb_keeps_its_exports(tmp_path: Path) -> None:
    shipped = tmp_path / "winlib.dll"
    shutil.copy(WINDOWS / "winlib.dll", shipped)
    audit = _audit(shipped)
    assert audit.symbols.function_symbols == 3  # "three exports"
    assert audit.coverage.line_bytes == 0
    assert audit.verdict.shows.rank < ProfileView.NAMES_LINES.rank


def test_mingw_dwarf_needs_no_pdb() -> None:
    # x86_64-w64-mingw32-g++ -O2 -g: DWARF in the image, COFF symbols, an RSDS record naming no PDB.
    audit = _audit(WINDOWS / "mingwapp.exe")
    assert not any(found.how == "pdb" for found in audit.debug_info.files)
    assert any(found.how == "embedded" for found in audit.debug_info.files)
    assert audit.debug_info.dwarf_versions == (5,)  # llvm-dwarfdump --debug-info: 4 units, all version 5
    assert audit.verdict.shows is ProfileView.WITH_INLINES
    assert ".pdata" in audit.frame_pointers.unwind_tables
    assert not any("frame pointer" in reason for reason in audit.verdict.reasons)  # .pdata unwinds x64


def test_exports_only_dll_names_exported_functions_only(tmp_path: Path) -> None:
    # fixtures/build_audit.sh: the DLL linked without /DEBUG (no PDB, no CodeView record), and the
    # /DEBUG build shipped without its PDB: the export table alone names code, not a full table.
    shipped = tmp_path / "winlib.dll"
    shutil.copy(WINDOWS / "winlib.dll", shipped)
    for path in (FIXTURES / "audit" / "pe-exports-only" / "winlib.dll", shipped):
        audit = _audit(path)
        assert (audit.symbols.kind, audit.symbols.table) == (SymbolTableKind.DYNAMIC_ONLY, "exports")
        assert audit.symbols.function_symbols == 3  # winlib_checksum, winlib_scramble, winlib_histogram
        assert any("exported names only" in r and "nearest export" in r for r in audit.verdict.reasons)
        assert any("/DEBUG" in fix or "ship the .pdb" in fix for fix in audit.verdict.fixes)
        symbols = audit_binaries([path]).to_json()["binaries"][0]["symbols"]
        assert (symbols["kind"], symbols["table"]) == ("dynamic-only", "exports")
    # With its PDB, the module procedures name the internal functions too.
    audit = _audit(WINDOWS / "winlib.dll")
    assert (audit.symbols.kind, audit.symbols.table) == (SymbolTableKind.FULL, "full")
    assert not any("exported names only" in reason for reason in audit.verdict.reasons)


def test_internal_functions_take_the_nearest_export() -> None:
    # What the reason promises: an address in an internal function (memcpy, from freestanding.cpp,
    # which the DLL does not export) is named after the export before it.
    from symbolize.api import lookup
    from symbolize.formats.pe.file import PeFile

    path = FIXTURES / "audit" / "pe-exports-only" / "winlib.dll"
    with PeFile(path) as image:
        exports = sorted(image.exports(), key=lambda symbol: symbol.vaddr)
        code = [s for s in section_facts(image) if s.executable]
    last = exports[-1]
    inside_internal = code[0].vaddr + code[0].size - 1  # the last byte of .text, past every export
    assert inside_internal > last.vaddr
    (frames,) = lookup(path, [inside_internal], demangle="none", use_cache=False)
    assert isinstance(frames, list) and frames[-1].function == last.name
