"""OTLP ``ProfilesData`` (profiles/v1development) as one pprof ``Profile`` (profile.proto).

The inverse of :mod:`symbolize.otlp.from_pprof`, exact for what it wrote: the first strings of the
dictionary (``symbolize.pprof.string_table_length`` of them) are the pprof string table, in order;
strings past them are appended to it when something that goes to pprof names them; the
dictionary's mappings, locations and functions are the pprof ones, in order, with the recorded
IDs (else 1..N); profiles that hold the same samples in the same order, one value each, are the
columns of one pprof profile.

Profiles from other producers (the eBPF profiler, a Collector) are read too: their samples are
merged by identity (stack, attributes, link), one value column per profile, a sample's
observations summed (timestamps only: one per timestamp, as the spec says to read them). pprof
has no place for per-sample timestamps, links, resource and scope attributes, the profile's own
attributes beyond pprof's, or ``htlhash`` build IDs: they are counted in :class:`Dropped`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.profiles.v1development.profiles_pb2 import (
    Profile,
    ProfilesData,
    ProfilesDictionary,
)

from symbolize.errors import MalformedInputError
from symbolize.otlp import attributes as keys
from symbolize.otlp.dictionary import as_int64
from symbolize.proto import profile_pb2 as pprof

_UINT64 = 1 << 64
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
# Profile attributes the conversion itself reads; any other is dropped (and counted).
_PPROF_PROFILE_KEYS = frozenset(
    {
        keys.STRING_TABLE_LENGTH,
        keys.COMMENT,
        keys.MAPPING_IDS,
        keys.LOCATION_IDS,
        keys.FUNCTION_IDS,
        *(key for _, key in keys.PROFILE_STRINGS),
    }
)


@dataclass
class Dropped:
    """What OTLP held that pprof has no place for, counted."""

    counts: dict[str, int] = field(default_factory=dict)

    def add(self, what: str, count: int = 1) -> None:
        if count:
            self.counts[what] = self.counts.get(what, 0) + count

    def describe(self) -> str | None:
        """One line naming what was dropped, or None when nothing was."""
        if not self.counts:
            return None
        return "pprof has no place for: " + ", ".join(f"{count} {what}" for what, count in self.counts.items())


def pprof_from_profiles(data: ProfilesData, path: Path | str = "<memory>") -> tuple[pprof.Profile, Dropped]:
    """The Profiles of ``data`` (every resource's, every scope's) as one pprof profile.

    Raises MalformedInputError (naming ``path``) for a dictionary reference out of range and for
    data without profiles.
    """
    dropped = Dropped()
    profiles: list[Profile] = []
    default_sample_type = None
    for resource in data.resource_profiles:
        dropped.add("resource attributes", len(resource.resource.attributes))
        for scope in resource.scope_profiles:
            found = {attribute.key: _python_value(attribute.value) for attribute in scope.scope.attributes}
            dropped.add("scope attributes", len(set(found) - {keys.DEFAULT_SAMPLE_TYPE, keys.SAMPLE_TYPE_ORDER}))
            profiles.extend(_in_pprof_order(scope.profiles, found.get(keys.SAMPLE_TYPE_ORDER)))
            if default_sample_type is None and isinstance(found.get(keys.DEFAULT_SAMPLE_TYPE), str):
                default_sample_type = str(found[keys.DEFAULT_SAMPLE_TYPE])
    if not profiles:
        raise MalformedInputError("not a profile: the OpenTelemetry export holds no profiles", path)
    reader = _DictionaryReader(data.dictionary, path)
    first = profiles[0]
    facts = reader.profile_attributes(first)
    for profile in profiles:
        foreign = [key for key, _ in map(reader.attribute, profile.attribute_indices) if key not in _PPROF_PROFILE_KEYS]
        dropped.add("profile attributes", len(foreign))
    out = pprof.Profile()
    length = facts.get(keys.STRING_TABLE_LENGTH)
    strings = _StringMapper(reader.dictionary.string_table, length if isinstance(length, int) else 1, path)
    out.time_nanos = as_int64(first.time_unix_nano)
    out.duration_nanos = as_int64(first.duration_nano)
    out.period = first.period
    if first.HasField("period_type"):
        out.period_type.type = strings(first.period_type.type_strindex)
        out.period_type.unit = strings(first.period_type.unit_strindex)
    if not _typeless(profiles):
        for profile in profiles:
            value_type = out.sample_type.add()
            value_type.type = strings(profile.sample_type.type_strindex)
            value_type.unit = strings(profile.sample_type.unit_strindex)
    location_ids = _add_tables(out, reader, facts, strings, dropped)
    _add_samples(out, profiles, reader, location_ids, strings, dropped)
    comment = facts.get(keys.COMMENT)
    if isinstance(comment, tuple):
        out.comment.extend(strings.intern(str(text)) for text in comment)
    for pprof_field, key in keys.PROFILE_STRINGS:
        text = facts.get(key)
        if isinstance(text, str):
            setattr(out, pprof_field, strings.intern(text))
    if default_sample_type is not None:
        out.default_sample_type = strings.intern(default_sample_type)
    out.string_table.extend(strings.table)
    return out, dropped


AttributeValue = str | int | float | bool | bytes | tuple["AttributeValue", ...] | None


def _in_pprof_order(profiles: Sequence[Profile], order: AttributeValue) -> list[Profile]:
    """A scope's profiles in pprof's sample type order, by ``pprof.scope.sample_type_order``
    (each profile's pprof index) when it is a permutation of them, else as they are."""
    indices = [value for value in order if type(value) is int] if isinstance(order, tuple) else []
    ordered = list(profiles)
    if isinstance(order, tuple) and len(indices) == len(order) and sorted(indices) == list(range(len(profiles))):
        for profile, index in zip(profiles, indices, strict=True):
            ordered[index] = profile
    return ordered


def _python_value(value: AnyValue) -> AttributeValue:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return tuple(_python_value(element) for element in value.array_value.values)
    if kind is None or kind == "kvlist_value":
        return None
    result: AttributeValue = getattr(value, kind)
    return result


class _DictionaryReader:
    """Index checks and lookups in one ProfilesDictionary; every index read from the data is
    checked here, so a hostile one is a MalformedInputError naming the file and the table."""

    def __init__(self, dictionary: ProfilesDictionary, path: Path | str) -> None:
        self.dictionary = dictionary
        self.path = path
        if not dictionary.string_table or dictionary.string_table[0] != "":
            raise MalformedInputError('not a profile: the dictionary\'s string_table[0] must be ""', path)

    def check(self, table: str, index: int) -> int:
        length = len(getattr(self.dictionary, table))
        if not 0 <= index < max(length, 1):
            problem = f"{table} index {index} is out of range ({length} entries)"
            raise MalformedInputError(f"not a profile: {problem}", self.path)
        return index

    def attribute(self, index: int) -> tuple[str, AttributeValue]:
        """The key (text) and value of attribute ``index``."""
        self.check("attribute_table", index)
        if index >= len(self.dictionary.attribute_table):
            return "", None
        entry = self.dictionary.attribute_table[index]
        key = self.dictionary.string_table[self.check("string_table", entry.key_strindex)]
        return key, _python_value(entry.value)

    def attributes(self, indices: Sequence[int]) -> dict[str, AttributeValue]:
        return dict(map(self.attribute, indices))

    def profile_attributes(self, profile: Profile) -> dict[str, AttributeValue]:
        return self.attributes(profile.attribute_indices)


class _StringMapper:
    """Dictionary string indices to pprof ones: the first ``kept`` strings keep theirs (the pprof
    string table the conversion put there); any other is interned at the end, by value."""

    def __init__(self, dictionary_strings: Sequence[str], kept: int, path: Path | str) -> None:
        self.source = dictionary_strings
        kept = kept if 1 <= kept <= len(dictionary_strings) else 1
        self.table = list(dictionary_strings[:kept])
        self.kept = kept
        self.path = path
        self._index: dict[str, int] = {}
        for index, text in enumerate(self.table):
            self._index.setdefault(text, index)

    def __call__(self, strindex: int) -> int:
        if 0 <= strindex < self.kept:
            return strindex
        if not 0 <= strindex < len(self.source):
            raise MalformedInputError(
                f"not a profile: string index {strindex} is out of range ({len(self.source)} strings)", self.path
            )
        return self.intern(self.source[strindex])

    def intern(self, text: str) -> int:
        index = self._index.get(text)
        if index is None:
            index = self._index[text] = len(self.table)
            self.table.append(text)
        return index


def _ids(recorded: AttributeValue, count: int) -> list[int]:
    """pprof IDs of ``count`` entries: the recorded ones (entries appended since, as a symbolizer
    appends functions, numbered on past the largest), else 1..N. Recorded IDs that are not
    distinct positive integers, or more than the entries, are not used."""
    ids: list[int] = []
    if isinstance(recorded, tuple) and len(recorded) <= count:
        numbers = [value % _UINT64 for value in recorded if isinstance(value, int) and not isinstance(value, bool)]
        if len(numbers) == len(recorded) and len(set(numbers)) == len(numbers) and min(numbers, default=1) > 0:
            ids = numbers
    following = max(ids, default=0)
    ids.extend(range(following + 1, following + 1 + count - len(ids)))
    return ids


def _add_tables(
    out: pprof.Profile,
    reader: _DictionaryReader,
    facts: dict[str, AttributeValue],
    strings: _StringMapper,
    dropped: Dropped,
) -> list[int]:
    """Adds the mappings, functions and locations; returns the pprof ID of each location index."""
    dictionary = reader.dictionary
    mappings = list(dictionary.mapping_table)[1:]
    functions = list(dictionary.function_table)[1:]
    locations = list(dictionary.location_table)[1:]
    mapping_ids = [0, *_ids(facts.get(keys.MAPPING_IDS), len(mappings))]
    function_ids = [0, *_ids(facts.get(keys.FUNCTION_IDS), len(functions))]
    location_ids = [0, *_ids(facts.get(keys.LOCATION_IDS), len(locations))]
    for mapping, mapping_id in zip(mappings, mapping_ids[1:], strict=True):
        found = reader.attributes(mapping.attribute_indices)
        added = out.mapping.add(
            id=mapping_id,
            memory_start=mapping.memory_start,
            memory_limit=mapping.memory_limit,
            file_offset=mapping.file_offset,
            filename=strings(mapping.filename_strindex),
        )
        build_id = next((found[key] for key in keys.BUILD_ID_KEYS if isinstance(found.get(key), str)), None)
        if build_id is not None:
            added.build_id = strings.intern(str(build_id))
        elif keys.HTLHASH in found:
            dropped.add("htlhash build IDs")
        for pprof_field, key in keys.MAPPING_FLAGS:
            setattr(added, pprof_field, found.get(key) is True)
    for function, function_id in zip(functions, function_ids[1:], strict=True):
        out.function.add(
            id=function_id,
            name=strings(function.name_strindex),
            system_name=strings(function.system_name_strindex),
            filename=strings(function.filename_strindex),
            start_line=function.start_line,
        )
    for location, location_id in zip(locations, location_ids[1:], strict=True):
        found = reader.attributes(location.attribute_indices)
        added_location = out.location.add(
            id=location_id,
            mapping_id=mapping_ids[reader.check("mapping_table", location.mapping_index)],
            address=location.address,
            is_folded=found.get(keys.IS_FOLDED) is True,
        )
        for line in location.lines:
            added_location.line.add(
                function_id=function_ids[reader.check("function_table", line.function_index)],
                line=line.line,
                column=line.column,
            )
    return location_ids


def _typeless(profiles: Sequence[Profile]) -> bool:
    """Whether ``profiles`` are what a pprof profile without sample types becomes: one profile,
    no sample type, samples without values or timestamps."""
    first = profiles[0]
    return (
        len(profiles) == 1
        and not first.HasField("sample_type")
        and not any(sample.values or sample.timestamps_unix_nano for sample in first.samples)
    )


def _zipped(profiles: Sequence[Profile]) -> bool:
    """Whether the profiles hold the same samples in the same order, one value each (none for
    :func:`_typeless` ones), no timestamps, as :mod:`symbolize.otlp.from_pprof` writes them: then
    they are pprof's columns."""
    first = profiles[0]
    values = 0 if _typeless(profiles) else 1
    for profile in profiles:
        if len(profile.samples) != len(first.samples):
            return False
        for sample, model in zip(profile.samples, first.samples, strict=True):
            if (
                len(sample.values) != values
                or sample.timestamps_unix_nano
                or sample.stack_index != model.stack_index
                or sample.link_index != model.link_index
                or sample.attribute_indices != model.attribute_indices
            ):
                return False
    return True


def _add_samples(
    out: pprof.Profile,
    profiles: Sequence[Profile],
    reader: _DictionaryReader,
    location_ids: Sequence[int],
    strings: _StringMapper,
    dropped: Dropped,
) -> None:
    stacks = reader.dictionary.stack_table
    # Each stack's pprof location IDs, made once: samples of every profile share the stacks.
    stack_ids: dict[int, list[int]] = {0: []}

    def add(stack_index: int, attribute_indices: Sequence[int], values: list[int]) -> None:
        sample = out.sample.add(value=values)
        ids = stack_ids.get(stack_index)
        if ids is None:
            indices = stacks[reader.check("stack_table", stack_index)].location_indices
            if indices:
                reader.check("location_table", min(indices))
                reader.check("location_table", max(indices))
            ids = stack_ids[stack_index] = [location_ids[index] for index in indices]
        sample.location_id.extend(ids)
        for index in attribute_indices:
            _add_labels(sample, reader, index, strings, dropped)

    if _zipped(profiles):
        for position, model in enumerate(profiles[0].samples):
            values = [value for profile in profiles for value in profile.samples[position].values]
            add(model.stack_index, model.attribute_indices, values)
        for profile in profiles:
            dropped.add("links", sum(1 for sample in profile.samples if sample.link_index))
        return
    merged: dict[tuple[int, tuple[int, ...], int], list[int]] = {}
    for column, profile in enumerate(profiles):
        for sample in profile.samples:
            identity = (sample.stack_index, tuple(sample.attribute_indices), sample.link_index)
            row = merged.setdefault(identity, [0] * len(profiles))
            row[column] += sum(sample.values) if sample.values else len(sample.timestamps_unix_nano)
            dropped.add("sample timestamps", len(sample.timestamps_unix_nano))
            dropped.add("links", 1 if sample.link_index else 0)
    for (stack_index, attribute_indices, _), values in merged.items():
        # Samples of one stack are summed; a sum pprof's int64 cannot hold is the file's fault.
        if not all(_INT64_MIN <= value <= _INT64_MAX for value in values):
            raise MalformedInputError("not a profile: a stack's summed sample values overflow int64", reader.path)
        add(stack_index, attribute_indices, values)


def _add_labels(
    sample: pprof.Sample, reader: _DictionaryReader, index: int, strings: _StringMapper, dropped: Dropped
) -> None:
    """Attribute ``index`` as the sample's labels: a string as a string label, an int as a number
    with its unit, a bool, double or bytes as its text, an array as one label per element."""
    reader.check("attribute_table", index)
    if index >= len(reader.dictionary.attribute_table):
        return
    entry = reader.dictionary.attribute_table[index]
    key = strings(entry.key_strindex)
    unit = strings(entry.unit_strindex)

    def one(value: AttributeValue) -> None:
        if isinstance(value, tuple):
            for element in value:
                one(element)
        elif isinstance(value, bool):
            sample.label.add(key=key, str=strings.intern("true" if value else "false"))
        elif isinstance(value, int):
            sample.label.add(key=key, num=value, num_unit=unit)
        elif isinstance(value, str):
            sample.label.add(key=key, str=strings.intern(value))
        elif isinstance(value, float):
            sample.label.add(key=key, str=strings.intern(repr(value)))
        elif isinstance(value, bytes):
            sample.label.add(key=key, str=strings.intern(value.hex()))
        else:
            dropped.add("attribute values that are key-value lists or empty")

    one(_python_value(entry.value))
