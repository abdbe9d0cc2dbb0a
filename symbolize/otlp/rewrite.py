"""``symbolize profile`` on OTLP profiles: the bare native frames of an export named in place.

The pprof rewrite (:mod:`symbolize.rewrite`) does the naming, on the pprof twin of the export
(:func:`symbolize.otlp.to_pprof.pprof_from_profiles`: the dictionary's mappings, locations and
functions are the twin's, in order). What it changed is then written back into the export's
``ProfilesDictionary`` (profiles/v1development ``profiles.proto``), and nothing else is touched:

- a location that had no ``lines`` and was named gets them, inlinees first and the caller last
  (``Location.lines``: "the last entry represents the caller into which the preceding entries
  were inlined"), as the rewrite's frames are ordered;
- new functions and strings are appended to the shared tables (the zero entries stay), each
  once: a string already in the table, a function already there, is reused;
- a location used both as a leaf PC and as a return address gets a twin (the rewrite's split)
  appended to ``location_table``, and the stacks use it past their leaf;
- ``pprof.mapping.has_*`` attributes are recomputed for the mappings the run named; a mapping
  matched by file name or by htlhash gets the IDs of the binary used
  (``process.executable.build_id.gnu``, or our ``symbolize.*`` keys: :mod:`.attributes`);
- a ``drop_frames`` the run set (a heap profile's allocator frames) goes to each profile's
  ``pprof.profile.drop_frames`` attribute.

Samples, values, timestamps, links, resource, scope and profile attributes are the export's own.

Identity: a mapping's build ID is read from ``process.executable.build_id.gnu`` / ``.go`` and our
Windows and macOS keys; a mapping with only ``process.executable.build_id.htlhash`` (what the
eBPF profiler sends for a file without a GNU build ID) is matched by hashing the candidates
(:func:`symbolize.discovery.modules.find_module_by_htlhash`).

Addresses, per mapping (``Location.address``): the spec says a runtime address, inside
``[memory_start, memory_limit)``; the OpenTelemetry eBPF profiler sends a native frame's address
in the ELF file (its virtual address, ``AddressOrLineno``) with the process's mapping around it.
A mapping none of whose unnamed addresses lies inside its range (or below its start, when it has
no limit) is read as file-relative; any other as runtime. The summary says which per mapping
(``"addresses"``).
"""

from __future__ import annotations

import gzip
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from opentelemetry.proto.profiles.v1development.profiles_pb2 import (
    Function,
    Line,
    Location,
    Mapping,
    ProfilesData,
    ProfilesDictionary,
)

from symbolize.discovery import FileLoader, find_module
from symbolize.discovery.modules import find_module_by_htlhash
from symbolize.mapping_ids import id_parts
from symbolize.module import Module
from symbolize.otlp import attributes as keys
from symbolize.otlp.encoding import encode_profiles_data, read_profiles_data
from symbolize.otlp.to_pprof import pprof_from_profiles
from symbolize.proto import profile_pb2 as pprof
from symbolize.rewrite import ModuleOpener, RewriteOptions, symbolize_profile
from symbolize.summary import Summary

__all__ = ["rewrite_otlp_payload", "symbolize_profiles_data"]

# The twin's build ID text of a mapping known by its htlhash only: no ID spelling holds "=".
_HTLHASH_MARK = "htlhash="


def rewrite_otlp_payload(payload: bytes, options: RewriteOptions, *, source: str) -> tuple[bytes, Summary]:
    """OTLP bytes (protobuf or JSON, gzipped or not) in, the same encoding out, named.

    ``payload`` is a ``ProfilesData`` or an ``ExportProfilesServiceRequest`` (the same fields), as
    :func:`symbolize.otlp.encoding.read_profiles_data` reads it; the answer is that message with its
    bare native frames named (module docstring), encoded as the payload was (protobuf or OTLP JSON,
    gzipped when it was). ``options`` are the pprof rewrite's (one long-lived ``Loader`` in
    ``options.discovery`` keeps indexes warm between calls). ``source`` names the payload in
    errors (a path, a URL, ``"<request 12>"``).

    Raises MalformedInputError (naming ``source``) for bytes that are no OTLP profiles export or
    whose dictionary references do not resolve, InputLimitError past the caps; a mapping whose
    files are missing is reported in the summary, and the rest is named. An export with no
    profiles comes back as it was, with an empty summary.
    """
    message, encoding, gzipped = read_profiles_data(payload, source)
    summary = symbolize_profiles_data(message, options, source=source)
    data = encode_profiles_data(message, encoding)
    if gzipped:
        data = gzip.compress(data, compresslevel=6, mtime=0)
    return data, summary


def symbolize_profiles_data(message: ProfilesData, options: RewriteOptions, *, source: Path | str) -> Summary:
    """Name the bare native frames of ``message`` in place (module docstring); returns the summary."""
    if not any(scope.profiles for resource in message.resource_profiles for scope in resource.scope_profiles):
        return Summary()
    twin, _ = pprof_from_profiles(message, source)
    dictionary = message.dictionary
    editor = _DictionaryEditor(dictionary)
    _mark_htlhash_mappings(twin, editor)
    recorded_ids = [mapping.build_id for mapping in twin.mapping]
    flags = [_flags(mapping) for mapping in twin.mapping]
    function_count = len(twin.function)
    location_count = len(twin.location)
    stacks_before = [list(sample.location_id) for sample in twin.sample]
    drop_frames_before = twin.drop_frames
    run_options = replace(
        options,
        open_module=_opener(options.open_module),
        object_address_mappings=_object_address_mappings(twin),
    )
    summary = symbolize_profile(twin, run_options)

    strings = twin.string_table
    function_index = {function.id: index for index, function in enumerate(twin.function, 1)}
    for function in twin.function[function_count:]:
        dictionary.function_table.append(
            Function(
                name_strindex=editor.string(strings[function.name]),
                system_name_strindex=editor.string(strings[function.system_name]),
                filename_strindex=editor.string(strings[function.filename]),
                start_line=function.start_line,
            )
        )
    location_index = {location.id: index for index, location in enumerate(twin.location, 1)}
    moved = _moved_past_leaf(stacks_before, twin)
    twin_of = {new: old for old, new in moved.items()}
    for position, location in enumerate(twin.location):
        if position >= location_count:
            original = dictionary.location_table[location_index[twin_of[location.id]]]
            dictionary.location_table.append(
                Location(
                    mapping_index=original.mapping_index,
                    address=original.address,
                    attribute_indices=original.attribute_indices,
                )
            )
        target = dictionary.location_table[position + 1]
        if location.line and not target.lines:
            target.lines.extend(
                Line(function_index=function_index[line.function_id], line=line.line, column=line.column)
                for line in location.line
            )
    _repoint_stacks(dictionary, {location_index[old]: location_index[new] for old, new in moved.items()})
    for position, mapping in enumerate(twin.mapping):
        target_mapping = dictionary.mapping_table[position + 1]
        if _flags(mapping) != flags[position]:
            editor.set_flags(target_mapping, _flags(mapping))
        if mapping.build_id != recorded_ids[position]:
            editor.add_ids(target_mapping, strings[mapping.build_id], strings[mapping.filename])
    if twin.drop_frames != drop_frames_before:
        editor.set_drop_frames(message, strings[twin.drop_frames])
    return summary


def _moved_past_leaf(stacks_before: Sequence[list[int]], twin: pprof.Profile) -> dict[int, int]:
    """Location ID -> the ID of the twin the rewrite's split gave it (it stands for it past a
    sample's leaf), read from the samples before and after."""
    moved: dict[int, int] = {}
    for before, sample in zip(stacks_before, twin.sample, strict=True):
        for old, new in zip(before[1:], sample.location_id[1:], strict=True):
            if old != new:
                moved[old] = new
    return moved


def _repoint_stacks(dictionary: ProfilesDictionary, moved: dict[int, int]) -> None:
    """Every stack uses the twins past its leaf, as the rewrite's split has the samples do (the
    split is per location: past the leaf, always the twin)."""
    if not moved:
        return
    for stack in dictionary.stack_table:
        indices = stack.location_indices
        for position in range(1, len(indices)):
            indices[position] = moved.get(indices[position], indices[position])


def _flags(mapping: pprof.Mapping) -> tuple[bool, ...]:
    return tuple(bool(getattr(mapping, field)) for field, _ in keys.MAPPING_FLAGS)


def _object_address_mappings(twin: pprof.Profile) -> frozenset[int]:
    """The mappings whose unnamed locations hold file-relative addresses (module docstring)."""
    addresses: dict[int, list[int]] = {}
    for location in twin.location:
        if location.mapping_id and not location.line:
            addresses.setdefault(location.mapping_id, []).append(location.address)
    found = set()
    for mapping in twin.mapping:
        held = addresses.get(mapping.id)
        if not held:
            continue
        start, limit = mapping.memory_start, mapping.memory_limit
        if limit > start:
            inside = any(start <= address < limit for address in held)
        else:
            inside = start == 0 or any(address >= start for address in held)
        if not inside:
            found.add(mapping.id)
    return frozenset(found)


def _mark_htlhash_mappings(twin: pprof.Profile, editor: _DictionaryEditor) -> None:
    """Gives each mapping known only by its htlhash a build ID text the opener knows
    (:data:`_HTLHASH_MARK`)."""
    mapping_table = editor.dictionary.mapping_table
    for position, mapping in enumerate(twin.mapping):
        if mapping.build_id:
            continue
        found = editor.attributes(mapping_table[position + 1].attribute_indices)
        value = found.get(keys.HTLHASH)
        if isinstance(value, str) and value.strip():
            mapping.build_id = len(twin.string_table)
            twin.string_table.append(_HTLHASH_MARK + value.strip())


def _opener(given: ModuleOpener | None) -> ModuleOpener:
    """The rewrite's module opener: a mapping known by htlhash is found by hashing; any other as
    ``given`` (or discovery) finds it."""
    fallback = given or find_module

    def open_module(filename: str, debug_id: str | None, loader: FileLoader) -> Module:
        if debug_id is not None and debug_id.startswith(_HTLHASH_MARK):
            return find_module_by_htlhash(filename, debug_id.removeprefix(_HTLHASH_MARK), loader)
        return fallback(filename, debug_id, loader)

    return open_module


class _DictionaryEditor:
    """Appends to an existing ProfilesDictionary: strings and attributes interned against what it
    holds already (the first of equal entries reused), so nothing the run adds is a duplicate."""

    def __init__(self, dictionary: ProfilesDictionary) -> None:
        self.dictionary = dictionary
        self._strings: dict[str, int] = {}
        for index, text in enumerate(dictionary.string_table):
            self._strings.setdefault(text, index)
        # (key string index, value kind, value, unit string index) -> index, for str and bool values.
        self._attributes: dict[tuple[int, str, object, int], int] = {}
        for index, entry in enumerate(dictionary.attribute_table):
            kind = entry.value.WhichOneof("value")
            if kind in ("string_value", "bool_value") and index:
                identity = (entry.key_strindex, kind, getattr(entry.value, kind), entry.unit_strindex)
                self._attributes.setdefault(identity, index)

    def string(self, text: str) -> int:
        index = self._strings.get(text)
        if index is None:
            index = self._strings[text] = len(self.dictionary.string_table)
            self.dictionary.string_table.append(text)
        return index

    def attribute(self, key: str, value: str | bool) -> int:
        kind = "bool_value" if isinstance(value, bool) else "string_value"
        identity = (self.string(key), kind, value, 0)
        index = self._attributes.get(identity)
        if index is None:
            index = self._attributes[identity] = len(self.dictionary.attribute_table)
            entry = self.dictionary.attribute_table.add(key_strindex=identity[0])
            if isinstance(value, bool):
                entry.value.bool_value = value
            else:
                entry.value.string_value = value
        return index

    def key_of(self, index: int) -> str:
        table = self.dictionary.attribute_table
        if not 0 < index < len(table):
            return ""
        key = table[index].key_strindex
        return self.dictionary.string_table[key] if 0 <= key < len(self.dictionary.string_table) else ""

    def attributes(self, indices: Sequence[int]) -> dict[str, object]:
        """Key -> value (str, bool, int; others as None) of the attributes at ``indices``."""
        found: dict[str, object] = {}
        table = self.dictionary.attribute_table
        for index in indices:
            if not 0 < index < len(table):
                continue
            kind = table[index].value.WhichOneof("value")
            value = getattr(table[index].value, kind) if kind in ("string_value", "bool_value", "int_value") else None
            found[self.key_of(index)] = value
        return found

    def set_flags(self, mapping: Mapping, flags: tuple[bool, ...]) -> None:
        """Replaces the mapping's ``pprof.mapping.has_*`` attributes by ``flags`` (written when true)."""
        indices = mapping.attribute_indices
        flag_keys = {key for _, key in keys.MAPPING_FLAGS}
        kept = [index for index in indices if self.key_of(index) not in flag_keys]
        kept.extend(self.attribute(key, True) for (_, key), on in zip(keys.MAPPING_FLAGS, flags, strict=True) if on)
        del indices[:]
        indices.extend(kept)

    def add_ids(self, mapping: Mapping, text: str, filename: str) -> None:
        """Adds the IDs of ``text`` (as symbolize/mapping_ids.py spells them) the mapping lacks, each
        under the key the converter gives it (:func:`symbolize.otlp.attributes.build_id_key`)."""
        indices = mapping.attribute_indices
        held = {self.key_of(index) for index in indices}
        for part in id_parts(text):
            key = keys.build_id_key(part, filename)
            if key not in held:
                indices.append(self.attribute(key, part))
                held.add(key)

    def set_drop_frames(self, message: ProfilesData, pattern: str) -> None:
        """Sets every profile's ``pprof.profile.drop_frames`` attribute to ``pattern``."""
        for resource in message.resource_profiles:
            for scope in resource.scope_profiles:
                for profile in scope.profiles:
                    indices = profile.attribute_indices
                    kept = [index for index in indices if self.key_of(index) != keys.DROP_FRAMES]
                    kept.append(self.attribute(keys.DROP_FRAMES, pattern))
                    del indices[:]
                    indices.extend(kept)
