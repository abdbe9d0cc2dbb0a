"""The auditor on the Mach-O fixtures (fixtures/bin/macos, fixtures/README.md "Mach-O"): the report
each one's build recipe implies, from what the Mach-O reader measures of the binary and its dSYM or
debug map (checked against llvm-dwarfdump --statistics in test_audit.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from symbolize.audit import ProfileView, audit_binary
from symbolize.audit.report import BinaryAudit, SymbolTableKind, UnreadableBinary
from tests.fixtures_data import BIN

MACOS = BIN / "macos"


def _audit(path: Path, **options: object) -> BinaryAudit:
    result = audit_binary(path, **options)  # type: ignore[arg-type]
    assert not isinstance(result, UnreadableBinary), result
    return result


def _files(audit: BinaryAudit) -> dict[str, tuple[bool, bool | None]]:
    return {found.how: (found.found, found.matches) for found in audit.debug_info.files}


@pytest.mark.parametrize(
    "name",
    ["cppdemo-x86_64", "cppdemo-arm64", "cppdemo-universal", "libmshape-x86_64.dylib", "usemshape-arm64"],
)
def test_with_dsym(name: str) -> None:
    # dsymutil made a dSYM beside the binary: names, lines and inline chains.
    audit = _audit(MACOS / name)
    assert audit.identity.format == "macho" and audit.identity.debug_id_kind == "macho-uuid"
    assert _files(audit)["dsym"] == (True, True)
    # cppdemo inlines (its ELF twins' DWARF says so); the small library and its user may not.
    if name.startswith("cppdemo"):
        assert audit.verdict.shows is ProfileView.WITH_INLINES
    else:
        assert audit.verdict.shows.rank >= ProfileView.NAMES_LINES.rank


@pytest.mark.parametrize("arch", ["x86_64", "arm64"])
def test_debug_map(tmp_path: Path, arch: str) -> None:
    # No dSYM: the DWARF is in obj/cdemo-<arch>.o, which the build machine has...
    audit = _audit(MACOS / f"cdemo-{arch}")
    assert _files(audit)["dsym"] == (False, None)
    assert _files(audit)["debug-map-object"] == (True, True)
    assert "embedded" not in _files(audit)  # the DWARF is in the object, not the binary
    assert audit.debug_info.dwarf_versions == (4,)  # llvm-dwarfdump --debug-info obj/cdemo-<arch>.o: one v4 unit
    assert audit.verdict.shows is ProfileView.WITH_INLINES
    assert any("dsym" in reason for reason in audit.verdict.reasons)
    assert any(".dSYM" in fix for fix in audit.verdict.fixes)
    # ...and a user's machine, with the binary alone, does not: symbols only.
    shipped = tmp_path / f"cdemo-{arch}"
    shutil.copy(MACOS / f"cdemo-{arch}", shipped)
    alone = _audit(shipped)
    assert alone.verdict.shows is ProfileView.NAMES
    assert _files(alone)["debug-map-object"] == (False, None)


@pytest.mark.parametrize("arch", ["x86_64", "arm64"])
def test_stripped(arch: str) -> None:
    # llvm-strip -x: globals only, no stabs, no dSYM: no lines, fewer names than the full build.
    stripped = _audit(MACOS / f"cdemo-{arch}-stripped")
    full = _audit(MACOS / f"cdemo-{arch}")
    assert stripped.verdict.shows.rank < ProfileView.NAMES_LINES.rank
    assert stripped.symbols.function_symbols < full.symbols.function_symbols
    assert stripped.coverage.line_bytes == 0


def test_dsym_of_another_build(tmp_path: Path) -> None:
    binary = tmp_path / "cppdemo-x86_64"
    shutil.copy(MACOS / "cppdemo-x86_64", binary)
    dwarf = tmp_path / "cppdemo-x86_64.dSYM" / "Contents" / "Resources" / "DWARF"
    dwarf.mkdir(parents=True)
    # Same architecture, another UUID: the library's debug info under the program's name.
    shutil.copy(MACOS / "libmshape-x86_64.dylib.dSYM/Contents/Resources/DWARF/libmshape-x86_64.dylib",
                dwarf / "cppdemo-x86_64")  # fmt: skip
    audit = _audit(binary)
    assert _files(audit)["dsym"] == (True, False)
    assert audit.verdict.shows is ProfileView.NAMES  # the binary keeps its symbol table
    assert any("another build" in reason for reason in audit.verdict.reasons)


def test_frame_pointers_and_unwind_tables() -> None:
    # clang keeps frame pointers on Apple targets (their ABI requires them).
    for name in ("cppdemo-x86_64", "cppdemo-arm64"):
        frames = _audit(MACOS / name).frame_pointers
        assert frames.sampled > 0 and frames.non_leaf_share == 1.0, frames
    assert "__unwind_info" in _audit(MACOS / "cppdemo-x86_64").frame_pointers.unwind_tables


def test_universal_binary_is_audited_per_slice() -> None:
    from symbolize.audit import audit_binaries

    report = audit_binaries([MACOS / "cppdemo-universal"])
    assert sorted(audit.identity.arch for audit in report.binaries) == ["arm64", "x86_64"]
    assert all(audit.verdict.shows is ProfileView.WITH_INLINES for audit in report.binaries)
    uuids = {audit.identity.debug_id for audit in report.binaries}
    assert len(uuids) == 2  # each slice has its own UUID, matched in the universal dSYM


@pytest.mark.parametrize("arch", ["x86_64", "arm64"])
def test_strip_x_keeps_external_symbols_only(arch: str) -> None:
    # build_macos.sh: llvm-strip -x drops the local (static) functions' nlists, keeps the external ones.
    stripped = _audit(MACOS / f"cdemo-{arch}-stripped")
    assert (stripped.symbols.kind, stripped.symbols.table) == (SymbolTableKind.DYNAMIC_ONLY, "external")
    assert any("exported names only" in reason for reason in stripped.verdict.reasons)
    assert any("strip -S" in fix for fix in stripped.verdict.fixes)
    full = _audit(MACOS / f"cdemo-{arch}")
    assert (full.symbols.kind, full.symbols.table) == (SymbolTableKind.FULL, "full")
    assert not any("exported names only" in reason for reason in full.verdict.reasons)
