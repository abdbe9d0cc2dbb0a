"""Damaged static archives (the lib.a a debug map names members of): typed errors, never a hang."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from symbolize.formats.archive import archive_members, find_member, split_member_path
from symbolize.formats.errors import MalformedInputError, MissingDebugInfoError, SymbolizeError
from symbolize.formats.macho.file import MachOFile
from tests.fixtures_data import MACOS_BIN

ARCHIVE = MACOS_BIN / "obj" / "libmacarchive-x86_64.a"


def _header(name: bytes, size: bytes, mtime: bytes = b"0") -> bytes:
    return name.ljust(16) + mtime.ljust(12) + b"0".ljust(6) + b"0".ljust(6) + b"644".ljust(8) + size.ljust(10) + b"`\n"


def _write(tmp_path: Path, data: bytes) -> Path:
    path = tmp_path / "lib.a"
    path.write_bytes(data)
    return path


def test_the_fixture_archive_lists_its_members() -> None:
    members = archive_members(ARCHIVE)
    assert [member.name for member in members] == ["hash.o", "sort.o"]
    assert all(member.mtime == 0 for member in members)  # llvm-ar D: deterministic
    data = ARCHIVE.read_bytes()
    for member in members:
        assert data[member.file_offset : member.file_offset + 4] == bytes.fromhex("cffaedfe")  # MH_MAGIC_64


@pytest.mark.parametrize(
    "data",
    [
        b"!<arch>\n" + _header(b"a.o", b"100") + b"x" * 10,  # the member runs past the end
        b"!<arch>\n" + _header(b"a.o", b"-60") + b"x" * 64,  # a negative size: would lead back
        b"!<arch>\n" + _header(b"a.o", b"zz"),  # not a number
        b"!<arch>\n" + _header(b"#1/zz", b"4") + b"abcd",  # a BSD name length that is none
        b"!<arch>\n" + _header(b"#1/99", b"4") + b"abcd",  # a BSD name longer than the member
        b"!<arch>\n" + _header(b"a.o", b"4")[:30],  # a header cut short
        b"!<arch>\n" + _header(b"/5", b"4") + b"abcd",  # a GNU long name without the names table
        b"not an archive at all",
    ],
)
def test_damaged_archives_are_malformed_input(tmp_path: Path, data: bytes) -> None:
    with pytest.raises(MalformedInputError):
        archive_members(_write(tmp_path, data))


def test_a_member_that_is_not_there_or_not_mach_o(tmp_path: Path) -> None:
    with pytest.raises(MissingDebugInfoError, match=r"no member gone\.o"):
        find_member(ARCHIVE, "gone.o")
    path = _write(tmp_path, b"!<arch>\n" + _header(b"a.o", b"4") + b"abcd")
    with pytest.raises(SymbolizeError, match=r"a\.o is not a Mach-O"):
        MachOFile(path, member="a.o")


def test_member_paths_split_at_the_last_parenthesis() -> None:
    assert split_member_path("obj/lib.a(hash.o)") == ("obj/lib.a", "hash.o")
    assert split_member_path("/x/libfoo-1a2b.rlib(foo-1a2b.foo.3c-cgu.0.rcgu.o)") == (
        "/x/libfoo-1a2b.rlib", "foo-1a2b.foo.3c-cgu.0.rcgu.o",
    )  # fmt: skip
    assert split_member_path("obj/x.o") is None
    assert split_member_path("(x.o)") is None
    assert split_member_path("lib.a()") is None


@settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(
    edits=st.lists(st.tuples(st.integers(0, 1 << 14), st.integers(0, 255)), min_size=1, max_size=6),
    cut=st.one_of(st.none(), st.integers(0, 1 << 14)),
)
def test_mutated_archive_fails_typed(
    tmp_path_factory: pytest.TempPathFactory, edits: list[tuple[int, int]], cut: int | None
) -> None:
    data = bytearray(ARCHIVE.read_bytes())
    for position, value in edits:
        # Mostly the headers: the first kilobyte holds the archive's and the symbol table's.
        data[position % min(len(data), 1024 if position % 2 else len(data))] = value
    if cut is not None:
        data = data[: cut % (len(data) + 1)]
    path = tmp_path_factory.mktemp("ar") / "lib.a"
    path.write_bytes(bytes(data))
    try:
        members = archive_members(path)
    except SymbolizeError:
        return
    for member in members[:4]:
        assert member.file_offset > 0 and member.file_offset + member.size <= len(data)
        try:
            with MachOFile(path, member=member.name) as obj:
                obj.frames_at(0x10)
                obj.debug_info()
        except SymbolizeError:
            pass
