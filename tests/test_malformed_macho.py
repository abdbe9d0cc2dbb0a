"""Hostile Mach-O input: one typed error (or an unnamed address), never a stray exception or a hang.

Hand-made bytes for each malformation the format allows, then a bounded mutation fuzz over the
real fixtures.
"""

from __future__ import annotations

import struct
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from symbolize.formats.errors import MalformedInputError, SymbolizeError, UnsupportedFormatError
from symbolize.formats.macho.debugmap import DebugMapSource
from symbolize.formats.macho.file import MachOFile
from symbolize.formats.macho.load_commands import LC_FUNCTION_STARTS, LC_SEGMENT_64, LC_SYMTAB, LC_UUID, read_uuids
from symbolize.formats.macho.slices import list_slices
from tests.fixtures_data import MACOS_BIN

FIXTURES = MACOS_BIN
CPU_X86_64 = 0x01000007
CPU_ARM64 = 0x0100000C
UUID = bytes(range(16))


def _segment(name: bytes, vmaddr: int, vmsize: int, fileoff: int, filesize: int, sections: list[bytes]) -> bytes:
    body = struct.pack("<16sQQQQiiII", name, vmaddr, vmsize, fileoff, filesize, 7, 5, len(sections), 0)
    return struct.pack("<II", LC_SEGMENT_64, 8 + len(body) + 80 * len(sections)) + body + b"".join(sections)


def _section(sectname: bytes, segname: bytes, addr: int, size: int, offset: int, flags: int) -> bytes:
    return struct.pack("<16s16sQQIIIIIIII", sectname, segname, addr, size, offset, 0, 0, 0, flags, 0, 0, 0)


def _macho(commands: list[bytes], tail: bytes = b"", ncmds: int | None = None, sizeofcmds: int | None = None,
           cputype: int = CPU_X86_64) -> bytes:  # fmt: skip
    body = b"".join(commands)
    header = struct.pack(
        "<IiiIIIII", 0xFEEDFACF, cputype, 3, 2, len(commands) if ncmds is None else ncmds,
        len(body) if sizeofcmds is None else sizeofcmds, 0x200000, 0,
    )  # fmt: skip
    return header + body + tail


def _uuid_command() -> bytes:
    return struct.pack("<II", LC_UUID, 24) + UUID


def _text_segment(text_offset: int, text_size: int) -> bytes:
    text = _section(b"__text", b"__TEXT", 0x100000000 + text_offset, text_size, text_offset, 0x80000400)
    return _segment(b"__TEXT", 0x100000000, 0x4000, 0, 0x4000, [text])


def _symtab_command(symoff: int, nsyms: int, stroff: int, strsize: int) -> bytes:
    return struct.pack("<IIIIII", LC_SYMTAB, 24, symoff, nsyms, stroff, strsize)


def _write(tmp_path: Path, data: bytes, name: str = "bin") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def _good_image(symbols: list[tuple[int, int]], strings: bytes, function_starts: bytes = b"") -> bytes:
    """A thin x86_64 image: __TEXT with __text at 0x100000400, a symbol table at 0x800."""
    commands = [_text_segment(0x400, 0x100), _uuid_command()]
    commands.append(_symtab_command(0x800, len(symbols), 0x900, len(strings)))
    if function_starts:
        commands.append(struct.pack("<IIII", LC_FUNCTION_STARTS, 16, 0xA00, len(function_starts)))
    head = _macho(commands)
    image = bytearray(head.ljust(0xC00, b"\0"))
    for position, (strx, value) in enumerate(symbols):
        struct.pack_into("<IBBHQ", image, 0x800 + 16 * position, strx, 0x0F, 1, 0, value)
    image[0x900 : 0x900 + len(strings)] = strings
    image[0xA00 : 0xA00 + len(function_starts)] = function_starts
    return bytes(image)


def test_a_hand_made_image_reads() -> None:
    """The builder makes real Mach-O: the malformed cases below differ from it in one field."""
    data = _good_image([(1, 0x100000400), (7, 0x100000480)], b"\0_main\0_other\0", b"\x80\x08\x80\x01\0\0")
    with tempfile.TemporaryDirectory() as scratch:
        image = MachOFile(_write(Path(scratch), data))
        assert image.debug_id is not None and image.debug_id.value == UUID
        assert [(s.name, s.vaddr, s.size) for s in image.symbols()] == [
            ("main", 0x100000400, 0x80),
            ("other", 0x100000480, 0x80),
        ]
        assert image.function_starts() == [0x100000400, 0x100000480]
        assert image.frames_at(0x100000490)[0].function == "other"
        image.close()


def test_load_commands_past_the_end(tmp_path: Path) -> None:
    data = _macho([_uuid_command()], sizeofcmds=4096)
    with pytest.raises(MalformedInputError):
        MachOFile(_write(tmp_path, data))
    with pytest.raises(MalformedInputError):
        read_uuids(_write(tmp_path, data))


def test_more_load_commands_than_bytes(tmp_path: Path) -> None:
    data = _macho([struct.pack("<II", 0x7777, 16) + bytes(8)], ncmds=0xFFFFFFFF)
    with pytest.raises(MalformedInputError):
        MachOFile(_write(tmp_path, data))
    with pytest.raises(MalformedInputError):
        read_uuids(_write(tmp_path, data))


@pytest.mark.parametrize("cmd", [LC_UUID, LC_SEGMENT_64, 0x7777])
def test_cmdsize_zero(tmp_path: Path, cmd: int) -> None:
    data = _macho([struct.pack("<II", cmd, 0) + bytes(24)])
    with pytest.raises(MalformedInputError):
        MachOFile(_write(tmp_path, data))
    with pytest.raises(MalformedInputError):
        read_uuids(_write(tmp_path, data))


def test_section_past_the_end(tmp_path: Path) -> None:
    data = _macho([_text_segment(0x400, 0x100000)]).ljust(0x800, b"\0")
    with pytest.raises(MalformedInputError):
        MachOFile(_write(tmp_path, data))


def _fat(slices: list[tuple[int, int, int]], total: int) -> bytes:
    header = struct.pack(">II", 0xCAFEBABE, len(slices))
    for cputype, offset, size in slices:
        header += struct.pack(">iiIII", cputype, 0, offset, size, 12)
    return header.ljust(total, b"\0")


@pytest.mark.parametrize(
    "slices",
    [
        [(CPU_X86_64, 0x1000, 0x100000)],  # past the end of the file
        [(CPU_X86_64, 0x1000, 0x1000), (CPU_ARM64, 0x1800, 0x1000)],  # overlapping
        [(CPU_X86_64, 0x4, 0x1000)],  # inside the fat header
        [(CPU_X86_64, 0x1000, 0)],  # empty
    ],
)
def test_bad_fat_slices(tmp_path: Path, slices: list[tuple[int, int, int]]) -> None:
    path = _write(tmp_path, _fat(slices, 0x3000))
    with pytest.raises(MalformedInputError):
        list_slices(path)
    with pytest.raises(MalformedInputError):
        MachOFile(path)


def test_a_java_class_file_is_not_universal(tmp_path: Path) -> None:
    path = _write(tmp_path, b"\xca\xfe\xba\xbe\x00\x00\x00\x34" + bytes(64))
    with pytest.raises(UnsupportedFormatError):
        MachOFile(path)


def test_fat_table_past_the_end(tmp_path: Path) -> None:
    path = _write(tmp_path, struct.pack(">II", 0xCAFEBABE, 20) + bytes(16))
    with pytest.raises(MalformedInputError):
        list_slices(path)


def test_missing_arch_names_the_slices() -> None:
    with pytest.raises(UnsupportedFormatError, match="x86_64, arm64"):
        MachOFile(FIXTURES / "cppdemo-universal", arch="arm64e")


def test_truncated_symbol_table(tmp_path: Path) -> None:
    data = bytearray(_good_image([(1, 0x100000400)], b"\0_main\0"))
    symtab = data.find(struct.pack("<III", LC_SYMTAB, 24, 0x800))
    struct.pack_into("<I", data, symtab + 12, 100000)  # nsyms
    image = MachOFile(_write(tmp_path, bytes(data)))
    with pytest.raises(MalformedInputError, match="symbol table"):
        image.symbols()
    with pytest.raises(MalformedInputError):
        image.frames_at(0x100000400)


def test_string_offsets_past_the_end_leave_the_symbol_out(tmp_path: Path) -> None:
    image = MachOFile(_write(tmp_path, _good_image([(1, 0x100000400), (5000, 0x100000480)], b"\0_main\0")))
    assert [s.name for s in image.symbols()] == ["main"]
    assert image.frames_at(0x100000490)[0].function == "main"  # reaches the next symbol: none
    assert image.frames_at(0x100000600) == []


def test_function_starts_that_never_end(tmp_path: Path) -> None:
    image = MachOFile(_write(tmp_path, _good_image([(1, 0x100000400)], b"\0_main\0", b"\xff" * 12)))
    with pytest.raises(MalformedInputError, match="function start"):
        image.function_starts()


def test_debug_map_size_without_a_function(tmp_path: Path) -> None:
    data = bytearray(_good_image([(1, 0x100000400), (0, 0x40)], b"\0_main\0"))
    # The second entry becomes an N_FUN with an empty name: a size with no start before it.
    struct.pack_into("<IBBHQ", data, 0x810, 0, 0x24, 0, 0, 0x40)
    image = MachOFile(_write(tmp_path, bytes(data)))
    with pytest.raises(MalformedInputError, match="N_FUN"):
        DebugMapSource(image, {})


FUZZ_SEEDS = ["cppdemo-x86_64", "cppdemo-universal", "libmshape-arm64.dylib", "cdemo-arm64",
              "cppdemo-arm64.dSYM/Contents/Resources/DWARF/cppdemo-arm64"]  # fmt: skip


@settings(max_examples=120, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.sampled_from(FUZZ_SEEDS),
    edits=st.lists(st.tuples(st.integers(0, 1 << 20), st.integers(0, 255)), min_size=1, max_size=8),
    head_bias=st.booleans(),
    cut=st.one_of(st.none(), st.integers(0, 1 << 20)),
)
def test_mutated_fixtures_fail_typed(
    tmp_path_factory: pytest.TempPathFactory, seed: str, edits: list[tuple[int, int]], head_bias: bool, cut: int | None
) -> None:
    data = bytearray((FIXTURES / seed).read_bytes())
    for position, value in edits:
        # Half the time aim at the headers and load commands, where most structure lives.
        where = position % (0x1000 if head_bias else len(data))
        data[where % len(data)] = value
    if cut is not None:
        data = data[: cut % (len(data) + 1)]
    path = tmp_path_factory.mktemp("fuzz") / "mutated"
    path.write_bytes(bytes(data))
    try:
        image = MachOFile(path)
    except SymbolizeError:
        return
    try:
        image.debug_hints()
        starts = image.function_starts()
        for vaddr in [*starts[:20], image.load_base + 0x400, image.load_base + 0x3F00]:
            image.frames_at(vaddr)
        image.debug_info()
    except SymbolizeError:
        pass
    finally:
        image.close()

