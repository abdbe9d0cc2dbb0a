"""An in-memory symbol source: regions and runs given as data, no file format behind them.

It is what a new reader would be to the core (symbolize/): regions, runs, a
summary, and for the profile rewrite an image's segments and load base. Tests
index it, look it up and rewrite profiles with it, with no change to symbolize/.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from symbolize.formats.answers import AnswerLookup
from symbolize.formats.errors import MalformedInputError
from symbolize.formats.types import (
    AnswerRegion,
    AnswerRun,
    DebugHint,
    DebugId,
    DebugInfoSummary,
    Frame,
    ReaderDefaults,
    Segment,
    Symbol,
)


class MemorySource(ReaderDefaults):
    """Regions and the runs of each (a key missing from ``runs`` is a broken region)."""

    format = "memory"
    arch = "none"
    position_dependent = True

    def __init__(
        self,
        path: Path,
        regions: Sequence[AnswerRegion],
        runs: Mapping[int, Sequence[AnswerRun]],
        *,
        debug_id: DebugId | None = None,
        load_base: int = 0,
        size: int = 1 << 16,
    ) -> None:
        self.path = path
        self.debug_id = debug_id
        self.load_base = load_base
        self._regions = list(regions)
        self._runs = dict(runs)
        self._size = size
        self.decoded: list[int] = []
        self._lookup = AnswerLookup(self._regions, self.answers)

    def answer_regions(self) -> Sequence[AnswerRegion]:
        return self._regions

    def answers(self, key: int) -> Sequence[AnswerRun]:
        self.decoded.append(key)
        if key not in self._runs:
            raise MalformedInputError(f"region {key} is broken", self.path)
        return self._runs[key]

    def frames_at(self, vaddr: int) -> list[Frame]:
        return self._lookup.frames_at(vaddr)

    def symbols(self) -> Sequence[Symbol]:
        return []

    def debug_info(self) -> DebugInfoSummary:
        return DebugInfoSummary(has_symbols=False, has_dwarf=False, has_line_info=True, has_inline_info=True)

    # The image side, for normalization.

    def segments(self) -> Sequence[Segment]:
        return [Segment(self.load_base, self._size, 0, self._size, True)]

    def debug_hints(self) -> Sequence[DebugHint]:
        return []

    def close(self) -> None:
        pass
