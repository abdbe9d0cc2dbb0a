"""Symbol-store keys (symbolize/remote/symsrv.py): symsrv's and SSQP's spellings, on the specs'
examples and on generated IDs and names; ``file.ptr`` reading."""

from __future__ import annotations

import uuid
from pathlib import PurePosixPath
from urllib.parse import unquote, urlsplit

import pytest
from hypothesis import given
from hypothesis import strategies as st

from symbolize.discovery.paths import is_file_name
from symbolize.formats.errors import MalformedInputError
from symbolize.formats.pdb import PdbFile
from symbolize.formats.pe import PeFile
from symbolize.formats.types import DebugId, DebugIdKind
from symbolize.remote.symsrv_layout import (
    FilePointer,
    SymbolStoreKey,
    elf_binary_key,
    elf_debug_key,
    macho_binary_key,
    macho_dwarf_key,
    parse_file_ptr,
    pdb_key,
    pe_key,
    store_name,
)
from tests.fixtures_data import WINDOWS_BIN

_SSQP_GUID = DebugId(DebugIdKind.PDB, uuid.UUID("497B72F6-390A-44FC-878E-5A2D63B6CC4B").bytes_le, 1)


def test_ssqp_examples() -> None:
    """The examples of SSQP_Key_Conventions.md, each key's lower-case spelling."""
    pdb = pdb_key("Foo.pdb", _SSQP_GUID)
    assert pdb is not None and str(pdb.spellings()[-1]) == "foo.pdb/497b72f6390a44fc878e5a2d63b6cc4b1/foo.pdb"
    pe = pe_key("Foo.exe", DebugId(DebugIdKind.PE_CODE_ID, bytes.fromhex("542d5742" "00032000")))
    assert pe is not None and str(pe.spellings()[-1]) == "foo.exe/542d574232000/foo.exe"
    build_id = DebugId(DebugIdKind.GNU_BUILD_ID, bytes.fromhex("180a373d6afbabf0eb1f09be1bc45bd796a71085"))
    binary = "foo.so/elf-buildid-180a373d6afbabf0eb1f09be1bc45bd796a71085/foo.so"
    assert str(elf_binary_key("foo.so", build_id)) == binary
    assert str(elf_debug_key(build_id)) == "_.debug/elf-buildid-sym-180a373d6afbabf0eb1f09be1bc45bd796a71085/_.debug"
    short = DebugId(DebugIdKind.GNU_BUILD_ID, bytes.fromhex("180a373d6afbabf0eb1f09be1bc45bd7"))
    assert str(elf_debug_key(short)) == "_.debug/elf-buildid-sym-180a373d6afbabf0eb1f09be1bc45bd700000000/_.debug"
    mach = DebugId(DebugIdKind.MACHO_UUID, bytes.fromhex("497B72F6390A44FC878E5A2D63B6CC4B"))
    assert str(macho_binary_key("foo.dylib", mach)) == "foo.dylib/mach-uuid-497b72f6390a44fc878e5a2d63b6cc4b/foo.dylib"
    assert str(macho_dwarf_key(mach)) == "_.dwarf/mach-uuid-sym-497b72f6390a44fc878e5a2d63b6cc4b/_.dwarf"


def test_symsrv_spelling_of_the_fixtures() -> None:
    """The symsrv key of a fixture PDB and image: the name as recorded, the index as Windows prints it."""
    pdb = PdbFile(WINDOWS_BIN / "winapp.pdb")
    key = pdb_key("winapp.pdb", pdb.debug_id)
    assert key is not None and pdb.debug_id is not None
    guid = uuid.UUID(bytes_le=pdb.debug_id.value)
    assert key.index == guid.hex.upper() + f"{pdb.debug_id.age:X}"
    image = PeFile(WINDOWS_BIN / "winapp.exe")
    code_id = next(i for i in image.identities() if i.kind is DebugIdKind.PE_CODE_ID)
    key = pe_key("winapp.exe", code_id)
    assert key is not None
    assert key.index == f"{image.time_date_stamp:08X}{image.size_of_image:x}"


def test_layout_and_urls() -> None:
    key = SymbolStoreKey("WinApp.pdb", "ABC1")
    assert key.relative() == PurePosixPath("WinApp.pdb/ABC1/WinApp.pdb")
    assert key.relative(two_tier=True) == PurePosixPath("Wi/WinApp.pdb/ABC1/WinApp.pdb")
    assert key.relative(file_name=key.compressed_name) == PurePosixPath("WinApp.pdb/ABC1/WinApp.pd_")
    assert key.url("http://h/sym/", file_name="file.ptr") == "http://h/sym/WinApp.pdb/ABC1/file.ptr"
    assert SymbolStoreKey("a b#.pdb", "1").url("http://h") == "http://h/a%20b%23.pdb/1/a%20b%23.pdb"


@given(st.binary(min_size=16, max_size=16), st.integers(0, 0xFFFFFFFF))
def test_pdb_key_reads_back_as_the_same_id(guid: bytes, age: int) -> None:
    debug_id = DebugId(DebugIdKind.PDB, guid, age)
    key = pdb_key("x.pdb", debug_id)
    assert key is not None
    for spelling in key.spellings():
        assert DebugId.parse(spelling.index, DebugIdKind.PDB) == debug_id
    assert key.spellings()[-1].index == uuid.UUID(bytes_le=guid).hex + f"{age:x}"


@given(st.integers(0, 0xFFFFFFFF), st.integers(0, 0xFFFFFFFF))
def test_pe_key_reads_back_as_the_same_id(stamp: int, size: int) -> None:
    code_id = DebugId(DebugIdKind.PE_CODE_ID, stamp.to_bytes(4, "big") + size.to_bytes(4, "big"))
    key = pe_key("x.dll", code_id)
    assert key is not None
    assert key.index == f"{stamp:08X}{size:x}"
    assert DebugId.parse(key.index, DebugIdKind.PE_CODE_ID) == code_id


@given(st.binary(min_size=2, max_size=64))
def test_ssqp_build_ids_are_padded_to_20_bytes_and_no_further(build_id: bytes) -> None:
    key = elf_debug_key(DebugId(DebugIdKind.GNU_BUILD_ID, build_id))
    assert key is not None
    hex_id = key.index.removeprefix("elf-buildid-sym-")
    assert bytes.fromhex(hex_id) == build_id.ljust(20, b"\0") and hex_id == hex_id.lower()


@given(st.text(max_size=300))
def test_keys_never_leave_the_store(name: str) -> None:
    """A name from a hostile file is either refused or makes a three-part relative path of file names."""
    key = pdb_key(name, _SSQP_GUID)
    if key is None:
        assert store_name(name) is None
        return
    for spelling in key.spellings():
        for two_tier in (False, True):
            parts = spelling.relative(two_tier=two_tier, file_name=spelling.compressed_name).parts
            assert len(parts) == (4 if two_tier else 3)
            assert all(is_file_name(part) for part in parts[1:])


@pytest.mark.parametrize("name", ["", ".", "..", "a/b.pdb", "a\\b.pdb", "c:x.pdb", "a\0.pdb", "a\n.pdb", "x" * 256])
def test_unusable_names_make_no_key(name: str) -> None:
    assert pdb_key(name, _SSQP_GUID) is None


def test_wrong_kind_of_id_makes_no_key() -> None:
    build_id = DebugId(DebugIdKind.GNU_BUILD_ID, b"\1" * 20)
    assert pdb_key("x.pdb", build_id) is None
    assert pe_key("x.exe", _SSQP_GUID) is None
    assert macho_dwarf_key(build_id) is None
    assert elf_debug_key(_SSQP_GUID) is None
    assert elf_debug_key(DebugId(DebugIdKind.GNU_BUILD_ID, b"\1")) is None


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"PATH:\\\\server\\share\\x.pdb\r\n", FilePointer("\\\\server\\share\\x.pdb", None)),
        (b"path: /srv/symbols/x.pdb", FilePointer("/srv/symbols/x.pdb", None)),
        (b"\n\\\\mybuilds\\symbols\\x86\\acpi.dbg", FilePointer("\\\\mybuilds\\symbols\\x86\\acpi.dbg", None)),
        (b"MSG: withheld by the publisher", FilePointer(None, "withheld by the publisher")),
    ],
)
def test_file_ptr(data: bytes, expected: FilePointer) -> None:
    assert parse_file_ptr(data, "http://h/x.pdb/1/file.ptr") == expected


@pytest.mark.parametrize("data", [b"", b"\n \n", b"PATH:", b"\xff\xfe", b"PATH:a\x01b", b"x" * 5000])
def test_file_ptr_that_names_nothing_is_malformed(data: bytes) -> None:
    with pytest.raises(MalformedInputError, match=r"file\.ptr"):
        parse_file_ptr(data, "http://h/x.pdb/1/file.ptr")


@given(st.binary(max_size=200))
def test_file_ptr_of_any_bytes_is_read_or_refused(data: bytes) -> None:
    try:
        pointer = parse_file_ptr(data, "store/file.ptr")
    except MalformedInputError as err:
        assert "store/file.ptr" in str(err)
        return
    assert (pointer.target is None) != (pointer.message is None)


@given(st.text(min_size=1, max_size=40))
def test_a_keys_url_reads_back_as_its_path(name: str) -> None:
    """Each part of a key is percent-encoded whole: the URL's path is the key's, part for part."""
    key = pdb_key(name, _SSQP_GUID)
    if key is None:
        return
    for file_name in (None, key.compressed_name, "file.ptr"):
        url = key.url("http://h:8/sym", file_name=file_name)
        parts = urlsplit(url).path.split("/")
        assert [unquote(part) for part in parts[2:]] == list(key.relative(file_name=file_name).parts)
        assert url.startswith("http://h:8/sym/") and "?" not in url and "#" not in url
