"""Inputs shaped to cost time or memory out of proportion to their size, and the caps or linear
walks that bound them (README, "Hostile input").

Each shape also runs at full size, in its own process under 3 GiB and 20 s, in
tests/test_hostile_limits.py (tests/hostile_run.py); these tests check the mechanism and that
real inputs keep their answers.
"""

from __future__ import annotations

import gzip
import io
import os
import struct
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from symbolize import api, pprof
from symbolize.cli.commands import iter_stdin_batches
from symbolize.errors import InputLimitError, MalformedInputError
from symbolize.formats.dwarf import info as info_module
from symbolize.formats.macho.file import MachOFile
from symbolize.formats.macho.load_commands import MAX_LOAD_COMMANDS, MH_EXECUTE, read_uuids
from symbolize.formats.macho.slices import MH_MAGIC_64
from symbolize.formats.native import kernels
from symbolize.module import Reason, Unknown
from symbolize.proto.profile_pb2 import Profile
from tests import hostile_dwarf as h
from tests.dwarf_builder import uleb
from tests.fixtures_data import ROOT
from tests.kernel_twins import OBJECT_FILES, object_units
from tests.test_malformed_elf import SHT_PROGBITS, Section, build_elf, symtab

FIXTURES = ROOT / "fixtures"


# Abbreviation tables ---------------------------------------------------------


def test_units_pointing_into_one_long_abbreviation_table_read_a_bounded_part_of_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """600 units, each at its own offset of one table whose only 0 code is at its end: read whole,
    their tables would span 600 times half the section. The first units are named from their
    DWARF; the units past the cap are reported broken, and their addresses say why."""
    sections, vaddrs = h.abbrev_offsets_apart_case(600)
    spans: list[int] = []
    read, read_lazily = info_module.read_abbrev_table, info_module.lazy_abbrev_table

    def recording(data: bytes, offset: int, shapes: Any = None) -> Any:
        table, end = read(data, offset, shapes)
        spans.append(end - offset)
        return table, end

    def recording_lazily(data: bytes, offset: int, root_code: int, shapes: Any = None) -> Any:
        # Where the kernels run, a table is walked to its end at open and built on first use.
        found = read_lazily(data, offset, root_code, shapes)
        if found is not None:
            spans.append(found[1] - offset)
        return found

    monkeypatch.setattr(info_module, "read_abbrev_table", recording)
    monkeypatch.setattr(info_module, "lazy_abbrev_table", recording_lazily)
    path = tmp_path / "case.so"
    path.write_bytes(build_elf([*symtab(b"sym"), *(Section("." + n, SHT_PROGBITS, d) for n, d in sections.items())]))
    results = api.lookup(path, vaddrs, use_cache=False)
    section = len(sections["debug_abbrev"])
    # At most the cap (twice the section and 64 KiB), plus the one table read as it was passed.
    assert sum(spans) <= 2 * section + (1 << 16) + section
    assert 1 < len(spans) < len(vaddrs)
    first = results[0]
    assert isinstance(first, list) and first[0].function == "f0"
    last = results[-1]
    assert isinstance(last, Unknown) and last.reason is Reason.DAMAGED_DEBUG_INFO
    assert "abbreviation table" in last.detail and "overlap" in last.detail and str(path) in last.detail


@pytest.mark.parametrize("path", OBJECT_FILES, ids=lambda path: str(path.relative_to(FIXTURES)))
def test_fixture_abbreviation_tables_span_their_section_once(path: Path) -> None:
    """Real producers give each table its own bytes or share one offset: the tables of every
    fixture span their section at most once, far inside the cap."""
    tables = {(id(unit.sections.abbrev), unit.abbrev_offset): unit.sections.abbrev for unit in object_units(path)}
    if not tables:
        pytest.skip("no DWARF units")
    spans: dict[int, int] = {}
    sizes: dict[int, int] = {}
    for (section_id, offset), data in tables.items():
        _, end = info_module.read_abbrev_table(data, offset)
        spans[section_id] = spans.get(section_id, 0) + end - offset
        sizes[section_id] = len(data)
    assert all(spans[section_id] <= sizes[section_id] for section_id in spans)


# Profiles --------------------------------------------------------------------


def _one_field_locations(count: int) -> bytes:
    return b"\x32\x00" + b"\x22\x02\x08\x01" * count


def _gzip_inside_inflation_cap(payload: bytes) -> bytes:
    """``payload`` gzipped, padded with the zero bytes gzip readers skip so that it inflates to
    less than 128 times its size (the inflation cap passed, as the hostile profile passed it)."""
    packed = gzip.compress(payload, mtime=0)
    return packed + b"\0" * max(0, len(payload) // 127 - len(packed))


def test_a_profile_of_more_entries_than_the_cap_is_refused_naming_file_and_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(pprof.MAX_ENTRIES_SETTING, "1000")
    path = tmp_path / "locations.pb.gz"
    path.write_bytes(_gzip_inside_inflation_cap(_one_field_locations(5_000)))
    with pytest.raises(InputLimitError) as raised:
        pprof.read_profile(path)
    message = str(raised.value)
    assert str(path) in message and "1000 entries" in message and pprof.MAX_ENTRIES_SETTING in message
    monkeypatch.setenv(pprof.MAX_ENTRIES_SETTING, "5001")
    assert len(pprof.read_profile(path)[0].location) == 5_000


def test_lines_and_labels_count_as_entries(monkeypatch: pytest.MonkeyPatch) -> None:
    """A single location of many empty lines is as costly as many locations."""
    monkeypatch.setenv(pprof.MAX_ENTRIES_SETTING, "100")
    lines = b"\x22\x00" * 500
    location = b"\x22" + bytes([0x80 | len(lines) & 0x7F, len(lines) >> 7]) + lines
    with pytest.raises(InputLimitError, match="entries"):
        pprof.parse_profile(b"\x32\x00" + location, "lines.pb")
    labels = b"\x1a\x00" * 500
    sample = b"\x12" + bytes([0x80 | len(labels) & 0x7F, len(labels) >> 7]) + labels
    with pytest.raises(InputLimitError, match="entries"):
        pprof.parse_profile(b"\x32\x00" + sample, "labels.pb")


def _fixture_profiles() -> list[Path]:
    return sorted(path for path in FIXTURES.rglob("*") if path.is_file() and path.name.endswith((".pb", ".pb.gz")))


@pytest.mark.parametrize("path", _fixture_profiles(), ids=lambda path: str(path.relative_to(FIXTURES)))
def test_fixture_profiles_count_what_protobuf_decodes(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every fixture profile reads as before, and the walk counts exactly the entries protobuf
    decodes, compiled and not."""
    try:
        profile, _ = pprof.read_profile(path)
    except MalformedInputError:
        pytest.skip("not a pprof profile")
    data = profile.SerializeToString()
    expected = (len(profile.sample_type) + len(profile.sample) + len(profile.mapping) + len(profile.location)
                + len(profile.function) + len(profile.string_table)
                + sum(len(location.line) for location in profile.location)
                + sum(len(sample.label) for sample in profile.sample))
    assert pprof._count_entries(data, 1 << 40) == expected
    if kernels is not None:
        assert kernels.count_profile_entries(data, 1 << 40) == expected


@pytest.mark.skipif(kernels is None, reason="the compiled kernels are not built or not used")
@pytest.mark.parametrize(
    ("data", "count"),
    [
        # string_table "", a location {id 1, line {}, line {}}, a sample {label {}}, a field 9.
        (bytes.fromhex("3200 2206 0801 2200 2200 1202 1a00 4805"), 6),
        # A location whose 1-byte body starts a key that runs on past it: not a line.
        (bytes.fromhex("2201 a200 3200"), 1),
        # A location whose 2-byte body is an empty line.
        (bytes.fromhex("2202 2200"), 2),
        # A key, then a length, past 64 bits: the walk ends.
        (bytes.fromhex("fa" + "ff" * 9 + "7f 00 3200"), 1),
        (bytes.fromhex("32 ffffffffffffffffff7f 3200"), 1),
    ],
)
def test_compiled_count_at_the_edges_of_the_wire_format(data: bytes, count: int) -> None:
    assert kernels is not None
    assert kernels.count_profile_entries(data, 100) == pprof._count_entries(data, 100) == count
    assert kernels.count_profile_entries(data, 2) == pprof._count_entries(data, 2)


@pytest.mark.skipif(kernels is None, reason="the compiled kernels are not built or not used")
@settings(max_examples=400, deadline=None)
@given(data=st.binary(max_size=200), limit=st.integers(0, 40))
def test_compiled_count_is_the_reference_count(data: bytes, limit: int) -> None:
    assert kernels is not None
    assert kernels.count_profile_entries(data, limit) == pprof._count_entries(data, limit)


@pytest.mark.skipif(kernels is None, reason="the compiled kernels are not built or not used")
@settings(max_examples=300, deadline=None)
@given(pieces=st.lists(st.tuples(st.integers(0, 20), st.sampled_from([0, 1, 2, 3, 5, 6]),
                                 st.binary(max_size=12), st.booleans()), max_size=12),
       limit=st.integers(0, 30))
def test_compiled_count_is_the_reference_count_on_message_shapes(
    pieces: list[tuple[int, int, bytes, bool]], limit: int
) -> None:
    """Fields of every wire type, keys padded past one byte, bodies cut short."""
    out = b""
    for number, wire_type, body, padded in pieces:
        key = uleb(number << 3 | wire_type)
        out += key[:-1] + bytes([key[-1] | 0x80, 0]) if padded else key
        out += uleb(len(body)) + body if wire_type == 2 else body[: {0: 1, 1: 8, 5: 4}.get(wire_type, 0)]
    assert kernels is not None
    assert kernels.count_profile_entries(out, limit) == pprof._count_entries(out, limit)


# Mach-O load commands --------------------------------------------------------


def _thin_header(ncmds: int, sizeofcmds: int) -> bytes:
    return struct.pack("<IiiIIIII", MH_MAGIC_64, 0x01000007, 3, MH_EXECUTE, ncmds, sizeofcmds, 0, 0)


def test_more_load_commands_than_the_cap_are_refused_before_macholib(tmp_path: Path) -> None:
    count = MAX_LOAD_COMMANDS + 1
    command = struct.pack("<IIQ", 0x2A, 16, 0)  # LC_SOURCE_VERSION
    path = tmp_path / "commands"
    path.write_bytes(_thin_header(count, count * len(command)) + command * count)
    with pytest.raises(InputLimitError, match=f"{count} load commands") as raised:
        MachOFile(path)
    assert str(path) in str(raised.value)
    with pytest.raises(InputLimitError):
        read_uuids(path)


def test_load_commands_that_cannot_fit_sizeofcmds_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "short"
    path.write_bytes(_thin_header(1_000, 16) + struct.pack("<IIQ", 0x2A, 16, 0))
    with pytest.raises(MalformedInputError, match="cannot fit"):
        MachOFile(path)
    path.write_bytes(_thin_header(1, 1 << 20) + struct.pack("<IIQ", 0x2A, 16, 0))
    with pytest.raises(MalformedInputError, match="past end of file"):
        MachOFile(path)


# Search directories ----------------------------------------------------------


def test_a_search_directory_is_listed_once_for_all_unmatched_mappings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from symbolize.discovery.paths import DirectoryListings

    search = tmp_path / "search"
    search.mkdir()
    for number in range(50):
        (search / f"lib{number}.so").touch()
    (search / "App.EXE").touch()
    profile = Profile(string_table=["", "cpu", "nanoseconds"])
    profile.sample_type.add(type=1, unit=2)
    for number in range(1, 41):
        profile.string_table.append(f"/opt/app/libmissing{number}.so")
        profile.mapping.add(id=number, memory_start=number << 24, memory_limit=(number << 24) + 0x1000,
                            filename=len(profile.string_table) - 1)
        profile.location.add(id=number, mapping_id=number, address=(number << 24) + 0x10)
        profile.sample.add(location_id=[number], value=[1])
    listed: list[str] = []
    scandir = os.scandir

    def recording(path: Any = ".") -> Any:
        listed.append(os.fspath(path))
        return scandir(path)

    monkeypatch.setattr(os, "scandir", recording)
    api.symbolize_profile(profile, search_paths=[search], use_cache=False)
    assert listed.count(str(search)) == 1
    # The listing still finds a name that differs only in case, and only that.
    assert DirectoryListings().matching(search, "app.exe") == ["App.EXE"]
    assert DirectoryListings().matching(search, "app.ex") == []


# Stdin -----------------------------------------------------------------------


class _Chunked(io.RawIOBase):
    """A stream handing out ``data`` in the given chunk sizes, as a pipe does."""

    def __init__(self, data: bytes, sizes: list[int]) -> None:
        self._data = data
        self._sizes = sizes or [len(data) or 1]
        self._position = 0
        self._turn = 0

    def read1(self, size: int = -1) -> bytes:
        step = self._sizes[self._turn % len(self._sizes)]
        self._turn += 1
        piece = self._data[self._position : self._position + min(step, size)]
        self._position += len(piece)
        return piece


@settings(max_examples=300, deadline=None)
@given(lines=st.lists(st.text(alphabet="0x1f \t\r", max_size=8), max_size=8), final_newline=st.booleans(),
       sizes=st.lists(st.integers(1, 9), max_size=5))
def test_stdin_batches_hold_every_line_whatever_the_chunks(lines: list[str], final_newline: bool,
                                                           sizes: list[int]) -> None:
    data = "\n".join(lines).encode() + (b"\n" if final_newline and lines else b"")
    batches = list(iter_stdin_batches(_Chunked(data, sizes)))
    expected = [line.strip() for line in data.decode().split("\n")]
    if expected and expected[-1] == "" and (data.endswith(b"\n") or not data):
        expected.pop()
    assert [line for batch in batches for line in batch] == expected
    assert all(batches)


@settings(max_examples=300, deadline=None)
@given(lines=st.lists(st.binary(max_size=6), max_size=8), sizes=st.lists(st.integers(1, 9), max_size=5))
def test_stdin_batches_decode_each_line_as_alone(lines: list[bytes], sizes: list[int]) -> None:
    """Bytes that are not UTF-8 (a sequence cut by a newline or by a chunk's end) are replaced
    as decoding each line alone replaces them, though a batch is decoded as one text."""
    data = b"\n".join(lines)
    batches = list(iter_stdin_batches(_Chunked(data, sizes)))
    expected = [line.decode("utf-8", "replace").strip() for line in data.split(b"\n")] if data else []
    if expected and data.endswith(b"\n"):
        expected.pop()
    assert [line for batch in batches for line in batch] == expected


def test_a_long_stdin_line_is_joined_once() -> None:
    """A 4 MiB line in 64 KiB chunks: each byte is copied a bounded number of times (joining
    each chunk to all before it copied 64 times the line)."""
    copied = 0

    class Counting(bytes):
        def __add__(self, other: bytes) -> bytes:  # type: ignore[override]
            nonlocal copied
            copied += len(self) + len(other)
            return Counting(bytes(self) + other)

        def __radd__(self, other: bytes) -> bytes:
            nonlocal copied
            copied += len(self) + len(other)
            return Counting(other + bytes(self))

    line = b"1" * (4 << 20)

    class Stream:
        position = 0

        def read1(self, size: int) -> bytes:
            piece = Counting(line[self.position : self.position + size]) if self.position < len(line) else b""
            self.position += len(piece)
            return piece

    (batch,) = list(iter_stdin_batches(Stream()))
    assert batch == [line.decode()]
    assert copied <= 2 * len(line)
