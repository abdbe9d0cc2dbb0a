"""``symbolize stamp`` and ``stamp_profile()``: IDs from headers only, recorded so that a profile
symbolizes verified anywhere; every reason a mapping stays unstamped; the ID spelling's reader."""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from symbolize import mapping_ids
from symbolize.api import stamp_profile, symbolize_profile
from symbolize.cli.app import app
from symbolize.formats.errors import SymbolizeError
from symbolize.formats.identity import read_header_identities
from symbolize.formats.open import open_object
from symbolize.formats.types import DebugId, DebugIdKind
from symbolize.module import Reason
from symbolize.pprof import Profile, StringTable, read_profile
from symbolize.stamp import MappingFacts, StampOutcome, StampReport, stamp
from tests import posix
from tests.fixtures_data import BIN, MACOS_BIN, PROFILES, ROOT, WINDOWS_BIN

runner = CliRunner()

_ELF = [
    BIN / name for name in ("rustdemo-full", "sampler.so", "cdemo-gcc-dwarf5-pie", "libshape.so", "cdemo-gcc-debuglink")
]
_PE = [WINDOWS_BIN / name for name in ("winapp.exe", "winlib.dll", "mingwapp.exe", "winarm64.exe", "rustwin.exe")]
_MACHO = [MACOS_BIN / name for name in ("cppdemo-universal", "cdemo-arm64", "libmshape-x86_64.dylib")]


# --- the header-only reader agrees with the full readers ---------------------------------------


@pytest.mark.parametrize("path", _ELF + _PE + _MACHO, ids=lambda path: path.name)
def test_header_identities_are_the_full_readers_identities(path: Path) -> None:
    for identity in read_header_identities(path):
        reader = open_object(path, arch=identity.arch if identity.format == "macho" else None)
        try:
            assert identity.ids == tuple(reader.identities())
            assert identity.arch == reader.arch
        finally:
            reader.close()


def test_a_universal_file_gives_each_slice_with_its_offset_and_mapping_sizes() -> None:
    slices = {identity.arch: identity for identity in read_header_identities(MACOS_BIN / "cppdemo-universal")}
    assert set(slices) == {"x86_64", "arm64"}
    for arch, identity in slices.items():
        image = open_object(MACOS_BIN / "cppdemo-universal", arch=arch)
        assert identity.slice_offset == image.slice_offset
        text = next(segment for segment in image.segments() if segment.name == "__TEXT")
        assert text.memsz in identity.mapping_sizes
    assert not slices["x86_64"].mapping_sizes & slices["arm64"].mapping_sizes


# --- the spelling ----------------------------------------------------------------------------

_pdb_ids = st.builds(lambda value, age: DebugId(DebugIdKind.PDB, value, age), st.binary(min_size=16, max_size=16),
                     st.integers(0, 0xFFFFFFFF))  # fmt: skip
_code_ids = st.builds(lambda value: DebugId(DebugIdKind.PE_CODE_ID, value), st.binary(min_size=8, max_size=8))
_build_ids = st.builds(lambda value: DebugId(DebugIdKind.GNU_BUILD_ID, value), st.binary(min_size=2, max_size=64))
_uuids = st.builds(lambda value: DebugId(DebugIdKind.MACHO_UUID, value), st.binary(min_size=16, max_size=16))


@given(_pdb_ids, _code_ids, _pdb_ids, _code_ids)
def test_a_pe_stamp_reads_back_and_matches_only_its_own_build(pdb, code, other_pdb, other_code) -> None:  # type: ignore[no-untyped-def]
    text = mapping_ids.spell([pdb, code])
    assert mapping_ids.parse_part(text, DebugIdKind.PDB) == pdb
    assert mapping_ids.parse_part(text, DebugIdKind.PE_CODE_ID) == code
    assert mapping_ids.matches(text, (pdb, code))
    assert mapping_ids.matches(text.lower(), (pdb, code))  # case never matters
    assert mapping_ids.matches(text, (other_pdb, code)) == (other_pdb == pdb)
    assert mapping_ids.matches(text, (pdb, other_code)) == (other_code == code)
    assert mapping_ids.matches(text, (code,))  # a CodeView-less image of the same code ID


@given(st.one_of(_build_ids, _uuids), st.one_of(_build_ids, _uuids))
def test_one_id_reads_back_and_matches_as_before(debug_id, other) -> None:  # type: ignore[no-untyped-def]
    text = mapping_ids.spell([debug_id])
    assert mapping_ids.parse_part(text, debug_id.kind) == debug_id
    assert mapping_ids.matches(text, (debug_id,))
    assert mapping_ids.matches(text, (other,)) == (DebugId.parse(text, other.kind) == other)


def test_nothing_comparable_is_no_match() -> None:
    assert not mapping_ids.matches("", (DebugId(DebugIdKind.MACHO_UUID, bytes(16)),))
    assert not mapping_ids.matches("not-an-id", (DebugId(DebugIdKind.GNU_BUILD_ID, b"\x01\x02"),))


# --- stamping fixture profiles of the three platforms ------------------------------------------


def _ids_by_name(profile: Profile) -> dict[str, str]:
    strings = StringTable(profile)
    return {Path(strings.get(m.filename).replace("\\", "/")).name: strings.get(m.build_id) for m in profile.mapping}


def _unstamped(path: Path) -> Profile:
    """The fixture profile at ``path`` with what mimalloc-pprof writes of a mapping: start, limit, file name."""
    profile, _ = read_profile(path)
    for mapping in profile.mapping:
        mapping.build_id = 0
    return profile


def _names(profile: Profile) -> list[list[str]]:
    strings = StringTable(profile)
    names = {function.id: strings.get(function.name) for function in profile.function}
    return [[names[line.function_id] for line in location.line] for location in profile.location]


def _symbolized(profile: Profile, binaries: list[Path], search_paths: tuple[Path, ...] = ()):  # type: ignore[no-untyped-def]
    copy = Profile()
    copy.CopyFrom(profile)
    return symbolize_profile(copy, binaries=binaries, search_paths=search_paths, use_cache=False)


@pytest.mark.parametrize(
    ("profile_path", "binaries"),
    [
        (PROFILES / "rustdemo-full.cpu.daemon.pb.gz", [BIN / "rustdemo-full", BIN / "sampler.so"]),
        (PROFILES / "useshape.cpu.pb", [BIN / "useshape", BIN / "libshape.so", BIN / "sampler.so"]),
        (PROFILES / "windows" / "winapp.heap.pb.gz", [WINDOWS_BIN / "winapp.exe", WINDOWS_BIN / "winlib.dll"]),
        (PROFILES / "windows" / "mingwapp.codeid.cpu.pb.gz", [WINDOWS_BIN / "mingwapp.exe"]),
        (
            PROFILES / "macos" / "usemshape-x86_64.cpu.pb.gz",
            [MACOS_BIN / "usemshape-x86_64", MACOS_BIN / "libmshape-x86_64.dylib"],
        ),
        (PROFILES / "macos" / "cppdemo-universal-arm64.fatoffset.heap.pb.gz", [MACOS_BIN / "cppdemo-universal"]),
    ],
    ids=lambda value: value.name if isinstance(value, Path) else "",
)
def test_a_stamped_profile_names_the_same_frames_with_every_mapping_verified(
    profile_path: Path, binaries: list[Path]
) -> None:
    unstamped = _unstamped(profile_path)
    stamped, report = stamp_profile(_copy(unstamped), binaries=binaries)

    recorded = _ids_by_name(stamped)
    for binary in binaries:
        entry = next(e for e in report.mappings if Path(e.filename.replace("\\", "/")).name == binary.name)
        assert entry.outcome is StampOutcome.STAMPED and entry.path == binary
        slices = read_header_identities(binary)
        assert recorded[binary.name] in {mapping_ids.spell(identity.ids) for identity in slices}
    before, _ = _symbolized(unstamped, binaries)
    after, summary = _symbolized(stamped, binaries)
    assert _names(after) == _names(before)
    for mapping in summary.mappings:
        if Path(mapping.filename.replace("\\", "/")).name in {binary.name for binary in binaries}:
            assert not mapping.unverified and mapping.named > 0, mapping


def test_a_pe_stamp_records_the_pdb_id_then_the_code_id() -> None:
    profile, report = stamp_profile(PROFILES / "windows" / "winapp.heap.pb.gz",
                                    binaries=[WINDOWS_BIN / "winapp.exe", WINDOWS_BIN / "winlib.dll"])  # fmt: skip
    image = open_object(WINDOWS_BIN / "winapp.exe")
    assert _ids_by_name(profile)["winapp.exe"] == f"{image.debug_id},{image.identities()[1]}"
    assert report.counts()[StampOutcome.STAMPED] == 2


def test_a_code_id_only_mapping_is_completed_with_the_pdb_id() -> None:
    binaries = [WINDOWS_BIN / "winapp.exe", WINDOWS_BIN / "winlib.dll"]
    profile, report = stamp_profile(PROFILES / "windows" / "winapp.codeid.heap.pb.gz", binaries=binaries)
    assert report.counts() == {StampOutcome.ALREADY_STAMPED: 2}
    assert _ids_by_name(profile)["winlib.dll"] == mapping_ids.spell(read_header_identities(binaries[1])[0].ids)


def test_a_stamped_mapping_refuses_another_build_that_an_unstamped_one_takes_by_name(tmp_path: Path) -> None:
    impostor = tmp_path / "rustdemo-full"
    shutil.copyfile(BIN / "rustdemo-lines", impostor)  # same code, another build ID
    unstamped = _unstamped(PROFILES / "rustdemo-full.cpu.daemon.pb.gz")
    strings = StringTable(unstamped)
    unstamped.mapping[0].filename = strings.intern(str(tmp_path / "elsewhere" / "rustdemo-full"))  # only --binary
    stamped, _ = stamp_profile(_copy(unstamped), binaries=[BIN / "rustdemo-full"])
    for profile, reason in ((unstamped, None), (stamped, Reason.DEBUG_ID_MISMATCH)):
        _, summary = _symbolized(profile, [impostor])
        entry = next(mapping for mapping in summary.mappings if mapping.filename.endswith("/rustdemo-full"))
        assert entry.binary == (str(impostor) if reason is None else None), entry
        assert reason is None or (entry.named == 0 and set(entry.reasons) == {reason})


def test_a_pe_of_the_same_pdb_but_another_code_id_is_refused(tmp_path: Path) -> None:
    data = bytearray((WINDOWS_BIN / "winapp.exe").read_bytes())
    (pe_offset,) = struct.unpack_from("<I", data, 0x3C)
    struct.pack_into("<I", data, pe_offset + 8, 0x12345678)  # COFF TimeDateStamp: another link, same PDB
    relinked = tmp_path / "winapp.exe"
    relinked.write_bytes(bytes(data))
    stamped, _ = stamp_profile(PROFILES / "windows" / "winapp.heap.pb.gz", binaries=[WINDOWS_BIN / "winapp.exe"])
    _, summary = _symbolized(stamped, [relinked])
    entry = next(mapping for mapping in summary.mappings if mapping.filename.endswith("winapp.exe"))
    assert entry.named == 0 and set(entry.reasons) == {Reason.DEBUG_ID_MISMATCH}
    assert "12345678" in str(entry.details) and "DD1324EA" in str(entry.details)  # both code IDs named


# --- Mach-O universal files: the slice the mapping holds -----------------------------------------


def _one_mapping(filename: str, start: int, limit: int, file_offset: int = 0, build_id: str = "") -> Profile:
    profile = Profile()
    strings = StringTable(profile)
    mapping = profile.mapping.add(id=1, memory_start=start, memory_limit=limit, file_offset=file_offset)
    mapping.filename = strings.intern(filename)
    if build_id:
        mapping.build_id = strings.intern(build_id)
    return profile


@pytest.mark.parametrize("arch", ["x86_64", "arm64"])
def test_a_universal_mapping_of_start_limit_and_name_is_stamped_with_its_slice_by_size(arch: str) -> None:
    universal = MACOS_BIN / "cppdemo-universal"
    image = open_object(universal, arch=arch)
    text = next(segment for segment in image.segments() if segment.name == "__TEXT")
    profile = _one_mapping("/Applications/Demo.app/Contents/MacOS/cppdemo-universal", 0x104000000,
                           0x104000000 + text.memsz)  # fmt: skip
    _, report = stamp_profile(profile, binaries=[universal])
    assert report.mappings[0].outcome is StampOutcome.STAMPED
    assert report.mappings[0].ids == (image.debug_id,)


def test_a_universal_mapping_that_names_no_slice_stays_unstamped() -> None:
    profile = _one_mapping("/x/cppdemo-universal", 0x104000000, 0x104000000 + 0x1234)
    _, report = stamp_profile(profile, binaries=[MACOS_BIN / "cppdemo-universal"])
    assert report.mappings[0].outcome is StampOutcome.AMBIGUOUS_SLICE
    assert "x86_64" in report.mappings[0].detail and not profile.mapping[0].build_id


# --- what stays unstamped, and why ---------------------------------------------------------------


def _copy(profile: Profile) -> Profile:
    copy = Profile()
    copy.CopyFrom(profile)
    return copy


def _stamp_one(filename: str, **kwargs: int | str) -> tuple[Profile, StampOutcome, str]:
    profile = _one_mapping(filename, 0x400000, 0x500000, **kwargs)  # type: ignore[arg-type]
    _, report = stamp_profile(profile)
    return profile, report.mappings[0].outcome, report.mappings[0].detail


def test_a_missing_file_keeps_the_mapping_unstamped_and_is_counted(tmp_path: Path) -> None:
    profile, outcome, detail = _stamp_one(str(tmp_path / "gone.so"))
    assert outcome is StampOutcome.MISSING and detail == "file not found"
    assert not profile.mapping[0].build_id


@pytest.mark.parametrize("name", ["[vdso]", "//anon", "/memfd:jit (deleted)", "", "bad\0name", "[kernel.kallsyms]"])
def test_pseudo_files_are_not_files(name: str) -> None:
    assert _stamp_one(name)[1] is StampOutcome.NOT_A_FILE


def test_a_relative_name_is_read_only_through_binary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.copyfile(BIN / "sampler.so", tmp_path / "sampler.so")
    monkeypatch.chdir(tmp_path)
    _, outcome, detail = _stamp_one("sampler.so")
    assert outcome is StampOutcome.MISSING and "--binary" in detail


def test_a_fifo_or_device_is_refused_without_being_opened(tmp_path: Path) -> None:
    posix.require("mkfifo")
    fifo = tmp_path / "fifo.so"
    os.mkfifo(fifo)  # opening it for reading would block forever
    assert _stamp_one(str(fifo))[1:] == (StampOutcome.UNSUPPORTED_FILE, "not a regular file")
    if Path("/dev/zero").exists():  # named as a library by a link: an endless read
        posix.symlink(tmp_path / "zero.so", "/dev/zero")
        assert _stamp_one(str(tmp_path / "zero.so"))[1] is StampOutcome.UNSUPPORTED_FILE


def test_a_file_modified_after_the_profile_was_taken_is_not_trusted(tmp_path: Path) -> None:
    binary = tmp_path / "sampler.so"
    shutil.copyfile(BIN / "sampler.so", binary)
    modified = binary.stat().st_mtime_ns
    profile = _one_mapping(str(binary), 0x400000, 0x500000)
    profile.time_nanos = modified - 1_000_000_000
    _, report = stamp_profile(_copy(profile))
    assert report.mappings[0].outcome is StampOutcome.FILE_CHANGED
    profile.time_nanos = modified + 1_000_000_000
    _, report = stamp_profile(_copy(profile))
    assert report.mappings[0].outcome is StampOutcome.STAMPED


def test_files_of_other_kinds_and_broken_headers_are_counted(tmp_path: Path) -> None:
    text = tmp_path / "script.sh"
    text.write_text("#!/bin/sh\n")
    broken = tmp_path / "broken.so"
    broken.write_bytes((BIN / "sampler.so").read_bytes()[:40])  # the ELF header cut short
    no_id = tmp_path / "noid.exe"
    no_id.write_bytes(b"MZ" + bytes(100))
    for path, expected in ((text, StampOutcome.UNSUPPORTED_FILE), (broken, StampOutcome.UNREADABLE_FILE),
                           (no_id, StampOutcome.UNREADABLE_FILE)):  # fmt: skip
        profile, outcome, detail = _stamp_one(str(path))
        assert outcome is expected and detail, path
        assert not profile.mapping[0].build_id


def test_an_id_of_another_build_is_left_alone(tmp_path: Path) -> None:
    other = "0123456789abcdef0123456789abcdef01234567"
    profile, outcome, detail = _stamp_one(str(BIN / "sampler.so"), build_id=other)
    assert outcome is StampOutcome.OTHER_BUILD and other in detail
    assert profile.string_table[profile.mapping[0].build_id] == other


def test_each_file_is_read_once_however_many_mappings_name_it() -> None:
    reads: list[str] = []

    class Target:
        taken_at_ns = 0

        def mappings(self) -> list[MappingFacts]:
            return [
                MappingFacts(key, str(BIN / "sampler.so"), key << 20, (key + 1) << 20, 0, "") for key in range(1, 6)
            ]

        def record(self, key: int, ids: tuple[DebugId, ...]) -> None:
            reads.append(mapping_ids.spell(ids))

    report = stamp(Target())
    assert report.stamped == 5 and len(set(reads)) == 1


def test_the_text_report_counts_every_outcome_and_lists_the_unstamped(tmp_path: Path) -> None:
    profile = _one_mapping(str(BIN / "sampler.so"), 0x400000, 0x500000)
    strings = StringTable(profile)
    for key, name in enumerate([str(tmp_path / "gone.so"), "[vdso]"], start=2):
        profile.mapping.add(id=key, memory_start=key << 24, memory_limit=(key + 1) << 24, filename=strings.intern(name))
    _, report = stamp_profile(profile)
    text = report.format_text()
    assert text.splitlines()[0] == "stamp: 1 of 2 file mappings stamped (1 stamped, 1 missing, 1 not-a-file)"
    assert f"{tmp_path / 'gone.so'}: missing: file not found" in text
    assert "[vdso]" not in text
    assert isinstance(report, StampReport)
    assert report.to_json()["counts"] == {"stamped": 1, "missing": 1, "not-a-file": 1}


# --- the command line ----------------------------------------------------------------------------


def test_cli_stamps_atomically_and_reports_on_stderr(tmp_path: Path) -> None:
    out = tmp_path / "stamped.pb.gz"
    result = runner.invoke(app, ["stamp", str(PROFILES / "windows" / "winapp.heap.pb.gz"), "-o", str(out),
                                 "--binary", str(WINDOWS_BIN / "winapp.exe")])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "stamp: 1 of 2 file mappings stamped (1 stamped, 1 missing)" in result.stderr
    assert out.read_bytes()[:2] == b"\x1f\x8b"
    assert [p.name for p in tmp_path.iterdir()] == ["stamped.pb.gz"]  # no temporary left
    assert _ids_by_name(read_profile(out)[0])["winapp.exe"].endswith(",DD1324EA5000")


def test_cli_json_summary_and_stdout(tmp_path: Path) -> None:
    source = str(PROFILES / "rustdemo-full.cpu.daemon.pb.gz")
    result = runner.invoke(app, ["stamp", source, "-o", str(tmp_path / "o.pb"), "--json-summary",
                                 "--binary", str(BIN / "sampler.so")])  # fmt: skip
    assert result.exit_code == 0, result.output
    entries = json.loads(result.stdout)["mappings"]
    sampler = next(entry for entry in entries if entry["filename"].endswith("/sampler.so"))
    assert sampler == {"filename": sampler["filename"], "outcome": "stamped", "file": str(BIN / "sampler.so"),
                       "ids": "aeb7d44353c075bc8ff61680c2481a08661fac8e", "detail": ""}  # fmt: skip
    refused = runner.invoke(app, ["stamp", source, "-o", "-", "--json-summary"])
    assert refused.exit_code == 2


def test_cli_an_unreadable_profile_is_one_line_and_no_output(tmp_path: Path) -> None:
    garbage = tmp_path / "in.pb"
    garbage.write_bytes(b"\x1f\x8b" + b"not gzip at all")
    out = tmp_path / "out.pb"
    result = runner.invoke(app, ["stamp", str(garbage), "-o", str(out)])
    assert result.exit_code == 1
    assert len(result.stderr.strip().splitlines()) == 1 and str(garbage) in result.stderr
    assert not out.exists()


def test_cli_in_a_real_process_through_stdin_and_stdout() -> None:
    data = gzip.decompress((PROFILES / "windows" / "winapp.heap.pb.gz").read_bytes())
    completed = subprocess.run(
        [sys.executable, "-m", "symbolize", "stamp", "-", "-o", "-", "--binary", str(WINDOWS_BIN / "winlib.dll")],
        input=data, capture_output=True, cwd=ROOT, check=False, timeout=60,
    )  # fmt: skip
    assert completed.returncode == 0, completed.stderr
    profile = Profile()
    profile.ParseFromString(completed.stdout)
    assert _ids_by_name(profile)["winlib.dll"] == "4CABE6CD4027C2F04C4C44205044422E1,39960DE33000"
    assert b"1 stamped" in completed.stderr


# --- hostile headers -----------------------------------------------------------------------------

_DAMAGED = [BIN / "sampler.so", WINDOWS_BIN / "winapp.exe", MACOS_BIN / "cppdemo-universal", MACOS_BIN / "cdemo-arm64"]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sampled_from(_DAMAGED), st.data())
def test_damaged_headers_are_one_typed_error_or_an_answer(tmp_path: Path, original: Path, draw: st.DataObject) -> None:
    """Bytes changed anywhere (headers, tables, notes, the CodeView record), or the file cut short:
    the reader answers or raises a SymbolizeError; the stamp counts the mapping, never raises."""
    data = bytearray(original.read_bytes())
    data = data[: draw.draw(st.integers(0, len(data)), label="length")]
    for _ in range(draw.draw(st.integers(0, 8), label="flips")):
        if data:
            data[draw.draw(st.integers(0, len(data) - 1))] = draw.draw(st.integers(0, 255))
    path = tmp_path / original.name
    path.write_bytes(bytes(data))
    with contextlib.suppress(SymbolizeError):
        read_header_identities(path)
    _, report = stamp_profile(_one_mapping(str(path), 0x400000, 0x500000))
    assert report.mappings[0].outcome is not StampOutcome.NOT_A_FILE


# --- stamped here, symbolized elsewhere from a server ------------------------------------------


def test_a_stamped_windows_profile_is_named_elsewhere_from_a_symbol_server_alone(tmp_path: Path) -> None:
    """The point of stamping: on a machine with no file of the build, a symbol server gives the
    image by its code ID and the PDB by its GUID + age, both verified against the stamp."""
    from symbolize.api import remote_options
    from tests.servers.http_store import HttpStore

    binaries = [WINDOWS_BIN / "winapp.exe", WINDOWS_BIN / "winlib.dll"]
    stamped, _ = stamp_profile(PROFILES / "windows" / "winapp.heap.pb.gz", binaries=binaries)
    store = tmp_path / "store"
    for binary in binaries:
        image = open_object(binary)
        pdb = binary.with_suffix(".pdb")
        for path, index in ((binary, image.identities()[1]), (pdb, image.debug_id)):
            (store / path.name / str(index)).mkdir(parents=True)
            shutil.copyfile(path, store / path.name / str(index) / path.name)
    expected, _ = _symbolized(stamped, binaries, (WINDOWS_BIN,))
    with HttpStore(store) as server:
        remote = remote_options(symbol_servers=[f"srv*{server.url}"], cache_dir=tmp_path / "cache")
        named, summary = symbolize_profile(_copy(stamped), remote=remote, use_cache=False)
    assert _names(named) == _names(expected) and summary.unnamed == 0
    assert all(not mapping.unverified and mapping.binary.startswith(str(tmp_path)) for mapping in summary.mappings)


def test_a_stamped_linux_profile_is_named_elsewhere_from_debuginfod_alone(tmp_path: Path) -> None:
    from symbolize.api import remote_options
    from tests.servers.http_store import HttpStore

    binaries = [BIN / "rustdemo-full", BIN / "sampler.so"]
    stamped, _ = stamp_profile(_unstamped(PROFILES / "rustdemo-full.cpu.daemon.pb.gz"), binaries=binaries)
    strings = StringTable(stamped)
    for mapping in stamped.mapping:  # recorded where no file of theirs is
        mapping.filename = strings.intern("/nonexistent/build/" + Path(strings.get(mapping.filename)).name)
    store = tmp_path / "store"
    for binary in binaries:
        build_id = open_object(binary).debug_id.value.hex()  # type: ignore[union-attr]
        (store / "buildid" / build_id).mkdir(parents=True)
        shutil.copyfile(binary, store / "buildid" / build_id / "executable")
    expected, _ = _symbolized(stamped, binaries)
    with HttpStore(store) as server:
        remote = remote_options(debuginfod_urls=[server.url], cache_dir=tmp_path / "cache")
        named, summary = symbolize_profile(_copy(stamped), remote=remote, use_cache=False)
    assert _names(named) == _names(expected)
    served = [m for m in summary.mappings if Path(m.filename).name in {"rustdemo-full", "sampler.so"}]
    assert len(served) == 2 and all(m.named and not m.unverified for m in served)
