"""What answers a reader's questions (:class:`RegionAnswers`), and the forwarding every reader
inherits to it (:class:`AnsweredByRegions`).

Apart from formats/answers.py, which builds such answers (regions decoded on demand, run tables):
opening a file needs its reader's class, and a warm lookup answers from the index alone, so
defining a reader does not import what decoding its answers takes (formats/answers.py and
formats/symbols.py were ~7 % of a warm one-address lookup's instructions).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from symbolize.formats.errors import MalformedInputError
from symbolize.formats.types import AnswerRegion, AnswerRun, Frame


class RegionAnswers(Protocol):
    """What answers a reader's questions: its regions, a region's runs, the frames at a vaddr."""

    def answer_regions(self) -> Sequence[AnswerRegion]: ...

    def answers(self, key: int) -> Sequence[AnswerRun]: ...

    def frames_at(self, vaddr: int) -> list[Frame]: ...

    def frames_many(self, vaddrs: Sequence[int]) -> list[list[Frame] | MalformedInputError]:
        """:meth:`frames_at` of each vaddr, or the MalformedInputError it raises."""
        ...

    def relative_file_names(self, vaddr: int) -> Mapping[str, str]: ...


class AnsweredByRegions:
    """The three questions of a symbol source, asked of what the reader's ``_answers()`` builds
    on first use (its DWARF paired with its symbols, a debug map): one forwarding for every reader
    instead of a copy in each."""

    def _answers(self) -> RegionAnswers:
        raise NotImplementedError

    def answer_regions(self) -> Sequence[AnswerRegion]:
        return self._answers().answer_regions()

    def answers(self, key: int) -> Sequence[AnswerRun]:
        return self._answers().answers(key)

    def frames_at(self, vaddr: int) -> list[Frame]:
        """Frames at ``vaddr``, innermost first; [] when nothing covers it."""
        return self._answers().frames_at(vaddr)

    def frames_many(self, vaddrs: Sequence[int]) -> list[list[Frame] | MalformedInputError]:
        """:meth:`frames_at` of each vaddr, or the MalformedInputError it raises (a batch of lookups)."""
        return self._answers().frames_many(vaddrs)

    def relative_file_names(self, vaddr: int) -> Mapping[str, str]:
        return self._answers().relative_file_names(vaddr)
