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
A mapping none of whose unnamed addresses lies inside its range (or at or above its start, when
it has no limit) is read as file-relative: the file's own addresses, as a ``module+0xOFFSET``
frame's are read (:func:`symbolize.normalize.module_placement`: the ELF vaddr; a PE image's RVA;
a Mach-O offset from ``__TEXT``); any other as runtime, placed as a pprof mapping's are. The
summary says which per mapping (``"addresses"``). A mapping whose addresses are all named already
says nothing.
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
    ProfilesData,
    Stack,
)

from symbolize.discovery import FileLoader, find_module
from symbolize.discovery.modules import find_module_by_htlhash
from symbolize.mapping_ids import SEPARATOR, spell
from symbolize.module import Module
from symbolize.otlp import attributes as keys
from symbolize.otlp.dictionary import DictionaryEditor
from symbolize.otlp.encoding import encode_profiles_data, read_profiles_data
from symbolize.otlp.to_pprof import pprof_from_profiles
from symbolize.proto import profile_pb2 as pprof
from symbolize.rewrite import ModuleOpener, RewriteOptions, symbolize_profile
from symbolize.summary import Summary

__all__ = ["rewrite_otlp_payload", "symbolize_profiles_data"]

# The twin's build ID text of a mapping known by its htlhash only: no ID spelling holds "=".
_HTLHASH_MARK = "htlhash="
# The ID attributes a mapping is matched by together (a Go build ID is matched as pprof matches it:
# when it is the only one).
_MATCHED_ID_KEYS = (keys.GNU_BUILD_ID, keys.PDB_ID, keys.PE_CODE_ID, keys.MACHO_UUID)


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
    editor = DictionaryEditor(message.dictionary)
    _give_twin_build_ids(twin, editor)
    before = _TwinState(twin)
    hashed: dict[str, str] = {}
    run_options = replace(
        options,
        open_module=_opener(options.open_module, hashed),
        object_address_mappings=_object_address_mappings(twin),
    )
    summary = symbolize_profile(twin, run_options)
    _write_back(message, twin, before, editor)
    _add_hashed_files_ids(twin, editor, hashed)
    return summary


class _TwinState:
    """What the twin held before the rewrite: the dictionary index of each of its entries (by pprof
    ID: the rewrite appends, and the naming of ``module+0xOFFSET`` frames also drops and merges),
    each location's lines, each sample's locations, each mapping's ID text and flags."""

    def __init__(self, twin: pprof.Profile) -> None:
        self.function_index = {function.id: index for index, function in enumerate(twin.function, 1)}
        self.location_index = {location.id: index for index, location in enumerate(twin.location, 1)}
        self.lines = {location.id: _lines(location) for location in twin.location}
        self.samples = [list(sample.location_id) for sample in twin.sample]
        self.build_ids = [mapping.build_id for mapping in twin.mapping]
        self.flags = [_flags(mapping) for mapping in twin.mapping]
        self.drop_frames = twin.drop_frames


def _lines(location: pprof.Location) -> tuple[tuple[int, int, int], ...]:
    return tuple((line.function_id, line.line, line.column) for line in location.line)


def _write_back(message: ProfilesData, twin: pprof.Profile, before: _TwinState, editor: DictionaryEditor) -> None:
    """What the rewrite changed in ``twin``, written into ``message`` (module docstring)."""
    dictionary = message.dictionary
    strings = twin.string_table
    function_index = dict(before.function_index)
    for function in twin.function:
        if function.id not in function_index:
            function_index[function.id] = len(dictionary.function_table)
            dictionary.function_table.append(
                Function(
                    name_strindex=editor.string(strings[function.name]),
                    system_name_strindex=editor.string(strings[function.system_name]),
                    filename_strindex=editor.string(strings[function.filename]),
                    start_line=function.start_line,
                )
            )
    leaf_moves, caller_moves = _moves(before.samples, twin)
    origin = {new: old for moves in (caller_moves, leaf_moves) for old, new in moves.items()}
    mapping_index = {mapping.id: index for index, mapping in enumerate(twin.mapping, 1)}
    location_index = dict(before.location_index)
    for location in twin.location:
        index = location_index.get(location.id)
        if index is None:
            # Appended by the rewrite: a split's twin or a named module+0xOFFSET frame's location,
            # with the attributes of the location it stands for.
            index = location_index[location.id] = len(dictionary.location_table)
            stands_for = location_index.get(origin.get(location.id, 0), 0)
            dictionary.location_table.append(
                Location(
                    mapping_index=mapping_index.get(location.mapping_id, 0),
                    address=location.address,
                    attribute_indices=dictionary.location_table[stands_for].attribute_indices,
                )
            )
        elif _lines(location) == before.lines[location.id]:
            continue
        target = dictionary.location_table[index]
        del target.lines[:]
        target.lines.extend(
            Line(function_index=function_index[line.function_id], line=line.line, column=line.column)
            for line in location.line
        )
    _move_stacks(
        message,
        {location_index[old]: location_index[new] for old, new in leaf_moves.items()},
        {location_index[old]: location_index[new] for old, new in caller_moves.items()},
    )
    for position, mapping in enumerate(twin.mapping):
        target_mapping = dictionary.mapping_table[position + 1]
        if _flags(mapping) != before.flags[position]:
            editor.set_flags(target_mapping, _flags(mapping))
        if mapping.build_id != before.build_ids[position]:
            editor.add_ids(target_mapping, strings[mapping.build_id], strings[mapping.filename])
    if twin.drop_frames != before.drop_frames:
        editor.set_drop_frames(message, strings[twin.drop_frames])


def _moves(samples_before: Sequence[list[int]], twin: pprof.Profile) -> tuple[dict[int, int], dict[int, int]]:
    """Location ID -> the ID the rewrite moved it to, at a sample's leaf and past it: a split's twin
    (past the leaf), the merged location of a named ``module+0xOFFSET`` frame (by role, so by the
    same two places). Read from the samples before and after."""
    leaf: dict[int, int] = {}
    callers: dict[int, int] = {}
    for before, sample in zip(samples_before, twin.sample, strict=True):
        for position, (old, new) in enumerate(zip(before, sample.location_id, strict=True)):
            if old != new:
                (callers if position else leaf)[old] = new
    return leaf, callers


def _move_stacks(message: ProfilesData, leaf: dict[int, int], callers: dict[int, int]) -> None:
    """Every stack uses what its locations were moved to (at the leaf and past it, :func:`_moves`);
    stacks that become equal are merged, and the samples use the first of them."""
    if not leaf and not callers:
        return
    table = message.dictionary.stack_table
    first: dict[tuple[int, ...], int] = {}
    renumbered: dict[int, int] = {}
    kept: list[tuple[int, ...]] = []
    for index, stack in enumerate(table):
        indices = list(stack.location_indices)
        if indices:
            indices[0] = leaf.get(indices[0], indices[0])
            indices[1:] = [callers.get(location, location) for location in indices[1:]]
        identity = tuple(indices)
        if identity in first and index:
            renumbered[index] = first[identity]
            continue
        first.setdefault(identity, len(kept))
        renumbered[index] = len(kept)
        kept.append(identity)
    del table[:]
    table.extend(Stack(location_indices=identity) for identity in kept)
    for resource in message.resource_profiles:
        for scope in resource.scope_profiles:
            for profile in scope.profiles:
                for sample in profile.samples:
                    sample.stack_index = renumbered.get(sample.stack_index, sample.stack_index)


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


def _give_twin_build_ids(twin: pprof.Profile, editor: DictionaryEditor) -> None:
    """The build ID text of each twin mapping, from every ID attribute the export's mapping has:
    a stamped Windows mapping's PDB GUID + age and code ID together (symbolize/mapping_ids.py's
    spelling: each must match, as for a stamped pprof mapping); a mapping known only by its
    htlhash gets a text the opener knows (:data:`_HTLHASH_MARK`). The way back to pprof keeps one
    ID, the first of :data:`symbolize.otlp.attributes.BUILD_ID_KEYS`."""
    mapping_table = editor.dictionary.mapping_table
    for position, mapping in enumerate(twin.mapping):
        found = editor.attributes(mapping_table[position + 1].attribute_indices)
        ids = [str(found[key]).strip() for key in _MATCHED_ID_KEYS if isinstance(found.get(key), str)]
        ids = [text for text in ids if text]
        htlhash = found.get(keys.HTLHASH)
        if len(ids) > 1:
            text = SEPARATOR.join(ids)
        elif not mapping.build_id and isinstance(htlhash, str) and htlhash.strip():
            text = _HTLHASH_MARK + htlhash.strip()
        else:
            continue
        mapping.build_id = len(twin.string_table)
        twin.string_table.append(text)


def _opener(given: ModuleOpener | None, hashed: dict[str, str]) -> ModuleOpener:
    """The rewrite's module opener: a mapping known by htlhash is found by hashing (the IDs of the
    file found go to ``hashed``, by the mapping's ID text); any other as ``given`` (or discovery)
    finds it."""
    fallback = given or find_module

    def open_module(filename: str, debug_id: str | None, loader: FileLoader) -> Module:
        if debug_id is not None and debug_id.startswith(_HTLHASH_MARK):
            module = find_module_by_htlhash(filename, debug_id.removeprefix(_HTLHASH_MARK), loader)
            hashed[debug_id] = spell(module.image.identities())
            return module
        return fallback(filename, debug_id, loader)

    return open_module


def _add_hashed_files_ids(twin: pprof.Profile, editor: DictionaryEditor, hashed: dict[str, str]) -> None:
    """A mapping found by its htlhash gets the build IDs of the file that hashed so (the
    conventions ask for every ID a mapping's file has)."""
    strings = twin.string_table
    for position, mapping in enumerate(twin.mapping):
        ids = hashed.get(strings[mapping.build_id]) if mapping.build_id else None
        if ids:
            editor.add_ids(editor.dictionary.mapping_table[position + 1], ids, strings[mapping.filename])
