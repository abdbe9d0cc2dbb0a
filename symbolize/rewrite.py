"""Symbolize a pprof profile in place (profile.proto: Mapping, Location, Line, Function).

The steps follow pprof's own symbolizer: group the locations that have no
``Line`` yet by mapping, skip mappings that name no file (``[vdso]``,
``//anon``, kernel, ...), open each remaining mapping's module (refusing a
build ID mismatch), turn runtime addresses into object addresses, look them all
up in one batch, and attach ``Line``/``Function`` entries. A mapping that
cannot be opened is reported in the summary and the run goes on.

Return addresses: every frame but an on-CPU profile's leaf is the address a
call returns to, so it is looked up at ``address - 1`` to name the call site
(the roles and the addresses they give are :mod:`symbolize.normalize`'s).
A location used both ways is split in two (see :func:`_split_mixed_roles`).

Mapping flags (``has_functions``, ``has_filenames``, ``has_line_numbers``,
``has_inline_frames``) are set on mappings this run symbolized: a flag is True
iff none of the mapping's locations stayed unnamed and at least one location
got that kind of data (a function name; a file; a line > 0; more than one
frame). Mappings the run did not touch keep their flags.

A mapping given without a build ID names its binary by file name only: the summary says the match
is unverified, and a file whose size or segments contradict the mapping (see
:func:`symbolize.normalize.mapping_contradiction`) is refused, its locations left unnamed. Such a
mapping is written back with the build ID of the binary used, so a later run, or pprof,
checks its binary against the one this run named the mapping from.
Locations named only ``module+0xOFFSET`` are named by :mod:`symbolize.offset_frames`.

Everything else (samples, values, labels, comments, unknown fields, string
table order) is kept; new strings are appended.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import NamedTuple

from symbolize.demangle import DemangleMode, profile_name
from symbolize.discovery import FileLoader, find_module, open_module
from symbolize.discovery.paths import base_name
from symbolize.discovery.slices import choose_mapping_slice
from symbolize.drop_frames import HEAP_DROP_FRAMES, is_heap_profile
from symbolize.formats.errors import RemoteMissError, SymbolizeError
from symbolize.formats.types import Frame
from symbolize.indexed_lines import NamedFacts, attach_indexed_lines
from symbolize.loader import Loader
from symbolize.mapping_ids import spell
from symbolize.module import Module, Reason, Unknown, reason_for_error
from symbolize.normalize import (
    EXACT,
    MIXED,
    RETURN,
    macho_offset_base,
    mapping_contradiction,
    mapping_placement,
    module_placement,
    role_at,
)
from symbolize.offset_frames import name_offset_frames
from symbolize.pprof import StringTable
from symbolize.progress import ProgressReport
from symbolize.proto.profile_pb2 import Location, Mapping, Profile
from symbolize.summary import DropFrames, MappingSummary, Summary
from symbolize.top_functions import top_leaf_functions

__all__ = ["ModuleOpener", "RewriteOptions", "normalize_build_id", "symbolize_profile"]

# (mapping filename, the mapping's debug ID text or None, the loader that opens files) -> Module.
ModuleOpener = Callable[[str, str | None, FileLoader], Module]

KERNEL_ADDRESS_START = 0xFFFF800000000000
ON_CPU_SAMPLE_TYPES = frozenset({"cpu", "samples"})
ALREADY_SYMBOLIZED = "already symbolized"


# pprof ids are uint64, and 0 means "none".
MAX_ID = (1 << 64) - 1


def fresh_ids(used: Iterable[int]) -> Iterator[int]:
    """Ids not in ``used``: after the largest, then (when that reaches 2^64-1) the lowest free ones.

    A profile may already use the largest id (pprof does not forbid it), and the next one would
    not fit the uint64 field; there are always free ids below, and finding them costs at most one
    step per id in use.
    """
    taken = set(used)
    candidate = max(taken, default=0) + 1
    while candidate <= MAX_ID:
        yield candidate
        candidate += 1
    candidate = 1
    while True:
        if candidate not in taken:
            yield candidate
        candidate += 1


@dataclass(frozen=True)
class RewriteOptions:
    """How to symbolize a profile.

    ``discovery`` opens binaries and debug files (a :class:`~symbolize.loader.Loader`, whose
    options say where to look);
    ``open_module`` replaces ``discovery.find_module``
    (an embedding program's cache, or a fake in tests).
    ``adjust_return_addresses=False`` is for producers that already
    subtracted 1 from return addresses. ``drop_frames`` (a regex) is written
    to the profile's ``drop_frames`` so pprof hides those frames, and the
    summary's top functions skip them; None leaves a profile's own
    ``drop_frames`` and gives a heap profile without one the allocator's frames
    (:data:`symbolize.drop_frames.HEAP_DROP_FRAMES`); ``""`` leaves the profile's own alone and adds none.
    Function names are :func:`symbolize.demangle.profile_name`'s: Rust hashes dropped unless
    ``keep_hashes``, one closure spelling.
    ``progress`` hears how many locations were named so far (a cold run decodes as it goes:
    minutes for large binaries).
    """

    discovery: FileLoader = field(default_factory=Loader)
    demangle: DemangleMode = "full"
    adjust_return_addresses: bool = True
    open_module: ModuleOpener | None = None
    drop_frames: str | None = None
    keep_hashes: bool = False
    progress: ProgressReport = field(default_factory=ProgressReport)
    # Mapping IDs whose locations hold object addresses (an ELF file's virtual addresses: what the
    # OpenTelemetry eBPF profiler sends), not runtime ones; None (a pprof run) says nothing of the
    # convention in the summary, a set (an OTLP run) says it for every mapping it names.
    object_address_mappings: frozenset[int] | None = None


# Addresses a mapping's locations hold (MappingSummary.addresses).
RUNTIME_ADDRESSES = "runtime"
OBJECT_ADDRESSES = "file-relative"


# How many addresses a cold lookup is asked at once between two reports of progress.
_PROGRESS_STEP = 4096
# Gathered fetch rounds (_fetch_together): binary, its debug file, that file's dwz or .dwo/.dwp.
_FETCH_ROUNDS = 3


class _Pending(NamedTuple):
    """A location to name: the lookup address depends on its role."""

    location: Location
    role: int  # normalize.EXACT or normalize.RETURN


@dataclass
class _MappingWork:
    mapping: Mapping | None
    summary: MappingSummary
    pending: list[_Pending] = field(default_factory=list)


def normalize_build_id(text: str) -> str | None:
    """A mapping's debug ID text, stripped, or None when it is empty.

    Kept as text: discovery parses it as each candidate's kind of debug ID
    (``DebugId.parse``) and compares values, so a GNU build ID, a PDB GUID+age
    and a Mach-O UUID each match in any spelling.
    """
    cleaned = text.strip()
    return cleaned or None


def skip_reason(filename: str, memory_start: int) -> str | None:
    """Why a mapping cannot be symbolized from a file, or None when it can."""
    if not filename:
        return "mapping has no file name"
    if memory_start >= KERNEL_ADDRESS_START or filename.startswith("[kernel"):
        return "kernel mapping"
    if filename.startswith("["):
        return f"{filename} is not a file"
    for prefix in ("//anon", "/dev/", "/memfd:"):
        if filename.startswith(prefix):
            return f"{prefix} mapping is not a file"
    return None


# Where macOS keeps the libraries that, since macOS 11, exist only inside the dyld shared cache.
_SHARED_CACHE_DIRS = ("/usr/lib/", "/System/Library/", "/System/iOSSupport/")


def in_dyld_shared_cache(filename: str) -> bool:
    """Whether a mapping names a macOS system library (a dylib or framework binary under the system
    directories), which a Mac no longer has as a file: it is in the dyld shared cache."""
    if not filename.startswith(_SHARED_CACHE_DIRS):
        return False
    return filename.endswith(".dylib") or ".framework/" in filename


def is_on_cpu(profile: Profile, strings: StringTable) -> bool:
    """True for profiles whose leaf frame is the exact interrupted PC (pprof CPU profiles)."""
    names = {strings.get(value_type.type) for value_type in profile.sample_type}
    if profile.HasField("period_type"):
        names.add(strings.get(profile.period_type.type))
    return bool(names & ON_CPU_SAMPLE_TYPES)


def symbolize_profile(profile: Profile, options: RewriteOptions | None = None) -> Summary:
    """Name the bare addresses of ``profile`` in place; returns what was done.

    A mapping whose binary or debug file is missing, unreadable or broken is
    reported in the summary (its locations stay unnamed) and the run goes on.
    """
    options = options or RewriteOptions()
    strings = StringTable(profile)
    functions = _FunctionTable(profile, strings, options.demangle, options.keep_hashes)
    mappings = {mapping.id: mapping for mapping in profile.mapping}
    work: dict[int, _MappingWork] = {}
    for mapping in profile.mapping:
        filename = strings.get(mapping.filename)
        work[mapping.id] = _MappingWork(mapping, MappingSummary(filename))
    no_mapping = _MappingWork(None, MappingSummary(""))

    on_cpu = is_on_cpu(profile, strings)
    # Locations named only "module+0xOFFSET" (no address): named first, and not counted again below.
    offset_owned, offset_summaries = name_offset_frames(
        profile,
        strings,
        functions.id_of,
        lambda name, debug_id: _open_module(options, name, debug_id),
        fresh_ids(location.id for location in profile.location),
        on_cpu=on_cpu,
        adjust_return_addresses=options.adjust_return_addresses,
    )
    roles = _location_roles(profile, on_cpu, options.adjust_return_addresses)
    _split_mixed_roles(profile, roles, mappings, strings)

    skip_reasons = {
        mapping_id: skip_reason(entry.summary.filename, entry.mapping.memory_start)
        for mapping_id, entry in work.items()
        if entry.mapping is not None
    }
    for location in list(profile.location):
        if location.id in offset_owned:
            continue
        entry = work.get(location.mapping_id, no_mapping)
        if len(location.line) > 0:
            entry.summary.count_named()
            entry.summary.already_symbolized += 1
            continue
        if entry.mapping is None:
            entry.summary.count_unnamed(Reason.NO_MAPPING)
            continue
        reason = skip_reasons[location.mapping_id]
        if reason is not None:
            entry.summary.count_unnamed(Reason.NOT_A_FILE, reason)
            continue
        # A location still in both roles here is one _split_mixed_roles leaves alone: never named.
        role = RETURN if roles.get(location.id, EXACT) == RETURN else EXACT
        entry.pending.append(_Pending(location, role))

    to_name = [entry for entry in work.values() if entry.pending and entry.mapping is not None]
    _fetch_together(to_name, options, strings)
    progress = options.progress
    progress.start("naming addresses", sum(len(entry.pending) for entry in to_name))
    done = 0
    for position, entry in enumerate(to_name, 1):
        assert entry.mapping is not None
        progress.describe(f"naming {base_name(entry.summary.filename)} ({position}/{len(to_name)} mappings)")
        _symbolize_mapping(entry.mapping, entry, options, strings, functions)
        done += len(entry.pending)
        progress.reach(done)

    summary = Summary(mappings=[entry.summary for entry in work.values() if entry.summary.locations])
    if no_mapping.summary.locations:
        summary.mappings.append(no_mapping.summary)
    summary.mappings.extend(offset_summaries)
    summary.unnamed_value_share = _unnamed_value_share(profile, strings)
    summary.drop_frames = _set_drop_frames(profile, strings, options.drop_frames)
    drop_frames = _compiled(strings.get(profile.drop_frames)) if profile.drop_frames else None
    summary.top_functions_by_type = top_leaf_functions(profile, strings, drop_frames)
    return summary


def _set_drop_frames(profile: Profile, strings: StringTable, given: str | None) -> DropFrames | None:
    """Write the profile's ``drop_frames`` as :class:`RewriteOptions` says; returns it and its source."""
    if given:
        profile.drop_frames = strings.intern(given)
        return DropFrames(given, "given")
    own = strings.get(profile.drop_frames) if profile.drop_frames else ""
    if own:
        return DropFrames(own, "profile")
    if given is None and is_heap_profile(profile, strings):
        profile.drop_frames = strings.intern(HEAP_DROP_FRAMES)
        return DropFrames(HEAP_DROP_FRAMES, "heap default")
    return None


def _location_roles(profile: Profile, on_cpu: bool, adjust: bool) -> dict[int, int]:
    """Each location's roles in the samples (bits ``normalize.EXACT``, ``normalize.RETURN``)."""
    roles: dict[int, int] = defaultdict(int)
    leaf_role = role_at(0, on_cpu, adjust)
    other_role = role_at(1, on_cpu, adjust)
    for sample in profile.sample:
        location_ids = sample.location_id
        if location_ids:
            roles[location_ids[0]] |= leaf_role
            for location_id in location_ids[1:]:
                roles[location_id] |= other_role
    return roles


def _split_mixed_roles(
    profile: Profile,
    roles: dict[int, int],
    mappings: dict[int, Mapping],
    strings: StringTable,
) -> None:
    """Give each location used both as an exact PC and as a return address a twin.

    The original keeps the exact-PC use; a new location (a free id, see :func:`fresh_ids`; same
    mapping and address) takes the return-address use, and the samples that
    use it as a return address (any position but the leaf) are repointed.
    Only locations this run will name are split.
    """
    mixed: set[int] = set()
    named_from_file = {
        mapping_id: skip_reason(strings.get(mapping.filename), mapping.memory_start) is None
        for mapping_id, mapping in mappings.items()
    }
    for location in profile.location:
        if roles.get(location.id) != MIXED or len(location.line) > 0:
            continue
        if not named_from_file.get(location.mapping_id, False):
            continue
        mixed.add(location.id)
    if not mixed:
        return
    new_ids = fresh_ids(location.id for location in profile.location)
    twins: dict[int, int] = {}
    for location in list(profile.location):
        if location.id in mixed:
            twin_id = next(new_ids)
            twin = profile.location.add()
            twin.CopyFrom(location)
            twin.id = twin_id
            twins[location.id] = twin_id
            roles[twin_id] = RETURN
            roles[location.id] = EXACT
    for sample in profile.sample:
        # Only the leaf can be an exact PC; mixed roles exist only in on-CPU profiles.
        for position in range(1, len(sample.location_id)):
            found = twins.get(sample.location_id[position])
            if found is not None:
                sample.location_id[position] = found


def _symbolize_mapping(
    mapping: Mapping,
    entry: _MappingWork,
    options: RewriteOptions,
    strings: StringTable,
    functions: _FunctionTable,
) -> None:
    summary = entry.summary
    if options.object_address_mappings is not None:
        # Said before the file is looked for: a mapping whose file is missing says it too.
        in_file = mapping.id in options.object_address_mappings
        summary.addresses = OBJECT_ADDRESSES if in_file else RUNTIME_ADDRESSES
    build_id = normalize_build_id(strings.get(mapping.build_id))
    try:
        module = _open_module(options, summary.filename, build_id)
    except (SymbolizeError, OSError) as exc:
        reason, detail = reason_for_error(exc), str(exc)
        if isinstance(exc, RemoteMissError) and options.discovery.remote is not None:
            summary.missed = options.discovery.remote.misses(summary.filename)
        if reason is Reason.BINARY_NOT_FOUND and in_dyld_shared_cache(summary.filename):
            reason, detail = Reason.IN_SHARED_CACHE, f"{summary.filename}: a macOS system library, not on disk"
        for _ in entry.pending:
            summary.count_unnamed(reason, detail)
        return
    slice_by = "uuid" if build_id else None
    if not build_id:
        # No UUID to name the slice of a universal binary: the mapping's shape names it.
        runtime_addrs = [pending.location.address for pending in entry.pending]
        choice = choose_mapping_slice(module.image, options.discovery, mapping.memory_start, mapping.memory_limit,
                                      mapping.file_offset, runtime_addrs)  # fmt: skip
        if choice is not None:
            slice_by = choice.decided_by
            if choice.arch != module.image.arch:
                module = open_module(module.image.path, options.discovery, arch=choice.arch)
        refusal = _unverified_refusal(module, mapping)
        if refusal is not None:
            summary.refused = [refusal]
            for _ in entry.pending:
                summary.count_unnamed(Reason.MAPPING_CONTRADICTS_FILE, refusal)
            return
        summary.unverified = True
    summary.binary = str(module.image.path)
    if module.image.universal:
        summary.slice = module.image.arch
        summary.slice_by = slice_by
        if mapping.file_offset:
            summary.file_offsets_from = "fat file" if macho_offset_base(module.image, mapping.file_offset) else "slice"
    if not build_id and module.image.identities():
        # Keep what was found, so pprof and later runs can check the binary they are given
        # against the one this run used (this run's summary says the match was by name only),
        # spelled as `symbolize stamp` records it (a PE image's code ID too: symbolize/mapping_ids.py).
        mapping.build_id = strings.intern(spell(module.image.identities()))
    if module.debug_files:
        summary.debug_file = str(module.debug_files[0].path)

    to_look_up: list[tuple[_Pending, int]] = []
    place = mapping_placement(module.image, mapping.memory_start, mapping.memory_limit, mapping.file_offset)
    if summary.addresses == OBJECT_ADDRESSES:
        place = module_placement(module.image)
    for pending in entry.pending:
        vaddr = place(pending.location.address, pending.role)
        if vaddr is None:
            summary.count_unnamed(Reason.OUTSIDE_FILE)
        else:
            to_look_up.append((pending, vaddr))

    facts = attach_indexed_lines(
        module, [(pending.location, vaddr) for pending, vaddr in to_look_up], summary, functions.id_of_fields
    )
    if facts is None:
        try:
            results = _looked_up(module, [vaddr for _, vaddr in to_look_up], options.progress)
        except SymbolizeError as exc:
            for _ in to_look_up:
                summary.count_unnamed(reason_for_error(exc), str(exc))
            return
        facts = _attach_results(to_look_up, results, summary, functions)
    if facts.named and not facts.lines:
        summary.missing_lines = _lines_missing_reason(module)
    summary.damaged_debug_info = module.damaged_debug_info() or None
    summary.refused = module.refusals()
    summary.missed = list(module.missed)
    if summary.unnamed == 0:
        mapping.has_functions = facts.functions
        mapping.has_filenames = facts.files
        mapping.has_line_numbers = facts.lines
        mapping.has_inline_frames = facts.inlines


def _looked_up(module: Module, vaddrs: list[int], progress: ProgressReport) -> list[list[Frame] | Unknown]:
    """``module.lookup(vaddrs)`` in steps of :data:`_PROGRESS_STEP`, each reported to ``progress``."""
    results: list[list[Frame] | Unknown] = []
    for start in range(0, len(vaddrs), _PROGRESS_STEP):
        step = vaddrs[start : start + _PROGRESS_STEP]
        results += module.lookup(step)
        progress.advance(len(step))
    return results


def _attach_results(
    to_look_up: list[tuple[_Pending, int]],
    results: list[list[Frame] | Unknown],
    summary: MappingSummary,
    functions: _FunctionTable,
) -> NamedFacts:
    """Attach each looked-up answer's lines to its location (the reference of symbolize/indexed_lines.py)."""
    named: list[list[Frame]] = []
    for (pending, _), result in zip(to_look_up, results, strict=True):
        frames = summary.count_answer(result)
        if frames is not None:
            _attach_lines(pending.location, frames, functions)
            named.append(frames)
    return NamedFacts(
        named=len(named),
        functions=any(frame.function for frames in named for frame in frames),
        files=any(frame.file for frames in named for frame in frames),
        lines=any(frame.line > 0 for frames in named for frame in frames),
        inlines=any(len(frames) > 1 for frames in named),
    )


def _unverified_refusal(module: Module, mapping: Mapping) -> str | None:
    """``"path: why"`` when the file found by name cannot be what ``mapping`` shows; None when it may be."""
    path = module.image.path
    try:
        file_size: int | None = path.stat().st_size
    except OSError:
        file_size = None
    why = mapping_contradiction(module.image, mapping.memory_start, mapping.memory_limit, mapping.file_offset,
                                file_size)  # fmt: skip
    return f"{path}: {why}" if why is not None else None


def _lines_missing_reason(module: Module) -> str | None:
    """Why a module's named frames came without lines: no debug file, or the debug file's own reason
    (a publics-only PDB says so); None when the debug files give none."""
    if not module.debug_files:
        missing = "dSYM" if module.image.format == "macho" else "debug file"
        where = " on disk nor on the servers asked" if module.missed else ""
        return f"named from the symbol table only: no {missing} was found{where}"
    for source in module.debug_files:
        found = source.lines_missing_reason()
        if found is not None:
            return found
    return None


def _fetch_together(to_name: list[_MappingWork], options: RewriteOptions, strings: StringTable) -> None:
    """Have the servers' files of every mapping fetched at once, before any is named
    (symbolize/remote/run.py, RemoteRun.gathering): each module is found once with its fetches
    only noted, and found again, answered from the downloads, when its mapping is named."""
    remote = options.discovery.remote
    if remote is None or not remote.options.network or len(to_name) < 2:
        return
    # One round per link of the longest chain: a binary from a server, then the debug file its
    # ID names, then that file's dwz or split-unit file. A round that fetched nothing ends it.
    for _ in range(_FETCH_ROUNDS):
        with remote.gathering() as this_round:
            for entry in to_name:
                assert entry.mapping is not None
                build_id = normalize_build_id(strings.get(entry.mapping.build_id))
                try:
                    _open_module(options, entry.summary.filename, build_id)
                except (SymbolizeError, OSError):
                    continue  # said when the mapping is named
        if not this_round.fetched:
            return


def _open_module(options: RewriteOptions, filename: str, build_id: str | None) -> Module:
    opener = options.open_module or find_module
    return opener(filename, build_id, options.discovery)


def _attach_lines(location: Location, frames: list[Frame], functions: _FunctionTable) -> None:
    # pprof and Frame lists agree: innermost inlined frame first, the function holding the code last.
    lines = location.line
    for frame in frames:
        lines.add(function_id=functions.id_of(frame), line=frame.line, column=frame.column)


class _FunctionTable:
    """Deduplicates Function entries by (name, system_name, filename, start_line)."""

    def __init__(self, profile: Profile, strings: StringTable, mode: DemangleMode, keep_hashes: bool = False) -> None:
        self._mode = mode
        self._keep_hashes = keep_hashes
        self._profile = profile
        self._strings = strings
        self._ids: dict[tuple[str, str, str, int], int] = {}
        for function in profile.function:
            key = (
                strings.get(function.name),
                strings.get(function.system_name),
                strings.get(function.filename),
                function.start_line,
            )
            self._ids.setdefault(key, function.id)
        self._new_ids = fresh_ids(function.id for function in profile.function)
        # By the frame fields a Function is made of: an inlined call's frame and the innermost
        # frames at the many addresses of one function share it, each a Frame object of its own.
        self._by_frame: dict[tuple[str | None, str | None, int], int] = {}

    def id_of(self, frame: Frame) -> int:
        """The id of the Function entry for ``frame``'s function, its name demangled as ``mode`` asks."""
        return self.id_of_fields(frame.function, frame.file, frame.start_line)

    def id_of_fields(self, function: str | None, file: str | None, start_line: int) -> int:
        """:meth:`id_of` of a frame with these fields."""
        key = (function, file, start_line)
        function_id = self._by_frame.get(key)
        if function_id is None:
            system_name = function or "??"
            name = profile_name(system_name, self._mode, keep_hashes=self._keep_hashes)
            function_id = self._by_frame[key] = self.intern(name, system_name, file or "", start_line)
        return function_id

    def intern(self, name: str, system_name: str, filename: str, start_line: int) -> int:
        key = (name, system_name, filename, start_line)
        function_id = self._ids.get(key)
        if function_id is None:
            function_id = next(self._new_ids)
            self._profile.function.add(
                id=function_id,
                name=self._strings.intern(name),
                system_name=self._strings.intern(system_name),
                filename=self._strings.intern(filename),
                start_line=start_line,
            )
            self._ids[key] = function_id
        return function_id


def _unnamed_value_share(profile: Profile, strings: StringTable) -> dict[str, float]:
    named_locations = {location.id for location in profile.location if len(location.line) > 0}
    totals = [0] * len(profile.sample_type)
    unnamed = [0] * len(profile.sample_type)
    for sample in profile.sample:
        leaf_named = len(sample.location_id) > 0 and sample.location_id[0] in named_locations
        for index, value in enumerate(sample.value[: len(totals)]):
            totals[index] += abs(value)
            if not leaf_named:
                unnamed[index] += abs(value)
    shares: dict[str, float] = {}
    for index, value_type in enumerate(profile.sample_type):
        name = strings.get(value_type.type) or f"#{index}"
        shares[name] = unnamed[index] / totals[index] if totals[index] else 0.0
    return shares


def _compiled(pattern: str) -> re.Pattern[str] | None:
    """A profile's own ``drop_frames``; one that is no Python regex skips nothing (RE2 syntax may differ)."""
    try:
        return re.compile(pattern)
    except re.error:
        return None
