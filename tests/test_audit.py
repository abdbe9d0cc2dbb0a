"""The auditor on real binaries: each report against what the fixture's build recipe implies.

The recipes are in fixtures/audit/manifest.json (``settings``: what each variant was built
with) and fixtures/README.md; the coverage figures are checked against llvm-dwarfdump's,
stored in fixtures/audit/expected-coverage.json (re-checked live where llvm-dwarfdump is
installed).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from symbolize.audit import AuditReport, ProfileView, Requirement, audit_binaries, audit_binary
from symbolize.audit.prologue import PrologueDecoder
from symbolize.audit.report import COVERAGE_THRESHOLD, BinaryAudit, SymbolTableKind, UnreadableBinary
from symbolize.formats.coverage import coverage, section_facts
from symbolize.formats.facts import covered_bytes, merge_ranges
from tests.fixtures_data import BIN, DEBUG_DIR, FIXTURES

AUDIT = FIXTURES / "audit"
MANIFEST: dict[str, Any] = json.loads((AUDIT / "manifest.json").read_text())
EXPECTED_COVERAGE: dict[str, Any] = json.loads((AUDIT / "expected-coverage.json").read_text())


def _audit(path: Path, **options: Any) -> BinaryAudit:
    result = audit_binary(path, **options)
    assert not isinstance(result, UnreadableBinary), result
    return result


def _implied_view(settings: dict[str, Any]) -> ProfileView:
    """What a profile shows, from the build settings alone (the recipe), not from the auditor."""
    if settings["strip"] == "symbols":
        return ProfileView.BARE_HEX
    if settings.get("debug_file") in ("missing", "other-build"):
        return ProfileView.NAMES  # stripped with --strip-debug: the symbol table stays
    if settings["debuginfo"] in ("0", "minidebuginfo") or settings["strip"] == "debuginfo":
        return ProfileView.NAMES
    if settings.get("dwp_shipped") is False:
        return ProfileView.NAMES_LINES  # the skeleton units keep the line tables, the .dwp had the rest
    if settings["debuginfo"] in ("1", "2", "line-tables-only"):
        # fpdemo.c marks every function noinline: nothing is inlined, so no chains to show.
        return ProfileView.NAMES_LINES if settings.get("nothing_inlined") else ProfileView.WITH_INLINES
    raise AssertionError(f"no rule for {settings}")


VARIANTS = sorted(MANIFEST["variants"])

@pytest.mark.parametrize("variant", VARIANTS)
def test_verdict_is_what_the_recipe_implies(variant: str) -> None:
    settings = MANIFEST["variants"][variant]["settings"]
    audit = _audit(AUDIT / variant)
    if "symbol_table" in settings:
        # Exported names only, no debug info: no lines; how much code the exported functions
        # hold is for the lookups to say (test_verdict_agrees_with_lookups).
        assert audit.verdict.shows.rank < ProfileView.NAMES_LINES.rank
        assert any("a profile will show exported names only" in reason for reason in audit.verdict.reasons)
    else:
        assert audit.verdict.shows is _implied_view(settings), audit.verdict
    if variant.endswith(".dll"):
        assert (audit.identity.format, audit.identity.debug_id) == ("pe", None)  # linked without /DEBUG
    else:
        assert audit.identity.format == "elf"
        assert audit.identity.debug_id_kind == "gnu-build-id"  # every ELF recipe links with --build-id=sha1
    if audit.verdict.shows is not ProfileView.WITH_INLINES:
        assert audit.verdict.reasons and audit.verdict.fixes


@pytest.mark.parametrize("variant", VARIANTS)
def test_symbols_and_debug_files_follow_the_recipe(variant: str) -> None:
    settings = MANIFEST["variants"][variant]["settings"]
    audit = _audit(AUDIT / variant)
    kinds = {found.how: found for found in audit.debug_info.files}
    if settings["strip"] == "symbols":
        assert audit.symbols.kind is SymbolTableKind.NONE
        assert audit.symbols.function_symbols == 0
    elif settings["debuginfo"] == "minidebuginfo":
        assert audit.symbols.kind is SymbolTableKind.MINIDEBUGINFO
        assert kinds["minidebuginfo"].found
    elif "symbol_table" in settings:
        assert audit.symbols.kind is SymbolTableKind.DYNAMIC_ONLY
        assert audit.symbols.table == settings["symbol_table"]
    else:
        assert audit.symbols.kind is SymbolTableKind.FULL
    embedded = settings["debuginfo"] in ("1", "2", "line-tables-only") and settings["strip"] == "none"
    assert ("embedded" in kinds) is embedded
    if settings.get("split_debuginfo") == "packed":
        split = kinds["split-dwarf"]
        shipped = settings.get("dwp_shipped", True)
        assert split.found is shipped
        assert all(unit.resolved is shipped for unit in audit.debug_info.split_units)
        if shipped:
            assert split.path == str(AUDIT / f"{variant}.dwp")
    if settings.get("debug_file") == "missing":
        assert not kinds["debuglink"].found
    if settings.get("debug_file") == "other-build":
        assert kinds["debuglink"].found and kinds["debuglink"].matches is False
        assert "does not match" in kinds["debuglink"].detail


@pytest.mark.parametrize("variant", VARIANTS)
def test_frame_pointers_follow_the_recipe(variant: str) -> None:
    settings = MANIFEST["variants"][variant]["settings"]
    frames = _audit(AUDIT / variant).frame_pointers
    if not variant.endswith(".dll"):  # the freestanding DLL's functions need no unwinding: no .pdata
        assert ".eh_frame" in frames.unwind_tables or ".debug_frame" in frames.unwind_tables
    if settings["strip"] == "symbols":
        assert frames.sampled == 0 and frames.share is None  # no function starts left to decode
        return
    assert frames.sampled > 0
    # Every function of these programs was compiled with the recipe's setting (the C runtime's
    # start-up code, which is not, is left out of the sample).
    if settings.get("prebuilt_std"):
        # std's functions keep frame pointers (Rust 1.79); the program's own were built without.
        assert frames.own_sampled > 0 and frames.own_non_leaf_share == pytest.approx(0.0, abs=0.3), frames
        return
    if not settings["frame_pointers"]:
        assert frames.share == 0.0, frames
        return
    assert frames.non_leaf_share == 1.0, frames
    tool = MANIFEST["variants"][variant]["tool"]
    if "symbol_table" in settings:
        return  # the few exported functions say nothing of leaves
    if tool in ("rustc", "clang"):
        assert frames.share == 1.0, frames  # LLVM's frame-pointer=all gives leaves a frame too
    else:
        # GCC gives no frame to a leaf that needs no stack, -mno-omit-leaf-frame-pointer or not.
        assert frames.leaves_without == frames.sampled - frames.with_frame_pointer > 0, frames


@pytest.mark.parametrize("binary", sorted(EXPECTED_COVERAGE["files"]))
def test_coverage_agrees_with_llvm_dwarfdump(binary: str) -> None:
    expected = EXPECTED_COVERAGE["files"][binary]
    coverage = _audit(FIXTURES / binary).coverage
    assert coverage.code_bytes == expected["code_bytes"]
    assert coverage.line_bytes == expected["line_table_bytes_in_code"]
    assert coverage.inlined_calls == expected["#inlined functions"]
    assert coverage.llvm_bytes_within_functions == expected["#bytes within functions"]
    assert coverage.llvm_bytes_within_inlined_functions == expected["#bytes within inlined functions"]


_LLVM_TOOLS = ("llvm-dwarfdump", "llvm-readelf", "llvm-readobj", "llvm-pdbutil", "dsymutil")


@pytest.mark.skipif(any(shutil.which(tool) is None for tool in _LLVM_TOOLS), reason="LLVM's tools not installed")
def test_stored_llvm_figures_are_current() -> None:
    run = subprocess.run([sys.executable, str(FIXTURES / "make_audit_expected.py"), "--check"], check=False)
    assert run.returncode == 0


@pytest.mark.parametrize(
    ("name", "options", "how", "shows"),
    [
        # fixtures/README.md: stripped with --strip-debug + .gnu_debuglink to the file beside it.
        ("cdemo-gcc-debuglink", {}, "debuglink", ProfileView.WITH_INLINES),
        # Stripped, debug file only under bin/debug/.build-id/.
        ("cppdemo-gcc-buildid", {"debug_dirs": [DEBUG_DIR]}, "build-id", ProfileView.WITH_INLINES),
        # -g0: symbol table only.
        ("cdemo-gcc-symtab", {}, None, ProfileView.NAMES),
        # -gsplit-dwarf with the .dwp beside it.
        ("cdemo-clang-split", {}, "split-dwarf", ProfileView.WITH_INLINES),
    ],
)
def test_c_fixtures(name: str, options: dict[str, Any], how: str | None, shows: ProfileView) -> None:
    audit = _audit(BIN / name, **options)
    assert audit.verdict.shows is shows
    if how is not None:
        found = next(found for found in audit.debug_info.files if found.how == how)
        assert found.found and found.matches is True


def test_build_id_debug_file_missing_without_its_directory() -> None:
    audit = _audit(BIN / "cppdemo-gcc-buildid", debug_dirs=[])
    assert audit.verdict.shows is ProfileView.NAMES  # --strip-debug keeps .symtab
    assert any(found.how == "build-id" and not found.found for found in audit.debug_info.files)


def test_compressed_sections_are_named() -> None:
    audit = _audit(BIN / "cdemo-gcc-gz-zlib")  # -gz=zlib
    assert "cdemo-gcc-gz-zlib:.debug_info" in audit.debug_info.compressed_sections
    assert audit.debug_info.dwarf_versions == (5,)
    assert _audit(BIN / "cdemo-gcc-dwarf4-pie").debug_info.compressed_sections == ()


def test_given_debug_file_counts_only_when_it_matches() -> None:
    missing = AUDIT / "debuglink-missing" / "c-debuglink"
    right = AUDIT / "debuglink-other-build" / "c-debuglink.debug"  # of another build
    audit = _audit(missing, debug_files=[right])
    given_report = next(found for found in audit.debug_info.files if found.how == "given")
    assert given_report.found and given_report.matches is False
    assert audit.verdict.shows is ProfileView.NAMES
    # The binary's own debug file, given explicitly, brings the lines back.
    debuglink = BIN / "cdemo-gcc-debuglink"
    audit = _audit(debuglink, debug_files=[BIN / "cdemo-gcc-debuglink.debug"])
    assert audit.verdict.shows is ProfileView.WITH_INLINES


def test_requirements_and_exit_codes() -> None:
    names_only = AUDIT / "rs-strip-debuginfo"
    full = AUDIT / "rs-debug2-fp"
    report = audit_binaries([full], require=Requirement.INLINES, require_frame_pointers=True)
    assert report.exit_code == 0 and report.shortfalls == ()
    report = audit_binaries([names_only, full], require=Requirement.LINES)
    assert report.exit_code == 1
    assert len(report.shortfalls) == 1 and "rs-strip-debuginfo" in report.shortfalls[0]
    assert audit_binaries([names_only], require=Requirement.NAMES).exit_code == 0
    report = audit_binaries([AUDIT / "rs-debug2"], require_frame_pointers=True)
    assert report.exit_code == 1 and "frame pointer" in report.shortfalls[0]


def test_unreadable_and_no_reader_yet(tmp_path: Path) -> None:
    fake_pe = tmp_path / "app.exe"
    fake_pe.write_bytes(b"MZ" + bytes(62))  # hand-made: a DOS header and nothing more
    report: AuditReport = audit_binaries([tmp_path / "absent", fake_pe, AUDIT / "rs-debug2"])
    assert report.exit_code == 3
    assert [entry.path for entry in report.unreadable] == [str(tmp_path / "absent"), str(fake_pe)]
    assert len(report.binaries) == 1


# Schema 1 as symbolize/audit/__init__.py documents it: every object's keys, for each format.
SCHEMA_1_KEYS = {
    "identity": {"path", "format", "arch", "debug_id", "debug_id_kind"},
    "symbols": {"kind", "function_symbols", "table"},
    "debug_info": {
        "files", "dwarf_versions", "compressed_sections", "split_units", "broken_units",
        "file_bytes", "debug_section_bytes", "line_table_bytes",
    },
    "coverage": {
        "code_bytes", "symbol_bytes", "line_bytes", "function_bytes", "inlined_bytes", "name_bytes",
        "inlined_calls", "llvm_bytes_within_functions", "llvm_bytes_within_inlined_functions", "shares",
    },
    "frame_pointers": {
        "sampled", "with_frame_pointer", "share", "without", "unwind_tables", "note", "leaves_without",
        "own_sampled", "own_with_frame_pointer", "own_leaves_without",
    },
    "verdict": {"shows", "reasons", "fixes", "frame_pointer_walks"},
    "lookups": {"checked", "sample_size", "names", "lines", "inlined", "note"},
}  # fmt: skip


@pytest.mark.parametrize(
    "binary", ["audit/rs-packed", "bin/windows/winapp.exe", "bin/macos/cdemo-x86_64", "bin/macos/cppdemo-universal"]
)
def test_json_keys_are_schema_1_for_every_format(binary: str) -> None:
    data = json.loads(json.dumps(audit_binaries([FIXTURES / binary]).to_json()))
    assert set(data) == {"schema", "binaries", "unreadable", "cargo", "requirements", "shortfalls", "exit_code"}
    for audited in data["binaries"]:
        assert {key: set(audited[key]) for key in SCHEMA_1_KEYS} == SCHEMA_1_KEYS
        assert set(audited["coverage"]["shares"]) == {"names", "symbols", "lines", "functions", "inlined"}
        for found in audited["debug_info"]["files"]:
            assert set(found) == {"how", "path", "found", "matches", "detail"}
        assert audited["symbols"]["kind"] in {"full", "minidebuginfo", "dynamic-only", "none"}
        assert audited["verdict"]["shows"] in {"bare-hex", "names", "names+lines", "with-inlines"}


def test_json_schema_1() -> None:
    report = audit_binaries([AUDIT / "rs-lines"], require=Requirement.LINES)
    data = json.loads(json.dumps(report.to_json()))
    assert data["schema"] == 1 and data["exit_code"] == 0
    binary = data["binaries"][0]
    assert binary["verdict"]["shows"] == "with-inlines"
    assert binary["symbols"]["kind"] == "full"
    assert binary["coverage"]["shares"]["lines"] >= COVERAGE_THRESHOLD
    assert set(binary) == {
        *("identity", "symbols", "debug_info", "coverage", "frame_pointers", "verdict", "lookups", "servers")
    }
    assert set(binary["verdict"]) == {"shows", "reasons", "fixes", "frame_pointer_walks"}
    assert set(binary["lookups"]) == {"checked", "sample_size", "names", "lines", "inlined", "note"}


# --- the pieces --------------------------------------------------------------------------------

_ranges = st.lists(st.tuples(st.integers(0, 200), st.integers(0, 200)), max_size=12)


@given(_ranges, _ranges)
def test_covered_bytes_is_set_intersection(ranges: list[tuple[int, int]], within: list[tuple[int, int]]) -> None:
    covered = {address for low, high in ranges for address in range(low, high)}
    area = {address for low, high in within for address in range(low, high)}
    assert covered_bytes(merge_ranges(ranges), merge_ranges(within)) == len(covered & area)
    merged = merge_ranges(ranges)
    assert all(a[1] < b[0] for a, b in pairwise(merged))


@pytest.mark.parametrize(
    ("arch", "code", "expected"),
    [
        ("x86_64", "f30f1efa" "55" "4889e5", True),  # endbr64; push rbp; mov rbp, rsp
        ("x86_64", "55" "4156" "4889e5", True),  # push rbp; push r14; mov rbp, rsp
        ("x86_64", "4889e5" "c3", False),  # mov rbp, rsp without the push
        ("x86_64", "53" "e800000000" "55" "4889e5", False),  # a call before the frame is set up
        ("x86_64", "55", False),  # cut short
        ("i386", "55" "89e5", True),  # push ebp; mov ebp, esp
        ("i386", "56" "8b442408" "c3", False),  # push esi; mov eax, [esp+8]; ret
        ("aarch64", "fd7bbfa9" "fd030091", True),  # stp x29, x30, [sp, #-16]!; mov x29, sp
        ("aarch64", "3f2303d5" "fd7bbfa9" "fd030091", True),  # paciasp first (pointer authentication)
        ("aarch64", "e0000034" "fd7bbfa9" "fd030091", True),  # cbz w0 (shrink-wrapped early exit) first
        ("aarch64", "ff8301d1" "fd7b04a9" "fd030191", True),  # sub sp; stp x29, x30, [sp, #64]; add x29
        ("aarch64", "fe4f04a9" "c0035fd6", False),  # stp x30, x19, ...; ret
        ("aarch64", "fd7b", False),  # half an instruction
    ],
)
def test_prologue_shapes(arch: str, code: str, expected: bool) -> None:
    decoded = PrologueDecoder(arch).decode("f", 0x1000, bytes.fromhex(code))
    assert decoded.sets_frame_pointer is expected


@given(st.binary(max_size=64))
def test_prologue_decoder_takes_any_bytes(code: bytes) -> None:
    for arch in ("x86_64", "i386", "aarch64"):
        PrologueDecoder(arch).decode("f", 0, code)


# --- hostile input -----------------------------------------------------------------------------


def _section_offset(path: Path, name: str) -> int:
    from elftools.elf.elffile import ELFFile

    with path.open("rb") as stream:
        section = ELFFile(stream).get_section_by_name(name)
        assert section is not None
        return int(section["sh_offset"])


def test_truncated_binary_is_unreadable(tmp_path: Path) -> None:
    cut = tmp_path / "cut"
    cut.write_bytes((AUDIT / "rs-debug2").read_bytes()[:3000])
    report = audit_binaries([cut])
    assert report.exit_code == 3 and report.unreadable[0].path == str(cut)


def test_broken_debug_info_leaves_the_symbols(tmp_path: Path) -> None:
    broken = tmp_path / "rs-debug2"
    data = bytearray((AUDIT / "rs-debug2").read_bytes())
    offset = _section_offset(AUDIT / "rs-debug2", ".debug_info")
    data[offset : offset + 4] = (0xFFFFFF00).to_bytes(4, "little")  # a first unit longer than the file
    broken.write_bytes(bytes(data))
    audit = _audit(broken)
    assert audit.debug_info.broken_units
    assert audit.symbols.kind is SymbolTableKind.FULL
    assert audit.verdict.shows is ProfileView.NAMES
    assert any("cannot be decoded" in reason for reason in audit.verdict.reasons)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sampled_from(["rs-strip-symbols", "rs-lines", "c-minidebuginfo"]), st.data())
def test_mutated_binaries_give_a_report_or_one_reason(tmp_path: Path, variant: str, data: st.DataObject) -> None:
    original = (AUDIT / variant).read_bytes()
    mutated = bytearray(original)
    for _ in range(data.draw(st.integers(1, 16))):
        position = data.draw(st.integers(0, len(mutated) - 1))
        mutated[position] = data.draw(st.integers(0, 255))
    path = tmp_path / variant.replace("/", "_")
    path.write_bytes(bytes(mutated))
    result = audit_binary(path)
    assert isinstance(result, BinaryAudit | UnreadableBinary)


# A debug file mutated beside its (intact) binary: the PDB, the dSYM's DWARF file.
MUTATED_DEBUG_FILES = [
    ("bin/windows/winapp.exe", "winapp.pdb", "bin/windows/winapp.pdb"),
    ("bin/macos/cppdemo-x86_64", "cppdemo-x86_64.dSYM/Contents/Resources/DWARF/cppdemo-x86_64",
     "bin/macos/cppdemo-x86_64.dSYM/Contents/Resources/DWARF/cppdemo-x86_64"),
]  # fmt: skip


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sampled_from(MUTATED_DEBUG_FILES), st.data())
def test_mutated_debug_files_give_a_report_or_one_reason(
    tmp_path_factory: pytest.TempPathFactory, case: tuple[str, str, str], data: st.DataObject
) -> None:
    binary_name, debug_name, original_name = case
    mutated = bytearray((FIXTURES / original_name).read_bytes())
    for _ in range(data.draw(st.integers(1, 32))):
        position = data.draw(st.integers(0, len(mutated) - 1))
        mutated[position] = data.draw(st.integers(0, 255))
    directory = tmp_path_factory.mktemp("mutated")
    binary = directory / Path(binary_name).name
    shutil.copy(FIXTURES / binary_name, binary)
    (directory / debug_name).parent.mkdir(parents=True, exist_ok=True)
    (directory / debug_name).write_bytes(bytes(mutated))
    result = audit_binary(binary)
    assert isinstance(result, BinaryAudit | UnreadableBinary)


# --- the verdict against the symbolizer itself -------------------------------------------------


# The other formats' fixtures: PDB beside the image, MinGW DWARF, dSYM, debug map, strip -x.
OTHER_FORMATS = [
    "bin/windows/winapp.exe",
    "bin/windows/winlib.dll",
    "bin/windows/win32demo.exe",
    "bin/windows/winarm64.exe",
    "bin/windows/mingwapp.exe",
    "bin/macos/cppdemo-x86_64",
    "bin/macos/cppdemo-arm64",
    "bin/macos/usemshape-x86_64",
    "bin/macos/cdemo-x86_64",
    "bin/macos/cdemo-arm64-stripped",
]


# Every code byte is looked up: the std-sized variant (hundreds of KB of code) is left to the
# auditor's own sampled lookups.
_SMALL_VARIANTS = [v for v in VARIANTS if not MANIFEST["variants"][v]["settings"].get("prebuilt_std")]


@pytest.mark.parametrize("variant", [f"audit/{variant}" for variant in _SMALL_VARIANTS] + OTHER_FORMATS)
def test_verdict_agrees_with_lookups(variant: str) -> None:
    """Look every code byte up with symbolize's own lookup: the shares named, with lines and with
    inlined frames must agree with the coverage the audit measured and with its verdict."""
    from symbolize.api import lookup
    from symbolize.formats.open import open_object

    path = FIXTURES / variant
    audit = _audit(path)
    opened = open_object(path)
    try:
        facts = section_facts(opened)
        code = merge_ranges((s.vaddr, s.vaddr + s.size) for s in facts if s.executable and not s.without_bytes)
    finally:
        opened.close()
    vaddrs = [vaddr for low, high in code for vaddr in range(low, high)]
    results = lookup(path, vaddrs, demangle="none", use_cache=False)
    frames = [result for result in results if isinstance(result, list)]
    named = sum(1 for result in frames if result[-1].function) / len(vaddrs)
    lined = sum(1 for result in frames if result[0].line > 0) / len(vaddrs)
    inlined = sum(1 for result in frames if len(result) > 1) / len(vaddrs)
    coverage = audit.coverage
    assert named == pytest.approx(coverage.share(coverage.name_bytes), abs=0.02)
    assert lined == pytest.approx(coverage.share(coverage.line_bytes), abs=0.02)
    assert inlined == pytest.approx(coverage.share(coverage.inlined_bytes), abs=0.02)
    shows = audit.verdict.shows
    assert (named >= COVERAGE_THRESHOLD) is (shows.rank >= ProfileView.NAMES.rank)
    assert (lined >= COVERAGE_THRESHOLD) is (shows.rank >= ProfileView.NAMES_LINES.rank)
    if shows is ProfileView.WITH_INLINES:
        assert inlined > 0


# --- coverage the lookups contradict -------------------------------------------------------------


def test_split_units_found_but_not_answering_are_graded_by_lookups(tmp_path: Path) -> None:
    """rs-packed with its .dwp (matching DWO ID), the skeleton's ranges moved off the code: every
    unit is found and the figures claim lines and inline chains, but a lookup (ours and
    llvm-symbolizer alike) reaches no unit and answers from the symbol table only."""
    from tests.elf_patch import with_unit_ranges_moved

    binary = tmp_path / "rs-packed"
    binary.write_bytes(with_unit_ranges_moved((AUDIT / "rs-packed").read_bytes(), 0x100000))
    shutil.copy(AUDIT / "rs-packed.dwp", tmp_path / "rs-packed.dwp")
    report = audit_binaries([binary], require=Requirement.INLINES)
    audit = report.binaries[0]
    assert all(unit.resolved for unit in audit.debug_info.split_units)
    assert audit.coverage.share(audit.coverage.line_bytes) >= COVERAGE_THRESHOLD  # what the figures claim
    assert audit.verdict.shows is ProfileView.NAMES
    assert report.exit_code == 1
    lookups = audit.lookups
    assert lookups is not None and lookups.checked
    assert lookups.names.answered == lookups.names.sampled > 0
    assert lookups.lines.sampled > 0 and lookups.lines.answered == 0
    assert lookups.inlined.sampled > 0 and lookups.inlined.answered == 0
    assert any("a lookup answers a line at only 0 of" in reason for reason in audit.verdict.reasons)
    data = report.to_json()["binaries"][0]
    assert data["lookups"]["lines"] == {"sampled": lookups.lines.sampled, "answered": 0}
    # The intact build: every sampled address answers as its coverage claims.
    intact = _audit(AUDIT / "rs-packed").lookups
    assert intact is not None
    assert all(check.answered == check.sampled > 0 for check in (intact.names, intact.lines, intact.inlined))
    llvm = shutil.which("llvm-symbolizer")
    if llvm is not None:
        from symbolize.audit.lookups import spread
        from symbolize.formats.open import open_object

        opened = open_object(binary)
        try:
            addresses = spread(coverage(opened).lines, 8)
        finally:
            opened.close()
        run = subprocess.run(
            [llvm, "--obj", str(binary), *map(hex, addresses)], capture_output=True, text=True, check=True
        )
        places = re.findall(r":(\d+):\d+$", run.stdout, re.MULTILINE)  # FILE:LINE:COLUMN lines
        assert len(places) == len(addresses) and set(places) == {"0"}, run.stdout


def test_sample_is_spread_over_the_bytes() -> None:
    from symbolize.audit.lookups import spread

    assert spread([(0, 4), (10, 14)], 4) == [1, 3, 11, 13]
    assert spread([(0, 2)], 8) == [0, 1]
    assert spread([], 8) == []


def test_own_functions_without_frame_pointers_are_in_the_verdict() -> None:
    """rs-std-nofp: the prebuilt std's functions (most of the binary) keep frame pointers, the
    program's own have none; a frame-pointer walk (a heap profiler's) stops in the program."""
    audit = _audit(AUDIT / "rs-std-nofp")
    assert any("the program's own" in reason for reason in audit.verdict.reasons)
    frames = audit.frame_pointers
    assert frames.non_leaf_share is not None and frames.non_leaf_share >= 0.9
    assert frames.own_non_leaf_share is not None and frames.own_non_leaf_share < 0.5
    assert audit.verdict.frame_pointer_walks == "lose-callers"
    assert "frame pointers: -C force-frame-pointers=yes (RUSTFLAGS)" in audit.verdict.fixes
    data = audit_binaries([AUDIT / "rs-std-nofp"]).to_json()["binaries"][0]
    assert data["verdict"]["frame_pointer_walks"] == "lose-callers"
    # --require-frame-pointers keeps its documented rule: the share of every sampled function.
    assert audit_binaries([AUDIT / "rs-std-nofp"], require_frame_pointers=True).exit_code == 0
    assert _audit(AUDIT / "rs-debug2-fp").verdict.frame_pointer_walks == "whole"
    assert _audit(AUDIT / "rs-debug2").verdict.frame_pointer_walks == "lose-callers"
