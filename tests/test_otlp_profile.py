"""``symbolize profile`` on OTLP profiles (symbolize/otlp/rewrite.py).

The done-when of issue 25: every fixture pprof profile converted to OTLP, named as OTLP and
converted back names the same frames as naming the pprof directly; the eBPF-shaped fixture (ELF
virtual addresses in a process mapping, htlhash only) is named.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.proto.profiles.v1development.profiles_pb2 import (
    Function,
    Location,
    Mapping,
    ProfilesData,
    ProfilesDictionary,
    Stack,
)

from symbolize.api import Session, build_indexes, stamp_profile, symbolize_file
from symbolize.cache import index_htlhash
from symbolize.formats.identity import htlhash
from symbolize.loader import Loader
from symbolize.module import Reason
from symbolize.otlp import attributes as keys
from symbolize.otlp.convert import Target, convert
from symbolize.otlp.encoding import Encoding, encode_profiles_data, read_profiles_data
from symbolize.otlp.from_pprof import profiles_from_pprof
from symbolize.otlp.rewrite import rewrite_otlp_payload, symbolize_profiles_data
from symbolize.otlp.stamp import stamp_otlp_payload
from symbolize.otlp.to_pprof import pprof_from_profiles
from symbolize.pprof import StringTable, parse_profile, read_profile
from symbolize.proto import profile_pb2 as pprof
from symbolize.rewrite import RewriteOptions
from symbolize.rewrite import symbolize_profile as rewrite_pprof
from symbolize.summary import Summary
from tests.fixtures_data import BIN, PROFILES

# Every committed profile the converter reads (as tests/test_otlp_convert.py lists them).
FIXTURE_PROFILES = sorted(
    path
    for path in PROFILES.rglob("*")
    if path.is_file() and path.suffix not in (".json", ".txt") and path.parent.name != "raw"
)
SEARCH = [BIN, BIN / "windows", BIN / "macos"]


def named_stacks(profile: pprof.Profile) -> list[tuple[list[int], list[list[tuple[str, str, int, int]]]]]:
    """Each sample's values and, per frame leaf first, its lines (function, file, line, column),
    inlinees first: what a reader of the profile sees, whatever the IDs."""
    strings = StringTable(profile)
    functions = {function.id: function for function in profile.function}
    locations = {location.id: location for location in profile.location}
    stacks = []
    for sample in profile.sample:
        frames = []
        for location_id in sample.location_id:
            lines = []
            for line in locations[location_id].line:
                function = functions.get(line.function_id)
                name = strings.get(function.name) if function is not None else ""
                file = strings.get(function.filename) if function is not None else ""
                lines.append((name, file, line.line, line.column))
            frames.append(lines)
        stacks.append((list(sample.value), frames))
    return stacks


@pytest.fixture(scope="module")
def loader() -> Iterator[Loader]:
    """One loader for the module's runs, as ``serve`` keeps one: files are decoded once."""
    session = Session(search_paths=SEARCH, use_cache=False)
    opened = session.loader()
    yield opened
    session.finish(opened)


def _symbolized_through_otlp(path: Path, loader: Loader) -> tuple[pprof.Profile, Summary]:
    """``path`` converted to OTLP, named as OTLP, converted back."""
    payload = convert(path.read_bytes(), Target.OTLP, path=path).data
    named, summary = rewrite_otlp_payload(payload, RewriteOptions(discovery=loader), source=str(path))
    back, _ = parse_profile(convert(named, Target.PPROF, path=path).data, path)
    return back, summary


@pytest.mark.parametrize("path", FIXTURE_PROFILES, ids=lambda path: str(path.relative_to(PROFILES)))
def test_every_fixture_profile_is_named_the_same_through_otlp(path: Path, loader: Loader) -> None:
    expected, _ = read_profile(path)
    summary = rewrite_pprof(expected, RewriteOptions(discovery=loader))
    through_otlp, otlp_summary = _symbolized_through_otlp(path, loader)
    assert summary.named > 0
    assert otlp_summary.named == summary.named
    assert named_stacks(through_otlp) == named_stacks(expected)


# --- The eBPF profiler's shape (fixtures/make_otlp_profiles.py): ELF vaddrs, htlhash only. ---

OTLP_FIXTURES = PROFILES.parent / "otlp"
EBPF = sorted(OTLP_FIXTURES.glob("*.ebpf.otlp.pb"))
# Each eBPF-shaped file's pprof twin, and the fixture binary whose addresses are file-relative
# there (None: an ET_EXEC, whose vaddrs are its runtime addresses).
EBPF_TWINS = {
    "rustdemo-full.cpu.ebpf.otlp.pb": ("rustdemo-full.cpu.pb", "rustdemo-full"),
    "cppdemo-clang-dwarf5-nopie.cpu.ebpf.otlp.pb": ("cppdemo-clang-dwarf5-nopie.cpu.pb", None),
}


def stack_counts(profile: pprof.Profile, column: int = 0) -> Counter[tuple[tuple[tuple[str, str, int, int], ...], ...]]:
    """How much of ``column`` each named stack holds (the eBPF shape merges samples by stack)."""
    counts: Counter[tuple[tuple[tuple[str, str, int, int], ...], ...]] = Counter()
    for values, frames in named_stacks(profile):
        counts[tuple(tuple(lines) for lines in frames)] += values[column]
    return counts


def test_every_ebpf_fixture_has_a_twin() -> None:
    assert sorted(path.name for path in EBPF) == sorted(EBPF_TWINS)


@pytest.mark.parametrize("path", EBPF, ids=lambda path: path.name)
def test_the_ebpf_shaped_fixture_is_named_as_its_pprof_twin(path: Path, loader: Loader) -> None:
    twin_name, file_relative = EBPF_TWINS[path.name]
    expected, _ = read_profile(PROFILES / twin_name)
    rewrite_pprof(expected, RewriteOptions(discovery=loader))
    named, summary = _named(path, loader)
    back, _ = pprof_from_profiles(named)
    assert stack_counts(back) == stack_counts(expected)
    fixture_mappings = [mapping for mapping in summary.mappings if (BIN / Path(mapping.filename).name).is_file()]
    assert fixture_mappings and all(mapping.unnamed == 0 and mapping.named for mapping in fixture_mappings)
    assert all(not mapping.unverified for mapping in fixture_mappings)  # matched by htlhash
    for mapping in fixture_mappings:
        relative = Path(mapping.filename).name == file_relative or mapping.filename.endswith(".so")
        assert mapping.addresses == ("file-relative" if relative else "runtime"), mapping.filename


def _named(path: Path, loader: Loader) -> tuple[ProfilesData, Summary]:
    """The export at ``path``, named."""
    message = _export(path)
    summary = symbolize_profiles_data(message, RewriteOptions(discovery=loader), source=path)
    return message, summary


def _export(path: Path) -> ProfilesData:
    message, _, _ = read_profiles_data(path.read_bytes(), path)
    return message


def _stack_addresses(message: ProfilesData, stack_index: int) -> list[tuple[int, int]]:
    dictionary = message.dictionary
    return [
        (dictionary.location_table[index].mapping_index, dictionary.location_table[index].address)
        for index in dictionary.stack_table[stack_index].location_indices
    ]


def _sample_facts(message: ProfilesData) -> list[object]:
    """Everything of the samples but the stack's index: each frame's mapping and address instead."""
    return [
        (
            list(sample.values),
            list(sample.timestamps_unix_nano),
            sample.link_index,
            list(sample.attribute_indices),
            _stack_addresses(message, sample.stack_index),
        )
        for resource in message.resource_profiles
        for scope in resource.scope_profiles
        for profile in scope.profiles
        for sample in profile.samples
    ]


def _scopes(message: ProfilesData) -> list[object]:
    return [
        [(scope.scope, scope.schema_url) for scope in resource.scope_profiles] for resource in message.resource_profiles
    ]


@pytest.mark.parametrize("path", EBPF, ids=lambda path: path.name)
def test_naming_keeps_every_sample_and_the_dictionary_rules(path: Path, loader: Loader) -> None:
    before, (after, _) = _export(path), _named(path, loader)
    assert _sample_facts(after) == _sample_facts(before)
    assert [resource.resource for resource in after.resource_profiles] == [
        resource.resource for resource in before.resource_profiles
    ]
    assert _scopes(after) == _scopes(before)
    old, new = before.dictionary, after.dictionary
    assert list(new.link_table) == list(old.link_table)
    # Tables only grow, their first entries unchanged; the zero entries stay.
    assert list(new.string_table[: len(old.string_table)]) == list(old.string_table)
    assert list(new.attribute_table[: len(old.attribute_table)]) == list(old.attribute_table)
    assert new.string_table[0] == "" and new.function_table[0] == Function() and new.location_table[0] == Location()
    assert new.mapping_table[0] == Mapping() and new.stack_table[0] == Stack()
    # Nothing the run added is a duplicate.
    assert len(set(new.string_table)) == len(new.string_table)
    functions = [
        (f.name_strindex, f.system_name_strindex, f.filename_strindex, f.start_line) for f in new.function_table
    ]
    assert len(set(functions)) == len(functions)
    assert len({tuple(stack.location_indices) for stack in new.stack_table}) == len(new.stack_table)
    attributes = [(a.key_strindex, a.value.SerializeToString(), a.unit_strindex) for a in new.attribute_table]
    assert len(set(attributes)) == len(attributes)
    # Every native frame of a fixture binary has lines now, inlinees first: an inline chain ends
    # with the function that holds the code, whose name is a real function.
    strings = new.string_table
    for index, location in enumerate(new.location_table[1:], 1):
        mapping = new.mapping_table[location.mapping_index]
        if (BIN / Path(strings[mapping.filename_strindex]).name).is_file():
            assert location.lines, f"location {index} unnamed"
            assert all(new.function_table[line.function_index].name_strindex for line in location.lines)


@pytest.mark.parametrize("path", EBPF, ids=lambda path: path.name)
def test_named_mappings_get_their_flags_and_the_ids_of_the_hashed_file(path: Path, loader: Loader) -> None:
    after, _ = _named(path, loader)
    strings = after.dictionary.string_table
    for mapping in after.dictionary.mapping_table[1:]:
        name = Path(strings[mapping.filename_strindex]).name
        if not (BIN / name).is_file():
            continue
        found = {
            strings[after.dictionary.attribute_table[index].key_strindex]: after.dictionary.attribute_table[index].value
            for index in mapping.attribute_indices
        }
        assert found[keys.HAS_FUNCTIONS].bool_value and found[keys.HAS_FILENAMES].bool_value
        assert found[keys.HAS_LINE_NUMBERS].bool_value
        assert found[keys.HTLHASH].string_value == htlhash(BIN / name)
        assert found[keys.GNU_BUILD_ID].string_value == gnu_build_id(BIN / name)


def gnu_build_id(path: Path) -> str:
    """The file's NT_GNU_BUILD_ID, read with pyelftools (not symbolize's reader)."""
    with path.open("rb") as stream:
        for section in ELFFile(stream).iter_sections():
            if section["sh_type"] == "SHT_NOTE":
                for note in section.iter_notes():
                    if note["n_type"] == "NT_GNU_BUILD_ID":
                        return str(note["n_desc"])
    raise AssertionError(f"{path} has no build ID")


# --- rewrite_otlp_payload: the encoding kept; the command line; hostile input. ---


@pytest.mark.parametrize("gzipped", [False, True], ids=["plain", "gzip"])
@pytest.mark.parametrize("encoding", list(Encoding))
def test_the_payload_comes_back_in_its_encoding(encoding: Encoding, gzipped: bool, loader: Loader) -> None:
    source = PROFILES / "rustdemo-full.cpu.pb"
    payload = convert(source.read_bytes(), Target.OTLP, encoding=encoding, path=source).data
    if gzipped:
        payload = gzip.compress(payload)
    data, summary = rewrite_otlp_payload(payload, RewriteOptions(discovery=loader), source="<request 1>")
    again, _ = rewrite_otlp_payload(data, RewriteOptions(discovery=loader), source="<request 2>")
    assert (data[:2] == b"\x1f\x8b") is gzipped
    message, read_as, _ = read_profiles_data(data, "<answer>")
    assert read_as is encoding
    assert summary.unnamed == 0 and summary.named
    assert {mapping.addresses for mapping in summary.mappings} == {"runtime"}
    back, _ = pprof_from_profiles(message)
    direct, _ = read_profile(source)
    rewrite_pprof(direct, RewriteOptions(discovery=loader))
    assert named_stacks(back) == named_stacks(direct)
    assert again == data, "a named export is left as it is"


def test_an_export_without_profiles_comes_back_as_it_was() -> None:
    payload = ProfilesData(dictionary=ProfilesDictionary(string_table=[""])).SerializeToString()
    data, summary = rewrite_otlp_payload(payload, RewriteOptions(), source="<empty>")
    assert data == payload and summary.locations == 0


def test_profile_on_the_command_line_reads_otlp_json_and_says_the_addresses(tmp_path: Path) -> None:
    source = tmp_path / "ebpf.otlp.json"
    message = _export(EBPF[0])
    source.write_bytes(encode_profiles_data(message, Encoding.JSON))
    out = tmp_path / "named.otlp.json"
    done = subprocess.run(
        [sys.executable, "-m", "symbolize", "profile", str(source), "-o", str(out), "--search-path", str(BIN),
         "--json-summary", "--no-cache"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert {mapping["addresses"] for mapping in summary["mappings"]} >= {"file-relative"}
    assert read_profiles_data(out.read_bytes())[1] is Encoding.JSON
    assert summary["named"] > 0


def test_a_broken_export_is_one_line_and_nothing_is_written(tmp_path: Path) -> None:
    message = _export(EBPF[0])
    message.dictionary.location_table[1].mapping_index = len(message.dictionary.mapping_table) + 5
    broken = tmp_path / "broken.otlp.pb"
    broken.write_bytes(message.SerializeToString())
    out = tmp_path / "named.pb"
    done = subprocess.run(
        [sys.executable, "-m", "symbolize", "profile", str(broken), "-o", str(out)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1 and str(broken) in done.stderr and "Traceback" not in done.stderr
    assert "mapping_table" in done.stderr
    assert not out.exists()


def test_a_file_that_does_not_hash_as_the_mapping_says_is_refused(tmp_path: Path) -> None:
    message = _export(EBPF[0])
    dictionary = message.dictionary
    for entry in dictionary.attribute_table:
        if dictionary.string_table[entry.key_strindex] == keys.HTLHASH:
            entry.value.string_value = "0" * 32
    source = tmp_path / "other-build.otlp.pb"
    source.write_bytes(message.SerializeToString())
    summary = symbolize_file(source, tmp_path / "out.pb", search_paths=SEARCH, use_cache=False)
    fixture_mappings = [mapping for mapping in summary.mappings if (BIN / Path(mapping.filename).name).is_file()]
    assert fixture_mappings and all(mapping.named == 0 for mapping in fixture_mappings)
    # The address convention is said of a mapping whose file is refused too (an ET_EXEC's, a DSO's).
    assert {mapping.addresses for mapping in fixture_mappings} == {"runtime", "file-relative"}
    for mapping in fixture_mappings:
        assert set(mapping.reasons) == {Reason.DEBUG_ID_MISMATCH}
        assert any("htlhash" in detail and "0" * 32 in detail for _, detail in mapping.details)


@settings(max_examples=40, deadline=None)
@given(data=st.binary(min_size=0, max_size=3 * 4096 + 7) | st.integers(0, 3 * 4096).map(lambda n: bytes(n)))
def test_htlhash_is_the_conventions_algorithm(data: bytes, tmp_path_factory: pytest.TempPathFactory) -> None:
    path = tmp_path_factory.mktemp("htlhash") / "file"
    path.write_bytes(data)
    expected = hashlib.sha256(data[:4096] + data[-4096:] + len(data).to_bytes(8, "big")).digest()[:16].hex()
    assert htlhash(path) == expected


# --- symbolize stamp on OTLP: the IDs become the mapping's attributes. ---


def test_stamp_records_the_build_ids_as_attributes(tmp_path: Path) -> None:
    source = OTLP_FIXTURES / "rustdemo-full.cpu.ebpf.otlp.pb"
    gzipped = tmp_path / "in.otlp.json.gz"
    gzipped.write_bytes(gzip.compress(encode_profiles_data(_export(source), Encoding.JSON)))
    out = tmp_path / "stamped.otlp.json.gz"
    binaries = [BIN / "rustdemo-full", BIN / "sampler.so"]
    done = subprocess.run(
        [sys.executable, "-m", "symbolize", "stamp", str(gzipped), "-o", str(out), "--json-summary",
         *(argument for binary in binaries for argument in ("--binary", str(binary)))],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["stamped"] >= len(binaries)
    stamped, encoding, was_gzipped = read_profiles_data(out.read_bytes(), out)
    assert encoding is Encoding.JSON and was_gzipped
    before = _export(source)
    assert _sample_facts(stamped) == _sample_facts(before)
    strings = stamped.dictionary.string_table
    for old, new in zip(before.dictionary.mapping_table, stamped.dictionary.mapping_table, strict=True):
        name = Path(strings[new.filename_strindex]).name
        found = {
            strings[stamped.dictionary.attribute_table[index].key_strindex]: stamped.dictionary.attribute_table[index]
            for index in new.attribute_indices
        }
        assert list(new.attribute_indices[: len(old.attribute_indices)]) == list(old.attribute_indices)
        if BIN / name in binaries:
            assert found[keys.GNU_BUILD_ID].value.string_value == gnu_build_id(BIN / name)
            assert keys.HTLHASH in found


# --- The index records its binary's htlhash (what finds an index by the eBPF profiler's ID). ---


@pytest.mark.parametrize("binary", ["cdemo-gcc-dwarf5-pie", "cdemo-gcc-debuglink"])
def test_an_index_records_its_binarys_htlhash(binary: str, tmp_path: Path) -> None:
    built = build_indexes([BIN / binary], search_paths=[BIN], cache_dir=tmp_path)
    assert built
    assert [index_htlhash(path) for path in built] == [htlhash(BIN / binary)] * len(built)


# --- Windows frames in OTLP, by our namespaced attributes (symbolize.pdb.id, symbolize.pe.code_id). ---

WINDOWS_PROFILE = PROFILES / "windows" / "winapp.heap.pb.gz"
WINDOWS_BINARIES = [BIN / "windows" / "winapp.exe", BIN / "windows" / "winlib.dll"]


def _stamped_windows_export() -> ProfilesData:
    payload = convert(WINDOWS_PROFILE.read_bytes(), Target.OTLP, path=WINDOWS_PROFILE).data
    stamped, report = stamp_otlp_payload(payload, binaries=WINDOWS_BINARIES, source="<windows>")
    assert report.stamped == len(WINDOWS_BINARIES)
    message, _, _ = read_profiles_data(stamped, "<stamped>")
    return message


def test_a_stamped_windows_export_is_named_by_both_ids_as_its_stamped_pprof(loader: Loader) -> None:
    message = _stamped_windows_export()
    strings = message.dictionary.string_table
    for mapping in message.dictionary.mapping_table[1:]:
        held = {strings[message.dictionary.attribute_table[index].key_strindex] for index in mapping.attribute_indices}
        assert {keys.PDB_ID, keys.PE_CODE_ID} <= held
    summary = symbolize_profiles_data(message, RewriteOptions(discovery=loader), source="<windows>")
    expected, _ = stamp_profile(WINDOWS_PROFILE, binaries=WINDOWS_BINARIES)
    expected_summary = rewrite_pprof(expected, RewriteOptions(discovery=loader))
    back, _ = pprof_from_profiles(message)
    assert named_stacks(back) == named_stacks(expected)
    assert summary.named == expected_summary.named > 0
    assert not any(mapping.unverified for mapping in summary.mappings)


def test_a_windows_mapping_whose_pdb_id_is_another_builds_is_refused(loader: Loader) -> None:
    message = _stamped_windows_export()
    dictionary = message.dictionary
    for entry in dictionary.attribute_table:
        if dictionary.string_table[entry.key_strindex] == keys.PDB_ID:
            entry.value.string_value = "0" * 32 + "1"  # the code ID still matches
    summary = symbolize_profiles_data(message, RewriteOptions(discovery=loader), source="<windows>")
    assert summary.named == 0
    assert {reason for mapping in summary.mappings for reason in mapping.reasons} == {Reason.DEBUG_ID_MISMATCH}


# --- Generated exports: stacks drawn from a real profile's locations, any roles, any order. ---

_SOURCE = PROFILES / "rustdemo-full.cpu.pb"


@st.composite
def resampled_profiles(draw: st.DrawFn) -> pprof.Profile:
    """The real profile's tables with drawn samples: a location may be a leaf in one sample and a
    caller in another (the split), stacks repeat, a profile may be on-CPU or not."""
    source, _ = read_profile(_SOURCE)
    location_ids = [location.id for location in source.location]
    samples = draw(
        st.lists(
            st.tuples(st.lists(st.sampled_from(location_ids), min_size=1, max_size=6), st.integers(0, 50)),
            min_size=1,
            max_size=12,
        )
    )
    del source.sample[:]
    for stack, value in samples:
        source.sample.add(location_id=stack, value=[value, value * 1000])
    if draw(st.booleans()):  # not on-CPU: every frame a return address
        source.string_table.extend(["alloc_objects", "alloc_space"])
        source.sample_type[0].type = len(source.string_table) - 2
        source.sample_type[1].type = len(source.string_table) - 1
        source.ClearField("period_type")
    return source


@settings(max_examples=25, deadline=None)
@given(profile=resampled_profiles(), encoding=st.sampled_from(list(Encoding)))
def test_generated_exports_are_named_as_their_pprof(profile: pprof.Profile, encoding: Encoding, loader: Loader) -> None:
    payload = encode_profiles_data(profiles_from_pprof(profile), encoding)
    named, summary = rewrite_otlp_payload(payload, RewriteOptions(discovery=loader), source="<generated>")
    expected = pprof.Profile()
    expected.CopyFrom(profile)
    expected_summary = rewrite_pprof(expected, RewriteOptions(discovery=loader))
    back, _ = pprof_from_profiles(read_profiles_data(named, "<named>")[0])
    assert named_stacks(back) == named_stacks(expected)
    assert summary.named == expected_summary.named
