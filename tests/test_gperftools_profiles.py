"""gperftools profiles (heap_v2, heapprofile, binary CPU): read as Google's pprof reads them.

The fixtures in ``fixtures/profiles/gperftools`` were written by gperftools itself (see
``fixtures/make_gperf_profiles.py``); what pprof reads from each is stored in
``fixtures/expected/pprof`` and re-read live where a pprof binary is at hand (``$SYMBOLIZE_PPROF``
or ``pprof`` on PATH; CI builds one with ``fixtures/build_pprof.sh``). Naming every fixture
location as llvm-symbolizer does is checked by ``test_fixture_profiles.py``, which runs over
these files too.
"""

from __future__ import annotations

import gzip
import math
import os
import shutil
import struct
import subprocess
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from symbolize.cli.app import app
from symbolize.errors import MalformedInputError, SymbolizeError, UnsupportedFormatError
from symbolize.pprof import StringTable, parse_profile, read_profile
from symbolize.profiles import ProfileFormat, sniff_format
from symbolize.profiles.heap_v2 import scale_heap_v2
from symbolize.proto.profile_pb2 import Profile
from tests.fixtures_data import FIXTURES

BIN = FIXTURES / "bin"
GPERFTOOLS = sorted((FIXTURES / "profiles" / "gperftools").iterdir())
# Of the ELF fixtures (named from fixtures/bin); those of the PE and Mach-O fixtures: test_foreign_heap_v2.py.
ELF_GPERFTOOLS = [p for p in GPERFTOOLS if p.name not in {"winapp.windows.heap_v2", "usemshape-x86_64.macos.heap_v2"}]
PPROF_READINGS = FIXTURES / "expected" / "pprof"
PPROF = os.environ.get("SYMBOLIZE_PPROF") or shutil.which("pprof")

# pprof names the in-use pair objects/space when a heap profile's alloc totals equal them.
PPROF_NAMES = {"objects": "inuse_objects", "space": "inuse_space"}


def _is_cpu(profile: Profile) -> bool:
    return "cpu" in {StringTable(profile).get(value_type.type) for value_type in profile.sample_type}


def _totals_by_stack(profile: Profile, *, adjusted: bool) -> dict[str, Counter[tuple[int, ...]]]:
    """Sample type -> address stack -> summed value; ``adjusted`` subtracts 1 from return addresses.

    pprof subtracts 1 from every heap address and every CPU address but the leaf when it reads a
    legacy profile; we keep addresses as written, so ours are adjusted before comparing.
    """
    strings = StringTable(profile)
    addresses = {location.id: location.address for location in profile.location}
    cpu = _is_cpu(profile)
    totals: dict[str, Counter[tuple[int, ...]]] = {}
    for index, value_type in enumerate(profile.sample_type):
        name = strings.get(value_type.type)
        counter = totals.setdefault(PPROF_NAMES.get(name, name), Counter())
        for sample in profile.sample:
            stack = tuple(
                addresses[location_id] - (1 if adjusted and (position > 0 or not cpu) else 0)
                for position, location_id in enumerate(sample.location_id)
            )
            counter[stack] += sample.value[index]
    return totals


def _compare_with_pprof(ours: Profile, theirs: Profile) -> None:
    our_totals = _totals_by_stack(ours, adjusted=True)
    their_totals = _totals_by_stack(theirs, adjusted=False)
    assert their_totals, "pprof read no sample types"
    for name, counter in their_totals.items():
        assert our_totals[name] == counter, name
    assert theirs.period == ours.period


@pytest.mark.parametrize("path", GPERFTOOLS, ids=lambda p: p.name)
def test_values_and_stacks_are_those_pprof_reads(path: Path) -> None:
    ours, _ = read_profile(path)
    theirs, _ = read_profile(PPROF_READINGS / f"{path.name}.pb.gz")
    _compare_with_pprof(ours, theirs)


@pytest.mark.skipif(PPROF is None, reason="no Google pprof binary (fixtures/build_pprof.sh builds one)")
@pytest.mark.parametrize("path", GPERFTOOLS, ids=lambda p: p.name)
def test_values_and_stacks_are_those_pprof_reads_live(path: Path, tmp_path: Path) -> None:
    assert PPROF is not None
    output = subprocess.run(
        [PPROF, "-symbolize=none", "-proto", str(path)],
        capture_output=True, check=True, env={**os.environ, "PPROF_TMPDIR": str(tmp_path)},
    ).stdout
    theirs, _ = parse_profile(output)
    ours, _ = read_profile(path)
    _compare_with_pprof(ours, theirs)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("rustdemo-full.heap_v2", ProfileFormat.HEAP_V2),
        ("rustdemo-full.windows.heap_v2", ProfileFormat.HEAP_V2),
        ("cppdemo-gcc-dwarf5-pie.heapprofile", ProfileFormat.LEGACY_HEAP),
        ("cppdemo-gcc-dwarf5-pie.cpu.prof", ProfileFormat.GPERFTOOLS_CPU),
    ],
)
def test_formats_are_sniffed_from_the_bytes(name: str, expected: ProfileFormat, tmp_path: Path) -> None:
    data = (FIXTURES / "profiles" / "gperftools" / name).read_bytes()
    assert sniff_format(data) is expected
    # A misleading name and gzip change nothing.
    renamed = tmp_path / "profile.pb"
    renamed.write_bytes(gzip.compress(data))
    plain, _ = read_profile(FIXTURES / "profiles" / "gperftools" / name)
    gzipped, was_gzipped = read_profile(renamed)
    assert was_gzipped
    assert gzipped == plain


def test_heap_v2_values_are_scaled_and_raw_counts_kept() -> None:
    profile, _ = read_profile(FIXTURES / "profiles" / "gperftools" / "rustdemo-full.heap_v2")
    strings = StringTable(profile)
    assert [strings.get(t.type) for t in profile.sample_type] == [
        "alloc_objects", "alloc_space", "inuse_objects", "inuse_space"
    ]
    assert [strings.get(t.unit) for t in profile.sample_type] == ["count", "bytes", "count", "bytes"]
    assert profile.period == 65536
    lines = [
        line for line in (FIXTURES / "profiles" / "gperftools" / "rustdemo-full.heap_v2").read_text().splitlines()[1:]
        if "@ 0x" in line
    ]
    assert len(lines) == len(profile.sample)
    for line, sample in zip(lines, profile.sample, strict=True):
        inuse_objects, inuse_bytes = (int(part) for part in line.split("[")[0].replace(":", " ").split())
        labels = {strings.get(label.key): label.num for label in sample.label}
        assert labels["raw_inuse_objects"] == inuse_objects
        assert labels["raw_inuse_space"] == inuse_bytes
        scale = 1 / (1 - math.exp(-(inuse_bytes / inuse_objects) / 65536))
        assert sample.value[2] == int(inuse_objects * scale)
        assert sample.value[3] == int(inuse_bytes * scale)
        assert sample.value[3] >= inuse_bytes


def test_mappings_keep_each_executable_maps_line_with_its_offset() -> None:
    path = FIXTURES / "profiles" / "gperftools" / "rustdemo-full.heap_v2"
    text = path.read_text()
    maps = text.split("MAPPED_LIBRARIES:\n", 1)[1].splitlines()
    executable = [line.split() for line in maps if len(line.split()) > 1 and "x" in line.split()[1]]
    profile, _ = read_profile(path)
    strings = StringTable(profile)
    got = sorted(
        (m.memory_start, m.memory_limit, m.file_offset, strings.get(m.filename)) for m in profile.mapping
    )
    want = sorted(
        (int(f[0].split("-")[0], 16), int(f[0].split("-")[1], 16), int(f[2], 16), f[5] if len(f) > 5 else "")
        for f in executable
    )
    assert got == want
    assert strings.get(profile.mapping[0].filename).endswith("/rustdemo-full")  # the main binary first


def test_windows_shaped_paths_with_spaces_are_kept_whole() -> None:
    data = (
        b"heap profile: 1: 16 [ 1: 16] @ heap_v2/524288\n"
        b"1: 16 [ 1: 16] @ 0x140001010\n"
        b"\nMAPPED_LIBRARIES:\n"
        b"140000000-140100000 r-xp 00000000 00:00 0 C:\\Program Files\\App\\app.exe\n"
    )
    profile, _ = parse_profile(data)
    assert StringTable(profile).get(profile.mapping[0].filename) == "C:\\Program Files\\App\\app.exe"
    assert profile.location[0].mapping_id == profile.mapping[0].id


@pytest.mark.parametrize("path", ELF_GPERFTOOLS, ids=lambda p: p.name)
def test_cli_converts_and_names(path: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.pb.gz"
    result = CliRunner().invoke(app, ["profile", str(path), "-o", str(out), "--search-path", str(BIN)])
    assert result.exit_code == 0, result.output
    original, _ = read_profile(path)
    rewritten, was_gzipped = read_profile(out)
    assert was_gzipped
    assert [list(s.value) for s in rewritten.sample] == [list(s.value) for s in original.sample]
    strings = StringTable(rewritten)
    fixture_mapping_ids = {
        m.id for m in rewritten.mapping
        if (BIN / strings.get(m.filename).replace("\\", "/").rsplit("/", 1)[-1]).is_file()
        and strings.get(m.filename)
    }
    fixture_locations = [loc for loc in rewritten.location if loc.mapping_id in fixture_mapping_ids]
    assert fixture_locations
    assert all(len(loc.line) > 0 for loc in fixture_locations)


# --- input that is not a profile, or a broken one -------------------------------------------------

@pytest.mark.parametrize(
    ("data", "looks_like"),
    [
        (b'{"samples": []}\n', "JSON"),
        (b"main;work;leaf 12\nmain;idle 3\n", "collapsed stacks"),
        (b"--- contention:\ncycles/second=1\n", "contention profile"),
        (b"heap profile: 1: 2 [3: 4] @ growthz\n", None),
        (b"hello world\n", "text starting 'hello world'"),
    ],
)
def test_text_that_is_no_profile_is_named(data: bytes, looks_like: str | None) -> None:
    with pytest.raises(SymbolizeError) as caught:
        parse_profile(data)
    message = str(caught.value)
    if looks_like is None:
        assert isinstance(caught.value, UnsupportedFormatError)
        assert "'growthz'" in message
    else:
        assert message.startswith("<memory>: not a profile: ")
        assert looks_like in message
    assert "Wire format" not in message


HEADER = b"heap profile: 1: 16 [ 1: 16] @ heap_v2/524288\n"
MAPS = b"MAPPED_LIBRARIES:\n55d0c0000000-55d0c0010000 r-xp 00001000 fd:01 123 /bin/app\n"


@pytest.mark.parametrize(
    ("body", "line", "what"),
    [
        (b"1: 16 [ 1: 16] @ 0x55d0c0001234 0xZZ\n", 2, "address '0xZZ'"),
        (b"1: 16 [ 1: 16] @ 0x55d0c0001234 12345\n", 2, "address '12345'"),
        (b"1: 16 [ 1: 16] @ 0x10000000000000000\n", 2, "0x-prefixed hex of 64 bits"),
        (b"99999999999999999999: 16 [ 1: 16] @ 0x1\n", 2, "does not fit 64 bits"),
        (b"1: 18446744073709551615 [ 1: 16] @ 0x1\n", 2, "does not fit 64 bits"),
        (b"0: 16 [ 0: 0] @ 0x1\n", 2, "inuse count is 0 but inuse bytes is 16"),
        (b"1: 16 [ 1: 16] @ 0x1\n1: 16 [ 1\n", 3, "not a heap sample line"),
        (b"1: 16 [ 1: 16] @ 0x1\nMAPPED_LIBRARIES:\n55d0c0000000-55d0 r-xp\n", 4, "not a maps line"),
    ],
)
def test_malformed_heap_lines_name_the_line(body: bytes, line: int, what: str) -> None:
    with pytest.raises(MalformedInputError) as caught:
        parse_profile(HEADER + body + MAPS)
    assert f"line {line}: " in str(caught.value)
    assert what in str(caught.value)


def test_huge_count_that_overflows_when_scaled_is_refused() -> None:
    # One byte per object at a huge rate: the scale factor is ~rate, the product beyond int64.
    data = (
        b"heap profile: 1: 1 [1: 1] @ heap_v2/9223372036854775807\n"
        b"4611686018427387904: 4611686018427387904 [0: 0] @ 0x1\n"
    )
    with pytest.raises(MalformedInputError, match="line 2: counts too large to scale"):
        parse_profile(data + MAPS)


def test_missing_maps_section_leaves_locations_unmapped_and_says_so() -> None:
    profile, _ = parse_profile(HEADER + b"1: 16 [ 1: 16] @ 0x55d0c0001234\n")
    assert len(profile.mapping) == 0
    assert [loc.mapping_id for loc in profile.location] == [0]
    comments = [StringTable(profile).get(index) for index in profile.comment]
    assert any("no MAPPED_LIBRARIES section" in comment for comment in comments)


def test_profile_cut_in_its_samples_is_refused() -> None:
    with pytest.raises(MalformedInputError, match="line 2: sample line cut short"):
        parse_profile(HEADER + b"1: 16 [ 1: 16] @ 0x55d0c00012")


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_any_cut_of_a_real_text_profile_parses_or_raises_one_error(data: st.DataObject) -> None:
    path = data.draw(st.sampled_from([p for p in GPERFTOOLS if not p.name.endswith(".prof")]))
    text = path.read_bytes()
    whole, _ = parse_profile(text)
    cut = data.draw(st.integers(0, len(text)))
    try:
        profile, _ = parse_profile(text[:cut])
    except SymbolizeError as error:
        assert "line " in str(error) or "not a profile" in str(error) or "cut short" in str(error)
    else:
        assert len(profile.sample) <= len(whole.sample)
        assert len(profile.mapping) <= len(whole.mapping)


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_any_cut_or_flipped_word_of_a_cpu_profile_parses_or_raises_one_error(data: st.DataObject) -> None:
    raw = bytearray((FIXTURES / "profiles" / "gperftools" / "rustdemo-full.cpu.prof").read_bytes())
    position = data.draw(st.integers(40, len(raw) - 8))
    raw[position : position + 8] = data.draw(st.binary(min_size=8, max_size=8))
    cut = data.draw(st.integers(0, len(raw)))
    try:
        profile, _ = parse_profile(bytes(raw[:cut]))
    except SymbolizeError as error:
        message = str(error)
        assert any(words in message for words in ("offset", "not a pprof profile", "maps text", "file is empty"))
    else:
        assert all(len(sample.location_id) <= 8192 for sample in profile.sample)


# --- generated profiles round-trip their totals -----------------------------------------------------

addresses = st.lists(st.integers(1, 2**64 - 1), min_size=0, max_size=6)
pairs = st.tuples(st.integers(1, 10**6), st.integers(1, 2**40)).map(lambda p: (p[0], p[0] * (p[1] // p[0] or 1)))


@settings(max_examples=100, deadline=None)
@given(
    rate=st.sampled_from([0, 1, 512, 524288]),
    samples=st.lists(st.tuples(pairs, pairs, addresses), max_size=12),
    legacy=st.booleans(),
)
def test_generated_heap_profiles_round_trip_their_counts(
    rate: int, samples: list[tuple[tuple[int, int], tuple[int, int], list[int]]], legacy: bool
) -> None:
    kind = "heapprofile" if legacy else f"heap_v2/{rate}"
    lines = [f"heap profile: 0: 0 [0: 0] @ {kind}"]
    for (inuse_objects, inuse_bytes), (alloc_objects, alloc_bytes), stack in samples:
        frames = " ".join(f"0x{address:x}" for address in stack)
        lines.append(f"{inuse_objects:6d}: {inuse_bytes:8d} [{alloc_objects:6d}: {alloc_bytes:8d}] @ {frames}")
    lines += ["", "# heap stats", "MAPPED_LIBRARIES:", "1000-2000 r-xp 00000000 00:00 0 /app"]
    profile, _ = parse_profile(("\n".join(lines) + "\n").encode())
    strings = StringTable(profile)
    addresses_by_id = {location.id: location.address for location in profile.location}
    assert len(profile.sample) == len(samples)
    scaled = not legacy and rate > 1
    for sample, ((inuse_objects, inuse_bytes), (alloc_objects, alloc_bytes), stack) in zip(
        profile.sample, samples, strict=True
    ):
        assert [addresses_by_id[i] for i in sample.location_id] == stack
        raw = {strings.get(label.key): label.num for label in sample.label if strings.get(label.key).startswith("raw_")}
        written = [alloc_objects, alloc_bytes, inuse_objects, inuse_bytes]
        if scaled:
            assert [raw[k] for k in ("raw_alloc_objects", "raw_alloc_space", "raw_inuse_objects", "raw_inuse_space")] \
                == written
            assert list(sample.value) == [
                *scale_heap_v2(alloc_objects, alloc_bytes, rate), *scale_heap_v2(inuse_objects, inuse_bytes, rate)
            ]
            assert all(v >= w for v, w in zip(sample.value, written, strict=True))
        else:
            assert raw == {}
            assert list(sample.value) == written


@settings(max_examples=100, deadline=None)
@given(
    layout=st.sampled_from([(8, "<"), (8, ">"), (4, "<"), (4, ">")]),
    period_us=st.integers(1, 10**6),
    records=st.lists(
        st.tuples(st.integers(1, 1000), st.lists(st.integers(1, 2**32 - 1), min_size=1, max_size=8)), max_size=10
    ),
)
def test_generated_cpu_profiles_round_trip_every_sample(
    layout: tuple[int, str], period_us: int, records: list[tuple[int, list[int]]]
) -> None:
    size, order = layout
    code = "Q" if size == 8 else "I"
    words = [0, 3, 0, period_us, 0]
    for count, pcs in records:
        words += [count, len(pcs), *pcs]
    words += [0, 1, 0]
    data = struct.pack(f"{order}{len(words)}{code}", *words) + b"1000-2000 r-xp 00000000 00:00 0 /app\n"
    profile, _ = parse_profile(data)
    assert profile.period == period_us * 1000
    addresses_by_id = {location.id: location.address for location in profile.location}
    assert len(profile.sample) == len(records)
    for sample, (count, pcs) in zip(profile.sample, records, strict=True):
        expected_pcs = pcs[:1] + pcs[2:] if len(pcs) > 1 and pcs[1] == pcs[0] else pcs
        assert [addresses_by_id[i] for i in sample.location_id] == expected_pcs
        assert list(sample.value) == [count, count * period_us * 1000]
    assert sum(s.value[0] for s in profile.sample) == sum(count for count, _ in records)
