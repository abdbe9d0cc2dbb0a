"""pprof reading and writing: exact round trips, unknown fields, malformed input, atomic writes."""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from symbolize.errors import MalformedInputError, SymbolizeError
from symbolize.pprof import StringTable, parse_profile, read_profile, write_profile
from symbolize.proto.profile_pb2 import Profile

u64 = st.integers(min_value=0, max_value=2**64 - 1)
i64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)
small = st.integers(min_value=0, max_value=50)


@st.composite
def profiles(draw: st.DrawFn) -> Profile:
    profile = Profile()
    profile.string_table.append("")
    profile.string_table.extend(draw(st.lists(st.text(max_size=12), max_size=8)))
    for _ in range(draw(st.integers(0, 3))):
        profile.sample_type.add(type=draw(small), unit=draw(small))
    for _ in range(draw(st.integers(0, 4))):
        sample = profile.sample.add()
        sample.location_id.extend(draw(st.lists(u64, max_size=6)))
        sample.value.extend(draw(st.lists(i64, max_size=3)))
        for _ in range(draw(st.integers(0, 2))):
            sample.label.add(key=draw(small), str=draw(small), num=draw(i64), num_unit=draw(small))
    for _ in range(draw(st.integers(0, 3))):
        profile.mapping.add(
            id=draw(u64),
            memory_start=draw(u64),
            memory_limit=draw(u64),
            file_offset=draw(u64),
            filename=draw(small),
            build_id=draw(small),
            has_functions=draw(st.booleans()),
            has_inline_frames=draw(st.booleans()),
        )
    for _ in range(draw(st.integers(0, 3))):
        location = profile.location.add(id=draw(u64), mapping_id=draw(u64), address=draw(u64))
        location.is_folded = draw(st.booleans())
        for _ in range(draw(st.integers(0, 3))):
            location.line.add(function_id=draw(u64), line=draw(i64), column=draw(i64))
    for _ in range(draw(st.integers(0, 3))):
        profile.function.add(
            id=draw(u64), name=draw(small), system_name=draw(small), filename=draw(small), start_line=draw(i64)
        )
    profile.drop_frames = draw(small)
    profile.keep_frames = draw(small)
    profile.time_nanos = draw(i64)
    profile.duration_nanos = draw(i64)
    profile.period_type.type = draw(small)
    profile.period = draw(i64)
    profile.comment.extend(draw(st.lists(small, max_size=3)))
    profile.default_sample_type = draw(small)
    return profile


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(profile=profiles(), compress=st.booleans())
def test_round_trip_is_exact(tmp_path: Path, profile: Profile, compress: bool) -> None:
    path = tmp_path / "p.pb"
    write_profile(profile, path, gzip=compress)
    again, was_gzipped = read_profile(path)
    assert was_gzipped == compress
    assert again == profile
    assert again.SerializeToString() == profile.SerializeToString()


def _with_unknown_fields(profile: Profile) -> bytes:
    # Field 100, varint 7; field 101, length-delimited "hi": numbers profile.proto does not define.
    return bytes(profile.SerializeToString()) + b"\xa0\x06\x07" + b"\xaa\x06\x02hi"


@pytest.mark.parametrize("compress", [False, True])
def test_unknown_fields_survive(tmp_path: Path, compress: bool) -> None:
    original = Profile(string_table=["", "cpu"], period=10)
    raw = _with_unknown_fields(original)
    source = tmp_path / "in.pb"
    source.write_bytes(gzip.compress(raw) if compress else raw)
    profile, _ = read_profile(source)
    target = tmp_path / "out.pb"
    write_profile(profile, target, gzip=False)
    assert target.read_bytes() == raw


def test_gzip_is_sniffed_not_named(tmp_path: Path) -> None:
    raw = Profile(string_table=["", "x"]).SerializeToString()
    plain_named_gz = tmp_path / "plain.pb.gz"
    plain_named_gz.write_bytes(raw)
    gz_named_plain = tmp_path / "gz.pb"
    gz_named_plain.write_bytes(gzip.compress(raw))
    assert read_profile(plain_named_gz)[1] is False
    assert read_profile(gz_named_plain)[1] is True


@pytest.mark.parametrize(
    "data",
    [
        b"\xff\xff\xff\xff",  # not protobuf
        b"\x0a\x05ab",  # length runs past the end
        gzip.compress(b"\x0a\x05abcde", mtime=0)[:-6],  # gzip stream cut short
        b"\x1f\x8bgarbage",  # gzip magic, then nonsense
        b"\x32\x01a",  # string_table[0] is not ""
    ],
)
def test_malformed_input_names_the_file(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "broken.pb.gz"
    path.write_bytes(data)
    with pytest.raises(MalformedInputError) as caught:
        read_profile(path)
    assert str(path) in str(caught.value)


@pytest.mark.parametrize("failing", ["fsync", "replace"])
def test_failed_write_leaves_old_file_and_no_temp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failing: str
) -> None:
    path = tmp_path / "out.pb.gz"
    path.write_bytes(b"old contents")

    def fail(*args: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, failing, fail)
    with pytest.raises(SymbolizeError, match=r"out\.pb\.gz: cannot write: disk full"):  # the user's path
        write_profile(Profile(string_table=["", "new"]), path, gzip=True)
    assert path.read_bytes() == b"old contents"
    assert [entry.name for entry in tmp_path.iterdir()] == ["out.pb.gz"]


def test_string_table_interns_and_appends() -> None:
    profile = Profile()
    strings = StringTable(profile)
    assert list(profile.string_table) == [""]
    assert strings.intern("") == 0
    assert strings.intern("main") == 1
    assert strings.intern("main") == 1
    assert strings.intern("other") == 2
    assert list(profile.string_table) == ["", "main", "other"]
    assert strings.get(2) == "other"
    assert strings.get(99) == ""


def test_string_table_keeps_existing_order() -> None:
    profile = Profile(string_table=["", "b", "a", "b"])
    strings = StringTable(profile)
    assert strings.intern("b") == 1
    assert strings.intern("c") == 4
    assert list(profile.string_table) == ["", "b", "a", "b", "c"]


def test_parse_profile_reports_gzip() -> None:
    raw = Profile(string_table=["", "x"]).SerializeToString()
    assert parse_profile(gzip.compress(raw))[1] is True
    assert parse_profile(raw)[0].string_table[1] == "x"
