"""Hostile input: each class of input that got through, as a small synthetic reproducer.

Every test here failed before its fix. Work is measured in walks, not seconds (timings belong
in bench/); tests/test_hostile_limits.py runs the same reproducers under a memory and time limit.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import struct
import subprocess
import time
import tracemalloc
import zlib
from pathlib import Path
from types import SimpleNamespace

import pytest

from symbolize import api
from symbolize.demangle import demangle
from symbolize.formats.dwarf import DwarfInfo
from symbolize.formats.dwarf import answers as dwarf_answers
from symbolize.formats.dwarf import constants as c
from symbolize.formats.dwarf.answers import DwarfSymbolAnswers
from symbolize.formats.dwarf.skip import SubtreeSkipper
from symbolize.formats.elf import ElfFile
from symbolize.formats.errors import InputLimitError, MalformedInputError
from symbolize.formats.sections import ELFCOMPRESS_ZLIB, ELFCOMPRESS_ZSTD
from symbolize.index.store import write_index
from symbolize.pprof import gunzip, parse_profile, write_profile
from symbolize.proto.profile_pb2 import Function, Line, Profile
from symbolize.rewrite import MAX_ID, fresh_ids
from symbolize.tempfiles import STALE_AFTER_SECONDS
from tests.dwarf_builder import answering, getter, sleb, uleb
from tests.fixtures_data import MACOS_BIN
from tests.hostile_dwarf import (
    LE4,
    Encoding,
    abbrev,
    bad_header_case,
    common_abbrevs,
    cu_lines_die,
    deep_skip_case,
    function_die,
    line_header_v5,
    line_program_rows,
    lines_case,
    nested_inlines_case,
    past_address_space_case,
    shared_table_case,
    unit,
)
from tests.kernel_twins import kernels_in
from tests.test_malformed_elf import SHF_COMPRESSED, SHT_PROGBITS, Section, build_elf, symtab
from tests.test_rewrite import TEXT_START, Opener, location, make_profile, run

PATH = Path("hostile.elf")


def _info(sections: dict[str, bytes], **options: object) -> DwarfSymbolAnswers:
    """The sections' DWARF, answering through the run builder every container uses."""
    return answering(DwarfInfo(getter(sections), PATH, **options))  # type: ignore[arg-type]


@pytest.fixture
def skipper_walks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Start offsets of every walk a SubtreeSkipper makes, noting walks included."""
    walks: list[int] = []
    original = SubtreeSkipper._walk

    def counted(self: SubtreeSkipper, offset: int, end: int, inner: bool, ends: dict[int, int] | None) -> int:
        walks.append(offset)
        return original(self, offset, end, inner, ends)

    monkeypatch.setattr(SubtreeSkipper, "_walk", counted)
    return walks


# Memory without bound ------------------------------------------------------------


def _elf_with_section(payload: bytes, name: str = ".debug_info") -> bytes:
    return build_elf([Section(name, SHT_PROGBITS, payload, flags=SHF_COMPRESSED), *symtab(b"f")])


def test_compressed_section_is_capped_by_its_file_size(tmp_path: Path) -> None:
    # A zstd frame claiming 1 GiB in a file of a few hundred bytes: refused before allocating.
    pyzstd = pytest.importorskip("pyzstd")
    chdr = struct.pack("<IIQQ", ELFCOMPRESS_ZSTD, 0, 1 << 30, 1) + pyzstd.compress(b"\0" * 4096)
    path = tmp_path / "bomb.so"
    path.write_bytes(_elf_with_section(chdr))
    with ElfFile(path) as elf, pytest.raises(InputLimitError) as raised:
        elf.section_data("debug_info")
    assert raised.value.path == path
    assert raised.value.limit == 64 * path.stat().st_size
    assert str(raised.value.limit) in str(raised.value)


def test_compressed_section_absolute_cap_is_overridable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    chdr = struct.pack("<IIQQ", ELFCOMPRESS_ZLIB, 0, 4096, 1) + zlib.compress(b"\0" * 4096)
    path = tmp_path / "small.so"
    path.write_bytes(_elf_with_section(chdr))
    monkeypatch.setenv("SYMBOLIZE_MAX_SECTION_SIZE", "1000")
    with ElfFile(path) as elf, pytest.raises(InputLimitError, match="SYMBOLIZE_MAX_SECTION_SIZE") as raised:
        elf.section_data("debug_info")
    assert raised.value.limit == 1000
    monkeypatch.setenv("SYMBOLIZE_MAX_SECTION_SIZE", "5000")
    with ElfFile(path) as elf:
        assert elf.section_data("debug_info") == b"\0" * 4096


def _gzip_bomb(members: int, member_size: int = 1 << 20) -> bytes:
    # Members one after another: a bomb of many times the memory, built without that memory.
    return gzip.compress(b"\0" * member_size, mtime=0) * members


def test_gzip_profile_bomb_stops_at_a_multiple_of_its_size() -> None:
    bomb = _gzip_bomb(64)  # 64 MiB from about 65 KB
    tracemalloc.start()
    try:
        with pytest.raises(InputLimitError, match="128 times") as raised:
            parse_profile(bomb, "bomb.pb.gz")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert raised.value.limit == 128 * len(bomb)
    assert peak < 3 * raised.value.limit  # stopped at the cap, never the 64 MiB


def test_gzip_profile_absolute_cap_is_overridable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SYMBOLIZE_MAX_PROFILE_SIZE", "100000")
    with pytest.raises(InputLimitError, match="SYMBOLIZE_MAX_PROFILE_SIZE"):
        gunzip(_gzip_bomb(1), "p.pb.gz")


def test_gunzip_reads_what_gzip_reads() -> None:
    profile = Profile(string_table=["", "cpu"], time_nanos=7)
    data = profile.SerializeToString()
    two_members = gzip.compress(data[:3], mtime=0) + gzip.compress(data[3:], mtime=0)
    assert gunzip(two_members) == data
    assert gunzip(gzip.compress(data) + b"\0\0\0\0") == data  # zero padding, as gzip allows
    for broken in (gzip.compress(data)[:-3], gzip.compress(data) + b"garbage!"):
        with pytest.raises(MalformedInputError):
            parse_profile(broken)


def test_line_header_with_no_formats_and_huge_directory_count_is_malformed() -> None:
    lines = line_header_v5(directory_formats=b"\0", directory_count=(1 << 32) - 1)
    body = cu_lines_die("a.c", 0x1000, 0x100) + function_die("f", 0x1000, 0x100) + b"\0"
    info = _info({"debug_info": unit(body, Encoding(version=5)), "debug_abbrev": common_abbrevs(),
                  "debug_line": lines})
    with pytest.raises(MalformedInputError, match="entries"):
        info.frames_at(0x1010)


def test_line_header_entry_format_count_past_the_header_is_malformed() -> None:
    lines = line_header_v5(directory_formats=b"\xff\x01", directory_count=1)
    body = cu_lines_die("a.c", 0x1000, 0x100) + function_die("f", 0x1000, 0x100) + b"\0"
    info = _info({"debug_info": unit(body, Encoding(version=5)), "debug_abbrev": common_abbrevs(),
                  "debug_line": lines})
    with pytest.raises(MalformedInputError, match="entry formats"):
        info.frames_at(0x1010)


# Quadratic time ----------------------------------------------------------------------


def test_deeply_nested_subtrees_are_walked_a_bounded_number_of_times(skipper_walks: list[int]) -> None:
    sections, vaddr = deep_skip_case(20_000)
    frames = _info(sections).frames_at(vaddr)
    assert frames is not None and frames[0].function == "buried"
    assert len(skipper_walks) <= 4  # was one walk per level: 20,000 walks, 33 s


def test_units_sharing_one_abbreviation_table_share_its_tables(monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[int] = []
    original = SubtreeSkipper.__init__

    def counted(self: SubtreeSkipper, *args: object, **kwargs: object) -> None:
        built.append(1)
        original(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(SubtreeSkipper, "__init__", counted)
    sections, vaddrs = shared_table_case(units=2_000, table_size=500)
    expected = [f"f{number}" for number in range(2_000)]
    with kernels_in(None, dwarf_answers):  # the Python reference's tables (the compiled source's: hostile_limits)
        info = _info(sections)
        assert [frames[0].function for frames in map(info.frames_at, vaddrs) if frames] == expected
    assert len(built) == 1  # was one per unit, each over the whole table
    compiled = _info(sections)  # the compiled source where built: the same names
    assert [frames[0].function for frames in map(compiled.frames_at, vaddrs) if frames] == expected


def test_nested_inlined_calls_expand_in_linear_work(skipper_walks: list[int]) -> None:
    sections, vaddr = nested_inlines_case(6_000)
    frames = _info(sections).frames_at(vaddr)
    assert frames is not None and len(frames) == 6_001
    assert [frame.function for frame in frames[:2]] == ["i5999", "i5998"]
    assert frames[-1].function == "outer" and frames[-1].line == 1  # called from line 1 of outer
    assert len(skipper_walks) <= 4  # was one walk per level, each over the levels below


# Values out of range -------------------------------------------------------------------


# (call line, outer's decl line) as (form, bytes) -> llvm-symbolizer 14's answer for outer's frame,
# (Line, StartLine), from `llvm-symbolizer --obj FILE --output-style=JSON 0x1010` on each file.
_LINE_CASES = {
    "data8 2^64-1, sdata -5": ((c.DW_FORM_data8, LE4.u(8, (1 << 64) - 1)), (c.DW_FORM_sdata, sleb(-5)),
                               (4294967295, 0)),
    "data8 2^32+7, sdata 9": ((c.DW_FORM_data8, LE4.u(8, (1 << 32) + 7)), (c.DW_FORM_sdata, sleb(9)), (7, 0)),
    "sdata -3, data8 2^33+11": ((c.DW_FORM_sdata, sleb(-3)), (c.DW_FORM_data8, LE4.u(8, (1 << 33) + 11)), (0, 11)),
    "sdata 12, udata 2^40+3": ((c.DW_FORM_sdata, sleb(12)), (c.DW_FORM_udata, uleb((1 << 40) + 3)), (0, 3)),
}


@pytest.mark.parametrize("case", sorted(_LINE_CASES))
def test_call_and_decl_lines_read_as_llvm_symbolizer_reads_them(tmp_path: Path, case: str) -> None:
    # An unsigned constant modulo 2^32 (was: 0 past 2^32-1); sdata 0 whatever its sign.
    call_line, decl_line, (llvm_line, llvm_start_line) = _LINE_CASES[case]
    sections, vaddr = lines_case(call_line, decl_line)
    frames = _info(sections).frames_at(vaddr)
    assert [(frame.function, frame.line, frame.start_line) for frame in frames] == [
        ("inner", 0, 0), ("outer", llvm_line, llvm_start_line)
    ]
    for frame in frames:  # what the rewrite builds from them
        Line(line=frame.line, column=frame.column)
        Function(start_line=frame.start_line)
    llvm_symbolizer = shutil.which("llvm-symbolizer")
    if llvm_symbolizer is not None:  # the stored answer, re-checked live where the peer is installed
        path = tmp_path / "lines.elf"
        path.write_bytes(build_elf([Section("." + name, SHT_PROGBITS, data) for name, data in sections.items()]))
        done = subprocess.run([llvm_symbolizer, "--obj", str(path), "--output-style=JSON", hex(vaddr)],
                              capture_output=True, text=True, check=True)
        outer = json.loads(done.stdout)[0]["Symbol"][-1]
        assert (outer["FunctionName"], outer["Line"], outer["StartLine"]) == ("outer", llvm_line, llvm_start_line)


def test_range_past_the_64_bit_address_space_ends_at_its_last_address() -> None:
    sections, vaddr = past_address_space_case(8)
    info = _info(sections)
    frames = info.frames_at(vaddr)
    assert frames is not None and frames[0].function == "wraps"
    assert all(high <= MAX_ID for _, high, _ in info.dwarf._unit_ranges)


def test_address_size_of_the_container_bounds_ranges() -> None:
    # DwarfInfo's address_size was taken and ignored; a 32-bit file's ranges now end at 2^32-1.
    sections, vaddr = past_address_space_case(4)
    info = _info(sections, address_size=4)
    frames = info.frames_at(vaddr)
    assert frames is not None and frames[0].function == "wraps"
    assert max(high for _, high, _ in info.dwarf._unit_ranges) == (1 << 32) - 1
    assert info.frames_at(1 << 32) == []


def test_profile_ids_at_the_top_of_uint64_take_free_ids() -> None:
    # Location MAX_ID is used as the leaf and as a caller: it is split, and the twin needs an id.
    addresses = {MAX_ID: TEXT_START + 2, 3: TEXT_START + 0x10, 5: TEXT_START + 0x20}
    profile = make_profile([[MAX_ID, 3], [5, MAX_ID]], addresses)
    profile.function.add(id=MAX_ID, name=0)
    run(profile, Opener())
    ids = [entry.id for entry in profile.location]
    assert len(set(ids)) == len(ids) == 4 and all(0 < i <= MAX_ID for i in ids)
    assert location(profile, MAX_ID).line  # named, and so is its twin
    function_ids = [entry.id for entry in profile.function]
    assert len(set(function_ids)) == len(function_ids) and all(0 < i <= MAX_ID for i in function_ids)
    profile.SerializeToString()


def test_fresh_ids_skip_the_ones_in_use() -> None:
    ids = fresh_ids([MAX_ID - 1, 2, MAX_ID, 1])
    assert [next(ids) for _ in range(3)] == [3, 4, 5]
    ids = fresh_ids([7])
    assert [next(ids) for _ in range(2)] == [8, 9]


# A broken unit does not take the file down ---------------------------------------------


@pytest.mark.parametrize(("version", "addr_size"), [(9, 8), (4, 3)])
def test_unit_with_unreadable_header_leaves_the_other_units(version: int, addr_size: int) -> None:
    sections, vaddr = bad_header_case(version=version, addr_size=addr_size)
    info = _info(sections)
    frames = info.frames_at(vaddr)
    assert frames is not None and frames[0].function == "kept"
    # The broken unit's own addresses are not known; where no unit answers, its error is the answer.
    with pytest.raises(MalformedInputError, match=r"version|address size"):
        info.frames_at(0x1010)


def test_unit_with_unreadable_header_leaves_the_symbol_table(tmp_path: Path) -> None:
    sections, _ = bad_header_case()
    elf_sections = [*symtab(b"from_symtab"), Section(".debug_info", SHT_PROGBITS, sections["debug_info"]),
                    Section(".debug_abbrev", SHT_PROGBITS, sections["debug_abbrev"])]
    path = tmp_path / "broken-unit.so"
    path.write_bytes(build_elf(elf_sections))
    results = api.lookup(path, [0x1004, 0x2010], use_cache=False)
    assert [result[0].function for result in results if isinstance(result, list)] == ["from_symtab", "kept"]


# Fixes from the DWARF review ---------------------------------------------------------


def test_fixed_advance_pc_reads_the_files_byte_order() -> None:
    big64 = Encoding(version=5, dwarf64=True, little=False)
    program = line_program_rows([(0x1000, 10), (0x1000 + 0x12, 20)], big64, fixed_step=0x12)
    lines = line_header_v5(directory_formats=bytes([1]) + uleb(c.DW_LNCT_path) + uleb(c.DW_FORM_string),
                           directory_count=1, directories=b"/src\0", encoding=big64, program=program)
    body = cu_lines_die("a.c", 0x1000, 0x100, big64) + function_die("f", 0x1000, 0x100, encoding=big64) + b"\0"
    info = _info({"debug_info": unit(body, big64), "debug_abbrev": common_abbrevs(), "debug_line": lines},
                 little_endian=False)
    assert [(frames[0].line) for frames in map(info.frames_at, (0x1011, 0x1012, 0x1020)) if frames] == [10, 20, 20]


def _split_dwarf64_case() -> tuple[dict[str, bytes], dict[str, bytes]]:
    """A DWARF64 skeleton and its .dwo, whose names and ranges are indexed with no base attribute."""
    e64 = Encoding(version=5, dwarf64=True)
    skeleton_abbrevs = abbrev(1, c.DW_TAG_skeleton_unit, False, [
        (c.DW_AT_dwo_name, c.DW_FORM_string), (c.DW_AT_low_pc, c.DW_FORM_addr), (c.DW_AT_high_pc, c.DW_FORM_data4),
    ]) + b"\0"
    dwo_id = 0x1122334455667788
    skeleton = unit(uleb(1) + b"x.dwo\0" + e64.addr(0x1000) + e64.u(4, 0x100), e64, unit_type=c.DW_UT_skeleton,
                    dwo_id=dwo_id)
    dwo_abbrevs = abbrev(1, c.DW_TAG_compile_unit, True, []) + abbrev(2, c.DW_TAG_subprogram, False, [
        (c.DW_AT_name, c.DW_FORM_strx1), (c.DW_AT_ranges, c.DW_FORM_rnglistx),
    ]) + b"\0"
    dwo_unit = unit(uleb(1) + uleb(2) + bytes([1]) + uleb(0) + b"\0", e64, unit_type=c.DW_UT_split_compile,
                    dwo_id=dwo_id)
    strings = b"unused\0split_function\0"
    # 64-bit DWARF tables: 12-byte initial lengths, so the bases are 16 and 20, not 8 and 12.
    str_offsets_body = e64.u(2, 5) + e64.u(2, 0) + e64.u(8, 0) + e64.u(8, 7)
    str_offsets = e64.initial_length(len(str_offsets_body)) + str_offsets_body
    rnglist = bytes([c.DW_RLE_start_length]) + e64.addr(0x1010) + uleb(0x20) + bytes([c.DW_RLE_end_of_list])
    rnglists_body = e64.u(2, 5) + bytes([8, 0]) + e64.u(4, 1) + e64.u(8, 8) + rnglist
    rnglists = e64.initial_length(len(rnglists_body)) + rnglists_body
    dwo = {"debug_info.dwo": dwo_unit, "debug_abbrev.dwo": dwo_abbrevs, "debug_str.dwo": strings,
           "debug_str_offsets.dwo": str_offsets, "debug_rnglists.dwo": rnglists}
    return {"debug_info": skeleton, "debug_abbrev": skeleton_abbrevs}, dwo


def test_split_unit_default_bases_follow_64_bit_dwarf() -> None:
    main_sections, dwo = _split_dwarf64_case()
    info = _info(main_sections, follows_split_units=True)
    # What the loader does for a region's needs: the skeleton's .dwo, supplied before it is asked.
    dwo_file = SimpleNamespace(path=Path("x.dwo"), section_data=getter(dwo))
    for hint in {hint for region in info.answer_regions() for hint in region.needs}:
        info.dwarf.supply_split_unit(hint, dwo_file)  # type: ignore[arg-type]
    frames = info.frames_at(0x1018)
    assert frames is not None and frames[0].function == "split_function"


# Leftovers -------------------------------------------------------------------------------


def _age(path: Path, seconds: float) -> None:
    then = time.time() - seconds
    os.utime(path, (then, then))


def test_stale_profile_temporaries_are_removed_by_the_next_write(tmp_path: Path) -> None:
    stale = tmp_path / ".cpu.pb.k3j9x_0a.tmp"
    stale_other = tmp_path / ".heap.pb.abcdefgh.tmp"
    fresh = tmp_path / ".cpu.pb.zzzzzzzz.tmp"
    unrelated = tmp_path / "notes.k3j9x_0a.tmp"
    for path in (stale, stale_other, fresh, unrelated):
        path.write_bytes(b"partial")
    for path in (stale, stale_other, unrelated):
        _age(path, STALE_AFTER_SECONDS + 60)
    write_profile(Profile(string_table=[""]), tmp_path / "cpu.pb", gzip=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["cpu.pb", fresh.name, unrelated.name])


def test_stale_index_temporaries_are_removed_by_the_next_write(tmp_path: Path) -> None:
    stale = tmp_path / "0123abcd.idx.k3j9x_0a.tmp"
    fresh = tmp_path / "0123abcd.idx.zzzzzzzz.tmp"
    for path in (stale, fresh):
        path.write_bytes(b"partial")
    _age(stale, STALE_AFTER_SECONDS + 60)
    write_index(tmp_path / "other.idx", "key", {})
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["other.idx", fresh.name])


# Names ------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["f", "i", "Ss", "St", "v", "main", "Z", "R"])
@pytest.mark.parametrize("mode", ["full", "short"])
def test_names_without_a_mangling_prefix_stay_as_they_are(name: str, mode: str) -> None:
    assert demangle(name, mode) == name  # type: ignore[arg-type]
    assert demangle(name, mode) == name  # type: ignore[arg-type]  # the memoised answer too


# MSVC names as llvm-symbolizer prints them: no return type or calling convention (see demangle.py).
@pytest.mark.parametrize(
    ("name", "full"),
    [("_Z1fv", "f()"), ("_ZN3foo3barE", "foo::bar"), ("_RNvC1a1b", "a::b"), ("?f@@YAXXZ", "f(void)"),
     ("__Z1fv", "f()")],
)
def test_names_with_a_mangling_prefix_are_demangled(name: str, full: str) -> None:
    assert demangle(name, "full") == full


# The CLI's one boundary --------------------------------------------------------------------


def test_unexpected_exception_is_one_line_and_exit_70(monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from symbolize.cli.app import app
    from symbolize.cli.exits import EXIT_INTERNAL_ERROR

    def broken(*args: object, **kwargs: object) -> None:
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(api.Session, "open_module", broken)  # what the lookup command calls first
    result = CliRunner().invoke(app, ["lookup", "--obj", "whatever", "0x10"])
    assert result.exit_code == EXIT_INTERNAL_ERROR == 70
    assert result.stderr == (
        "symbolize: error: internal error: RecursionError: maximum recursion depth exceeded"
        " (--debug shows the traceback)\n"
    )
    debug = CliRunner().invoke(app, ["--debug", "lookup", "--obj", "whatever", "0x10"])
    assert isinstance(debug.exception, RecursionError)


def test_debug_works_after_the_command_name(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from symbolize.cli.app import hoist_debug, main

    assert hoist_debug(["lookup", "--obj", "x", "--debug", "0x1"]) == ["--debug", "lookup", "--obj", "x", "0x1"]
    assert hoist_debug(["lookup", "--", "--debug"]) == ["lookup", "--", "--debug"]

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(api.Session, "open_module", broken)
    monkeypatch.setattr(sys, "argv", ["symbolize", "lookup", "--obj", "whatever", "--debug", "0x10"])
    with pytest.raises(RuntimeError, match="boom"):
        main()


def test_a_command_outside_the_boundary_still_ends_in_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import sys

    import symbolize.audit
    from symbolize.cli.app import main

    def broken(*args: object, **kwargs: object) -> None:
        raise KeyError("boom")

    monkeypatch.setattr(symbolize.audit, "audit_binaries", broken)
    monkeypatch.setattr(sys, "argv", ["symbolize", "audit", "whatever"])
    with pytest.raises(SystemExit) as exited:
        main()
    assert exited.value.code == 70
    expected = "symbolize: error: internal error: KeyError: 'boom' (--debug shows the traceback)\n"
    assert capsys.readouterr().err == expected


# Fuzz findings ----------------------------------------------------------------------------


def test_truncated_macho_string_table_is_a_typed_error_not_a_buffer_error(tmp_path: Path) -> None:
    # fuzz_object.py macho: a string table past the end of the file raised MalformedInputError
    # while a view into the mapping was alive, and closing the mapping then raised BufferError.
    data = (MACOS_BIN / "cdemo-x86_64").read_bytes()
    path = tmp_path / "truncated"
    path.write_bytes(data[:-1])
    try:
        results = api.lookup(path, [0x100003F00], use_cache=False)
    except MalformedInputError as error:
        assert error.path == path
    else:
        assert len(results) == 1


def test_a_name_longer_than_the_demangler_cap_is_left_as_it_is() -> None:
    # LLVM's demangler recursed once per pointer level: 100,000 of them crashed the process (that
    # name runs in a subprocess, tests/hostile_run.py's deep_mangled_name); this one is harmless.
    from symbolize.demangle import MAX_DEMANGLE_LENGTH

    long_name = "_Z1f" + "P" * MAX_DEMANGLE_LENGTH + "i"
    assert demangle(long_name, "full") == long_name
    assert demangle(long_name, "short") == long_name
    assert demangle("_Z1f" + "P" * 1000 + "i", "full").startswith("f(int*")


def test_shortening_deeply_nested_brackets_leaves_the_name_whole() -> None:
    from symbolize.demangle import shorten

    text = "f" + "{a" * 5_000 + "}" * 5_000  # recursed once per brace: RecursionError
    assert shorten(text) == text
    assert shorten("ns::f<int>(char)") == "ns::f"


def test_gperftools_cpu_count_past_int64_with_period_zero_is_malformed() -> None:
    # fuzz_profile.py gperftools-cpu: a period of 0 let a count of 2^64-... through the product
    # check, and protobuf refused it (ValueError) as an int64 sample value.
    words = [0, 3, 0, 0, 0, (1 << 64) - 2, 1, 0x1000, 0, 1, 0]
    data = struct.pack(f"<{len(words)}Q", *words)
    with pytest.raises(MalformedInputError, match="count"):
        parse_profile(data, "cpu.prof")


@pytest.mark.parametrize(
    "data",
    [
        struct.pack(">II", 0xCAFEBABE, 0),  # a universal header listing no slice (IndexError)
        struct.pack("<II", 0xFEEDFACF, 7),  # a thin header cut after its cputype (struct.error)
    ],
)
def test_macho_headers_cut_short_are_typed_errors(tmp_path: Path, data: bytes) -> None:
    # fuzz_object.py macho findings.
    path = tmp_path / "short.macho"
    path.write_bytes(data)
    with pytest.raises(MalformedInputError) as raised:
        api.lookup(path, [0x1000], use_cache=False)
    assert raised.value.path == path


def test_pdb_with_a_broken_type_stream_still_names_inlined_frames_lines() -> None:
    # fuzz_pdb.py finding: a TPI stream whose header runs past it raised MalformedInputError from the
    # first inlinee name, after the IPI table was kept; the next lookup then failed an assertion
    # (AssertionError escaped). A broken TPI or IPI now leaves inlined frames unnamed, their lines kept.
    from symbolize.formats.pdb import PdbFile
    from tests.msf_builder import build_msf, streams_of
    from tests.test_pdb import BIN, IMAGE_BASE

    streams: list[bytes | None] = list(streams_of((BIN / "winapp.pdb").read_bytes()))
    tpi = bytearray(streams[2] or b"")
    struct.pack_into("<I", tpi, 4, len(tpi))  # HeaderSize: the records would start past the stream
    streams[2] = bytes(tpi)
    pdb = PdbFile(Path("broken-tpi.pdb"), image_base=IMAGE_BASE, data=build_msf(streams, 4096))
    intact = PdbFile(BIN / "winapp.pdb", image_base=IMAGE_BASE)
    inlined = 0x140001009  # app::insertion_sort inlined into app::sort_values
    for _ in range(2):
        frames = pdb.frames_at(inlined)
        assert [(f.file, f.line) for f in frames] == [(f.file, f.line) for f in intact.frames_at(inlined)]
        assert len(frames) == 2 and frames[-1] == intact.frames_at(inlined)[-1]
