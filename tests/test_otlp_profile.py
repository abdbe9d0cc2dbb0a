"""``symbolize profile`` on OTLP profiles (symbolize/otlp/rewrite.py).

The done-when of issue 25: every fixture pprof profile converted to OTLP, named as OTLP and
converted back names the same frames as naming the pprof directly; the eBPF-shaped fixture (ELF
virtual addresses in a process mapping, htlhash only) is named.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile
from opentelemetry.proto.profiles.v1development.profiles_pb2 import Function, Location, Mapping, ProfilesData, Stack

from symbolize.api import symbolize_file
from symbolize.formats.identity import htlhash
from symbolize.otlp import attributes as keys
from symbolize.otlp.convert import Target, convert
from symbolize.otlp.encoding import Encoding, read_profiles_data
from symbolize.pprof import StringTable, parse_profile, read_profile
from symbolize.proto import profile_pb2 as pprof
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


def _symbolized_through_otlp(path: Path, tmp_path: Path, encoding: Encoding) -> tuple[pprof.Profile, int]:
    otlp = tmp_path / "in.otlp"
    otlp.write_bytes(convert(path.read_bytes(), Target.OTLP, encoding=encoding, path=path).data)
    named = tmp_path / "named.otlp"
    summary = symbolize_file(otlp, named, search_paths=SEARCH, use_cache=False)
    back = convert(named.read_bytes(), Target.PPROF, path=named)
    profile, _ = parse_profile(back.data, named)
    return profile, summary.named


@pytest.mark.parametrize("path", FIXTURE_PROFILES, ids=lambda path: str(path.relative_to(PROFILES)))
def test_every_fixture_profile_is_named_the_same_through_otlp(path: Path, tmp_path: Path) -> None:
    direct = tmp_path / "direct.pb"
    summary = symbolize_file(path, direct, search_paths=SEARCH, use_cache=False, gzip=False)
    expected, _ = read_profile(direct)
    through_otlp, named = _symbolized_through_otlp(path, tmp_path, Encoding.PROTOBUF)
    assert named == summary.named
    assert summary.named > 0
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
def test_the_ebpf_shaped_fixture_is_named_as_its_pprof_twin(path: Path, tmp_path: Path) -> None:
    twin_name, file_relative = EBPF_TWINS[path.name]
    direct = tmp_path / "twin.pb"
    symbolize_file(PROFILES / twin_name, direct, search_paths=SEARCH, use_cache=False)
    expected, _ = read_profile(direct)
    named = tmp_path / "named.otlp.pb"
    summary = symbolize_file(path, named, search_paths=SEARCH, use_cache=False)
    back, _ = parse_profile(convert(named.read_bytes(), Target.PPROF, path=named).data, named)
    assert stack_counts(back) == stack_counts(expected)
    fixture_mappings = [mapping for mapping in summary.mappings if (BIN / Path(mapping.filename).name).is_file()]
    assert fixture_mappings and all(mapping.unnamed == 0 and mapping.named for mapping in fixture_mappings)
    assert all(not mapping.unverified for mapping in fixture_mappings)  # matched by htlhash
    for mapping in fixture_mappings:
        relative = Path(mapping.filename).name == file_relative or mapping.filename.endswith(".so")
        assert mapping.addresses == ("file-relative" if relative else "runtime"), mapping.filename


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
def test_naming_keeps_every_sample_and_the_dictionary_rules(path: Path, tmp_path: Path) -> None:
    named = tmp_path / "named.otlp.pb"
    symbolize_file(path, named, search_paths=SEARCH, use_cache=False)
    before, after = _export(path), _export(named)
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
def test_named_mappings_get_their_flags_and_the_ids_of_the_hashed_file(path: Path, tmp_path: Path) -> None:
    named = tmp_path / "named.otlp.pb"
    symbolize_file(path, named, search_paths=SEARCH, use_cache=False)
    after = _export(named)
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
