"""Value types shared by every reader and by the symbolizer above them.

Addresses carry their space in their name: ``vaddr`` is an address in the
object file's own address space (what ``llvm-symbolizer --obj`` takes),
``file_offset`` an offset into the file, ``runtime_addr`` an address in a
running process.

No ``from __future__ import annotations`` here, nor in any module that defines a NamedTuple a
cold lookup builds: typing compiles each NamedTuple field annotation that is a string (a
ForwardRef), and the process's first ``compile()`` builds the ast module's ~120 types, together
~20M instructions of a one-address lookup's ~300M. Annotations there are evaluated, so one
naming a class defined later, or imported only under TYPE_CHECKING, is quoted; a NamedTuple
field's never is (tests/test_cold_startup.py checks that a cold lookup makes no ForwardRef).
"""

from collections.abc import Callable, Iterable, Mapping, Sequence
from enum import Enum
from pathlib import Path
from typing import NamedTuple, Protocol, cast, runtime_checkable

from symbolize.formats.errors import MalformedInputError


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
    # The file of that declaration (DW_AT_decl_file), None if unknown.
    start_file: str | None = None
    # The function's entry (its DIE's own DW_AT_low_pc; a function given by ranges alone has
    # none), None if unknown.
    start_address: int | None = None
    # The line row's discriminator (DWARF 5, 6.2.2) for the innermost frame; for a calling frame,
    # the call's (the inlined call's DW_AT_GNU_discriminator); 0 if none.
    discriminator: int = 0


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
    # A PE image's code ID: the COFF header's TimeDateStamp and the optional header's SizeOfImage.
    PE_CODE_ID = "pe-code-id"
    # A split-DWARF unit's DWO ID (DW_AT_GNU_dwo_id, or the DWARF 5 unit header's), big-endian.
    DWO_ID = "dwo-id"


_HEX = frozenset("0123456789abcdefABCDEF")


class DebugId(NamedTuple):
    """Identity of a build: what ties a binary to its debug file and a profile mapping.

    ``value`` holds the bytes as the file stores them: a GNU build ID's note
    descriptor, a PDB GUID as the RSDS record and the PDB info stream store it
    (Data1, Data2 and Data3 little-endian), a Mach-O ``LC_UUID``; a PE code ID's
    is TimeDateStamp then SizeOfImage, each 4 bytes big-endian. ``age`` is the
    PDB age (0 for the other kinds). Debug IDs are compared as values (``==``),
    never as text: text is for people and for :meth:`parse`.
    """

    kind: DebugIdKind
    value: bytes
    age: int = 0

    def __str__(self) -> str:
        if self.kind is DebugIdKind.PDB:
            # The symbol-store form (symsrv, Breakpad): GUID as printed by Windows, age in hex.
            return f"{self.guid_text()}{self.age:X}"
        if self.kind is DebugIdKind.PE_CODE_ID and len(self.value) == 8:
            # The symbol-store key of the image (symsrv's, Breakpad's and Crashpad's code ID):
            # TimeDateStamp as 8 hex digits, SizeOfImage as few as it needs.
            return f"{int.from_bytes(self.value[:4], 'big'):08X}{int.from_bytes(self.value[4:], 'big'):x}"
        if self.kind is DebugIdKind.MACHO_UUID and len(self.value) == 16:
            text = self.value.hex().upper()
            return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"
        return self.value.hex()

    def guid_text(self) -> str:
        """A PDB GUID as Windows prints it, without dashes: Data1-Data3 as numbers, then Data4."""
        value = self.value
        if len(value) != 16:
            return value.hex().upper()
        data1 = int.from_bytes(value[0:4], "little")
        data2 = int.from_bytes(value[4:6], "little")
        data3 = int.from_bytes(value[6:8], "little")
        return f"{data1:08X}{data2:04X}{data3:04X}{value[8:].hex().upper()}"

    @classmethod
    def parse(cls, text: str, kind: DebugIdKind) -> "DebugId | None":
        """``text`` read as a debug ID of ``kind``; None when it is not of that kind's form.

        Accepted: a build ID as hex (any case); a Mach-O UUID as 32 hex digits with or
        without dashes; a PDB ID as ``GUID`` + age in hex (the symbol-store form,
        what :meth:`__str__` prints) or ``GUID-age``, the GUID with or without dashes
        and braces; a PE code ID as TimeDateStamp in 8 hex digits then SizeOfImage in 1 to
        8 (the symbol-store key; leading zeros of SizeOfImage do not matter). Dashes and
        case never matter.
        """
        cleaned = text.strip().replace("{", "").replace("}", "")
        if kind is DebugIdKind.PE_CODE_ID:
            compact = cleaned.replace("-", "")
            if not 8 < len(compact) <= 16 or not set(compact) <= _HEX:
                return None
            stamp, size = int(compact[:8], 16), int(compact[8:], 16)
            return cls(kind, stamp.to_bytes(4, "big") + size.to_bytes(4, "big"))
        if kind is DebugIdKind.PDB:
            head, dash, tail = cleaned.rpartition("-")
            if dash and len(head.replace("-", "")) == 32:
                guid_hex, age_hex = head.replace("-", ""), tail
            else:
                compact = cleaned.replace("-", "")
                guid_hex, age_hex = compact[:32], compact[32:]
            if len(guid_hex) != 32 or not 0 < len(age_hex) <= 8 or not set(guid_hex + age_hex) <= _HEX:
                return None
            raw = bytes.fromhex(guid_hex)
            value = raw[0:4][::-1] + raw[4:6][::-1] + raw[6:8][::-1] + raw[8:]
            return cls(kind, value, int(age_hex, 16))
        compact = cleaned.replace("-", "")
        if not compact or len(compact) % 2 or not set(compact) <= _HEX:
            return None
        if kind is DebugIdKind.MACHO_UUID and len(compact) != 32:
            return None
        return cls(kind, bytes.fromhex(compact))


class Segment(NamedTuple):
    """A loadable piece of the file: ``filesz`` bytes at ``file_offset`` appear at ``vaddr``.

    ``name`` is the container's own (a Mach-O segment, a PE section); "" for ELF.
    """

    vaddr: int
    memsz: int
    file_offset: int
    filesz: int
    executable: bool
    name: str = ""


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
    # Why a part of the debug info cannot be read at all, "" when it can: the DWARF (a section past
    # the decompression cap, a broken first unit; the file answers from its symbols alone) or the
    # MiniDebugInfo (bad xz; the other symbol tables and the DWARF answer).
    damaged: str = ""


class HintKind(Enum):
    """Kinds of pointer from an image to a file that holds its debug info (symbolize/'s loader follows them)."""

    BUILD_ID = "build-id"  # <debug dir>/.build-id/xx/rest.debug, by the image's GNU build ID
    DEBUGLINK = "debuglink"  # .gnu_debuglink: a file name and the file's CRC32
    SUPPLEMENTARY = "supplementary"  # .gnu_debugaltlink: the dwz common file, by name and build ID
    PDB = "pdb"  # CodeView RSDS: the PDB's recorded path, GUID and age
    DSYM = "dsym"  # a Mach-O image's dSYM, found by name or by UUID
    DEBUG_MAP_OBJECT = "debug-map-object"  # a Mach-O N_OSO stab: an object file (or archive member)
    # A split-DWARF skeleton's .dwo (DW_AT_dwo_name, relative to ``directory``) or the .dwp beside
    # the file; the need of the skeleton unit's region (AnswerRegion.needs), not listed by debug_hints().
    SPLIT_DWARF = "split-dwarf"


class DebugHint(NamedTuple):
    """Where an image says (or implies) its debug info lives, and what the file found must carry.

    ``name`` is the text as the image records it (a file name, or a path in the
    build machine's syntax, Windows paths included); "" when the kind says it all.
    A locator in symbolize/ finds the file and checks ``debug_id``, ``crc32`` and
    ``mtime``; readers never open the files their hints name.
    """

    kind: HintKind
    name: str = ""
    debug_id: DebugId | None = None
    crc32: int | None = None
    mtime: int | None = None
    # The build directory a relative ``name`` was recorded against (a split unit's DW_AT_comp_dir).
    directory: str = ""
    # Why the record this hint comes from cannot be read ("" when it can: a malformed
    # ``.gnu_debuglink`` or CodeView record): discovery refuses such a hint with this reason, as
    # ``"path: why"``, and the rest of the file answers without it.
    damaged: str = ""


@runtime_checkable
class SectionSource(Protocol):
    """A file whose DWARF sections a reader can read: what the loader supplies for a need."""

    path: Path

    def section_data(self, dwarf_name: str) -> bytes | memoryview | None: ...


class AnswerRun(NamedTuple):
    """``[low, high)`` of object addresses that all get the same answer: ``frames``, innermost first.

    Every naming policy (which name the outermost frame takes, which line row
    applies) is already applied, so an index that stores runs and a reader that
    computes them answer alike by construction.
    """

    low: int
    high: int
    frames: tuple[Frame, ...]


class AnswerRegion(NamedTuple):
    """A part of a symbol source whose answers decode together (a compile unit, a PDB module).

    Listing regions is cheap; decoding one (``SymbolSource.answers(key)``) is
    not, and happens on the first lookup inside it. A region that ``needs`` another file
    answers without it unless it was supplied first. ``fallback`` regions (a
    symbol table) are asked only when no other region holding the address
    answers. Regions may overlap: among non-fallback regions holding an
    address, the one with the greatest ``low`` is asked first.
    """

    low: int
    high: int
    key: int
    fallback: bool = False
    # The other files its answers come from (a split unit's .dwo or .dwp), which the reader opens
    # never: whoever asks for the region's answers supplies them first (``SymbolSource.supply``).
    needs: tuple[DebugHint, ...] = ()


class SymbolSource(Protocol):
    """Something that names object addresses: an ELF or Mach-O file's DWARF and symbols, a PDB, a dSYM.

    Frames lists are innermost first, everywhere. The members after ``close`` are optional
    capabilities: a reader that lacks one inherits :class:`ReaderDefaults`' answer.
    """

    path: Path
    format: str
    arch: str
    debug_id: DebugId | None
    # The vaddr its answers are at (a PDB's RVAs add to its image's ImageBase: ``bind_image``).
    load_base: int

    def symbols(self) -> Sequence[Symbol]: ...

    def debug_info(self) -> DebugInfoSummary: ...

    def answer_regions(self) -> Sequence[AnswerRegion]: ...

    def answers(self, key: int) -> Sequence[AnswerRun]:
        """The runs of region ``key``, sorted by ``low`` and disjoint.

        Raises MalformedInputError when the region's debug info is broken.
        """
        ...

    def frames_at(self, vaddr: int) -> list[Frame]:
        """Frames at ``vaddr``, innermost first; [] when nothing covers it (see formats/answers.py)."""
        ...

    def close(self) -> None: ...

    def frames_many(self, vaddrs: Sequence[int]) -> list[list[Frame] | MalformedInputError]:
        """:meth:`frames_at` of each vaddr, or the MalformedInputError it raises: a batch of
        lookups, answered in one pass where the reader can (an optional capability)."""
        ...

    # Optional capabilities (defaults in ReaderDefaults).
    @property
    def index_kind(self) -> str:
        """What an index key calls this source's reader (a stand-in gives the reader's name)."""
        ...

    def bind_image(self, image: "Image") -> None:
        """Answer at ``image``'s vaddrs, as its debug file (a PDB's RVAs; an ELF debug file's names)."""
        ...

    def answer_inputs(self) -> str:
        """The other files its answers come from, described for the index key; "" when none."""
        ...

    def lines_missing_reason(self) -> str | None:
        """Why it names functions but no lines (a stripped PDB), or None."""
        ...

    def needs(self) -> Sequence[DebugHint]:
        """The other files it answers from as a whole (the dwz common file, a debug map's
        objects), known once it is opened: supplied (:meth:`supply`) before it is asked anything
        else, or it answers without them. A region's own needs are in ``AnswerRegion.needs``."""
        ...

    def supply(self, hint: DebugHint, found: SectionSource | None) -> None:
        """The file found and verified for one of its needs, or None when there is none: readers
        never open the files their hints name, and never ask for them either; they say what they
        need, and whoever opened them supplies it (symbolize/loader.py)."""
        ...

    def relative_file_names(self, vaddr: int) -> Mapping[str, str]:
        """Each file name of the debug info that answers ``vaddr`` (a DWARF unit's line table),
        mapped to the name that debug info gives without the compilation directory
        (llvm-symbolizer's ``--relativenames``), where the two differ. Per address, since two units
        may join one name differently (Rust's standard library under its own compilation
        directory, the crate's copy of the same path absolute)."""
        ...


class Image(Protocol):
    """A binary as the loader sees it: identity, segments, and where its debug info lives.

    ``load_base`` is the vaddr that a profile's mapping start stands for when
    the mapping covers the whole image: the first PT_LOAD's page for ELF,
    ``ImageBase`` for PE, the ``__TEXT`` vmaddr for Mach-O.
    ``position_dependent`` is True when vaddrs are runtime addresses (ELF ET_EXEC).
    """

    path: Path
    format: str  # "elf", "pe", "macho"
    arch: str  # "x86_64", "aarch64", "i386", "arm64e", ...
    debug_id: DebugId | None
    load_base: int
    position_dependent: bool

    def segments(self) -> Sequence[Segment]: ...

    def debug_hints(self) -> Sequence[DebugHint]: ...

    def close(self) -> None: ...

    # Optional capabilities (defaults in ReaderDefaults).
    @property
    def universal(self) -> bool:
        """Whether it is one slice of a universal (fat) Mach-O file."""
        ...

    @property
    def slice_offset(self) -> int:
        """Where the image starts in its file (a fat slice, an archive member); 0 for a whole file."""
        ...

    def slice_arches(self) -> Sequence[str]:
        """The architectures its file holds, this one included (a universal Mach-O file's slices,
        in the file's order); () for a file of one architecture."""
        ...

    def symbol_at(self, vaddr: int) -> Symbol | None:
        """The function symbol covering ``vaddr``, or None."""
        ...

    def identities(self) -> Sequence[DebugId]:
        """Every ID a profile's mapping may name it by: its debug ID, and a PE image's code ID."""
        ...


class ReaderDefaults:
    """The answers of the optional capabilities :class:`Image` and :class:`SymbolSource` declare,
    for a reader that has nothing better to say. Every reader inherits it, so a capability is
    called, never probed for with ``getattr``."""

    debug_id: DebugId | None  # every reader sets it

    @property
    def index_kind(self) -> str:
        return type(self).__name__

    def bind_image(self, image: Image) -> None:
        return None

    def answer_inputs(self) -> str:
        return ""

    def lines_missing_reason(self) -> str | None:
        return None

    def needs(self) -> Sequence[DebugHint]:
        return ()

    def supply(self, hint: DebugHint, found: SectionSource | None) -> None:
        return None

    def relative_file_names(self, vaddr: int) -> Mapping[str, str]:
        return {}

    def frames_many(self, vaddrs: Sequence[int]) -> list[list[Frame] | MalformedInputError]:
        return frames_or_errors(cast(SymbolSource, self).frames_at, vaddrs)

    universal: bool = False

    @property
    def slice_offset(self) -> int:
        return 0

    def slice_arches(self) -> Sequence[str]:
        return ()

    def symbol_at(self, vaddr: int) -> Symbol | None:
        return None

    def identities(self) -> Sequence[DebugId]:
        return () if self.debug_id is None else (self.debug_id,)


class ObjectFile(Image, SymbolSource, Protocol):
    """What every reader ``formats.open.open_object`` returns answers: an Image that also names
    addresses (a PDB's segments are the image's sections as it records them).

    Frames lists are innermost first, everywhere.
    """


def frames_or_errors(
    frames_at: Callable[[int], list[Frame]], vaddrs: Iterable[int]
) -> list[list[Frame] | MalformedInputError]:
    """``frames_at`` of each vaddr, or the MalformedInputError it raised: a batch of lookups
    (``frames_many``) from a source that answers one address at a time."""
    answers: list[list[Frame] | MalformedInputError] = []
    for vaddr in vaddrs:
        try:
            answers.append(frames_at(vaddr))
        except MalformedInputError as error:
            answers.append(error)
    return answers
