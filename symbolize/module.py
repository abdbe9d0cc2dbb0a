"""An image and its symbol sources, opened together: the unit of lookup.

- ``Unknown(reason, detail)`` is the result for an address that cannot be
  named: a :class:`Reason` (a small enum, what summaries count by) and a
  detail text for people (an error's message, a path), often "".
- ``Module.lookup(vaddrs)`` returns exactly one result per input, in order:
  a non-empty list of raw (not demangled) frames, innermost first, or Unknown.
  One bad address never fails the batch; a broken file raises SymbolizeError.
- ``PerFrame(compute)`` remembers what the layers above derive from a frame.
- ``Module.close()`` (or ``with module:``) closes the files it was opened with.
"""

from collections.abc import Callable, Mapping, Sequence
from enum import Enum
from itertools import filterfalse
from pathlib import Path
from typing import Generic, NamedTuple, Protocol, TypeVar, cast

from symbolize.formats.errors import (
    DebugIdMismatchError,
    MalformedInputError,
    MissingDebugInfoError,
    NotFoundError,
    RemoteMissError,
    SymbolizeError,
    UnsupportedFormatError,
)
from symbolize.formats.types import DebugId, DebugInfoSummary, Frame, Image

T = TypeVar("T")



class Source(Protocol):
    """What a Module asks of a symbol source: frames at a vaddr and what debug info it holds."""

    path: Path
    debug_id: DebugId | None

    def frames_at(self, vaddr: int) -> list[Frame]: ...

    def frames_many(self, vaddrs: Sequence[int]) -> list[list[Frame] | MalformedInputError]:
        """:meth:`frames_at` of each vaddr, or the MalformedInputError it raises (SymbolSource's capability)."""
        ...

    def debug_info(self) -> DebugInfoSummary: ...

    def close(self) -> None: ...

    def lines_missing_reason(self) -> str | None:
        """Why it names functions but no lines (a stripped PDB), or None (SymbolSource's capability)."""
        ...

    def relative_file_names(self, vaddr: int) -> Mapping[str, str]:
        """File names without the compilation directory at ``vaddr`` (SymbolSource's capability)."""
        ...


class Reason(Enum):
    """Why an address was left unnamed. The values are what ``--json-summary`` and ``lookup --json`` print."""

    NO_MAPPING = "no-mapping"  # the location names no mapping
    NOT_A_FILE = "not-a-file"  # [vdso], //anon, the kernel, a mapping without a file name
    BINARY_NOT_FOUND = "binary-not-found"
    # A macOS system library missing from disk: it lives only in the dyld shared cache.
    IN_SHARED_CACHE = "in-shared-cache"
    DEBUG_ID_MISMATCH = "debug-id-mismatch"  # files of that name exist, none of that build
    # The file found by name (the mapping has no build ID) cannot be the one mapped: its size or
    # segments contradict the mapping's (symbolize/normalize.py, mapping_contradiction).
    MAPPING_CONTRADICTS_FILE = "mapping-contradicts-file"
    UNSUPPORTED_FILE = "unsupported-file"  # a format not read (yet), or not an object file
    UNREADABLE_FILE = "unreadable-file"  # permissions, I/O errors
    NO_DEBUG_INFO = "no-debug-info"  # neither symbols nor debug info anywhere
    OUTSIDE_FILE = "outside-file"  # the runtime address falls in none of the file's segments
    NOT_COVERED = "not-covered"  # names exist, but none covers this address
    DAMAGED_DEBUG_INFO = "damaged-debug-info"  # the file or the unit covering the address is broken
    NOT_AN_ADDRESS = "not-an-address"  # lookup input that does not parse as an address
    # The file was not on disk, and the servers asked (--debuginfod, --symbol-server, --remote) do
    # not have it; or some could not be reached and none of the others has it.
    NOT_ON_SERVER = "not-on-server"
    SERVER_UNREACHABLE = "server-unreachable"


_SERVER_REASONS = frozenset({Reason.NOT_ON_SERVER, Reason.SERVER_UNREACHABLE})


class RemoteMiss(NamedTuple):
    """A file the servers were asked for and did not give: what it is (``"debuginfo of libc.so.6
    (build ID ...)"``), why (NOT_ON_SERVER or SERVER_UNREACHABLE), the URLs tried, and what the
    servers said, for people."""

    what: str
    reason: Reason
    tried: tuple[str, ...] = ()
    detail: str = ""

    def describe(self) -> str:
        """One line for people: what, why, and what each server said (or, without that, where it was asked)."""
        if self.detail:
            return f"{self.what}: {self.reason.value}: {self.detail}"
        where = f" (tried {', '.join(self.tried)})" if self.tried else ""
        return f"{self.what}: {self.reason.value}{where}"


class FileIdentity(NamedTuple):
    """What a file is, read from its headers: its format, its debug ID, every ID a mapping may name
    it by (a PE image's code ID too). What a download is verified by before it is stored."""

    format: str
    debug_id: DebugId | None
    identities: tuple[DebugId, ...]


class Unknown(NamedTuple):
    """Why an address could not be named: ``reason`` to count, ``detail`` to read ("" when the reason says it all)."""

    reason: Reason
    detail: str = ""


def reason_for_error(error: SymbolizeError | OSError) -> Reason:
    """The Reason a failure to open or read a module's files stands for."""
    if isinstance(error, RemoteMissError):
        return Reason.SERVER_UNREACHABLE if error.unreachable else Reason.NOT_ON_SERVER
    if isinstance(error, DebugIdMismatchError):
        return Reason.DEBUG_ID_MISMATCH
    if isinstance(error, MissingDebugInfoError | NotFoundError):
        return Reason.BINARY_NOT_FOUND
    if isinstance(error, MalformedInputError):
        return Reason.DAMAGED_DEBUG_INFO
    if isinstance(error, UnsupportedFormatError):
        return Reason.UNSUPPORTED_FILE
    return Reason.UNREADABLE_FILE


class Module:
    """An image (load segments, identity, hints) and its sources, best first.

    ``debug_files`` (best first) name addresses and may include the image's own
    source (when it carries DWARF); the image's own source is asked last in any
    case, for its symbol table. ``own_source`` is the image answering lookups
    (from its persistent index when there is one); None when the image answers
    itself. ``refused`` lists candidate debug files discovery rejected, with
    the reason (``"path: reason"``); ``reader_refusals`` are the lists the
    sources' readers fill as they ask for the files their debug info refers to
    (a ``.dwo`` whose DWO ID differs, a dwz file of another build), live.
    ``missed`` lists the debug files the servers were asked for and did not give: an address
    nothing names is then counted under the miss's reason, not ``no-debug-info``.
    """

    # A plain class, not a dataclass: every lookup makes one, and ``import dataclasses`` (inspect,
    # ast, dis, tokenize) is about a tenth of a one-address cold lookup's instructions.
    def __init__(
        self,
        image: Image,
        debug_files: list[Source] | None = None,
        refused: list[str] | None = None,
        own_source: Source | None = None,
        reader_refusals: list[list[str]] | None = None,
        missed: list[RemoteMiss] | None = None,
    ) -> None:
        self.image = image
        self.debug_files = debug_files if debug_files is not None else []
        self.refused = refused if refused is not None else []
        self.own_source = own_source
        self.reader_refusals = reader_refusals if reader_refusals is not None else []
        self.missed = missed if missed is not None else []
        self._results: dict[int, list[Frame] | Unknown] = {}
        self._has_names: bool | None = None
        # What closes the files the module was opened with (the loader that opened them), when it owns them.
        self._closers: list[Callable[[], None]] = []

    @property
    def path(self) -> Path:
        return self.image.path

    @property
    def binary(self) -> Source:
        """The image as a source: ``own_source``, else the image itself (a reader that is both)."""
        return self.own_source if self.own_source is not None else cast(Source, self.image)

    @property
    def sources(self) -> list[Source]:
        """Every source, best first: the debug files, then the image's own."""
        sources = list(self.debug_files)
        own = self.binary
        if not any(source is own for source in sources):
            sources.append(own)
        return sources

    def lookup(self, vaddrs: Sequence[int]) -> list[list[Frame] | Unknown]:
        """One result per vaddr, in order: frames (innermost first) or Unknown."""
        results = self._results
        # In C (filterfalse, map), not a Python loop per address: a batch is thousands of them.
        asked = list(filterfalse(results.__contains__, dict.fromkeys(vaddrs)))
        if asked:
            self._look_up(asked)
        return list(map(results.__getitem__, vaddrs))

    def _look_up(self, vaddrs: list[int]) -> None:
        """Each of ``vaddrs``' result, into the memo: every source asked for all the addresses
        the sources before it left unnamed, at once where it answers batches (``frames_many``)."""
        # A broken unit in one file should not hide what the next file (often the
        # binary's symbol table) knows; its error is the reason only if nothing names the address.
        errors: dict[int, MalformedInputError] = {}
        results = self._results
        for source in self.sources:
            if not vaddrs:
                return
            answers = source.frames_many(vaddrs)
            unnamed: list[int] = []
            for vaddr, answer in zip(vaddrs, answers, strict=True):
                if isinstance(answer, list):
                    if answer:
                        results[vaddr] = answer
                        continue
                else:
                    errors.setdefault(vaddr, answer)
                unnamed.append(vaddr)
            vaddrs = unnamed
        for vaddr in vaddrs:
            error = errors.get(vaddr)
            if error is not None:
                results[vaddr] = Unknown(Reason.DAMAGED_DEBUG_INFO, str(error))
                continue
            reason = self.unnamed_reason()
            # A server's miss names the file asked for and where: the detail a summary shows for it.
            results[vaddr] = Unknown(reason, self.missed[0].describe() if reason in _SERVER_REASONS else "")

    def unnamed_reason(self) -> Reason:
        """The reason of an address no source names (and none failed on): not covered, or no names at
        all (the servers' miss, when a debug file was asked of them)."""
        if self._has_names is None:
            self._has_names = any(summary.has_symbols or summary.has_dwarf for summary in self._summaries())
        if self._has_names:
            return Reason.NOT_COVERED
        return self.missed[0].reason if self.missed else Reason.NO_DEBUG_INFO

    def refusals(self) -> list[str]:
        """Every candidate file refused so far, once each, in the order refused: the module's
        debug files, then what the readers refused while answering."""
        seen: dict[str, None] = dict.fromkeys(self.refused)
        for refused in self.reader_refusals:
            seen.update(dict.fromkeys(refused))
        return list(seen)

    def damaged_debug_info(self) -> str:
        """Why a source's debug info cannot be read at all (so only symbols name its addresses); "" if none."""
        return next((summary.damaged for summary in self._summaries() if summary.damaged), "")

    def relative_file_names(self, vaddr: int) -> dict[str, str]:
        """Each file name of the debug info answering ``vaddr``, as that debug info gives it
        without the compilation directory (llvm-symbolizer's ``--relativenames``), where the two
        differ; the first source's, where two sources differ."""
        names: dict[str, str] = {}
        for source in reversed(self.sources):
            names.update(source.relative_file_names(vaddr))
        return names

    def _summaries(self) -> list[DebugInfoSummary]:
        return [source.debug_info() for source in self.sources]

    def close_with(self, close: Callable[[], None]) -> None:
        """Have :meth:`close` call ``close`` (the loader that opened the module for it alone)."""
        self._closers.append(close)

    def close(self) -> None:
        """Close the files the module was opened with (each reader holds a descriptor and a
        mapping); lookups after that raise. Closing twice does nothing more."""
        closers, self._closers = self._closers, []
        if closers:
            for close in closers:
                close()
            return
        for source in self.sources:
            source.close()
        self.image.close()

    def __enter__(self) -> "Module":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def describe(self) -> dict[str, str | None]:
        """A short summary: binary path, best debug file path, debug ID."""
        return {
            "binary": str(self.image.path),
            "debug_file": str(self.debug_files[0].path) if self.debug_files else None,
            "debug_id": str(self.image.debug_id) if self.image.debug_id is not None else None,
        }


class PerFrame(Generic[T]):
    """``compute(frame)``, computed once per Frame object.

    An indexed lookup hands out one Frame for every address under the same
    inlined call, so a large batch holds far fewer distinct frames than frames:
    what is derived from one (its demangled form, its text, its pprof Function)
    is worth remembering. Frames are keyed by identity, which is cheaper than
    hashing their five fields; each frame is kept alive beside its value, so
    its id cannot be reused while the memo lives.
    """

    def __init__(self, compute: Callable[[Frame], T]) -> None:
        self._compute = compute
        self._values: dict[int, tuple[Frame, T]] = {}

    def __call__(self, frame: Frame) -> T:
        found = self._values.get(id(frame))
        if found is None:
            found = self._values[id(frame)] = (frame, self._compute(frame))
        return found[1]
