"""The Mach-O reader on the fixtures: slices, segments, identity, symbols, hints.

Expected values come from the build (``fixtures/build_macos.sh``: ``-platform_version macos
11.0 11.0``, the objects the debug map names) and from llvm-objdump where it is installed.
"""

from __future__ import annotations

import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from symbolize.formats.macho.file import MachOFile
from symbolize.formats.macho.load_commands import BuildVersion, read_uuids
from symbolize.formats.macho.slices import list_slices
from symbolize.formats.types import HintKind
from tests.fixtures_data import MACOS_BIN

FIXTURES = MACOS_BIN
LLVM_OBJDUMP = shutil.which("llvm-objdump")


def _write(tmp_path: Path, data: bytes) -> Path:
    path = tmp_path / "universal"
    path.write_bytes(data)
    return path


def _fat_of(slices: list[tuple[bytes, int]], fat64: bool) -> bytes:
    """A universal file over real thin slices, each given its own cpusubtype (16 KiB aligned)."""
    entry = struct.Struct(">iiQQII" if fat64 else ">iiIII")
    header = struct.pack(">II", 0xCAFEBABF if fat64 else 0xCAFEBABE, len(slices))
    offset = 0x4000
    placed = []
    for data, subtype in slices:
        cputype = struct.unpack_from("<i", data, 4)[0]
        patched = bytearray(data)
        struct.pack_into("<i", patched, 8, subtype)  # the slice's own header agrees with the table
        placed.append((cputype, subtype, offset, len(patched), bytes(patched)))
        offset += -(-len(patched) // 0x4000) * 0x4000
    for cputype, subtype, at, size, _data in placed:
        fields = (cputype, subtype, at, size, 14) + ((0,) if fat64 else ())
        header += entry.pack(*fields)
    image = bytearray(header.ljust(0x4000, b"\0"))
    for _cputype, _subtype, at, _size, data in placed:
        image[len(image) :] = bytes(at - len(image))
        image[at : at + len(data)] = data
    return bytes(image)


@pytest.mark.parametrize("fat64", [False, True])
def test_slices_by_cpu_subtype(tmp_path: Path, fat64: bool) -> None:
    """arm64e and x86_64h are told from arm64 and x86_64 by their subtype, in fat and fat64 files."""
    x86 = (FIXTURES / "cppdemo-x86_64").read_bytes()
    arm = (FIXTURES / "cppdemo-arm64").read_bytes()
    path = _write(tmp_path, _fat_of([(x86, 3), (x86, 8), (arm, 0), (arm, 2 | -0x80000000)], fat64))
    assert [s.arch for s in list_slices(path)] == ["x86_64", "x86_64h", "arm64", "arm64e"]
    for arch in ("x86_64", "x86_64h", "arm64", "arm64e"):
        with MachOFile(path, arch=arch) as image:
            assert image.arch == arch
            assert image.universal
            source = "cppdemo-arm64" if arch.startswith("arm64") else "cppdemo-x86_64"
            with MachOFile(FIXTURES / source) as thin:
                assert image.debug_id == thin.debug_id
                assert image.symbols() == thin.symbols()
    assert set(read_uuids(path)) == {"x86_64", "x86_64h", "arm64", "arm64e"}


def test_segments_and_load_base() -> None:
    with MachOFile(FIXTURES / "cppdemo-x86_64") as program, MachOFile(FIXTURES / "libmshape-arm64.dylib") as dylib:
        assert [s.name for s in program.segments()][:2] == ["__PAGEZERO", "__TEXT"]
        assert program.load_base == 0x100000000 and dylib.load_base == 0
        text = next(s for s in program.segments() if s.name == "__TEXT")
        assert text.executable and not next(s for s in program.segments() if s.name == "__PAGEZERO").executable
        assert not program.position_dependent  # ld64.lld links MH_PIE executables
        assert program.build_version == BuildVersion("macos", "11.0", "11.0")


def test_unwind_sections_are_reported() -> None:
    with MachOFile(FIXTURES / "cppdemo-x86_64") as program:
        assert program.has_unwind_info and program.has_eh_frame
    with MachOFile(FIXTURES / "cdemo-x86_64") as program:
        assert program.has_unwind_info == (program.section("__TEXT", "__unwind_info") is not None)


def test_hints_name_the_dsym_and_the_debug_map_objects() -> None:
    with MachOFile(FIXTURES / "cdemo-arm64") as program:
        hints = program.debug_hints()
        assert hints[0].kind is HintKind.DSYM and hints[0].name == "cdemo-arm64"
        assert hints[0].debug_id == program.debug_id
        objects = [hint for hint in hints if hint.kind is HintKind.DEBUG_MAP_OBJECT]
        assert [(hint.name, hint.mtime) for hint in objects] == [("obj/cdemo-arm64.o", None)]  # ZERO_AR_DATE
    with MachOFile(FIXTURES / "cdemo-arm64-stripped") as stripped:
        assert [hint.kind for hint in stripped.debug_hints()] == [HintKind.DSYM]


def test_dsym_sections_serve_dwarf_names() -> None:
    dwarf = FIXTURES / "cppdemo-x86_64.dSYM" / "Contents" / "Resources" / "DWARF" / "cppdemo-x86_64"
    with MachOFile(dwarf) as dsym, MachOFile(FIXTURES / "cppdemo-x86_64") as program:
        assert dsym.debug_id == program.debug_id
        assert dsym.section_data("debug_info") and dsym.section_data("debug_line")
        assert dsym.section_data("debug_str_offsets") == dsym._section_bytes.get(("__DWARF", "__debug_str_offs"))
        assert program.section_data("debug_info") is None


@pytest.mark.skipif(LLVM_OBJDUMP is None, reason="llvm-objdump not installed")
@pytest.mark.parametrize("name", ["cppdemo-x86_64", "cdemo-arm64-stripped", "libmshape-x86_64.dylib"])
def test_function_starts_match_llvm_objdump(name: str) -> None:
    output = subprocess.run(
        [str(LLVM_OBJDUMP), "--macho", "--function-starts", str(FIXTURES / name)],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    listed = [int(line.split()[0], 16) for line in output.splitlines()[1:] if line.strip()]
    with MachOFile(FIXTURES / name) as image:
        assert image.function_starts() == listed
        # Every function symbol ends at the next function start, else at the end of __text.
        text = image.section("__TEXT", "__text")
        assert text is not None
        symbols = image.symbols()
        assert symbols
        for symbol in symbols:
            following = [start for start in listed if start > symbol.vaddr]
            assert symbol.vaddr + symbol.size == (following[0] if following else text.vaddr + text.size)
