"""Value types shared by every reader and by the symbolizer above them.

Addresses carry their space in their name: ``vaddr`` is an address in the
object file's own address space (what ``llvm-symbolizer --obj`` takes),
``file_offset`` an offset into the file, ``runtime_addr`` an address in a
running process.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import Enum
from pathlib import Path
from typing import NamedTuple, Protocol


class Frame(NamedTuple):
    """One source-level frame at an address.

    ``function`` is the name as the binary records it: the linkage (mangled)
    name when there is one, else the qualified name built from the debug info.
    Demangling happens above the readers. ``line`` and ``column`` are 0 when
    unknown; ``file`` is None when unknown.

    A NamedTuple, like every value type here, rather than a frozen dataclass:
    a batch of lookups builds one Frame per distinct frame, tens of thousands,
    and a tuple is built three times faster (a frozen dataclass sets each field
    through ``object.__setattr__``); and each frozen slotted dataclass costs
    about a millisecond to define, paid by every run at import.
    """

    function: str | None
    file: str | None = None
    line: int = 0
    column: int = 0
    # First line of the function's declaration (DW_AT_decl_line), 0 if unknown.
    start_line: int = 0


class Symbol(NamedTuple):
    """A function symbol from a symbol table: ``[vaddr, vaddr + size)``."""

    name: str
    vaddr: int
    size: int
    # For a local ELF symbol, the STT_FILE entry before it (the source it came from), as
    # llvm-symbolizer reports when no line table names the address.
    source_file: str | None = None


class DebugIdKind(Enum):
    GNU_BUILD_ID = "gnu-build-id"
    PDB = "pdb"
    MACHO_UUID = "macho-uuid"


class DebugId(NamedTuple):
    """Identity of a build: what ties a binary to its debug file and a profile mapping."""

    kind: DebugIdKind
    value: bytes
    age: int = 0

    def __str__(self) -> str:
        text = self.value.hex()
        return f"{text}-{self.age}" if self.kind is DebugIdKind.PDB else text


class Segment(NamedTuple):
    """A loadable piece of the file: ``filesz`` bytes at ``file_offset`` appear at ``vaddr``."""

    vaddr: int
    memsz: int
    file_offset: int
    filesz: int
    executable: bool


class DebugLink(NamedTuple):
    """Where a binary says its separate debug info lives (``.gnu_debuglink``)."""

    filename: str
    crc32: int


class DebugInfoSummary(NamedTuple):
    """What debug info a file itself carries, for discovery and the auditor."""

    has_symbols: bool
    has_dwarf: bool
    has_line_info: bool
    has_inline_info: bool
    dwarf_versions: tuple[int, ...] = ()
    split_dwarf: bool = False


class ObjectFile(Protocol):
    """What every reader answers. Frames lists are innermost first, everywhere."""

    path: Path
    format: str  # "elf", "pe", "macho"
    arch: str  # "x86_64", "aarch64", ...
    debug_id: DebugId | None
    # True for position-dependent executables, whose vaddrs are runtime addresses.
    fixed_load_address: bool

    def segments(self) -> Sequence[Segment]: ...

    def symbols(self) -> Sequence[Symbol]: ...

    def debug_link(self) -> DebugLink | None: ...

    def debug_info(self) -> DebugInfoSummary: ...

    def frames_at(self, vaddr: int) -> list[Frame]:
        """Frames at ``vaddr``, innermost first; [] when nothing covers it."""
        ...

    def close(self) -> None: ...
