"""Protobuf messages that are not a pprof Profile are refused, saying what they look like, and
nothing is written: protobuf reads any message as a Profile (symbolize/pprof.py's
``_not_a_profile`` and symbolize/profiles/sniff.py's ``describe_protobuf`` tell them apart).

The OpenTelemetry exports are made with opentelemetry-proto's own classes (a test dependency).
"""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
from google.protobuf import descriptor_pb2
from google.protobuf.message import Message
from opentelemetry.proto.collector.profiles.v1development.profiles_service_pb2 import ExportProfilesServiceRequest
from opentelemetry.proto.profiles.v1development.profiles_pb2 import ProfilesData

from symbolize.api import symbolize_file, symbolize_profile
from symbolize.errors import SymbolizeError
from symbolize.pprof import read_profile
from symbolize.profiles import sniff_format
from symbolize.profiles.sniff import OPENTELEMETRY_EXPORT, ProfileFormat
from symbolize.proto import profile_pb2
from symbolize.proto.profile_pb2 import Profile
from tests.fixtures_data import ROOT
from tests.test_cli_contracts import NO_SIDE_EFFECTS, one_error_line, run

PROFILES = ROOT / "fixtures" / "profiles"


def opentelemetry_export() -> ExportProfilesServiceRequest:
    """An eBPF profiler's export of one sample: resource, scope, profile, and the shared tables."""
    request = ExportProfilesServiceRequest()
    resource = request.resource_profiles.add()
    resource.resource.attributes.add(key="service.name").value.string_value = "app"
    scope = resource.scope_profiles.add()
    scope.scope.name = "go.opentelemetry.io/ebpf-profiler"
    profile = scope.profiles.add()
    profile.sample_type.type_strindex = 1
    profile.sample_type.unit_strindex = 2
    profile.samples.add(stack_index=1).values.append(5)
    tables = request.dictionary
    tables.string_table.extend(["", "samples", "count", "main", "/usr/bin/app"])
    tables.mapping_table.add(memory_start=0x400000, memory_limit=0x401000, filename_strindex=4)
    tables.location_table.add(mapping_index=1, address=0x401234)
    tables.function_table.add(name_strindex=3)
    tables.stack_table.add(location_indices=[1])
    return request


def profiles_data() -> ProfilesData:
    export = opentelemetry_export()
    return ProfilesData(resource_profiles=export.resource_profiles, dictionary=export.dictionary)


def descriptor_set() -> descriptor_pb2.FileDescriptorSet:
    """Another protobuf message that is no profile: profile.proto's own descriptor."""
    descriptors = descriptor_pb2.FileDescriptorSet()
    profile_pb2.DESCRIPTOR.CopyToProto(descriptors.file.add())
    return descriptors


def pprof_fields_without_strings() -> Profile:
    """Fields that all fit pprof's, but no string table: not what any pprof writer writes."""
    profile = Profile()
    profile.sample.add(location_id=[1], value=[1])
    return profile


NOT_PPROF = "a protobuf message that is not a pprof Profile: "
NOT_PROFILES = {
    "opentelemetry-export": (opentelemetry_export, OPENTELEMETRY_EXPORT),
    "opentelemetry-profiles-data": (profiles_data, OPENTELEMETRY_EXPORT),
    "descriptor-set": (
        descriptor_set,
        "a protobuf message that is not a pprof Profile: ValueType.type (field 1) has wire type 2",
    ),
    "no-string-table": (
        pprof_fields_without_strings,
        "a protobuf message that is not a pprof Profile: no string table",
    ),
}
CASES = [
    pytest.param(make, looks_like, compress, id=f"{name}{'-gzip' if compress else ''}")
    for name, (make, looks_like) in NOT_PROFILES.items()
    for compress in (False, True)
]


def _write(path: Path, message: Message, compress: bool) -> bytes:
    data = message.SerializeToString()
    path.write_bytes(gzip.compress(data) if compress else data)
    return path.read_bytes()


@pytest.mark.parametrize(("make", "looks_like", "compress"), CASES)
def test_the_library_refuses_what_is_no_pprof_profile(
    tmp_path: Path, make: type[Message], looks_like: str, compress: bool
) -> None:
    source = tmp_path / "in.pb"
    _write(source, make(), compress)
    with pytest.raises(SymbolizeError, match=r"not a profile: ") as caught:
        read_profile(source)
    assert looks_like in str(caught.value)
    with pytest.raises(SymbolizeError, match=r"not a profile: "):
        symbolize_profile(source, use_cache=False)
    with pytest.raises(SymbolizeError, match=r"not a profile: "):
        symbolize_file(source, tmp_path / "out.pb", use_cache=False)
    assert not (tmp_path / "out.pb").exists()


# `profile` reads OTLP exports since issue 25 (symbolize/otlp/rewrite.py; tests/test_otlp_profile.py
# has a broken one refused naming its table): the command refuses the others.
COMMAND_CASES = [case for case in CASES if not str(case.id).startswith("opentelemetry")]


@pytest.mark.parametrize(("make", "looks_like", "compress"), COMMAND_CASES)
def test_the_command_refuses_it_and_writes_nothing(
    tmp_path: Path, make: type[Message], looks_like: str, compress: bool
) -> None:
    source = tmp_path / "in.pb"
    original = _write(source, make(), compress)
    result = run("profile", source, "-o", tmp_path / "out.pb", *NO_SIDE_EFFECTS)
    assert result.returncode == 1
    assert one_error_line(result).startswith(f"symbolize: error: {source}: not a profile: {looks_like}")
    assert not (tmp_path / "out.pb").exists()
    in_place = run("profile", source, *NO_SIDE_EFFECTS)  # no -o: the input itself would be rewritten
    assert in_place.returncode == 1 and looks_like in one_error_line(in_place)
    assert source.read_bytes() == original


def test_a_later_pprof_field_is_still_read_and_kept(tmp_path: Path) -> None:
    """A number profile.proto does not define may be a field pprof added since: kept, as read."""
    profile = Profile(string_table=["", "cpu", "nanoseconds"])
    profile.sample_type.add(type=1, unit=2)
    source = tmp_path / "in.pb"
    source.write_bytes(profile.SerializeToString() + b"\xa0\x06\x07")  # field 100, varint 7
    read, _ = read_profile(source)
    assert read.SerializeToString().endswith(b"\xa0\x06\x07")


PPROF_FIXTURES = sorted(
    path
    for path in PROFILES.rglob("*")
    if path.is_file() and path.suffix in (".pb", ".gz") and "gperftools" not in path.parts and "raw" not in path.parts
)


@pytest.mark.parametrize("path", PPROF_FIXTURES, ids=lambda path: str(path.relative_to(PROFILES)))
def test_every_fixture_pprof_is_still_read(path: Path) -> None:
    data = path.read_bytes()
    assert sniff_format(gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data) is ProfileFormat.PPROF
    profile, was_gzipped = read_profile(path)
    assert was_gzipped == (data[:2] == b"\x1f\x8b")
    assert profile.string_table[0] == "" and (profile.sample or profile.sample_type)
