"""A binary and its debug file, opened together: the unit of lookup.

CONTRACT (implementation pending; see the stub bodies):
- ``Unknown(reason)`` is the result for an address that cannot be named.
- ``Module.lookup(vaddrs)`` returns exactly one result per input, in order:
  a non-empty list of raw (not demangled) frames, innermost first, or Unknown.
  One bad address never fails the batch; a broken file raises SymbolizeError.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from formats.types import Frame, ObjectFile


@dataclass(frozen=True, slots=True)
class Unknown:
    """Why an address could not be named."""

    reason: str


LookupResult = "list[Frame] | Unknown"


@dataclass
class Module:
    """``binary`` gives load segments and identity; ``debug_files`` (best first) give names."""

    binary: ObjectFile
    debug_files: list[ObjectFile] = field(default_factory=list)

    @property
    def path(self) -> Path:
        return self.binary.path

    def lookup(self, vaddrs: Sequence[int]) -> list[list[Frame] | Unknown]:
        raise NotImplementedError
