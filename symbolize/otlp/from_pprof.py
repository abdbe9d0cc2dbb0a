"""A pprof ``Profile`` (profile.proto) as OTLP ``ProfilesData`` (profiles/v1development), losslessly.

An OTLP Profile has one sample type: a pprof profile with K sample types becomes K Profiles that
share one ``ProfilesDictionary`` and hold the same samples in the same order (sample i of each is
pprof sample i, with its value of that type), so the way back zips them
(:mod:`symbolize.otlp.to_pprof`). The default sample type's profile comes first, and the order is
recorded (:func:`sample_type_order`).

The pprof string table is the dictionary's first strings, in order, so every string index stays
valid as it is; what the conversion adds (attribute keys) comes after it, and its length is
recorded. pprof mappings, locations and functions are the dictionary's entries 1..N in pprof's
order; their IDs are recorded only when they are not 1..N. Labels become sample attributes: a
string label a string value, a numeric one an int value with its unit (``num_unit``); a label key
given twice on a sample stays twice (pprof allows it; merging would lose the order).
Everything else pprof holds goes to the attributes of :mod:`symbolize.otlp.attributes`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from opentelemetry.proto.common.v1.common_pb2 import AnyValue, InstrumentationScope, KeyValue
from opentelemetry.proto.profiles.v1development.profiles_pb2 import (
    Function,
    Line,
    Location,
    Mapping,
    Profile,
    ProfilesData,
    ResourceProfiles,
    Sample,
    ScopeProfiles,
    ValueType,
)

from symbolize.errors import MalformedInputError
from symbolize.otlp import attributes as keys
from symbolize.otlp.dictionary import DictionaryBuilder, any_value, as_int64
from symbolize.proto import profile_pb2 as pprof

# The instrumentation scope of what the converter writes.
SCOPE_NAME = "pprof-symbolize convert"
_UINT64 = 1 << 64


def profiles_from_pprof(
    profile: pprof.Profile, *, original_payload: bytes | None = None, path: Path | str = "<memory>"
) -> ProfilesData:
    """``profile`` as ProfilesData: one OTLP Profile per sample type, one shared dictionary.

    ``original_payload``, when given, is set on the first Profile with the format ``"pprof"``.
    Raises MalformedInputError (naming ``path``) for a profile whose references do not resolve.
    """
    _check(profile, path)
    built = DictionaryBuilder(profile.string_table)
    mapping_index = {mapping.id: index for index, mapping in enumerate(profile.mapping, 1)}
    function_index = {function.id: index for index, function in enumerate(profile.function, 1)}
    location_index = {location.id: index for index, location in enumerate(profile.location, 1)}
    strings = profile.string_table
    for mapping in profile.mapping:
        built.dictionary.mapping_table.append(_mapping(mapping, strings, built))
    for function in profile.function:
        built.dictionary.function_table.append(
            Function(
                name_strindex=function.name,
                system_name_strindex=function.system_name,
                filename_strindex=function.filename,
                start_line=function.start_line,
            )
        )
    for location in profile.location:
        built.dictionary.location_table.append(
            Location(
                mapping_index=mapping_index[location.mapping_id] if location.mapping_id else 0,
                address=location.address,
                lines=[
                    Line(
                        function_index=function_index[line.function_id] if line.function_id else 0,
                        line=line.line,
                        column=line.column,
                    )
                    for line in location.line
                ],
                attribute_indices=[built.named_attribute(keys.IS_FOLDED, True)] if location.is_folded else [],
            )
        )
    shared = _profile_attributes(profile, built)
    samples = [
        (
            built.stack(location_index[location_id] for location_id in sample.location_id),
            [_label_attribute(label, strings, built) for label in sample.label],
            sample.value,
        )
        for sample in profile.sample
    ]
    order = sample_type_order(profile)
    columns: list[int | None] = [*order] if order else [None]
    profiles = [_otlp_profile(profile, column, shared, samples) for column in columns]
    if original_payload is not None:
        profiles[0].original_payload_format = "pprof"
        profiles[0].original_payload = original_payload
    scope = ScopeProfiles(scope=InstrumentationScope(name=SCOPE_NAME), profiles=profiles)
    if profile.default_sample_type:
        text = AnyValue(string_value=strings[profile.default_sample_type])
        scope.scope.attributes.append(KeyValue(key=keys.DEFAULT_SAMPLE_TYPE, value=text))
    if order != sorted(order):
        scope.scope.attributes.append(KeyValue(key=keys.SAMPLE_TYPE_ORDER, value=any_value(tuple(order))))
    return ProfilesData(resource_profiles=[ResourceProfiles(scope_profiles=[scope])], dictionary=built.dictionary)


def sample_type_order(profile: pprof.Profile) -> list[int]:
    """The pprof sample type of each OTLP profile, in OTLP order: the default one first (OTLP
    readers show ``profiles[0]`` first), then the others as pprof lists them. The default is the
    one ``default_sample_type`` names, else the last (pprof's rule)."""
    types = [profile.string_table[value_type.type] for value_type in profile.sample_type]
    if not types:
        return []
    wanted = profile.string_table[profile.default_sample_type] if profile.default_sample_type else None
    default = types.index(wanted) if wanted in types else len(types) - 1
    return [default, *(column for column in range(len(types)) if column != default)]


def _otlp_profile(
    profile: pprof.Profile,
    column: int | None,
    shared: list[int],
    samples: Sequence[tuple[int, list[int], Sequence[int]]],
) -> Profile:
    """The OTLP Profile of sample type ``column`` (None: a pprof profile without sample types)."""
    otlp = Profile(
        time_unix_nano=profile.time_nanos % _UINT64,
        duration_nano=profile.duration_nanos % _UINT64,
        period=profile.period,
        attribute_indices=shared,
    )
    if column is not None:
        value_type = profile.sample_type[column]
        otlp.sample_type.CopyFrom(ValueType(type_strindex=value_type.type, unit_strindex=value_type.unit))
    if profile.HasField("period_type"):
        otlp.period_type.CopyFrom(
            ValueType(type_strindex=profile.period_type.type, unit_strindex=profile.period_type.unit)
        )
    otlp.samples.extend(
        Sample(stack_index=stack, attribute_indices=labels, values=[] if column is None else [values[column]])
        for stack, labels, values in samples
    )
    return otlp


def _mapping(mapping: pprof.Mapping, strings: Sequence[str], built: DictionaryBuilder) -> Mapping:
    indices = []
    if mapping.build_id:
        build_id = strings[mapping.build_id]
        indices.append(built.named_attribute(keys.build_id_key(build_id, strings[mapping.filename]), build_id))
    indices.extend(built.named_attribute(key, True) for field, key in keys.MAPPING_FLAGS if getattr(mapping, field))
    return Mapping(
        memory_start=mapping.memory_start,
        memory_limit=mapping.memory_limit,
        file_offset=mapping.file_offset,
        filename_strindex=mapping.filename,
        attribute_indices=indices,
    )


def _label_attribute(label: pprof.Label, strings: Sequence[str], built: DictionaryBuilder) -> int:
    """A label as an attribute: the key's string index as it is; a string value with no unit (the
    Collector's translator gave string labels units once), a number with its ``num_unit``."""
    if label.str:
        return built.attribute(label.key, strings[label.str])
    return built.attribute(label.key, label.num, label.num_unit)


def _profile_attributes(profile: pprof.Profile, built: DictionaryBuilder) -> list[int]:
    """The attributes every OTLP Profile of ``profile`` shares: pprof's profile-wide fields."""
    strings = profile.string_table
    indices = [built.named_attribute(keys.STRING_TABLE_LENGTH, len(strings))]
    if profile.comment:
        indices.append(built.named_attribute(keys.COMMENT, tuple(strings[index] for index in profile.comment)))
    indices.extend(
        built.named_attribute(key, strings[getattr(profile, field)])
        for field, key in keys.PROFILE_STRINGS
        if getattr(profile, field)
    )
    for key, entries in (
        (keys.MAPPING_IDS, profile.mapping),
        (keys.LOCATION_IDS, profile.location),
        (keys.FUNCTION_IDS, profile.function),
    ):
        ids = tuple(entry.id for entry in entries)
        if ids != tuple(range(1, len(ids) + 1)):
            # An attribute's int is an int64, a pprof ID a uint64: stored modulo 2**64.
            indices.append(built.named_attribute(key, tuple(map(as_int64, ids))))
    return indices


def _check(profile: pprof.Profile, path: Path | str) -> None:
    """Refuse what has no faithful OTLP form: references that do not resolve, duplicate IDs,
    a sample whose values do not match the sample types, a label both string and number."""
    strings = len(profile.string_table)

    def fail(what: str) -> MalformedInputError:
        return MalformedInputError(f"cannot convert to OTLP: {what}", path)

    if not strings or profile.string_table[0] != "":
        raise fail("string_table[0] must be the empty string")
    for kind, entries in (("mapping", profile.mapping), ("location", profile.location), ("function", profile.function)):
        ids = [entry.id for entry in entries]
        if 0 in ids or len(set(ids)) != len(ids):
            raise fail(f"{kind} IDs must be distinct and non-zero")
    mapping_ids = {mapping.id for mapping in profile.mapping}
    function_ids = {function.id for function in profile.function}
    location_ids = {location.id for location in profile.location}
    indices = [profile.drop_frames, profile.keep_frames, profile.default_sample_type, profile.doc_url]
    indices.extend(profile.comment)
    for value_type in [*profile.sample_type, profile.period_type]:
        indices.extend((value_type.type, value_type.unit))
    for mapping in profile.mapping:
        indices.extend((mapping.filename, mapping.build_id))
    for function in profile.function:
        indices.extend((function.name, function.system_name, function.filename))
    for location in profile.location:
        if location.mapping_id and location.mapping_id not in mapping_ids:
            raise fail(f"location {location.id} names mapping {location.mapping_id}, which is not in the profile")
        for line in location.line:
            if line.function_id and line.function_id not in function_ids:
                raise fail(f"location {location.id} names function {line.function_id}, which is not in the profile")
    for number, sample in enumerate(profile.sample):
        if len(sample.value) != len(profile.sample_type):
            raise fail(f"sample {number} has {len(sample.value)} values for {len(profile.sample_type)} sample types")
        missing = next((location_id for location_id in sample.location_id if location_id not in location_ids), None)
        if missing is not None:
            raise fail(f"sample {number} names location {missing}, which is not in the profile")
        for label in sample.label:
            if label.str and (label.num or label.num_unit):
                raise fail(f"a label of sample {number} holds both a string and a number")
            indices.extend((label.key, label.str, label.num_unit))
    bad = next((index for index in indices if not 0 <= index < strings), None)
    if bad is not None:
        raise fail(f"string index {bad} is outside the string table ({strings} strings)")
