"""Frames named ``module+0xOFFSET``: locations without an address whose only name is a module and offset.

Some in-process samplers (the motivating Rust stack's among them) write a pprof profile whose
locations have no address and no mapping, only one ``Line`` whose ``Function`` is named in one of
three spellings:

- ``<module>+0x<rel>``: ``rel`` is the object address relative to the image (the ELF vaddr,
  the RVA, the offset from ``__TEXT``: :mod:`symbolize.normalize` turns it into a vaddr).
- ``<module@0xBASE>+0x<rel>`` (with or without the angle brackets): the same, with the module's
  runtime base, which also places the module for the next spelling.
- ``0x<abs>``: a bare runtime address. It is named through the profile's Mappings when one holds
  it, else through a module whose ``@0xBASE`` another frame gave and one of whose segments then
  holds it.

Each module is found as a mapping's file is (the opener :mod:`symbolize.rewrite` uses, by path
or base name); each frame's role and the vaddr it is looked up at are
:mod:`symbolize.normalize`'s, as for a pprof location; the location's Line entries are replaced
by the frames found. Locations
that then name the same frames become one location; the samples point to it (a sample's values
are never copied, so nothing is summed twice). A frame that cannot be named keeps its string, and
the reason is counted in the summary under its module. A module found by its name alone (every
``module+0x<rel>`` one, and a mapping's file without a build ID) is said unverified in the summary,
as a mapping without a build ID is.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import NamedTuple

from symbolize.formats.errors import SymbolizeError
from symbolize.formats.types import Frame
from symbolize.module import Module, Reason, Unknown, reason_for_error
from symbolize.normalize import mapping_placement, module_placement, role_at
from symbolize.pprof import StringTable
from symbolize.proto.profile_pb2 import Location, Mapping, Profile
from symbolize.summary import MappingSummary

__all__ = ["OffsetFrame", "name_offset_frames", "parse_offset_frame"]

_MODULE_OFFSET = re.compile(
    r"<?(?P<module>[^<>@]+?)(?:@0[xX](?P<base>[0-9a-fA-F]{1,16}))?>?\+0[xX](?P<rel>[0-9a-fA-F]{1,16})"
)
_ABSOLUTE = re.compile(r"0[xX](?P<absolute>[0-9a-fA-F]{1,16})")

NO_MODULE_FOR_ADDRESS = Unknown(Reason.NO_MAPPING, "no mapping or module base holds the address")
OUTSIDE_MODULE = Unknown(Reason.OUTSIDE_FILE, "offset outside the module's segments")
ABSOLUTE = "<absolute addresses>"


class OffsetFrame(NamedTuple):
    """A parsed frame name: ``module``/``rel`` (with ``base`` when given), or ``absolute`` alone."""

    module: str | None
    base: int | None
    rel: int | None
    absolute: int | None


def parse_offset_frame(name: str) -> OffsetFrame | None:
    """The frame a function name spells, or None when it is an ordinary name."""
    text = name.strip()
    match = _MODULE_OFFSET.fullmatch(text)
    if match is not None:
        base = match.group("base")
        return OffsetFrame(match.group("module"), int(base, 16) if base else None, int(match.group("rel"), 16), None)
    match = _ABSOLUTE.fullmatch(text)
    if match is not None:
        return OffsetFrame(None, None, None, int(match.group("absolute"), 16))
    return None


class _Use(NamedTuple):
    location_id: int
    role: int  # normalize.EXACT or normalize.RETURN


@dataclass
class _Resolved:
    """Where one use of a location is looked up: a module and the vaddr to name."""

    module_key: str  # the module as written, or a mapping's file name
    opened: Module
    vaddr: int
    # The module was found by a build ID (a mapping's), not by its file name alone.
    verified: bool = False


@dataclass
class _Outcome:
    summaries: dict[str, MappingSummary] = field(default_factory=dict)

    def summary(self, key: str) -> MappingSummary:
        return self.summaries.setdefault(key, MappingSummary(key))


def name_offset_frames(
    profile: Profile,
    strings: StringTable,
    intern_frame: Callable[[Frame], int],
    open_module: Callable[[str, str | None], Module],
    new_location_ids: Iterator[int],
    *,
    on_cpu: bool,
    adjust_return_addresses: bool,
) -> tuple[set[int], list[MappingSummary]]:
    """Name the profile's ``module+0xOFFSET`` frames in place.

    ``intern_frame`` gives the Function id for a frame; ``open_module(name, debug_id)`` finds a
    module (raising SymbolizeError when it cannot); ``new_location_ids`` yields ids no location
    uses (:func:`symbolize.rewrite.fresh_ids`). Returns the ids of the locations this step
    owns (renamed or left with their string), which the address symbolizer must not count
    again, and one summary per module.
    """
    frames_by_location = _offset_frame_locations(profile, strings)
    if not frames_by_location:
        return set(), []
    uses = _uses(profile, set(frames_by_location), on_cpu, adjust_return_addresses)
    outcome = _Outcome()
    modules = _ModuleCache(open_module)
    bases = _module_bases(frames_by_location.values())
    mappings = sorted(profile.mapping, key=lambda mapping: mapping.memory_start)

    resolved: dict[_Use, _Resolved | Unknown] = {}
    for use in uses:
        frame = frames_by_location[use.location_id]
        resolved[use] = _resolve(frame, use.role, modules, bases, mappings, strings)

    # One batch per module; each distinct (module, vaddr) named once.
    wanted: dict[str, dict[int, list[Frame] | Unknown]] = defaultdict(dict)
    opened: dict[str, Module] = {}
    for target in resolved.values():
        if isinstance(target, _Resolved):
            wanted[target.module_key].setdefault(target.vaddr, Unknown(Reason.NOT_COVERED, "not looked up"))
            opened[target.module_key] = target.opened
    for key, answers in wanted.items():
        vaddrs = list(answers)
        try:
            results = opened[key].lookup(vaddrs)
        except SymbolizeError as exc:
            results = [Unknown(reason_for_error(exc), str(exc))] * len(vaddrs)
        answers.update(zip(vaddrs, results, strict=True))

    new_ids = _rebuild_locations(profile, frames_by_location, resolved, wanted, intern_frame, new_location_ids, outcome)
    _repoint_samples(profile, uses, new_ids, on_cpu, adjust_return_addresses)
    replaced_functions = {
        location.line[0].function_id for location in profile.location if location.id in frames_by_location
    }
    owned = _drop_unused(profile, set(frames_by_location) | set(new_ids.values()), replaced_functions)
    return owned, list(outcome.summaries.values())


def _offset_frame_locations(profile: Profile, strings: StringTable) -> dict[int, OffsetFrame]:
    names = {
        function.id: strings.get(function.name) or strings.get(function.system_name) for function in profile.function
    }
    found: dict[int, OffsetFrame] = {}
    for location in profile.location:
        if location.address or location.mapping_id or len(location.line) != 1:
            continue
        frame = parse_offset_frame(names.get(location.line[0].function_id, ""))
        if frame is not None:
            found[location.id] = frame
    return found


def _uses(profile: Profile, candidates: set[int], on_cpu: bool, adjust: bool) -> list[_Use]:
    seen: dict[_Use, None] = {}
    for sample in profile.sample:
        for position, location_id in enumerate(sample.location_id):
            if location_id in candidates:
                seen.setdefault(_Use(location_id, role_at(position, on_cpu, adjust)))
    return list(seen)


def _module_bases(frames: Iterable[OffsetFrame]) -> dict[str, int]:
    bases: dict[str, int] = {}
    for frame in frames:
        if frame.module is not None and frame.base is not None:
            bases.setdefault(frame.module, frame.base)
    return bases


class _ModuleCache:
    def __init__(self, open_module: Callable[[str, str | None], Module]) -> None:
        self._open = open_module
        self._modules: dict[tuple[str, str | None], Module | Unknown] = {}

    def get(self, name: str, debug_id: str | None = None) -> Module | Unknown:
        """The module, or why it cannot be had."""
        key = (name, debug_id)
        if key not in self._modules:
            try:
                self._modules[key] = self._open(name, debug_id)
            except (SymbolizeError, OSError) as exc:
                self._modules[key] = Unknown(reason_for_error(exc), str(exc))
        return self._modules[key]


def _resolve(
    frame: OffsetFrame,
    role: int,
    modules: _ModuleCache,
    bases: dict[str, int],
    mappings: list[Mapping],
    strings: StringTable,
) -> _Resolved | Unknown:
    """Where to look a use up, or why it cannot be."""
    if frame.module is not None and frame.rel is not None:
        module = modules.get(frame.module)
        if isinstance(module, Unknown):
            return module
        vaddr = module_placement(module.image)(frame.rel, role)
        return OUTSIDE_MODULE if vaddr is None else _Resolved(frame.module, module, vaddr)
    if frame.absolute is None:
        return NO_MODULE_FOR_ADDRESS
    runtime_addr = frame.absolute
    for mapping in mappings:
        if mapping.memory_start <= runtime_addr < mapping.memory_limit:
            name = strings.get(mapping.filename)
            build_id = strings.get(mapping.build_id) or None
            module = modules.get(name, build_id)
            if isinstance(module, Unknown):
                return module
            place = mapping_placement(module.image, mapping.memory_start, mapping.memory_limit, mapping.file_offset)
            mapped = place(runtime_addr, role)
            return OUTSIDE_MODULE if mapped is None else _Resolved(name, module, mapped, verified=build_id is not None)
    for name, base in bases.items():
        module = modules.get(name)
        if isinstance(module, Unknown):
            continue
        vaddr = module_placement(module.image, base)(runtime_addr, role)
        if vaddr is not None:
            return _Resolved(name, module, vaddr)
    return NO_MODULE_FOR_ADDRESS


def _rebuild_locations(
    profile: Profile,
    frames_by_location: dict[int, OffsetFrame],
    resolved: dict[_Use, _Resolved | Unknown],
    answers: dict[str, dict[int, list[Frame] | Unknown]],
    intern_frame: Callable[[Frame], int],
    new_location_ids: Iterator[int],
    outcome: _Outcome,
) -> dict[_Use, int]:
    """A location per distinct list of frames found; returns the location id each use moves to."""
    by_frames: dict[tuple[tuple[int, int, int], ...], int] = {}
    new_ids: dict[_Use, int] = {}
    for use, target in resolved.items():
        if isinstance(target, Unknown):
            outcome.summary(frames_by_location[use.location_id].module or ABSOLUTE).count_unnamed(*target)
            continue
        summary = outcome.summary(target.module_key)
        summary.binary = str(target.opened.image.path)
        # A module named in a frame carries no build ID: found by its file name, it may be another build.
        summary.unverified = summary.unverified or not target.verified
        frames = summary.count_answer(answers[target.module_key][target.vaddr])
        if frames is None:
            continue
        lines = tuple((intern_frame(frame), frame.line, frame.column) for frame in frames)
        location_id = by_frames.get(lines)
        if location_id is None:
            location_id = by_frames[lines] = next(new_location_ids)
            location = Location(id=location_id)
            for function_id, line, column in lines:
                location.line.add(function_id=function_id, line=line, column=column)
            profile.location.append(location)
        new_ids[use] = location_id
    return new_ids


def _repoint_samples(
    profile: Profile, uses: list[_Use], new_ids: dict[_Use, int], on_cpu: bool, adjust: bool
) -> None:
    for sample in profile.sample:
        for position, location_id in enumerate(sample.location_id):
            new_id = new_ids.get(_Use(location_id, role_at(position, on_cpu, adjust)))
            if new_id is not None:
                sample.location_id[position] = new_id


def _drop_unused(profile: Profile, owned: set[int], replaced_functions: set[int]) -> set[int]:
    """Remove owned locations no sample uses any more, then the replaced functions no location uses."""
    used = {location_id for sample in profile.sample for location_id in sample.location_id}
    kept = [location for location in profile.location if location.id not in owned or location.id in used]
    if len(kept) != len(profile.location):
        del profile.location[:]
        profile.location.extend(kept)
    used_functions = {line.function_id for location in profile.location for line in location.line}
    functions = [
        function
        for function in profile.function
        if function.id in used_functions or function.id not in replaced_functions
    ]
    if len(functions) != len(profile.function):
        del profile.function[:]
        profile.function.extend(functions)
    return owned & used
