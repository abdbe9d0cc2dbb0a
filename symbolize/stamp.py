"""Stamp a profile on the machine that made it: record each mapping's build ID from its file's headers.

A mapping written by mimalloc-pprof, gperftools or a hand-made maps table carries only its
start, limit and file name. Carried to another machine, such a profile cannot prove which build
it saw, nor ask a symbol server for it. Stamping reads the headers of each mapping's file where
the file still is (formats/identity.py: no debug info, no symbol table) and records the IDs
(symbolize/mapping_ids.py spells them): a GNU build ID, a PE image's PDB GUID + age with its
code ID, a Mach-O slice's UUID. A stamped profile is then symbolized anywhere, every mapping
verified, its files fetched by ID.

The stamp is two halves, so that another profile format is one more writer: :func:`stamp`
decides each mapping's IDs from format-neutral :class:`MappingFacts`, and a
:class:`StampTarget` reads a container's mappings and records the IDs in its own way
(:class:`PprofStampTarget`: ``Mapping.build_id``; OTLP's ``process.executable.build_id.*`` and
our namespaced attributes are the next writer, issue 25).

What is never done: a mapping whose file is missing, unreadable, of another kind, or changed
since the profile was taken keeps what it had and is counted with the reason; one whose ID
already names another build than the file now at its path is left alone (the file is what
changed). The file at the recorded path is trusted only when it is a regular file not modified
after the profile's ``time_nanos``; a ``--binary`` given for a mapping is the user's word.
"""

from __future__ import annotations

import stat
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any, NamedTuple, Protocol

from symbolize import mapping_ids
from symbolize.discovery.paths import base_name
from symbolize.formats.errors import NotFoundError, SymbolizeError, UnsupportedFormatError
from symbolize.formats.identity import HeaderIdentity, read_header_identities
from symbolize.formats.types import DebugId

__all__ = [
    "MappingFacts",
    "MappingStamp",
    "PprofStampTarget",
    "StampOutcome",
    "StampReport",
    "StampTarget",
    "stamp",
]

# The highest runtime address of user space on the 64-bit targets profiled (x86-64, arm64): a
# mapping above it is the kernel's.
_KERNEL_ADDRESS_START = 0xFFFF800000000000
# Names of mappings that are no file (Linux /proc/PID/maps pseudo-paths, anonymous memory).
_NOT_FILE_PREFIXES = ("[", "//anon", "/dev/", "/memfd:", "anon_inode:")
# At most this many unstamped mappings are listed one per line in the text report.
_LISTED = 20


class StampOutcome(Enum):
    """What the stamp did with a mapping. The values are what ``--json-summary`` prints."""

    STAMPED = "stamped"  # its IDs recorded now
    ALREADY_STAMPED = "already-stamped"  # its ID agreed with the file (its spelling completed)
    OTHER_BUILD = "other-build"  # its ID names another build than the file at its path: left alone
    FILE_CHANGED = "file-changed"  # the file was modified after the profile was taken
    MISSING = "missing"  # no file at its path on this machine
    NOT_A_FILE = "not-a-file"  # [vdso], anonymous memory, the kernel, no file name
    NO_ID = "no-id"  # the file records no build ID (ELF linked without --build-id, no LC_UUID)
    AMBIGUOUS_SLICE = "ambiguous-slice"  # a universal Mach-O file whose mapped slice nothing tells
    UNSUPPORTED_FILE = "unsupported-file"  # not an ELF, PE or Mach-O file, or not a regular file
    UNREADABLE_FILE = "unreadable-file"  # permissions, I/O errors, broken headers

    @property
    def stamped(self) -> bool:
        return self in (StampOutcome.STAMPED, StampOutcome.ALREADY_STAMPED)


class MappingFacts(NamedTuple):
    """A mapping as the stamp sees it, whatever the profile format: ``key`` is the container's own
    handle (a pprof mapping's id), ``recorded`` the ID text it has ("" for none)."""

    key: int
    filename: str
    memory_start: int
    memory_limit: int
    file_offset: int
    recorded: str


class StampTarget(Protocol):
    """A profile container as the stamp reads and writes it."""

    @property
    def taken_at_ns(self) -> int:
        """When the profile was taken, in ns since the epoch; 0 when it does not say."""
        ...

    def mappings(self) -> Iterable[MappingFacts]: ...

    def record(self, key: int, ids: Sequence[DebugId]) -> None:
        """Record ``ids`` (most specific first) as the IDs of the mapping ``key``."""
        ...


class PprofStampTarget:
    """A pprof ``Profile``'s mappings; IDs go to ``Mapping.build_id`` (symbolize/mapping_ids.py)."""

    def __init__(self, profile: Any) -> None:
        from symbolize.pprof import StringTable

        self.profile = profile
        self.strings = StringTable(profile)
        self._by_key = {mapping.id: mapping for mapping in profile.mapping}

    @property
    def taken_at_ns(self) -> int:
        return int(self.profile.time_nanos)

    def mappings(self) -> Iterator[MappingFacts]:
        get = self.strings.get
        for mapping in self.profile.mapping:
            yield MappingFacts(mapping.id, get(mapping.filename), mapping.memory_start, mapping.memory_limit,
                               mapping.file_offset, get(mapping.build_id).strip())  # fmt: skip

    def record(self, key: int, ids: Sequence[DebugId]) -> None:
        self._by_key[key].build_id = self.strings.intern(mapping_ids.spell(ids))


@dataclass(frozen=True)
class MappingStamp:
    """What the stamp did with one mapping: the IDs recorded (or found), the file read, why not."""

    filename: str
    outcome: StampOutcome
    ids: tuple[DebugId, ...] = ()
    path: Path | None = None
    detail: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "filename": self.filename,
            "outcome": self.outcome.value,
            "ids": mapping_ids.spell(self.ids),
            "file": str(self.path) if self.path is not None else None,
            "detail": self.detail,
        }


@dataclass
class StampReport:
    """Every mapping's :class:`MappingStamp`, in the profile's order."""

    mappings: list[MappingStamp] = field(default_factory=list)

    def counts(self) -> Counter[StampOutcome]:
        return Counter(entry.outcome for entry in self.mappings)

    @property
    def stamped(self) -> int:
        return sum(entry.outcome.stamped for entry in self.mappings)

    def format_text(self) -> str:
        """One line of totals, then one per mapping left unstamped that had a file to stamp."""
        counts = self.counts()
        files = len(self.mappings) - counts[StampOutcome.NOT_A_FILE]
        parts = [f"{counts[outcome]} {outcome.value}" for outcome in StampOutcome if counts[outcome]]
        lines = [f"stamp: {self.stamped} of {files} file mappings stamped ({', '.join(parts) or 'no mappings'})"]
        unstamped = [e for e in self.mappings if not e.outcome.stamped and e.outcome is not StampOutcome.NOT_A_FILE]
        for entry in unstamped[:_LISTED]:
            lines.append(f"  {entry.filename}: {entry.outcome.value}" + (f": {entry.detail}" if entry.detail else ""))
        if len(unstamped) > _LISTED:
            lines.append(f"  ... and {len(unstamped) - _LISTED} more")
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        counts = self.counts()
        return {
            "stamped": self.stamped,
            "counts": {outcome.value: counts[outcome] for outcome in StampOutcome if counts[outcome]},
            "mappings": [entry.to_json() for entry in self.mappings],
        }


def stamp(target: StampTarget, *, binaries: Sequence[Path] = ()) -> StampReport:
    """Record in ``target`` the IDs of each mapping's file, read from its headers; the report says
    what was done with every mapping.

    The file is the one in ``binaries`` with the mapping's base name (ignoring case), else the file
    at the mapping's path when that is absolute on this machine. Each file is read once however
    many mappings it has.
    """
    by_name = {path.name.casefold(): path for path in binaries}
    read = _IdentityCache()
    report = StampReport()
    taken_at_ns = target.taken_at_ns
    for facts in target.mappings():
        entry = _stamp_mapping(facts, by_name, read, taken_at_ns)
        if entry.outcome is StampOutcome.STAMPED or (
            entry.outcome is StampOutcome.ALREADY_STAMPED and facts.recorded != mapping_ids.spell(entry.ids)
        ):
            target.record(facts.key, entry.ids)
        report.mappings.append(entry)
    return report


def _stamp_mapping(
    facts: MappingFacts, by_name: dict[str, Path], read: _IdentityCache, taken_at_ns: int
) -> MappingStamp:
    name = facts.filename
    if not name or "\0" in name or name.startswith(_NOT_FILE_PREFIXES) or facts.memory_start >= _KERNEL_ADDRESS_START:
        return MappingStamp(name, StampOutcome.NOT_A_FILE)
    given = by_name.get(base_name(name).casefold())
    path = given if given is not None else Path(name)
    if given is None and not path.is_absolute():
        detail = "not an absolute path on this machine (give the file with --binary)"
        return MappingStamp(name, StampOutcome.MISSING, detail=detail)
    found = read.identities(path, check_after_ns=0 if given is not None else taken_at_ns)
    if isinstance(found, MappingStamp):
        return MappingStamp(name, found.outcome, path=path, detail=found.detail)
    chosen = _mapped_slice(found, facts)
    if chosen is None:
        slices = ", ".join(identity.arch for identity in found)
        detail = f"universal file ({slices}): neither the mapping's size nor its file offset names a slice"
        return MappingStamp(name, StampOutcome.AMBIGUOUS_SLICE, path=path, detail=detail)
    if not chosen.ids:
        return MappingStamp(name, StampOutcome.NO_ID, path=path, detail="the file records no build ID")
    if facts.recorded:
        if mapping_ids.matches(facts.recorded, chosen.ids):
            return MappingStamp(name, StampOutcome.ALREADY_STAMPED, chosen.ids, path)
        detail = f"the mapping records {facts.recorded}, the file is {mapping_ids.spell(chosen.ids)}"
        return MappingStamp(name, StampOutcome.OTHER_BUILD, chosen.ids, path, detail)
    return MappingStamp(name, StampOutcome.STAMPED, chosen.ids, path)


def _mapped_slice(found: list[HeaderIdentity], facts: MappingFacts) -> HeaderIdentity | None:
    """The identity (the slice of a universal Mach-O file) the mapping was read from; None when
    nothing tells: its recorded ID, else its file offset (counted from the fat file), else its size."""
    if len(found) == 1:
        return found[0]
    rules = (
        lambda identity: bool(facts.recorded) and mapping_ids.matches(facts.recorded, identity.ids),
        lambda identity: facts.file_offset > 0 and facts.file_offset == identity.slice_offset,
        lambda identity: facts.memory_limit - facts.memory_start in identity.mapping_sizes,
    )
    for rule in rules:
        fitting = [identity for identity in found if rule(identity)]
        if len(fitting) == 1:
            return fitting[0]
    return None


class _IdentityCache:
    """Each file's identities, read once: by (device, inode), so a file named two ways is one."""

    def __init__(self) -> None:
        self._read: dict[tuple[int, int], list[HeaderIdentity] | MappingStamp] = {}

    def identities(self, path: Path, *, check_after_ns: int) -> list[HeaderIdentity] | MappingStamp:
        """``path``'s identities, or a MappingStamp saying why there are none (its filename unset).

        ``check_after_ns``: when not 0, a file modified after that time is refused (FILE_CHANGED).
        """
        try:
            status = path.stat()
        except FileNotFoundError:
            return MappingStamp("", StampOutcome.MISSING, detail="file not found")
        except OSError as error:
            return MappingStamp("", StampOutcome.UNREADABLE_FILE, detail=f"cannot read file: {error.strerror or error}")
        if not stat.S_ISREG(status.st_mode):
            # A FIFO or device named by a hostile profile would block or read forever.
            return MappingStamp("", StampOutcome.UNSUPPORTED_FILE, detail="not a regular file")
        if check_after_ns and status.st_mtime_ns > check_after_ns:
            detail = "modified after the profile was taken: it may not be the file mapped then"
            return MappingStamp("", StampOutcome.FILE_CHANGED, detail=detail)
        key = (status.st_dev, status.st_ino)
        cached = self._read.get(key)
        if cached is None:
            cached = self._read[key] = _read(path)
        return cached


def _read(path: Path) -> list[HeaderIdentity] | MappingStamp:
    try:
        return read_header_identities(path)
    except NotFoundError:
        return MappingStamp("", StampOutcome.MISSING, detail="file not found")
    except UnsupportedFormatError as error:
        return MappingStamp("", StampOutcome.UNSUPPORTED_FILE, detail=error.reason)
    except SymbolizeError as error:
        return MappingStamp("", StampOutcome.UNREADABLE_FILE, detail=error.reason)
    except OSError as error:
        return MappingStamp("", StampOutcome.UNREADABLE_FILE, detail=f"cannot read file: {error.strerror or error}")
