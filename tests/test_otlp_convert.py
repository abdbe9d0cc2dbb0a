"""pprof <-> OTLP profiles (symbolize/otlp/): exact round trips on every fixture profile and on
generated ones, the OTLP rules the output keeps, and the known bugs of the Collector's pprof
translator (open-telemetry/opentelemetry-collector-contrib, pkg/translator/pprof) as tests.

OTLP inputs from other producers are built here with opentelemetry-proto's own classes.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.profiles.v1development.profiles_service_pb2 import ExportProfilesServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.profiles.v1development.profiles_pb2 import (
    Function,
    KeyValueAndUnit,
    Link,
    Location,
    Mapping,
    Profile,
    ProfilesData,
    ProfilesDictionary,
    ResourceProfiles,
    Sample,
    ScopeProfiles,
    Stack,
    ValueType,
)
from typer.testing import CliRunner

from symbolize.cli.app import app
from symbolize.errors import MalformedInputError, SymbolizeError
from symbolize.formats.errors import InputLimitError
from symbolize.otlp import attributes as keys
from symbolize.otlp.convert import Target, convert
from symbolize.otlp.encoding import Encoding, encode_profiles_data, read_profiles_data
from symbolize.otlp.from_pprof import profiles_from_pprof
from symbolize.otlp.to_pprof import pprof_from_profiles
from symbolize.pprof import parse_profile
from symbolize.proto import profile_pb2 as pprof
from tests.fixtures_data import PROFILES

# Every committed profile the converter reads: pprof (plain and gzipped) and gperftools.
FIXTURE_PROFILES = sorted(
    path
    for path in PROFILES.rglob("*")
    if path.is_file() and path.suffix not in (".json", ".txt") and path.parent.name != "raw"
)
ENCODINGS = list(Encoding)


def _round_trip(data: bytes, encoding: Encoding) -> tuple[bytes, bytes, str | None]:
    """(OTLP bytes, pprof bytes back, the note) for pprof ``data``."""
    otlp = convert(data, Target.OTLP, encoding=encoding)
    back = convert(otlp.data, Target.PPROF)
    return otlp.data, back.data, back.note


def _otlp_of(profile: pprof.Profile) -> ProfilesData:
    return profiles_from_pprof(profile)


def _strings(data: ProfilesData) -> list[str]:
    return list(data.dictionary.string_table)


def _attributes(data: ProfilesData, indices: list[int]) -> dict[str, tuple[object, str]]:
    """Key -> (value, unit) of the attributes at ``indices``."""
    table, strings = data.dictionary.attribute_table, data.dictionary.string_table
    found: dict[str, tuple[object, str]] = {}
    for index in indices:
        entry = table[index]
        kind = entry.value.WhichOneof("value")
        value: object = getattr(entry.value, kind) if kind else None
        if kind == "array_value":
            value = [getattr(element, element.WhichOneof("value")) for element in entry.value.array_value.values]
        found[strings[entry.key_strindex]] = (value, strings[entry.unit_strindex])
    return found


def test_there_are_fixture_profiles_of_every_platform() -> None:
    names = {path.parent.name for path in FIXTURE_PROFILES}
    assert {"profiles", "macos", "windows", "gperftools", "offsets"} <= names
    assert len(FIXTURE_PROFILES) >= 30


@pytest.mark.parametrize("encoding", ENCODINGS)
@pytest.mark.parametrize("path", FIXTURE_PROFILES, ids=lambda path: str(path.relative_to(PROFILES)))
def test_every_fixture_profile_comes_back_exactly(path: Path, encoding: Encoding) -> None:
    data = path.read_bytes()
    original, was_gzipped = parse_profile(data, path)
    otlp, back, note = _round_trip(data, encoding)
    assert note is None, "nothing is dropped on the way back from our own OTLP"
    assert (otlp[:2] == b"\x1f\x8b") == was_gzipped == (back[:2] == b"\x1f\x8b")
    returned, _ = parse_profile(back, path)
    assert returned == original
    if not was_gzipped and data[:1] != b"%" and path.parent.name != "gperftools":
        assert back == data, "a pprof file written by protobuf comes back byte for byte"


@pytest.mark.parametrize("path", FIXTURE_PROFILES, ids=lambda path: str(path.relative_to(PROFILES)))
def test_the_otlp_of_a_fixture_keeps_the_dictionary_rules(path: Path) -> None:
    original, _ = parse_profile(path.read_bytes(), path)
    data = _otlp_of(original)
    dictionary = data.dictionary
    # Every table's first entry is its zero value, present.
    assert dictionary.string_table[0] == ""
    for table, empty in (
        (dictionary.mapping_table, Mapping()),
        (dictionary.location_table, Location()),
        (dictionary.function_table, Function()),
        (dictionary.link_table, Link()),
        (dictionary.attribute_table, KeyValueAndUnit()),
        (dictionary.stack_table, Stack()),
    ):
        assert table[0] == empty
    # Stacks and attributes are not duplicated; the pprof strings lead the string table.
    stacks = [tuple(stack.location_indices) for stack in dictionary.stack_table]
    assert len(set(stacks)) == len(stacks)
    attributes = [entry.SerializeToString() for entry in dictionary.attribute_table]
    assert len(set(attributes)) == len(attributes)
    assert _strings(data)[: len(original.string_table)] == list(original.string_table)
    scope = data.resource_profiles[0].scope_profiles[0]
    profiles = scope.profiles
    assert len(profiles) == len(original.sample_type)
    # pprof's default sample type (the last, none being named) is the first profile, as OTLP
    # readers show profiles[0]; the scope records where each came from (semantic conventions).
    order = _scope_attributes(scope).get(keys.SAMPLE_TYPE_ORDER, list(range(len(profiles))))
    assert order[0] == len(original.sample_type) - 1 and sorted(order) == list(range(len(profiles)))
    for column, profile in zip(order, profiles, strict=True):
        strings = dictionary.string_table
        assert strings[profile.sample_type.type_strindex] == original.string_table[original.sample_type[column].type]
        assert [sample.values[0] for sample in profile.samples] == [sample.value[column] for sample in original.sample]
        assert profile.time_unix_nano == original.time_nanos and profile.duration_nano == original.duration_nanos
    # A sample's stack is its pprof locations, leaf first, each the same address.
    by_id = {location.id: location for location in original.location}
    for sample, converted in zip(original.sample, profiles[0].samples, strict=True):
        stack = dictionary.stack_table[converted.stack_index].location_indices
        addresses = [dictionary.location_table[index].address for index in stack]
        assert addresses == [by_id[location_id].address for location_id in sample.location_id]


def _scope_attributes(scope: ScopeProfiles) -> dict[str, object]:
    found: dict[str, object] = {}
    for attribute in scope.scope.attributes:
        kind = attribute.value.WhichOneof("value")
        if kind == "array_value":
            found[attribute.key] = [element.int_value for element in attribute.value.array_value.values]
        else:
            found[attribute.key] = getattr(attribute.value, kind) if kind else None
    return found


def test_the_default_sample_type_comes_first_and_is_recorded_on_the_scope() -> None:
    strings = ["", "alloc_objects", "count", "alloc_space", "bytes", "inuse_objects", "inuse_space"]
    profile = pprof.Profile(string_table=strings, default_sample_type=5)
    for type_index, unit_index in ((1, 2), (3, 4), (5, 2), (6, 4)):
        profile.sample_type.add(type=type_index, unit=unit_index)
    profile.sample.add(value=[1, 2, 3, 4])
    data = _otlp_of(profile)
    scope = data.resource_profiles[0].scope_profiles[0]
    assert _scope_attributes(scope) == {keys.DEFAULT_SAMPLE_TYPE: "inuse_objects", keys.SAMPLE_TYPE_ORDER: [2, 0, 1, 3]}
    assert [sample.values[0] for otlp in scope.profiles for sample in otlp.samples] == [3, 1, 2, 4]
    assert pprof_from_profiles(data)[0] == profile


def _build_id_keys(path: Path) -> set[str]:
    original, _ = parse_profile(path.read_bytes(), path)
    data = _otlp_of(original)
    found: set[str] = set()
    for mapping in list(data.dictionary.mapping_table)[1:]:
        found.update(key for key in _attributes(data, list(mapping.attribute_indices)) if key in keys.BUILD_ID_KEYS)
    return found


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("rustdemo-full.cpu.pb", {keys.GNU_BUILD_ID}),
        ("windows/winapp.codeid.heap.pb.gz", {keys.PE_CODE_ID}),
        ("windows/mingwapp.codeid.cpu.pb.gz", {keys.PE_CODE_ID}),
        ("macos/usemshape-x86_64.cpu.pb.gz", {keys.MACHO_UUID}),
        ("windows/winapp.heap.pb.gz", set()),
    ],
)
def test_a_build_id_becomes_the_attribute_of_its_kind(name: str, expected: set[str]) -> None:
    assert _build_id_keys(PROFILES / name) == expected


@pytest.mark.parametrize(
    ("build_id", "filename", "key"),
    [
        ("5d851853600a28a4dbe6b3aabc175158492c812d", "/usr/bin/x", keys.GNU_BUILD_ID),
        ("abcDEF/ghi_jk-l/mno/pqr", "/usr/bin/x", keys.GO_BUILD_ID),
        ("DD1324EA5000", r"C:\app\winapp.exe", keys.PE_CODE_ID),
        ("123456781000", r"C:\app\winlib.dll", keys.PE_CODE_ID),
        ("123456781000", "/usr/lib/libx.so", keys.GNU_BUILD_ID),
        ("0123456789ABCDEF0123456789ABCDEF1", r"C:\app\winapp.exe", keys.PDB_ID),
        ("4C4C4473-5555-3144-A17D-A20D3ED4E695", "/usr/lib/dyld", keys.MACHO_UUID),
        ("not a build id", "/x", keys.OTHER_BUILD_ID),
    ],
)
def test_build_id_forms(build_id: str, filename: str, key: str) -> None:
    assert keys.build_id_key(build_id, filename) == key


# --- generated profiles -------------------------------------------------------------------------

_INT64 = st.integers(-(1 << 63), (1 << 63) - 1)
_UINT64 = st.integers(0, (1 << 64) - 1)


def _ids(draw: st.DrawFn, count: int) -> list[int]:
    canonical = draw(st.booleans())
    if canonical:
        return list(range(1, count + 1))
    return draw(st.lists(st.integers(1, (1 << 64) - 1), min_size=count, max_size=count, unique=True))


@st.composite
def pprof_profiles(draw: st.DrawFn) -> pprof.Profile:
    """Valid pprof profiles: distinct strings (as pprof's writers write them), any IDs, labels of
    both kinds, every profile-wide field, with or without a period type."""
    strings = ["", *draw(st.lists(st.text(min_size=1, max_size=6), unique=True, max_size=10))]
    index = st.integers(0, len(strings) - 1)
    nonempty = st.integers(1, len(strings) - 1) if len(strings) > 1 else st.just(0)
    profile = pprof.Profile(string_table=strings)
    for _ in range(draw(st.integers(0, 3))):
        profile.sample_type.add(type=draw(index), unit=draw(index))
    mapping_ids = _ids(draw, draw(st.integers(0, 3)))
    for mapping_id in mapping_ids:
        profile.mapping.add(
            id=mapping_id,
            memory_start=draw(_UINT64),
            memory_limit=draw(_UINT64),
            file_offset=draw(_UINT64),
            filename=draw(index),
            build_id=draw(index),
            has_functions=draw(st.booleans()),
            has_filenames=draw(st.booleans()),
            has_line_numbers=draw(st.booleans()),
            has_inline_frames=draw(st.booleans()),
        )
    function_ids = _ids(draw, draw(st.integers(0, 4)))
    for function_id in function_ids:
        profile.function.add(
            id=function_id, name=draw(index), system_name=draw(index), filename=draw(index), start_line=draw(_INT64)
        )
    location_ids = _ids(draw, draw(st.integers(0, 5)))
    for location_id in location_ids:
        location = profile.location.add(
            id=location_id,
            mapping_id=draw(st.sampled_from([0, *mapping_ids])),
            address=draw(_UINT64),
            is_folded=draw(st.booleans()),
        )
        for _ in range(draw(st.integers(0, 3))):
            location.line.add(
                function_id=draw(st.sampled_from([0, *function_ids])), line=draw(_INT64), column=draw(_INT64)
            )
    for _ in range(draw(st.integers(0, 6))):
        sample = profile.sample.add(
            location_id=draw(st.lists(st.sampled_from(location_ids), max_size=6)) if location_ids else [],
            value=[draw(_INT64) for _ in profile.sample_type],
        )
        for _ in range(draw(st.integers(0, 3))):
            if draw(st.booleans()):
                sample.label.add(key=draw(index), str=draw(nonempty))
            else:
                sample.label.add(key=draw(index), num=draw(_INT64), num_unit=draw(index))
    profile.comment.extend(draw(st.lists(index, max_size=3)))
    profile.drop_frames, profile.keep_frames = draw(index), draw(index)
    profile.default_sample_type, profile.doc_url = draw(index), draw(index)
    profile.time_nanos, profile.duration_nanos, profile.period = draw(_INT64), draw(_INT64), draw(_INT64)
    if draw(st.booleans()):
        profile.period_type.type, profile.period_type.unit = draw(index), draw(index)
    return profile


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pprof_profiles(), st.sampled_from(ENCODINGS), st.booleans())
def test_generated_profiles_come_back_exactly(profile: pprof.Profile, encoding: Encoding, gzipped: bool) -> None:
    data = profile.SerializeToString()
    if gzipped:
        data = gzip.compress(data)
    _, back, note = _round_trip(data, encoding)
    assert note is None
    returned, was_gzipped = parse_profile(back)
    assert was_gzipped == gzipped
    assert returned == profile


@settings(max_examples=40, deadline=None)
@given(pprof_profiles())
def test_json_and_protobuf_hold_the_same_message(profile: pprof.Profile) -> None:
    message = _otlp_of(profile)
    for encoding in ENCODINGS:
        read, found, _ = read_profiles_data(encode_profiles_data(message, encoding))
        assert found is encoding
        assert read == message


# --- OTLP JSON encoding rules -------------------------------------------------------------------


def _keys(node: object) -> set[str]:
    if isinstance(node, dict):
        return set(node) | {key for value in node.values() for key in _keys(value)}
    if isinstance(node, list):
        return {key for value in node for key in _keys(value)}
    return set()


def _linked_export() -> ProfilesData:
    """A profile with a link and a profile ID, as a tracing-aware profiler sends it."""
    dictionary = ProfilesDictionary(
        string_table=["", "cpu", "nanoseconds"],
        mapping_table=[Mapping()],
        location_table=[Location(), Location(address=0x1234)],
        function_table=[Function()],
        link_table=[Link(), Link(trace_id=bytes(range(16)), span_id=bytes(range(8, 16)))],
        attribute_table=[KeyValueAndUnit()],
        stack_table=[Stack(), Stack(location_indices=[1])],
    )
    profile = Profile(
        sample_type=ValueType(type_strindex=1, unit_strindex=2),
        time_unix_nano=1_764_671_234_567_890_123,
        profile_id=bytes(range(100, 116)),
        samples=[Sample(stack_index=1, link_index=1, values=[5])],
    )
    return ProfilesData(
        resource_profiles=[ResourceProfiles(scope_profiles=[ScopeProfiles(profiles=[profile])])], dictionary=dictionary
    )


def test_otlp_json_is_lower_camel_case_with_hex_ids_and_int64_strings() -> None:
    text = encode_profiles_data(_linked_export(), Encoding.JSON)
    tree = json.loads(text)
    assert not any("_" in key for key in _keys(tree)), "lowerCamelCase keys only"
    link = tree["dictionary"]["linkTable"][1]
    assert link == {"traceId": bytes(range(16)).hex(), "spanId": bytes(range(8, 16)).hex()}
    profile = tree["resourceProfiles"][0]["scopeProfiles"][0]["profiles"][0]
    assert profile["profileId"] == bytes(range(100, 116)).hex()
    assert profile["timeUnixNano"] == "1764671234567890123", "64-bit integers are decimal strings"
    assert profile["samples"][0]["values"] == ["5"]
    assert read_profiles_data(text)[0] == _linked_export()


def test_otlp_json_from_other_writers_is_read() -> None:
    """Upper-case hex IDs, 64-bit numbers as JSON numbers, unknown keys, a BOM and gzip."""
    tree = json.loads(encode_profiles_data(_linked_export(), Encoding.JSON))
    link = tree["dictionary"]["linkTable"][1]
    link["traceId"] = link["traceId"].upper()
    profile = tree["resourceProfiles"][0]["scopeProfiles"][0]["profiles"][0]
    profile["timeUnixNano"] = 1_764_671_234_567_890_123
    profile["someFutureField"] = {"x": 1}
    data = gzip.compress(b"\xef\xbb\xbf\n" + json.dumps(tree).encode())
    read, encoding, was_gzipped = read_profiles_data(data)
    assert (read, encoding, was_gzipped) == (_linked_export(), Encoding.JSON, True)


def test_protobuf_that_starts_like_json_is_read_as_protobuf() -> None:
    """A first field (resource_profiles, key 0x0A: a newline) 123 bytes long puts ``{`` second
    (found by the generated round trips)."""
    message = _linked_export()
    scope = message.resource_profiles[0].scope_profiles[0]
    while message.resource_profiles[0].ByteSize() < 123:
        scope.scope.name += "x"
    data = message.SerializeToString()
    assert data[:2] == b"\n{"
    assert read_profiles_data(data) == (message, Encoding.PROTOBUF, False)


def test_an_export_request_is_read_like_profiles_data() -> None:
    message = _linked_export()
    request = ExportProfilesServiceRequest()
    request.ParseFromString(message.SerializeToString())
    assert read_profiles_data(request.SerializeToString())[0] == message


# --- the Collector translator's known bugs ------------------------------------------------------


def _profile_with(labels: list[pprof.Label], strings: list[str]) -> pprof.Profile:
    profile = pprof.Profile(string_table=strings)
    profile.sample_type.add(type=1, unit=2)
    profile.sample.add(value=[7], label=labels)
    return profile


def test_epoch_timestamps_are_not_truncated() -> None:
    """collector-contrib #48813: OTLP -> pprof gave a small, truncated time instead of epoch
    nanoseconds. Both ways, in both encodings, the time and duration stay whole."""
    profile = _profile_with([], ["", "cpu", "nanoseconds"])
    profile.time_nanos, profile.duration_nanos = 1_764_671_234_567_890_123, 10_000_000_123
    for encoding in ENCODINGS:
        otlp = read_profiles_data(convert(profile.SerializeToString(), Target.OTLP, encoding=encoding).data)[0]
        converted = otlp.resource_profiles[0].scope_profiles[0].profiles[0]
        assert (converted.time_unix_nano, converted.duration_nano) == (1_764_671_234_567_890_123, 10_000_000_123)
        back, _ = pprof_from_profiles(otlp)
        assert (back.time_nanos, back.duration_nanos) == (profile.time_nanos, profile.duration_nanos)


def test_labels_become_plain_attributes_with_units_only_on_numbers() -> None:
    """collector-contrib #49449: a string label became an array value, and string labels got
    units. A string label is a string attribute without a unit; a number keeps its unit."""
    strings = ["", "cpu", "nanoseconds", "thread id", "123", "bytes", "request size"]
    profile = _profile_with([pprof.Label(key=3, str=4), pprof.Label(key=6, num=4096, num_unit=5)], strings)
    data = _otlp_of(profile)
    sample = data.resource_profiles[0].scope_profiles[0].profiles[0].samples[0]
    assert _attributes(data, list(sample.attribute_indices)) == {
        "thread id": ("123", ""),
        "request size": (4096, "bytes"),
    }
    assert pprof_from_profiles(data)[0] == profile


def _foreign(
    profiles: list[Profile], dictionary: ProfilesDictionary, resource: list[KeyValue] | None = None
) -> ProfilesData:
    resource_profiles = ResourceProfiles(scope_profiles=[ScopeProfiles(profiles=profiles)])
    resource_profiles.resource.attributes.extend(resource or [])
    return ProfilesData(resource_profiles=[resource_profiles], dictionary=dictionary)


def _ebpf_dictionary() -> ProfilesDictionary:
    """The eBPF profiler's shape: an ELF virtual address in a mapping named by htlhash only,
    a native frame with no lines, a thread attribute."""
    strings = ["", "samples", "count", "/usr/bin/app", keys.HTLHASH, "thread.name", "worker", "cpu", "nanoseconds"]
    return ProfilesDictionary(
        string_table=strings,
        mapping_table=[
            Mapping(),
            Mapping(
                memory_start=0x5555_5555_4000, memory_limit=0x5555_5556_0000, filename_strindex=3, attribute_indices=[1]
            ),
        ],
        location_table=[
            Location(),
            Location(mapping_index=1, address=0x1139),
            Location(mapping_index=1, address=0x1200),
        ],
        function_table=[Function()],
        link_table=[Link(), Link(trace_id=b"\x01" * 16, span_id=b"\x02" * 8)],
        attribute_table=[
            KeyValueAndUnit(),
            KeyValueAndUnit(key_strindex=4, value=AnyValue(string_value="ab" * 32)),
            KeyValueAndUnit(key_strindex=5, value=AnyValue(string_value="worker")),
        ],
        stack_table=[Stack(), Stack(location_indices=[1, 2]), Stack(location_indices=[2])],
    )


def test_sample_attributes_become_labels() -> None:
    """collector-contrib #49480: OTLP sample attributes were not turned into pprof labels."""
    dictionary = _ebpf_dictionary()
    profile = Profile(
        sample_type=ValueType(type_strindex=1, unit_strindex=2),
        samples=[Sample(stack_index=1, attribute_indices=[2], values=[3])],
    )
    back, dropped = pprof_from_profiles(_foreign([profile], dictionary))
    strings = back.string_table
    assert [(strings[label.key], strings[label.str]) for label in back.sample[0].label] == [("thread.name", "worker")]
    assert dropped.counts == {"htlhash build IDs": 1}


def test_every_value_and_timestamp_shape_is_counted() -> None:
    """collector-contrib #48864 / #48907: samples with several values (one per timestamp) or
    timestamps only were refused. Values with timestamps add up; timestamps alone count one each;
    pprof has no place for the timestamps, and says so."""
    dictionary = _ebpf_dictionary()
    cpu = Profile(
        sample_type=ValueType(type_strindex=1, unit_strindex=2),
        samples=[
            Sample(stack_index=1, values=[2, 2, 3, 3], timestamps_unix_nano=[1, 2, 3, 4]),
            Sample(stack_index=2, timestamps_unix_nano=[5, 6, 7]),
            Sample(stack_index=2, link_index=1, values=[4]),
        ],
    )
    off_cpu = Profile(
        sample_type=ValueType(type_strindex=7, unit_strindex=8), samples=[Sample(stack_index=2, values=[1_000_000])]
    )
    back, dropped = pprof_from_profiles(_foreign([cpu, off_cpu], dictionary))
    strings = back.string_table
    assert [(strings[value_type.type], strings[value_type.unit]) for value_type in back.sample_type] == [
        ("samples", "count"),
        ("cpu", "nanoseconds"),
    ]
    rows = sorted((list(sample.location_id), list(sample.value)) for sample in back.sample)
    assert rows == [([1, 2], [10, 0]), ([2], [3, 1_000_000]), ([2], [4, 0])]
    assert dropped.counts == {"htlhash build IDs": 1, "sample timestamps": 7, "links": 1}


def test_a_profile_without_a_sample_type_still_has_a_column() -> None:
    """One profile with no sample type whose samples hold values: one pprof sample type (empty)
    per profile, so that every sample's values match the sample types."""
    profile = Profile(samples=[Sample(stack_index=1, values=[2]), Sample(stack_index=2, values=[3, 4])])
    back, _ = pprof_from_profiles(_foreign([profile], _ebpf_dictionary()))
    assert len(back.sample_type) == 1
    assert sorted(list(sample.value) for sample in back.sample) == [[2], [7]]


def test_stack_order_is_kept_leaf_first() -> None:
    """The Collector's first pprofile -> pprof conversion reordered the location indices of the
    stack table (review of collector-contrib #44357): the order is the stack, leaf first."""
    profile = pprof.Profile(string_table=["", "samples", "count"])
    profile.sample_type.add(type=1, unit=2)
    for location_id in (1, 2, 3):
        profile.location.add(id=location_id, address=0x1000 * location_id)
    profile.sample.add(location_id=[3, 1, 2, 1], value=[1])
    data = _otlp_of(profile)
    stack = data.dictionary.stack_table[data.resource_profiles[0].scope_profiles[0].profiles[0].samples[0].stack_index]
    assert [data.dictionary.location_table[index].address for index in stack.location_indices] == [
        0x3000,
        0x1000,
        0x2000,
        0x1000,
    ]
    assert pprof_from_profiles(data)[0] == profile


def test_what_pprof_cannot_hold_is_named() -> None:
    dictionary = _ebpf_dictionary()
    profile = Profile(
        sample_type=ValueType(type_strindex=1, unit_strindex=2), samples=[Sample(stack_index=1, values=[1])]
    )
    resource = [KeyValue(key="service.name", value=AnyValue(string_value="app"))]
    back, dropped = pprof_from_profiles(_foreign([profile], dictionary, resource))
    assert back.mapping[0].build_id == 0, "an htlhash is no pprof build ID"
    assert dropped.describe() == "pprof has no place for: 1 resource attributes, 1 htlhash build IDs"


def test_original_payload_carries_the_input() -> None:
    path = (
        PROFILES / "rustdemo-full.cpu.pb.gz"
        if (PROFILES / "rustdemo-full.cpu.pb.gz").exists()
        else PROFILES / "rustdemo-full.cpu.pb"
    )
    data = path.read_bytes()
    otlp = read_profiles_data(convert(data, Target.OTLP, original_payload=True).data)[0]
    profiles = otlp.resource_profiles[0].scope_profiles[0].profiles
    assert (profiles[0].original_payload_format, profiles[0].original_payload) == ("pprof", data)
    assert all(not profile.original_payload for profile in profiles[1:])
    without = read_profiles_data(convert(data, Target.OTLP).data)[0]
    assert not without.resource_profiles[0].scope_profiles[0].profiles[0].original_payload_format


# --- hostile input ------------------------------------------------------------------------------


def test_an_index_out_of_range_is_refused_naming_the_file() -> None:
    data = _linked_export()
    data.resource_profiles[0].scope_profiles[0].profiles[0].samples[0].stack_index = 99
    with pytest.raises(MalformedInputError, match=r"hostile\.otlp.*stack_table index 99"):
        pprof_from_profiles(data, "hostile.otlp")
    data = _linked_export()
    data.dictionary.location_table[1].mapping_index = 7
    with pytest.raises(MalformedInputError, match="mapping_table index 7"):
        pprof_from_profiles(data, "hostile.otlp")


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"{not json", "invalid JSON"),
        (b"[1, 2]", "not an OpenTelemetry profiles export"),
        (b'{"resourceProfiles": 3}', "not an OpenTelemetry profiles export"),
        (b"\x0a\x05\x12\x03", "not an OpenTelemetry profiles export"),
        (b'{"a":' * 200_000, "invalid JSON"),
        (
            b'{"dictionary":{"attributeTable":['
            + b'{"value":{"arrayValue":{"values":[' * 2_000
            + b"]}}}" * 2_000
            + b"]}}",
            "not an OpenTelemetry profiles export",
        ),
    ],
)
def test_broken_exports_are_refused(data: bytes, message: str) -> None:
    with pytest.raises(MalformedInputError, match=message):
        read_profiles_data(data, "broken.otlp")


def test_only_a_pprof_input_is_carried_as_original_payload() -> None:
    heap_v2 = (PROFILES / "gperftools" / "rustdemo-full.heap_v2").read_bytes()
    with pytest.raises(SymbolizeError, match="gperftools heap_v2 text profile, not pprof"):
        convert(heap_v2, Target.OTLP, original_payload=True, path="x.heap")
    otlp = convert(heap_v2, Target.OTLP).data
    with pytest.raises(SymbolizeError, match="already OTLP"):
        convert(otlp, Target.OTLP, original_payload=True)


# Every index field an OTLP export holds, as (where, field): each is overwritten with any int32.
_INDEX_FIELDS = [
    ("mapping_table", "filename_strindex"),
    ("location_table", "mapping_index"),
    ("function_table", "name_strindex"),
    ("attribute_table", "key_strindex"),
    ("attribute_table", "unit_strindex"),
    ("samples", "stack_index"),
    ("samples", "link_index"),
    ("sample_type", "type_strindex"),
]


_CHANGES = st.lists(
    st.tuples(st.sampled_from(_INDEX_FIELDS), st.integers(-(1 << 31), (1 << 31) - 1), st.integers(0, 100)),
    min_size=1,
    max_size=4,
)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pprof_profiles(), _CHANGES)
def test_hostile_indices_are_refused_as_malformed(
    profile: pprof.Profile, changes: list[tuple[tuple[str, str], int, int]]
) -> None:
    """Any index anywhere: the way back names a pprof profile or refuses with MalformedInputError,
    never another exception."""
    data = _otlp_of(profile)
    otlp = data.resource_profiles[0].scope_profiles[0].profiles[0]
    for (where, field), value, pick in changes:
        if where == "samples":
            entries = list(otlp.samples)
        elif where == "sample_type":
            entries = [otlp.sample_type]
        else:
            entries = list(getattr(data.dictionary, where))
        if entries:
            setattr(entries[pick % len(entries)], field, value)
    try:
        back, _ = pprof_from_profiles(data, "hostile.otlp")
    except MalformedInputError as error:
        assert "hostile.otlp" in str(error)
        return
    # What comes back is a pprof profile whose references resolve: it converts again.
    assert profiles_from_pprof(back, path="back.pb")


def test_samples_of_one_stack_whose_sum_overflows_int64_are_refused() -> None:
    """Hypothesis found it: samples merged by stack sum past int64's least value, which pprof's field cannot
    hold (protobuf raised ValueError before)."""
    profile = pprof.Profile(string_table=[""])
    for _ in range(2):
        profile.sample_type.add()
    for value in (0, -1, -(2**63)):
        profile.sample.add(value=[value, value])
    data = _otlp_of(profile)
    profiles = data.resource_profiles[0].scope_profiles[0].profiles
    assert [sample.values[0] for sample in profiles[0].samples] == [0, -1, -(2**63)]
    # Two values in one sample: the profiles no longer pair sample by sample, so samples are merged by stack.
    profiles[1].samples[0].values.append(0)
    with pytest.raises(MalformedInputError, match="overflow int64") as raised:
        pprof_from_profiles(data, "hostile.otlp")
    assert "hostile.otlp" in str(raised.value)


def test_the_entry_cap_holds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SYMBOLIZE_MAX_PROFILE_ENTRIES", "4")
    message = _linked_export()
    for encoding in ENCODINGS:
        with pytest.raises(InputLimitError, match="SYMBOLIZE_MAX_PROFILE_ENTRIES"):
            read_profiles_data(encode_profiles_data(message, encoding) + b" " * 0, "big.otlp")


def test_a_pprof_profile_whose_references_do_not_resolve_is_refused() -> None:
    profile = _profile_with([], ["", "cpu", "nanoseconds"])
    profile.sample[0].location_id.append(5)
    with pytest.raises(MalformedInputError, match="names location 5"):
        profiles_from_pprof(profile, path="bad.pb")


# --- the command line ---------------------------------------------------------------------------


def test_convert_on_the_command_line(tmp_path: Path) -> None:
    runner = CliRunner()
    source = PROFILES / "cppdemo-gcc-dwarf5-pie.heap.pb"
    otlp, back = tmp_path / "heap.otlp.json", tmp_path / "heap.pb"
    result = runner.invoke(app, ["convert", str(source), "-o", str(otlp), "--to", "otlp", "--encoding", "json"])
    assert result.exit_code == 0, result.output
    assert read_profiles_data(otlp.read_bytes())[1] is Encoding.JSON
    result = runner.invoke(app, ["convert", str(otlp), "-o", str(back), "--to", "pprof"])
    assert result.exit_code == 0, result.output
    assert back.read_bytes() == source.read_bytes()


def test_convert_reads_stdin_and_writes_stdout() -> None:
    source = (PROFILES / "rustdemo-full.cpu.daemon.pb.gz").read_bytes()
    runner = CliRunner()
    otlp = runner.invoke(app, ["convert", "-", "-o", "-", "--to", "otlp"], input=source)
    assert otlp.exit_code == 0
    assert otlp.stdout_bytes[:2] == b"\x1f\x8b", "gzipped in, gzipped out"
    back = runner.invoke(app, ["convert", "-", "-o", "-", "--to", "pprof"], input=otlp.stdout_bytes)
    assert back.exit_code == 0
    assert parse_profile(back.stdout_bytes)[0] == parse_profile(source)[0]


def test_convert_names_what_pprof_has_no_place_for(tmp_path: Path) -> None:
    cpu = Profile(
        sample_type=ValueType(type_strindex=1, unit_strindex=2),
        samples=[Sample(stack_index=1, timestamps_unix_nano=[5, 6, 7])],
    )
    source = tmp_path / "ebpf.otlp"
    source.write_bytes(_foreign([cpu], _ebpf_dictionary()).SerializeToString())
    result = CliRunner().invoke(app, ["convert", str(source), "-o", str(tmp_path / "out.pb"), "--to", "pprof"])
    assert result.exit_code == 0
    assert result.stderr == "symbolize: note: pprof has no place for: 1 htlhash build IDs, 3 sample timestamps\n"
    assert [list(sample.value) for sample in parse_profile((tmp_path / "out.pb").read_bytes())[0].sample] == [[3]]


def test_convert_refusals_are_one_line(tmp_path: Path) -> None:
    broken = tmp_path / "broken.json"
    broken.write_bytes(b'{"resourceProfiles": [], "dictionary": {"stringTable": ["x"]}}')
    done = subprocess.run(
        [sys.executable, "-m", "symbolize", "convert", str(broken), "-o", str(tmp_path / "out.pb"), "--to", "pprof"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1 and str(broken) in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "out.pb").exists()
