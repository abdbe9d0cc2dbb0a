"""Building a pprof ``Profile`` message (profile.proto) from a parsed foreign profile.

The parsers in this package read a format's samples and maps lines; this module turns them into
the message every other part of the toolkit reads: one ``Location`` per distinct address (as
written, not adjusted), one ``Mapping`` per executable maps line, main executable first (the
heuristic pprof's ``massageMappings`` uses: the first file-backed mapping that is not a shared
library nor a ``[pseudo]`` file), and each location tied to the mapping that holds its address.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence
from typing import NamedTuple

from symbolize.proto.profile_pb2 import Label, Location, Mapping, Profile, Sample, ValueType

__all__ = ["MapsEntry", "NumLabel", "ProfileBuilder"]

# pprof's libRx: a file name that looks like a shared library, never the main binary.
_LIBRARY_NAME = re.compile(r"([.]so$|[.]so[._][0-9]+|\.dylib$|\.dll$)", re.IGNORECASE)


class MapsEntry(NamedTuple):
    """One ``/proc/self/maps`` line (verbatim or synthesized); ``path`` is "" for anonymous memory."""

    memory_start: int
    memory_limit: int
    perms: str
    file_offset: int
    path: str

    @property
    def executable(self) -> bool:
        return "x" in self.perms


class NumLabel(NamedTuple):
    """A numeric sample label (profile.proto ``Label.num`` with ``num_unit``)."""

    key: str
    value: int
    unit: str


class ProfileBuilder:
    """Accumulates sample types, samples and maps lines, then finishes the message."""

    def __init__(self) -> None:
        self.profile = Profile()
        self._strings: dict[str, int] = {}
        self.string("")
        self._locations: dict[int, int] = {}  # runtime address -> location id

    def string(self, text: str) -> int:
        """Index of ``text`` in the string table, appending it when new."""
        index = self._strings.get(text)
        if index is None:
            index = len(self._strings)
            self._strings[text] = index
            self.profile.string_table.append(text)
        return index

    def value_type(self, kind: str, unit: str) -> ValueType:
        return ValueType(type=self.string(kind), unit=self.string(unit))

    def set_sample_types(self, types: Sequence[tuple[str, str]]) -> None:
        self.profile.sample_type.extend(self.value_type(kind, unit) for kind, unit in types)

    def set_period(self, kind: str, unit: str, period: int) -> None:
        self.profile.period_type.CopyFrom(self.value_type(kind, unit))
        self.profile.period = period

    def add_comment(self, text: str) -> None:
        self.profile.comment.append(self.string(text))

    def add_sample(self, runtime_addrs: Sequence[int], values: Sequence[int], labels: Sequence[NumLabel] = ()) -> None:
        """One sample; ``runtime_addrs`` innermost first, as the profile wrote them."""
        sample = Sample(location_id=[self._location_id(address) for address in runtime_addrs], value=values)
        for label in labels:
            sample.label.append(Label(key=self.string(label.key), num=label.value, num_unit=self.string(label.unit)))
        self.profile.sample.append(sample)

    def _location_id(self, runtime_addr: int) -> int:
        location_id = self._locations.get(runtime_addr)
        if location_id is None:
            location_id = len(self._locations) + 1
            self._locations[runtime_addr] = location_id
            self.profile.location.append(Location(id=location_id, address=runtime_addr))
        return location_id

    def finish(self, maps: Sequence[MapsEntry]) -> Profile:
        """Add a Mapping per executable maps line and tie each location to its mapping."""
        executable = [entry for entry in maps if entry.executable]
        main = next((index for index, entry in enumerate(executable) if _may_be_main(entry.path)), None)
        if main is not None:
            executable.insert(0, executable.pop(main))
        for mapping_id, entry in enumerate(executable, 1):
            self.profile.mapping.append(
                Mapping(
                    id=mapping_id,
                    memory_start=entry.memory_start,
                    memory_limit=entry.memory_limit,
                    file_offset=entry.file_offset,
                    filename=self.string(entry.path),
                )
            )
        by_start = sorted(self.profile.mapping, key=lambda mapping: mapping.memory_start)
        starts = [mapping.memory_start for mapping in by_start]
        for location in self.profile.location:
            location.mapping_id = _mapping_holding(by_start, starts, location.address)
        return self.profile


def _may_be_main(path: str) -> bool:
    name = path.replace(" (deleted)", "").strip()
    return bool(name) and not name.startswith("[") and _LIBRARY_NAME.search(name) is None


def _mapping_holding(by_start: Sequence[Mapping], starts: Sequence[int], runtime_addr: int) -> int:
    # A return address can be the first byte past its mapping (a call that is the mapping's last
    # instruction); its call site, address - 1, is what gets looked up, so that decides.
    for address in (runtime_addr, runtime_addr - 1):
        index = bisect.bisect_right(starts, address) - 1
        if index >= 0 and address < by_start[index].memory_limit:
            return int(by_start[index].id)
    return 0
