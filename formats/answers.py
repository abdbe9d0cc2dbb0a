"""Answering lookups from a symbol source's regions and runs: the one path every reader shares.

A reader lists its regions (cheap) and decodes one region's runs on demand
(``SymbolSource.answers``); :class:`AnswerLookup` finds the regions holding an
address, decodes each at most once (failures included, so a broken region
costs one attempt) and bisects the runs. The persistent index stores the same
runs, so both paths give the same answer by construction.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Sequence

from symbolize.formats.errors import MalformedInputError
from symbolize.formats.types import AnswerRegion, AnswerRun, Frame

# key -> the region's runs, sorted and disjoint; raises MalformedInputError for a broken region.
RunDecoder = Callable[[int], Sequence[AnswerRun]]


class _DecodedRegion:
    __slots__ = ("error", "lows", "runs")

    def __init__(self, runs: Sequence[AnswerRun] = (), error: MalformedInputError | None = None) -> None:
        self.runs = runs
        self.lows = [run.low for run in runs]
        self.error = error

    def run_at(self, vaddr: int) -> AnswerRun | None:
        position = bisect_right(self.lows, vaddr) - 1
        if position >= 0 and vaddr < self.runs[position].high:
            return self.runs[position]
        return None


class AnswerLookup:
    """``frames_at`` over ``regions``, decoding each region with ``decode`` on first use.

    Among the regions holding an address, non-fallback ones are asked first,
    greatest ``low`` first, then fallback ones the same way; the first run that
    holds the address answers. When none does and a region holding it is
    broken, that region's error is raised.
    """

    def __init__(self, regions: Sequence[AnswerRegion], decode: RunDecoder) -> None:
        self._decode = decode
        self._decoded: dict[int, _DecodedRegion] = {}
        primary = [region for region in regions if not region.fallback]
        fallback = [region for region in regions if region.fallback]
        self._tiers = (_RegionTier(primary), _RegionTier(fallback))

    def frames_at(self, vaddr: int) -> list[Frame]:
        """Frames at ``vaddr``, innermost first; [] when no region answers for it."""
        error: MalformedInputError | None = None
        for tier in self._tiers:
            for region in tier.holding(vaddr):
                decoded = self._region(region.key)
                run = decoded.run_at(vaddr)
                if run is not None:
                    return list(run.frames)
                error = error or decoded.error
        if error is not None:
            raise error
        return []

    def _region(self, key: int) -> _DecodedRegion:
        decoded = self._decoded.get(key)
        if decoded is None:
            try:
                decoded = _DecodedRegion(self._decode(key))
            except MalformedInputError as err:
                decoded = _DecodedRegion(error=err)
            self._decoded[key] = decoded
        return decoded


class _RegionTier:
    """Regions sorted by low, with the running maximum of their highs, for an overlap-aware bisect."""

    def __init__(self, regions: list[AnswerRegion]) -> None:
        self.regions = sorted(regions, key=lambda region: region.low)
        self.lows = [region.low for region in self.regions]
        self.max_highs: list[int] = []
        running = 0
        for region in self.regions:
            running = max(running, region.high)
            self.max_highs.append(running)

    def holding(self, vaddr: int) -> list[AnswerRegion]:
        """The regions holding ``vaddr``, greatest low first."""
        found = []
        position = bisect_right(self.lows, vaddr) - 1
        while position >= 0 and self.max_highs[position] > vaddr:
            region = self.regions[position]
            if region.low <= vaddr < region.high:
                found.append(region)
            position -= 1
        return found
