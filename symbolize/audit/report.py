"""The auditor's typed report: what one binary (or one Cargo project) will look like in a profile.

Value types are NamedTuples, as everywhere in the project. ``to_json`` of
:class:`AuditReport` gives the versioned JSON document described in
``symbolize/audit/__init__.py`` (``{"schema": 1, ...}``).
"""

from __future__ import annotations

from enum import Enum
from typing import NamedTuple

# Function symbols (lines: line tables; inlines: inline information) must cover at least this
# share of the executable code bytes for `--require names` (lines, inlines) to hold.
COVERAGE_THRESHOLD = 0.5


class ProfileView(Enum):
    """What the frames of a profile of this binary will show, from least to most."""

    BARE_HEX = "bare-hex"
    NAMES = "names"
    NAMES_LINES = "names+lines"
    WITH_INLINES = "with-inlines"

    @property
    def rank(self) -> int:
        return list(ProfileView).index(self)


class Requirement(Enum):
    """What ``--require`` can ask for; each is met by a ProfileView of at least its rank."""

    NAMES = "names"
    LINES = "lines"
    INLINES = "inlines"

    @property
    def view(self) -> ProfileView:
        return {
            Requirement.NAMES: ProfileView.NAMES,
            Requirement.LINES: ProfileView.NAMES_LINES,
            Requirement.INLINES: ProfileView.WITH_INLINES,
        }[self]


class SymbolTableKind(Enum):
    FULL = "full"  # .symtab (or a Mach-O/PE/PDB equivalent) with local functions
    MINIDEBUGINFO = "minidebuginfo"  # only .dynsym, plus local functions in .gnu_debugdata
    # Exported functions only: .dynsym, a PE export table, Mach-O or ELF external symbols (strip -x).
    DYNAMIC_ONLY = "dynamic-only"
    NONE = "none"


class Identity(NamedTuple):
    path: str
    format: str  # "elf", "pe", "macho"
    arch: str
    debug_id: str | None
    debug_id_kind: str | None  # "gnu-build-id", "pdb", "macho-uuid"


class SymbolReport(NamedTuple):
    """``table`` says which table (``symbolize.formats.facts.SymbolTable``): ``full``,
    ``minidebuginfo``, ``external`` (strip -x), ``dynamic`` (.dynsym), ``exports`` (PE), ``none``."""

    kind: SymbolTableKind
    function_symbols: int
    table: str = ""

    @property
    def exported_only(self) -> bool:
        """Only exported functions are named: an internal one's addresses take the nearest export's name."""
        return self.kind is SymbolTableKind.DYNAMIC_ONLY


class DebugFileReport(NamedTuple):
    """One place debug info lives or should live, and whether it is there and belongs to this build.

    ``how``: ``embedded``, ``build-id``, ``debuglink``, ``minidebuginfo``,
    ``split-dwarf``, ``given`` (``--debug-file``). ``matches`` is None when
    there is nothing to compare (not found, or embedded).
    """

    how: str
    path: str | None
    found: bool
    matches: bool | None
    detail: str = ""


class SplitUnitReport(NamedTuple):
    dwo_name: str
    resolved: bool


class DebugInfoReport(NamedTuple):
    """Where the debug info is and what it is. Sizes are of the binary's own file, as stored."""

    files: tuple[DebugFileReport, ...]
    dwarf_versions: tuple[int, ...]
    compressed_sections: tuple[str, ...]
    split_units: tuple[SplitUnitReport, ...]
    broken_units: tuple[str, ...]
    file_bytes: int = 0
    debug_section_bytes: int = 0  # every .debug_*/.zdebug_* section
    line_table_bytes: int = 0  # .debug_line (and .debug_line_str)


class CoverageReport(NamedTuple):
    """Shares of the executable code bytes that each name source covers, as the readers measured.

    ``functions`` counts the debug info's function entries (where inline chains
    come from); ``inlined`` the bytes inside at least one inlined call. The
    ``llvm_*`` figures count as ``llvm-dwarfdump --statistics`` does.
    """

    code_bytes: int
    symbol_bytes: int
    line_bytes: int
    function_bytes: int
    inlined_bytes: int
    name_bytes: int  # symbols or debug-info functions: what can be named at all
    inlined_calls: int
    llvm_bytes_within_functions: int
    llvm_bytes_within_inlined_functions: int

    def share(self, covered: int) -> float:
        return covered / self.code_bytes if self.code_bytes else 0.0


class FramePointerReport(NamedTuple):
    """Prologues decoded on a sample of functions (None when no decoder or no function starts)."""

    sampled: int
    with_frame_pointer: int
    without: tuple[str, ...]  # names of sampled functions that do not set one up (first few)
    unwind_tables: tuple[str, ...]  # .eh_frame, .eh_frame_hdr, .debug_frame, .pdata, __unwind_info
    note: str = ""
    leaves_without: int = 0  # of the functions without one, those that call nothing
    # The same over the program's own functions, sampled apart when the prebuilt Rust std holds
    # the others (0 sampled: no such split, the figures above are the program's).
    own_sampled: int = 0
    own_with_frame_pointer: int = 0
    own_leaves_without: int = 0

    @property
    def share(self) -> float | None:
        """Share of the sampled functions that set up a frame pointer."""
        return self.with_frame_pointer / self.sampled if self.sampled else None

    @property
    def non_leaf_share(self) -> float | None:
        """The same among functions that call others: a walk loses everything above one of those."""
        callers = self.sampled - self.leaves_without
        return self.with_frame_pointer / callers if callers else None

    @property
    def own_non_leaf_share(self) -> float | None:
        """``non_leaf_share`` among the program's own functions (None when not sampled apart)."""
        callers = self.own_sampled - self.own_leaves_without
        return self.own_with_frame_pointer / callers if callers else None


class ClaimCheck(NamedTuple):
    """How many of the addresses sampled from one claim a lookup answered that way."""

    sampled: int
    answered: int

    @property
    def ratio(self) -> float:
        """The share of the sample answered (1.0 when nothing was sampled: no claim to contradict)."""
        return self.answered / self.sampled if self.sampled else 1.0


class LookupCheck(NamedTuple):
    """What lookups gave at addresses sampled from each coverage claim (``symbolize/audit/lookups.py``).

    ``checked`` is False when no lookup could be made as a profile's would (``note`` says why);
    the verdict then rests on the figures alone.
    """

    checked: bool
    sample_size: int
    names: ClaimCheck
    lines: ClaimCheck
    inlined: ClaimCheck
    note: str = ""


class Verdict(NamedTuple):
    shows: ProfileView
    reasons: tuple[str, ...]
    fixes: tuple[str, ...]
    # What a frame-pointer stack walk records: "whole", "lose-callers", "unwind-tables" (Windows
    # x64's .pdata), "unknown" (no prologue decoded). Not part of --require: see FramePointerReport.
    frame_pointer_walks: str = "unknown"


class ServerCheck(NamedTuple):
    """What the named servers answered for one file of a binary (``audit --remote``,
    symbolize/audit/remote.py): ``role`` is "debug file" or "binary"; a ``required`` check that
    does not pass is a shortfall."""

    role: str
    protocol: str
    what: str
    verdict: str  # "on-server", "not-on-server", "server-unreachable", "not-asked"
    required: bool
    url: str | None = None  # where it came from, when on a server
    tried: tuple[str, ...] = ()
    detail: str = ""
    refused: tuple[str, ...] = ()

    @property
    def passed(self) -> bool:
        return self.verdict == "on-server"


class BinaryAudit(NamedTuple):
    identity: Identity
    symbols: SymbolReport
    debug_info: DebugInfoReport
    coverage: CoverageReport
    frame_pointers: FramePointerReport
    verdict: Verdict
    lookups: LookupCheck | None = None  # the coverage checked by lookups (None: not asked)
    # What the named servers answered for its files (audit --remote, symbolize/audit/remote.py).
    servers: tuple[ServerCheck, ...] = ()


class UnreadableBinary(NamedTuple):
    """A binary the auditor could not read (exit code 3): missing, malformed, or no reader yet."""

    path: str
    reason: str
