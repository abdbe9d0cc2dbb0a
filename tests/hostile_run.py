"""Run one hostile reproducer through the public API or the CLI, in a 3 GiB address space.

``python tests/hostile_run.py CASE``: exits 0 and prints one ``ok`` line when the case gave an
answer or one typed error; anything else (a traceback, MemoryError, RecursionError) exits 1.
tests/test_hostile_limits.py runs every case in its own process with a 20 s timeout.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import resource
import struct
import sys
import tempfile
import traceback
from collections.abc import Callable
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

ADDRESS_SPACE = 3 << 30
MAX_ID = (1 << 64) - 1


def _elf_case(make: Callable[[], tuple[dict[str, bytes], object]]) -> Callable[[Path], str]:
    def run(directory: Path) -> str:
        from symbolize import api
        from symbolize.errors import SymbolizeError
        from tests.test_malformed_elf import SHT_PROGBITS, Section, build_elf, symtab

        sections, where = make()
        vaddrs = list(where) if isinstance(where, list) else [int(str(where))]
        elf_sections = [*symtab(b"sym"), *(Section("." + name, SHT_PROGBITS, data) for name, data in sections.items())]
        path = directory / "case.so"
        path.write_bytes(build_elf(elf_sections))
        try:
            results = api.lookup(path, vaddrs, use_cache=False)
        except SymbolizeError as error:
            return f"typed error: {error}"
        named = sum(1 for result in results if isinstance(result, list))
        return f"{named} of {len(results)} named"

    return run


def _compressed_sections(directory: Path) -> str:
    """Three zstd sections each claiming 4 GiB (was 12 GiB resident); the symbol table still names."""
    import pyzstd

    from symbolize import api
    from symbolize.errors import SymbolizeError
    from tests.test_malformed_elf import SHF_COMPRESSED, SHT_PROGBITS, Section, build_elf, symtab

    stream = pyzstd.compress(b"\0" * (1 << 20))
    chdr = struct.pack("<IIQQ", 2, 0, 4 << 30, 1) + stream
    names = (".debug_info", ".debug_line", ".debug_str")
    path = directory / "bomb.so"
    bombs = [Section(name, SHT_PROGBITS, chdr, flags=SHF_COMPRESSED) for name in names]
    path.write_bytes(build_elf([*symtab(b"sym"), *bombs]))
    try:
        results = api.lookup(path, [0x1004], use_cache=False)
    except SymbolizeError as error:
        raise AssertionError(f"the DWARF's cap failed the symbol table too: {error}") from error
    if not isinstance(results[0], list) or results[0][0].function != "sym":
        raise AssertionError(f"the symbol table does not name 0x1004: {results}")
    return f"answered {results}"


def _nested_inlines_indexed(directory: Path) -> str:
    """6,000 nested inlined calls through the persistent index: built, stored, loaded, looked up
    (the index builder's recursive descent overflowed at 1,200)."""
    from symbolize import api
    from tests import hostile_dwarf as h
    from tests.test_malformed_elf import SHT_PROGBITS, Section, build_elf, symtab

    sections, vaddr = h.nested_inlines_case(6_000)
    path = directory / "nested.so"
    path.write_bytes(build_elf([*symtab(b"sym"), *(Section("." + n, SHT_PROGBITS, d) for n, d in sections.items())]))
    cache = directory / "cache"
    if not api.build_indexes([path], cache_dir=cache):
        raise AssertionError("no index was built")
    (frames,) = api.lookup(path, [vaddr], cache_dir=cache, demangle="none")
    if not isinstance(frames, list) or len(frames) != 6_001 or frames[0].function != "i5999":
        raise AssertionError(f"indexed answer is not the 6,001-frame chain: {str(frames)[:200]}")
    return "6001 frames from the index"


def _cli(arguments: list[str]) -> str:
    """``symbolize ARGS`` in this process; the CLI must end in one line and a known exit code."""
    from symbolize.cli.app import main

    stdout, stderr = io.StringIO(), io.StringIO()
    sys.argv = ["symbolize", *arguments]
    code: object = 0
    with redirect_stdout(stdout), redirect_stderr(stderr):
        try:
            main()
        except SystemExit as exit_:
            code = exit_.code
    errors = stderr.getvalue()
    if "Traceback" in errors or code not in (0, 1, None):
        raise AssertionError(f"exit {code}: {errors}")
    return f"exit {code}: {errors.strip().splitlines()[-1] if errors.strip() else ''}"


def _gzip_bomb(directory: Path) -> str:
    """A 4 MB gzip profile that inflates to 4 GiB."""
    member = gzip.compress(b"\0" * (1 << 20), mtime=0)
    path = directory / "bomb.pb.gz"
    with path.open("wb") as out:
        for _ in range(4096):
            out.write(member)
    return _cli(["profile", str(path), "-o", str(directory / "out.pb.gz"), "--no-cache", "--no-background-index"])


def _profile_ids_at_max(directory: Path) -> str:
    """Location and function ids already 2^64-1, a location split into leaf and caller twins."""
    from symbolize.proto.profile_pb2 import Profile

    binary = ROOT / "fixtures" / "bin" / "cdemo-gcc-dwarf5-pie"
    expected = json.loads((ROOT / "fixtures" / "expected" / (binary.name + ".json")).read_text())
    vaddr = int(expected["addresses"][5]["address"], 16)
    base = 0x555555554000
    profile = Profile(string_table=["", "cpu", "nanoseconds", binary.name])
    profile.sample_type.add(type=1, unit=2)
    profile.mapping.add(id=MAX_ID, memory_start=base, memory_limit=base + 0x100000, filename=3)
    profile.location.add(id=MAX_ID, mapping_id=MAX_ID, address=base + vaddr)
    profile.location.add(id=MAX_ID - 1, mapping_id=MAX_ID, address=base + vaddr + 4)
    profile.function.add(id=MAX_ID, name=3)
    profile.sample.add(location_id=[MAX_ID, MAX_ID - 1], value=[1])
    profile.sample.add(location_id=[MAX_ID - 1, MAX_ID], value=[1])
    path = directory / "ids.pb"
    path.write_bytes(profile.SerializeToString())
    out = directory / "ids.symbolized.pb"
    result = _cli(["profile", str(path), "-o", str(out), "--binary", str(binary), "--no-cache",
                   "--no-background-index"])
    written = Profile.FromString(out.read_bytes())
    ids = [location.id for location in written.location]
    if len(set(ids)) != len(ids) or not all(0 < i <= MAX_ID for i in ids):
        raise AssertionError(f"bad location ids {ids}")
    return result


def _deep_mangled_name(directory: Path) -> str:
    """A symbol 100,000 pointer levels deep, looked up through the CLI (crashed LLVM's demangler)."""
    from tests.test_malformed_elf import build_elf, symtab

    path = directory / "deep.so"
    path.write_bytes(build_elf(symtab(b"_Z1f" + b"P" * 100_000 + b"i")))
    return _cli(["lookup", "--obj", str(path), "--no-cache", "--no-background-index", "0x1004"])[:80]


def _gperftools_count_past_int64(directory: Path) -> str:
    """fuzz_profile.py gperftools-cpu's finding through the CLI: a count past int64 with period 0."""
    words = [0, 3, 0, 0, 0, (1 << 64) - 2, 1, 0x1000, 0, 1, 0]
    path = directory / "cpu.prof"
    path.write_bytes(struct.pack(f"<{len(words)}Q", *words))
    return _cli(["profile", str(path), "-o", str(directory / "out.pb"), "--no-cache", "--no-background-index"])


def _macho_cut_short(directory: Path) -> str:
    """fuzz_object.py macho's findings through the CLI: headers cut short, a string table past the end."""
    binary = (ROOT / "fixtures" / "bin" / "macos" / "cdemo-x86_64").read_bytes()
    outcomes = []
    for name, data in (("fat-without-slices", struct.pack(">II", 0xCAFEBABE, 0)),
                       ("thin-cut", struct.pack("<II", 0xFEEDFACF, 7)), ("strings-cut", binary[:-1])):
        path = directory / name
        path.write_bytes(data)
        outcomes.append(_cli(["lookup", "--obj", str(path), "--no-cache", "--no-background-index", "0x100003f00"]))
    return "; ".join(outcome[:60] for outcome in outcomes)


def _many_one_field_locations(directory: Path) -> str:
    """25 million one-field locations (a 100 MB pprof, gzipped to ~830 KB with padding that keeps
    it inside the 128x inflation cap): the protobuf runtime died of SIGSEGV at 3 GB."""
    payload = b"\x32\x00" + b"\x22\x02\x08\x01" * 25_000_000
    packed = gzip.compress(payload, compresslevel=1, mtime=0)
    padding = b"\0" * max(0, len(payload) // 127 - len(packed))
    path = directory / "locations.pb.gz"
    path.write_bytes(packed + padding)
    outcome = _cli(["profile", str(path), "-o", str(directory / "out.pb.gz"), "--no-cache", "--no-background-index"])
    if "locations" not in outcome or str(path) not in outcome:
        raise AssertionError(f"not refused naming the file and the limit: {outcome}")
    return outcome


def _million_load_commands(directory: Path) -> str:
    """A thin Mach-O with a million 16-byte load commands (was 85 s and 2.8 GB in macholib)."""
    count, command = 1_000_000, struct.pack("<IIQ", 0x2A, 16, 0)  # LC_SOURCE_VERSION
    header = struct.pack("<IiiIIII I", 0xFEEDFACF, 0x01000007, 3, 2, count, count * len(command), 0, 0)
    path = directory / "commands"
    path.write_bytes(header + command * count)
    outcome = _cli(["lookup", "--obj", str(path), "--no-cache", "--no-background-index", "0x100003f00"])
    if "load commands" not in outcome:
        raise AssertionError(f"not refused for its load commands: {outcome}")
    return outcome


def _unmatched_mappings_in_a_large_directory(directory: Path) -> str:
    """2,000 mappings no file matches, one --search-path of 20,000 entries (was 40 s: the directory
    was listed again for every mapping)."""
    # On tmpfs where there is one: 20,000 files take a minute to create on a busy disk.
    with tempfile.TemporaryDirectory(dir="/dev/shm" if Path("/dev/shm").is_dir() else directory) as search_dir:
        search = Path(search_dir)
        for number in range(20_000):
            os.close(os.open(search / f"lib{number}.so", os.O_CREAT | os.O_WRONLY, 0o644))
        return _profile_with_unmatched_mappings(directory, search)


def _profile_with_unmatched_mappings(directory: Path, search: Path) -> str:
    from symbolize.proto.profile_pb2 import Profile

    profile = Profile(string_table=["", "cpu", "nanoseconds"])
    profile.sample_type.add(type=1, unit=2)
    for number in range(1, 2_001):
        profile.string_table.append(f"/opt/app/libmissing{number}.so")
        base = number << 24
        profile.mapping.add(id=number, memory_start=base, memory_limit=base + 0x1000,
                            filename=len(profile.string_table) - 1)
        profile.location.add(id=number, mapping_id=number, address=base + 0x10)
        profile.sample.add(location_id=[number], value=[1])
    path = directory / "mappings.pb"
    path.write_bytes(profile.SerializeToString())
    return _cli(["profile", str(path), "-o", str(directory / "out.pb"), "--search-path", str(search),
                 "--no-cache", "--no-background-index"])


def _long_stdin_line(directory: Path) -> str:
    """One 32 MiB line on stdin to ``lookup`` (was 17 s: each read chunk was joined to all before it)."""
    binary = ROOT / "fixtures" / "bin" / "cdemo-gcc-dwarf5-pie"
    line = b"0x" + b"1" * (32 << 20) + b"\n0x1139\n"
    saved = sys.stdin
    sys.stdin = io.TextIOWrapper(io.BufferedReader(io.BytesIO(line)))
    try:
        return _cli(["lookup", "--obj", str(binary), "--no-cache", "--no-background-index"])
    finally:
        sys.stdin = saved


def _cases() -> dict[str, Callable[[Path], str]]:
    from tests import hostile_dwarf as h

    def line_header_bomb() -> tuple[dict[str, bytes], object]:
        lines = h.line_header_v5(directory_formats=b"\0", directory_count=(1 << 32) - 1)
        body = h.cu_lines_die("a.c", 0x2000, 0x100) + h.function_die("f", 0x2000, 0x100) + b"\0"
        return {"debug_info": h.unit(body, h.Encoding(version=5)), "debug_abbrev": h.common_abbrevs(),
                "debug_line": lines}, 0x2010

    return {
        "deep_skip": _elf_case(h.deep_skip_case),
        "shared_table": _elf_case(h.shared_table_case),
        "nested_inlines": _elf_case(h.nested_inlines_case),
        "nested_inlines_indexed": _nested_inlines_indexed,
        "huge_lines": _elf_case(h.huge_lines_case),
        "past_address_space": _elf_case(h.past_address_space_case),
        "bad_version": _elf_case(lambda: h.bad_header_case(version=9)),
        "bad_address_size": _elf_case(lambda: h.bad_header_case(addr_size=3)),
        "line_header_bomb": _elf_case(line_header_bomb),
        "compressed_sections": _compressed_sections,
        "gzip_bomb": _gzip_bomb,
        "profile_ids_at_max": _profile_ids_at_max,
        "deep_mangled_name": _deep_mangled_name,
        "gperftools_count_past_int64": _gperftools_count_past_int64,
        "macho_cut_short": _macho_cut_short,
        "abbrev_offsets_apart": _elf_case(h.abbrev_offsets_apart_case),
        "many_one_field_locations": _many_one_field_locations,
        "million_load_commands": _million_load_commands,
        "unmatched_mappings_in_a_large_directory": _unmatched_mappings_in_a_large_directory,
        "long_stdin_line": _long_stdin_line,
    }


def main() -> int:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))
    cases = _cases()
    if sys.argv[1:] == ["--list"]:
        print("\n".join(cases))
        return 0
    name = sys.argv[1]
    with tempfile.TemporaryDirectory() as directory:
        try:
            outcome = cases[name](Path(directory))
        except BaseException:
            traceback.print_exc()
            return 1
    print(f"ok {name}: {outcome}"[:500])
    return 0


if __name__ == "__main__":
    sys.exit(main())
