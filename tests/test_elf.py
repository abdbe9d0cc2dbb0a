"""ElfFile on the built fixtures, checked against llvm-readelf and binutils where installed."""

from __future__ import annotations

import lzma
import re
import shutil
import subprocess
import zlib
from pathlib import Path

import pytest

from symbolize.formats import ElfFile, open_object
from symbolize.formats.errors import MalformedInputError, NotFoundError, UnsupportedFormatError
from symbolize.formats.types import DebugIdKind, Frame
from tests.fixtures_data import BIN

ALL = sorted(path.name for path in BIN.iterdir() if path.is_file()) if BIN.is_dir() else []
EXECUTABLES = [name for name in ALL if not name.endswith((".dwo", ".dwp", ".debug"))]
COMPRESSED = ["cdemo-gcc-gz-zlib", "cdemo-gcc-gz-zstd", "cdemo-gcc-zdebug", "rustdemo-full"]
DEBUG_SECTIONS = ["debug_info", "debug_abbrev", "debug_line", "debug_str", "debug_line_str", "debug_aranges"]


def readelf(*args: str) -> str:
    tool = shutil.which("llvm-readelf")
    if tool is None:
        pytest.skip("llvm-readelf not installed")
    return subprocess.run([tool, *args], check=True, capture_output=True, text=True).stdout


def fixture(name: str) -> ElfFile:
    path = BIN / name
    if not path.is_file():
        pytest.fail(f"fixture {name} missing: run fixtures/build.sh")
    opened = open_object(path)
    assert isinstance(opened, ElfFile)
    return opened


@pytest.mark.parametrize("name", ALL)
def test_build_id_matches_readelf(name: str) -> None:
    match = re.search(r"Build ID: ([0-9a-f]+)", readelf("--notes", str(BIN / name)))
    with fixture(name) as elf:
        if match is None:
            assert elf.debug_id is None
        else:
            assert elf.debug_id is not None
            assert elf.debug_id.kind is DebugIdKind.GNU_BUILD_ID
            assert str(elf.debug_id) == match.group(1)


@pytest.mark.parametrize("name", EXECUTABLES)
def test_header_facts_match_readelf(name: str) -> None:
    header = readelf("--file-header", str(BIN / name))
    with fixture(name) as elf:
        assert elf.format == "elf"
        assert elf.arch == ("x86_64" if "X86-64" in header else elf.arch)
        assert elf.position_dependent == ("EXEC (Executable file)" in header)


@pytest.mark.parametrize("name", EXECUTABLES)
def test_segments_match_readelf(name: str) -> None:
    with fixture(name) as elf:
        assert_segments_match_readelf(elf)


def assert_segments_match_readelf(elf: ElfFile) -> None:
    expected = []
    for line in readelf("--program-headers", "--wide", str(elf.path)).splitlines():
        fields = line.split()
        if fields and fields[0] == "LOAD":
            offset, vaddr, _paddr, filesz, memsz = (int(value, 16) for value in fields[1:6])
            expected.append((vaddr, memsz, offset, filesz, "E" in fields[6:-1]))
    got = [(s.vaddr, s.memsz, s.file_offset, s.filesz, s.executable) for s in elf.segments()]
    assert got == sorted(expected)


def readelf_code_sections(path: Path) -> set[str]:
    """Indexes (as readelf prints them) of the sections with the executable (X) flag."""
    found = set()
    for line in readelf("--sections", "--wide", str(path)).splitlines():
        match = re.match(r"\s*\[\s*(\d+)\]\s+\S+\s+\S+(?:\s+[0-9a-f]+){4}\s+(\S*?)\s+\d+\s+\d+\s+\d+\s*$", line)
        if match and "X" in match.group(2):
            found.add(match.group(1))
    return found


# llvm's ELFObjectFile::getSymbolFlags: names it marks format-specific (mapping symbols), by machine.
MAPPING_SYMBOLS = {"AArch64": ("$d", "$x"), "ARM": ("$a", "$d", "$t"), "RISC-V": ("$d", "$x")}


def readelf_functions(path: Path) -> set[tuple[str, int, int]]:
    """Function symbols as llvm-symbolizer takes them: FUNC and IFUNC, and NOTYPE or OBJECT in code,
    mapping symbols left out."""
    code = readelf_code_sections(path)
    machine = re.search(r"Machine:\s+(\S+)", readelf("--file-header", str(path)))
    mapping_symbols = MAPPING_SYMBOLS.get(machine.group(1) if machine else "", ())
    functions = set()
    for line in readelf("--symbols", "--wide", str(path)).splitlines():
        fields = line.split()
        if len(fields) != 8 or fields[6] == "UND" or (mapping_symbols and fields[7].startswith(mapping_symbols)):
            continue
        if fields[3] in ("FUNC", "IFUNC", "GNU_IFUNC") or (fields[3] in ("NOTYPE", "OBJECT") and fields[6] in code):
            functions.add((fields[7].split("@")[0], int(fields[1], 16), int(fields[2], 0)))
    return functions


@pytest.mark.parametrize("name", EXECUTABLES)
def test_symbols_match_readelf(name: str) -> None:
    with fixture(name) as elf:
        symbols = elf.symbols()
        assert [s.vaddr for s in symbols] == sorted(s.vaddr for s in symbols)
        got = {(s.name, s.vaddr, s.size) for s in symbols}
    expected = readelf_functions(BIN / name)
    # Both tables may list a symbol; the reader keeps one (name, address) with the larger size.
    assert {(n, v) for n, v, _ in got} == {(n, v) for n, v, _ in expected}
    assert got <= expected


@pytest.mark.parametrize("name", ["cdemo-gcc-symtab", "cdemo-gcc-debuglink"])
def test_frames_fall_back_to_symbols(name: str) -> None:
    with fixture(name) as elf:
        sized = [s for s in elf.symbols() if s.size > 0]
        assert sized
        for symbol in sized:
            expected = [Frame(function=symbol.name, file=symbol.source_file)]
            assert elf.frames_at(symbol.vaddr + symbol.size - 1) == expected
            assert elf.symbol_at(symbol.vaddr) == symbol


@pytest.mark.parametrize("name", ["cdemo-gcc-symtab", "cppdemo-clang-dwarf5-pie"])
def test_local_symbols_carry_their_stt_file(name: str) -> None:
    expected: dict[str, str | None] = {}
    source = None
    for line in readelf("--symbols", "--wide", str(BIN / name)).splitlines():
        fields = line.split()
        if len(fields) in (7, 8) and fields[3] == "FILE":
            source = fields[7] if len(fields) == 8 else None  # a nameless STT_FILE ends the previous one
        elif len(fields) == 8 and fields[3] == "FUNC" and fields[6] != "UND":
            expected[fields[7].split("@")[0]] = source if fields[4] == "LOCAL" else None
    with fixture(name) as elf:
        got = {s.name: s.source_file for s in elf.symbols()}
    assert any(got.values())
    assert got == expected


def test_zero_size_symbol_reaches_the_next_symbol() -> None:
    """As llvm-symbolizer reads a symbol table: ``_init`` (size 0) names the PLT stubs after it."""
    with fixture("cdemo-gcc-symtab") as elf:
        init = next(s for s in elf.symbols() if s.name == "_init")
        assert init.size == 0
        next_start = min(s.vaddr for s in elf.symbols() if s.vaddr > init.vaddr)
        sections = readelf("--sections", "--wide", str(BIN / "cdemo-gcc-symtab"))
        match = re.search(r"\.init\s+PROGBITS\s+([0-9a-f]+)\s+[0-9a-f]+\s+([0-9a-f]+)", sections)
        assert match is not None
        init_end = int(match.group(1), 16) + int(match.group(2), 16)
        assert next_start > init_end  # the case that matters: the gap crosses into .plt
        assert elf.symbol_at(init_end) == init
        assert elf.symbol_at(next_start - 1) == init
        assert elf.symbol_at(next_start) != init


def test_debug_link_and_crc() -> None:
    with fixture("cdemo-gcc-debuglink") as elf:
        link = elf.debug_link()
    assert link is not None
    assert link.filename == "cdemo-gcc-debuglink.debug"
    assert link.crc32 == zlib.crc32((BIN / link.filename).read_bytes())
    with fixture("cdemo-gcc-dwarf5-pie") as elf:
        assert elf.debug_link() is None


def decompressed_copy(name: str, tmp_path: Path) -> Path:
    tool = shutil.which("objcopy")
    if tool is None:
        pytest.skip("binutils objcopy not installed")
    out = tmp_path / f"{name}.plain"
    subprocess.run([tool, "--decompress-debug-sections", str(BIN / name), str(out)], check=True)
    return out


@pytest.mark.parametrize("name", COMPRESSED)
def test_compressed_sections_match_objcopy(name: str, tmp_path: Path) -> None:
    plain = ElfFile(decompressed_copy(name, tmp_path))
    with fixture(name) as elf, plain:
        assert elf.has_dwarf()
        for section in DEBUG_SECTIONS:
            expected = plain.section_data(section)
            got = elf.section_data(section)
            assert (got is None) == (expected is None), section
            if got is not None and expected is not None:
                assert bytes(got) == bytes(expected), section


def test_stripped_debug_sections_count_as_absent() -> None:
    with fixture("cdemo-gcc-debuglink") as elf:
        assert elf.section_data("debug_info") is None
        assert not elf.debug_info().has_dwarf
    with fixture("cdemo-gcc-debuglink.debug") as debug:
        assert debug.debug_info().has_dwarf


@pytest.mark.parametrize("name", [n for n in EXECUTABLES if re.search(r"dwarf[45]", n)])
def test_summary_dwarf_versions(name: str) -> None:
    version = int(re.search(r"dwarf([45])", name).group(1))  # type: ignore[union-attr]
    with fixture(name) as elf:
        summary = elf.debug_info()
    assert summary.has_dwarf and summary.has_line_info and summary.has_symbols
    assert version in summary.dwarf_versions
    assert not summary.split_dwarf


def test_split_dwarf_summary() -> None:
    # Finding the .dwo/.dwp is discovery's job (tests/test_locators.py); the reader only says it has split units.
    with fixture("cdemo-clang-split") as elf:
        assert elf.debug_info().split_dwarf


def test_split_dwarf_without_resolver_names_from_symbols() -> None:
    # Opened with no resolver, the reader opens no other file: a split unit's DIEs stay unread,
    # so only the skeleton's line table and the symbol table answer (one frame, no DW_AT_decl_line).
    with fixture("cdemo-clang-split") as elf:
        symbol = next(s for s in elf.symbols() if s.size > 0 and s.name == "main")
        frames = elf.frames_at(symbol.vaddr)
        assert [(frame.function, frame.start_line) for frame in frames] == [("main", 0)]
        assert frames[0].file is not None and frames[0].file.endswith("cdemo.c") and frames[0].line > 0


def test_mini_debug_info(tmp_path: Path) -> None:
    objcopy = shutil.which("objcopy")
    if objcopy is None:
        pytest.skip("binutils objcopy not installed")
    source = BIN / "cdemo-gcc-symtab"
    mini, stripped, out = tmp_path / "mini", tmp_path / "stripped", tmp_path / "with-debugdata"
    # The MiniDebugInfo recipe: keep .symtab only, xz it, embed it in the fully stripped binary.
    subprocess.run([objcopy, "--strip-debug", "--remove-section=.dynsym", str(source), str(mini)], check=True)
    (tmp_path / "mini.xz").write_bytes(lzma.compress(mini.read_bytes(), format=lzma.FORMAT_XZ))
    subprocess.run([objcopy, "--strip-all", str(source), str(stripped)], check=True)
    subprocess.run(
        [objcopy, f"--add-section=.gnu_debugdata={tmp_path / 'mini.xz'}", str(stripped), str(out)], check=True
    )
    with ElfFile(out) as elf, ElfFile(source) as original:
        assert {(s.name, s.vaddr) for s in elf.symbols()} == {(s.name, s.vaddr) for s in original.symbols()}
        local = next(s for s in original.symbols() if s.name == "hash_phase")
        assert elf.frames_at(local.vaddr) == [Frame(function="hash_phase")]


def test_mini_debug_info_is_read_one_level_deep(tmp_path: Path) -> None:
    # A payload that itself carries .gnu_debugdata (an xz nest, one more decompression per level)
    # is read for its own tables only: the inner payload's symbols do not appear.
    objcopy = shutil.which("objcopy")
    if objcopy is None:
        pytest.skip("binutils objcopy not installed")
    source = BIN / "cdemo-gcc-symtab"
    inner, outer_mini, stripped, out = (tmp_path / name for name in ("inner", "outer", "stripped", "out"))
    subprocess.run([objcopy, "--strip-debug", "--remove-section=.dynsym", str(source), str(inner)], check=True)
    (tmp_path / "inner.xz").write_bytes(lzma.compress(inner.read_bytes(), format=lzma.FORMAT_XZ))
    # The outer payload: no symbol tables of its own, the inner payload as its .gnu_debugdata.
    subprocess.run([objcopy, "--strip-all", str(source), str(stripped)], check=True)
    subprocess.run(
        [objcopy, f"--add-section=.gnu_debugdata={tmp_path / 'inner.xz'}", str(stripped), str(outer_mini)],
        check=True,
    )
    (tmp_path / "outer.xz").write_bytes(lzma.compress(outer_mini.read_bytes(), format=lzma.FORMAT_XZ))
    subprocess.run(
        [objcopy, f"--add-section=.gnu_debugdata={tmp_path / 'outer.xz'}", str(stripped), str(out)], check=True
    )
    with ElfFile(out) as elf, ElfFile(source) as original:
        local = next(s for s in original.symbols() if s.name == "hash_phase")
        assert "hash_phase" not in {s.name for s in elf.symbols()}
        assert elf.frames_at(local.vaddr) == []


@pytest.mark.parametrize(
    ("magic", "what"),
    [
        (b"#!/bin/sh\n", "not an object file"),
        (b"", "not an object file"),
    ],
)
def test_open_object_refuses_other_formats(magic: bytes, what: str, tmp_path: Path) -> None:
    path = tmp_path / "thing"
    path.write_bytes(magic + bytes(64))
    if not magic:
        path.write_bytes(b"")
    with pytest.raises(UnsupportedFormatError, match=what) as info:
        open_object(path)
    assert info.value.path == path


def test_open_object_missing_file(tmp_path: Path) -> None:
    with pytest.raises(NotFoundError) as info:
        open_object(tmp_path / "absent")
    assert info.value.path == tmp_path / "absent"


CROSS_SOURCE = """
__attribute__((noinline)) static int helper(int x) { return x * 3 + 1; }
int api(int x) { return helper(x) + helper(x + 1); }
int api2(int *p) { return p[0] + api(p[1]); }
"""
CROSS_TARGETS = {
    "i386-linux-gnu": ("i386", 4, True),
    "powerpc-linux-gnu": ("ppc", 4, False),
    "powerpc64-linux-gnu": ("ppc64", 8, False),
    "aarch64-linux-gnu": ("aarch64", 8, True),
    "thumbv7-linux-gnueabihf": ("arm", 4, True),
    "riscv64-linux-gnu": ("riscv64", 8, True),
}


@pytest.mark.parametrize("target", sorted(CROSS_TARGETS))
def test_other_classes_and_byte_orders(target: str, tmp_path: Path) -> None:
    clang, lld, objcopy = shutil.which("clang"), shutil.which("ld.lld"), shutil.which("llvm-objcopy")
    if clang is None or lld is None or objcopy is None:
        pytest.skip("clang, ld.lld or llvm-objcopy not installed")
    source, library, plain = tmp_path / "t.c", tmp_path / "t.so", tmp_path / "plain.so"
    source.write_text(CROSS_SOURCE)
    flags = ["-O1", "-g", "-gz=zlib", "-ffreestanding", "-fPIC", "-shared", "-nostdlib", "-fuse-ld=lld"]
    command = [clang, f"--target={target}", *flags, "-Wl,--build-id=sha1", str(source), "-o", str(library)]
    subprocess.run(command, check=True, capture_output=True)
    subprocess.run([objcopy, "--decompress-debug-sections", str(library), str(plain)], check=True)
    arch, address_size, little_endian = CROSS_TARGETS[target]
    with ElfFile(library) as elf, ElfFile(plain) as decompressed:
        assert (elf.arch, elf.address_size, elf.little_endian) == (arch, address_size, little_endian)
        match = re.search(r"Build ID: ([0-9a-f]+)", readelf("--notes", str(library)))
        assert match is not None and str(elf.debug_id) == match.group(1)
        assert_segments_match_readelf(elf)
        thumb = ~1 if arch == "arm" else ~0  # Thumb functions have bit 0 set in st_value
        expected = {(name, vaddr & thumb, size) for name, vaddr, size in readelf_functions(library)}
        assert {(s.name, s.vaddr, s.size) for s in elf.symbols()} == expected
        for section in DEBUG_SECTIONS:
            got, want = elf.section_data(section), decompressed.section_data(section)
            assert (None if got is None else bytes(got)) == (None if want is None else bytes(want)), section
        assert elf.debug_info().dwarf_versions == decompressed.debug_info().dwarf_versions != ()


@pytest.mark.parametrize("name", ["cdemo-gcc-dwarf5-pie", *COMPRESSED])
def test_section_views_read_as_the_section_data(name: str) -> None:
    # The compiled source reads sections in place: a view of the mapping where the section is stored
    # uncompressed, else the decompressed bytes; either way the bytes section_data gives.
    with fixture(name) as elf:
        for section in DEBUG_SECTIONS:
            view, data = elf.section_view(section), elf.section_data(section)
            assert (view is None) == (data is None), section
            if view is not None and data is not None:
                assert bytes(view) == bytes(data), section
                stored = elf._headers.by_name.get("." + section)
                assert isinstance(view, memoryview) == (stored is not None and not stored.sh_flags & 0x800), section


def test_a_file_shrunk_while_open_is_refused_by_its_section_views(tmp_path: Path) -> None:
    path = tmp_path / "shrinks"
    shutil.copyfile(BIN / "cdemo-gcc-dwarf5-pie", path)
    with ElfFile(path) as elf:
        section = elf._headers.by_name[".debug_str"]
        with path.open("r+b") as handle:
            handle.truncate(section.sh_offset + 1)
        with pytest.raises(MalformedInputError, match="shrank while open") as raised:
            elf.section_view("debug_str")
        assert raised.value.path == path
        # The DWARF breaks with the same typed error, with or without the compiled source.
        with pytest.raises(MalformedInputError, match="shrank while open"):
            elf._dwarf_info()


def test_the_compiled_source_reads_its_views_after_the_file_is_closed() -> None:
    # The compiled source keeps the mapping's views exported: close() cannot unmap under it (the mmap
    # refuses to close while exported, close() lets it go with the last view) and it still answers.
    from symbolize.formats.dwarf.answers import DwarfSymbolAnswers
    from symbolize.formats.native import kernels

    if kernels is None:
        pytest.skip("the compiled kernels are not running")
    elf = fixture("cdemo-gcc-dwarf5-pie")
    source = elf._answers()
    assert isinstance(source, DwarfSymbolAnswers)
    units = source._compiled_units()
    assert units is not None
    assert isinstance(source.dwarf.sections_by_name()[".debug_str"], memoryview)
    offsets = [state.unit.offset for state in source.dwarf._load_units()]
    before = [units.unit_runs(offset, False) for offset in offsets]
    elf.close()
    after = [units.unit_runs(offset, False) for offset in offsets]
    assert all(run is not None for run in after)
    assert [run.take_columns() for run in after] == [run.take_columns() for run in before if run is not None]
    with pytest.raises(ValueError, match="taken already"):  # handed out once: held once, by who took them
        after[0].take_columns()


_ELF_FIXTURES = sorted(
    path for path in [*BIN.iterdir(), *(BIN.parent / "symbol-choice").iterdir()]
    if path.is_file() and path.read_bytes()[:4] == b"\x7fELF"
)


@pytest.mark.parametrize("path", _ELF_FIXTURES, ids=lambda path: path.name)
def test_the_symbol_index_of_every_table_entry_is_that_of_the_deduplicated_symbols(path: Path) -> None:
    """ElfFile builds its symbol index from every table's rows as listed (a cold lookup skips
    deduplicating by name, and decodes a name only when asked): the same starts, ends and symbols
    as from the deduplicated list."""
    from symbolize.formats.elf.symtab import all_function_symbols
    from symbolize.formats.symbols import SymbolIndex

    with ElfFile(path) as elf:
        entries = elf._function_entries()
        index, deduplicated = elf._symbol_index(), SymbolIndex(all_function_symbols(entries))
        assert len(entries) >= len(deduplicated.starts)
        assert (index.starts, index.ends, index.stops, list(index.symbols)) == (
            deduplicated.starts, deduplicated.ends, deduplicated.stops, deduplicated.symbols
        )
