"""Malformed ELF input: hand-made bytes and truncated fixtures raise SymbolizeError naming the file."""

from __future__ import annotations

import lzma
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from symbolize.formats import ElfFile, open_object
from symbolize.formats.errors import MalformedInputError, SymbolizeError
from symbolize.formats.sections import ELFCOMPRESS_ZLIB
from tests.fixtures_data import BIN

SHT_PROGBITS, SHT_SYMTAB, SHT_STRTAB, SHT_NOTE = 1, 2, 3, 7
SHF_COMPRESSED = 0x800


@dataclass
class Section:
    name: str
    sh_type: int
    data: bytes
    flags: int = 0
    link: int = 0
    entsize: int = 0
    offset: int | None = None  # overrides where the header says the data is
    size: int | None = None


def build_elf(sections: list[Section]) -> bytes:
    """A little-endian ELF64 shared object: header, section data, .shstrtab, section headers."""
    names = bytearray(b"\0")
    name_offsets = []
    for section in [*sections, Section(".shstrtab", SHT_STRTAB, b"")]:
        name_offsets.append(len(names))
        names += section.name.encode() + b"\0"
    shstrtab = Section(".shstrtab", SHT_STRTAB, bytes(names))
    body = bytearray(64)
    headers = [bytes(64)]
    for section, name_offset in zip([*sections, shstrtab], name_offsets, strict=True):
        body += bytes(-len(body) % 8)
        offset = len(body)
        body += section.data
        headers.append(
            struct.pack(
                "<IIQQQQIIQQ",
                name_offset,
                section.sh_type,
                section.flags,
                0,
                section.offset if section.offset is not None else offset,
                section.size if section.size is not None else len(section.data),
                section.link,
                0,
                4 if section.sh_type == SHT_NOTE else 8,
                section.entsize,
            )
        )
    body += bytes(-len(body) % 8)
    shoff = len(body)
    body += b"".join(headers)
    ident = b"\x7fELF" + bytes([2, 1, 1]) + bytes(9)
    header = struct.pack("<HHIQQQIHHHHHH", 3, 62, 1, 0, 0, shoff, 0, 64, 56, 0, 64, len(headers), len(headers) - 1)
    body[:64] = ident + header
    return bytes(body)


def write(tmp_path: Path, data: bytes) -> Path:
    path = tmp_path / "broken.so"
    path.write_bytes(data)
    return path


def build_id_note(descriptor: bytes, descsz: int | None = None) -> bytes:
    size = len(descriptor) if descsz is None else descsz
    return struct.pack("<III", 4, size, 3) + b"GNU\0" + descriptor


def symtab(name: bytes) -> list[Section]:
    symbol = struct.pack("<IBBHQQ", 1, 0x12, 0, 1, 0x1000, 16)  # global FUNC in section 1
    return [
        Section(".text", SHT_PROGBITS, bytes(16)),
        Section(".symtab", SHT_SYMTAB, bytes(24) + symbol, link=3, entsize=24),
        Section(".strtab", SHT_STRTAB, b"\0" + name + b"\0"),
    ]


def test_builder_makes_a_valid_file(tmp_path: Path) -> None:
    sections = [Section(".note.gnu.build-id", SHT_NOTE, build_id_note(b"\xab" * 20)), *symtab(b"f")]
    sections[2].link = 4  # .strtab moved one place down by the note
    with ElfFile(write(tmp_path, build_elf(sections))) as elf:
        assert str(elf.debug_id) == "ab" * 20
        assert [(s.name, s.vaddr, s.size) for s in elf.symbols()] == [("f", 0x1000, 16)]
        chdr = struct.pack("<IIQQ", ELFCOMPRESS_ZLIB, 0, 5, 1) + zlib.compress(b"hello")
    sections = [Section(".debug_str", SHT_PROGBITS, chdr, flags=SHF_COMPRESSED)]
    with ElfFile(write(tmp_path, build_elf(sections))) as elf:
        assert elf.section_data("debug_str") == b"hello"


def assert_malformed(tmp_path: Path, data: bytes, action: str = "open") -> MalformedInputError:
    path = write(tmp_path, data)
    with pytest.raises(MalformedInputError) as info:
        elf = open_object(path)
        assert isinstance(elf, ElfFile)
        if action == "symbols":
            elf.symbols()
        elif action == "debug_info":
            elf.section_data("debug_info")
        elif action == "debug_link":
            elf.debug_link()
    assert info.value.path == path
    assert str(path) in str(info.value)
    return info.value


@pytest.mark.parametrize("length", [4, 15, 16, 40, 63])
def test_truncated_header(tmp_path: Path, length: int) -> None:
    assert_malformed(tmp_path, build_elf([])[:length])


def test_bad_class(tmp_path: Path) -> None:
    data = bytearray(build_elf([]))
    data[4] = 7
    assert_malformed(tmp_path, bytes(data))


def test_section_header_table_past_eof(tmp_path: Path) -> None:
    data = build_elf([Section(".text", SHT_PROGBITS, bytes(8))])
    assert_malformed(tmp_path, data[:-10])


def test_section_offset_past_eof(tmp_path: Path) -> None:
    error = assert_malformed(tmp_path, build_elf([Section(".text", SHT_PROGBITS, bytes(8), offset=1 << 20)]))
    assert error.offset == 1 << 20


def test_section_size_past_eof(tmp_path: Path) -> None:
    assert_malformed(tmp_path, build_elf([Section(".text", SHT_PROGBITS, bytes(8), size=1 << 40)]))


def test_note_past_its_section(tmp_path: Path) -> None:
    note = build_id_note(b"\x01" * 20, descsz=200)
    assert_malformed(tmp_path, build_elf([Section(".note.gnu.build-id", SHT_NOTE, note)]))


@pytest.mark.parametrize(
    "payload",
    [
        b"\x01\x00",  # shorter than Elf64_Chdr
        struct.pack("<IIQQ", 99, 0, 5, 1) + b"xxxxx",  # unknown ch_type
        struct.pack("<IIQQ", ELFCOMPRESS_ZLIB, 0, 5, 1) + b"not zlib",
        struct.pack("<IIQQ", ELFCOMPRESS_ZLIB, 0, 500, 1) + zlib.compress(b"hello"),  # size mismatch
        struct.pack("<IIQQ", 2, 0, 5, 1) + b"not zstd",
    ],
)
def test_bad_compressed_section(tmp_path: Path, payload: bytes) -> None:
    section = Section(".debug_info", SHT_PROGBITS, payload, flags=SHF_COMPRESSED)
    assert_malformed(tmp_path, build_elf([section]), "debug_info")


@pytest.mark.parametrize("payload", [b"ZLIB", b"ZLIB" + struct.pack(">Q", 5) + b"garbage", b"GZIP" + bytes(20)])
def test_bad_zdebug_section(tmp_path: Path, payload: bytes) -> None:
    assert_malformed(tmp_path, build_elf([Section(".zdebug_info", SHT_PROGBITS, payload)]), "debug_info")


@pytest.mark.parametrize(
    "payload", [b"\xfd7zXZ\x00garbage", lzma.compress(b"\x7fELF" + bytes(100), format=lzma.FORMAT_XZ)[:-8]]
)
def test_bad_xz_in_gnu_debugdata(tmp_path: Path, payload: bytes) -> None:
    _assert_mini_debug_info_damaged(tmp_path, payload)


def test_gnu_debugdata_holding_a_broken_elf(tmp_path: Path) -> None:
    inner = lzma.compress(build_elf([])[:40], format=lzma.FORMAT_XZ)
    _assert_mini_debug_info_damaged(tmp_path, inner)


def _assert_mini_debug_info_damaged(tmp_path: Path, payload: bytes) -> None:
    # Bad MiniDebugInfo takes only its own symbols: .symtab's stay, the damage is reported,
    # and it is the answer where nothing names an address.
    path = write(tmp_path, build_elf([*symtab(b"kept"), Section(".gnu_debugdata", SHT_PROGBITS, payload)]))
    with ElfFile(path) as elf:
        assert [symbol.name for symbol in elf.symbols()] == ["kept"]
        damaged = elf.debug_info().damaged
        assert ".gnu_debugdata" in damaged and str(path) in damaged
        with pytest.raises(MalformedInputError, match="gnu_debugdata"):
            elf.frames_at(0x2000)


def test_symtab_linking_to_missing_string_table(tmp_path: Path) -> None:
    sections = symtab(b"f")
    sections[1].link = 40
    assert_malformed(tmp_path, build_elf(sections), "symbols")


def test_bad_debuglink(tmp_path: Path) -> None:
    assert_malformed(tmp_path, build_elf([Section(".gnu_debuglink", SHT_PROGBITS, b"name.debug\0")]), "debug_link")


def test_truncated_debug_info_unit(tmp_path: Path) -> None:
    unit = struct.pack("<IH", 100, 5) + bytes(6)  # claims 100 bytes, has 8
    path = write(tmp_path, build_elf([Section(".debug_info", SHT_PROGBITS, unit)]))
    with ElfFile(path) as elf:
        # Reported, not raised: a symbol table beside it would still answer.
        assert str(path) in elf.debug_info().damaged and elf.debug_info().has_dwarf
        with pytest.raises(MalformedInputError):
            elf.frames_at(0x1000)


FIXTURE = BIN / "cdemo-gcc-debuglink"


def _read_everything_or_fail_naming(path: Path) -> None:
    """Open ``path`` and ask it everything; any failure must be a SymbolizeError naming it."""
    try:
        elf = open_object(path)
        elf.segments()
        elf.symbols()
        elf.debug_link()
        elf.debug_info()
        elf.close()
    except SymbolizeError as err:
        assert err.path == path


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(fraction=st.floats(min_value=0.0, max_value=1.0))
def test_truncated_fixture_raises_only_symbolize_errors(tmp_path: Path, fraction: float) -> None:
    data = FIXTURE.read_bytes()
    path = write(tmp_path, data[: int(len(data) * fraction)])
    _read_everything_or_fail_naming(path)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(position=st.integers(min_value=0, max_value=1 << 16), value=st.integers(min_value=0, max_value=255))
def test_corrupted_fixture_raises_only_symbolize_errors(tmp_path: Path, position: int, value: int) -> None:
    data = bytearray(FIXTURE.read_bytes())
    data[position % len(data)] = value
    path = write(tmp_path, bytes(data))
    _read_everything_or_fail_naming(path)
