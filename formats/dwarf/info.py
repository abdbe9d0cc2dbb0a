"""Placeholder: the real DwarfInfo is being written."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from formats.types import Frame

SectionGetter = Callable[[str], "bytes | memoryview | None"]
# (dwo_name, comp_dir, dwo_id) -> sections of the .dwo, or None when not found.
SplitDwarfResolver = Callable[[str, "str | None", int], "SectionGetter | None"]


class DwarfInfo:
    def __init__(
        self,
        sections: SectionGetter,
        path: Path,
        *,
        address_size: int = 8,
        little_endian: bool = True,
        split_resolver: SplitDwarfResolver | None = None,
    ) -> None:
        self.path = path

    def frames_at(self, vaddr: int) -> list[Frame] | None:
        """Frames at vaddr, innermost first; None when no unit covers vaddr.

        Raises MalformedInputError when the unit covering vaddr is broken.
        """
        return None
