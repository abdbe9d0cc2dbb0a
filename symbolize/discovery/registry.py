"""The locator registry: one locator per kind of debug hint, and the one loop that runs them.

An image lists its hints (``Image.debug_hints()``: a build ID, a debuglink, a
PDB path, a dSYM UUID, ...); a reader says which files its debug info needs
(``SymbolSource.needs()`` and ``AnswerRegion.needs``: a ``.dwo``, the dwz common
file, a debug map's object), and the loader (symbolize/loader.py) follows them.
Either way :func:`locate` takes the hint to the locator
registered for its kind, which says where to look (:meth:`Locator.candidates`)
and whether a file found is the one meant (:meth:`Locator.refusal`). The loop
checks the path rules (symbolize/discovery/paths.py), opens each existing
candidate through the loader, keeps the first that verifies, and
records why the others were refused.

Adding a locator (a PDB's, a dSYM's) is one class registered for its kind::

    from symbolize.discovery.registry import Candidate, LookupContext, register_locator

    class PdbLocator(LocatorDefaults):
        def candidates(self, hint: DebugHint, context: LookupContext) -> Iterator[Candidate]:
            # symbol-store layout under each --debug-dir / --search-path:
            #   <root>/name.pdb/<GUID><age>/name.pdb       (str(hint.debug_id) is "<GUID><age>")
            # then the RSDS path's base name beside the image and in the search paths.
            ...

        def refusal(self, hint: DebugHint, found: ObjectFile, context: LookupContext) -> str | None:
            return debug_id_refusal(hint.debug_id, found.debug_id)

    register_locator(HintKind.PDB, PdbLocator())

at the end of its module, which :data:`LOCATOR_MODULES` names for the kinds it follows: the
registry imports it when a hint of one of them is first followed, so a run that meets no PDB or
Mach-O file never imports their locators.
Yield each candidate with the directory it was looked up under as its
``root`` (``Candidate(root / name, root)``), after checking the name with
:func:`symbolize.discovery.paths.is_file_name`; ``root=None`` only for an
explicit argument or a path the image records, and then the file must verify
by its ID. Open nothing in ``candidates``: the loop opens, with the image's
``arch``, so a fat file's slice is the image's.

A locator may also override :class:`LocatorDefaults`' ``stat_refusal(hint, candidate, status)``:
why the file at ``candidate`` is not the one meant, from its ``os.stat_result`` alone (a debug
map object's mtime); a candidate it refuses is never opened; and ``open(candidate, context)``:
how a candidate is opened (through ``context.loader``). A candidate that cannot be looked at
(a name past the system's limit, a directory that cannot be searched) and a hint whose own
record is malformed (``DebugHint.damaged``) are refused with their reason, never raised: one
hint that cannot be followed leaves the rest of the file answering.
"""

import errno
import importlib
import os
from collections.abc import Iterable
from contextlib import AbstractContextManager
from pathlib import Path
from stat import S_ISREG
from typing import TYPE_CHECKING, BinaryIO, NamedTuple, Protocol

from symbolize.discovery.options import SearchOptions
from symbolize.discovery.paths import DirectoryListings, lies_under
from symbolize.formats.errors import SymbolizeError
from symbolize.formats.types import DebugHint, DebugId, HintKind, ObjectFile, SymbolSource
from symbolize.module import FileIdentity

if TYPE_CHECKING:
    from symbolize.remote.run import RemoteRun

# Hints a reader says it needs (its needs() and its regions'); every other kind names a
# module's debug file and is tried, in the image's order, when the module is opened.
READER_HINTS = frozenset({HintKind.SUPPLEMENTARY, HintKind.SPLIT_DWARF, HintKind.DEBUG_MAP_OBJECT})

# A candidate that fails to stat with one of these is simply not there: a missing file, a path
# component that is a file. Any other failure (a name past the system's limit, a directory that
# cannot be searched, a symlink loop) is refused with its reason.
ABSENT_ERRNOS = frozenset({errno.ENOENT, errno.ENOTDIR})


class Candidate(NamedTuple):
    """A path to try, and the directory it was looked up under (None: explicit or recorded by the file)."""

    path: Path
    root: Path | None
    # The member to open, when ``path`` is a static archive (a debug map's ``lib.a(member.o)``).
    member: str | None = None


class FileLoader(Protocol):
    """What locators and discovery ask of the loader (symbolize/loader.py), the one place that
    opens files: declared here, so that nothing below the loader imports it."""

    @property
    def options(self) -> SearchOptions: ...

    @property
    def listings(self) -> DirectoryListings: ...

    @property
    def remote(self) -> "RemoteRun | None":
        """The run's servers and download caches; None when the run asks none (the default)."""
        ...

    def open(
        self, path: Path, *, image_path: Path | None = None, arch: str | None = None, member: str | None = None
    ) -> ObjectFile: ...

    def open_indexed_pdb(self, path: Path, arch: str | None, image_load_base: int) -> ObjectFile | None: ...

    def byte_stream(self, path: Path) -> AbstractContextManager[BinaryIO]: ...

    def open_source(
        self, path: Path, *, image_path: Path | None = None, arch: str | None = None, image: ObjectFile | None = None
    ) -> SymbolSource: ...

    def refused(self, path: Path, arch: str | None = None) -> list[str]: ...

    def file_crc32(self, path: Path) -> int: ...

    def identify(self, path: Path, arch: str | None = None) -> FileIdentity: ...


class LookupContext(NamedTuple):
    """Who asks: the image (its path, arch, debug ID), the file whose hint it is, and the loader."""

    loader: FileLoader
    image_path: Path
    asking_path: Path
    arch: str | None = None
    image_debug_id: DebugId | None = None
    # The vaddr the image's answers are at (a PDB's RVAs add to it): part of a PDB's index key.
    image_load_base: int | None = None
    # Whether a locator's remote part may ask the run's servers (the loader's ``remote``): not for
    # an image whose own DWARF names its addresses, nor when only the local candidates are listed.
    ask_servers: bool = False

    @property
    def options(self) -> SearchOptions:
        """Where to look: the loader's options."""
        return self.loader.options


class Located(NamedTuple):
    path: Path
    opened: ObjectFile


class Locator(Protocol):
    """Finds and verifies the file one kind of hint names."""

    def candidates(self, hint: DebugHint, context: LookupContext) -> Iterable[Candidate]:
        """Paths to try, best first; existence is checked by the caller."""
        ...

    def refusal(self, hint: DebugHint, found: ObjectFile, context: LookupContext) -> str | None:
        """Why ``found`` is not the file ``hint`` names, or None when it is."""
        ...

    def stat_refusal(self, hint: DebugHint, candidate: Candidate, status: os.stat_result) -> str | None:
        """Why the file at ``candidate`` is not the one meant, from its status alone; None: open it."""
        ...

    def load(self, candidate: Candidate, context: LookupContext) -> ObjectFile:
        """The file at ``candidate``, opened for ``context`` by the loader."""
        ...


class LocatorDefaults:
    """What a locator that has nothing particular to say answers for :class:`Locator`'s optional
    members: every locator inherits it, so the registry calls them, never probes for them."""

    def stat_refusal(self, hint: DebugHint, candidate: Candidate, status: os.stat_result) -> str | None:
        return None

    def load(self, candidate: Candidate, context: LookupContext) -> ObjectFile:
        return context.loader.open(
            candidate.path, image_path=context.image_path, arch=context.arch, member=candidate.member
        )


_LOCATORS: dict[HintKind, Locator] = {}

# The module that registers the locator of each kind, imported when a hint of that kind is first
# followed (:func:`located_by`): a cold ELF lookup does not pay for the Mach-O, archive and PDB
# modules' classes at start-up.
LOCATOR_MODULES: dict[HintKind, str] = {
    HintKind.BUILD_ID: "symbolize.discovery.elf_locators",
    HintKind.DEBUGLINK: "symbolize.discovery.elf_locators",
    HintKind.SUPPLEMENTARY: "symbolize.discovery.elf_locators",
    HintKind.SPLIT_DWARF: "symbolize.discovery.elf_locators",
    HintKind.DSYM: "symbolize.discovery.macho_locators",
    HintKind.DEBUG_MAP_OBJECT: "symbolize.discovery.macho_locators",
    HintKind.PDB: "symbolize.discovery.pdb_locator",
}


def register_locator(kind: HintKind, locator: Locator) -> Locator:
    """Make ``locator`` the one that follows hints of ``kind`` (replacing any before it). The
    kind's own module (:data:`LOCATOR_MODULES`) is imported first, so that its registration,
    made when it is imported, never replaces a locator a caller registered."""
    module = LOCATOR_MODULES.get(kind)
    if module is not None:
        importlib.import_module(module)  # from that module itself: already in sys.modules
    _LOCATORS[kind] = locator
    return locator


def located_by(kind: HintKind) -> Locator | None:
    """The locator that follows hints of ``kind`` (its module imported, and so registered, on first
    need); None when none does."""
    locator = _LOCATORS.get(kind)
    if locator is None and kind in LOCATOR_MODULES:
        importlib.import_module(LOCATOR_MODULES[kind])
        locator = _LOCATORS.get(kind)
    return locator


def load_locators() -> None:
    """Import every module of :data:`LOCATOR_MODULES`, so that each locator (and each binary source
    they register, symbolize/discovery/binary_sources.py) is registered."""
    for module in LOCATOR_MODULES.values():
        importlib.import_module(module)


def registered_kinds() -> frozenset[HintKind]:
    load_locators()
    return frozenset(_LOCATORS)


def candidate_paths(hint: DebugHint, context: LookupContext) -> list[Path]:
    """Every path :func:`locate` may try for ``hint``, in its order (none is opened or checked)."""
    locator = located_by(hint.kind)
    return [] if locator is None else [candidate.path for candidate in locator.candidates(hint, context)]


def locate(hint: DebugHint, context: LookupContext, refused: list[str]) -> Located | None:
    """The first file ``hint`` names that exists, obeys the path rules and verifies; None if none.

    Refused candidates are appended to ``refused`` as ``"path: reason"``.
    A hint of a kind no locator follows finds nothing.
    """
    if hint.damaged:
        refused.append(hint.damaged)
        return None
    locator = located_by(hint.kind)
    if locator is None:
        return None
    seen: set[tuple[Path, str | None]] = {(context.asking_path.resolve(), None), (context.image_path.resolve(), None)}
    # (directory looked under, errno) of a failure already refused: a directory that cannot be
    # searched fails every candidate under it alike, and is said once.
    unreadable: set[tuple[Path | None, int | None]] = set()
    for candidate in locator.candidates(hint, context):
        path = candidate.path
        if candidate.root is not None and not lies_under(path, candidate.root):
            refused.append(f"{path}: outside {candidate.root}, where it was looked up")
            continue
        try:
            status = path.stat()
        except OSError as err:
            # Absent is no refusal; a name past the system's limit, a directory that cannot be
            # searched, is one: the hint cannot be followed there, and the rest of the file answers.
            if err.errno not in ABSENT_ERRNOS and (candidate.root, err.errno) not in unreadable:
                unreadable.add((candidate.root, err.errno))
                refused.append(f"{path}: cannot read: {err.strerror or err}")
            continue
        if not S_ISREG(status.st_mode):
            continue
        key = (path.resolve(), candidate.member)
        if key in seen:
            continue
        seen.add(key)
        where = f"{path}({candidate.member})" if candidate.member else str(path)
        # What the file's status alone refuses (a debug map object's mtime) is refused unopened.
        reason = locator.stat_refusal(hint, candidate, status)
        if reason is not None:
            refused.append(f"{where}: {reason}")
            continue
        try:
            # The PDB's locator opens one by its identity alone when a persistent index answers for it.
            opened = locator.load(candidate, context)
            # Verifying may read the candidate's sections (a .dwo's units): damage there refuses it.
            reason = locator.refusal(hint, opened, context)
        except SymbolizeError as err:
            refused.append(str(err))
            continue
        if reason is not None:
            refused.append(f"{where}: {reason}")
            continue
        return Located(path, opened)
    return None


def debug_id_refusal(expected: DebugId | None, found: DebugId | None, what: str = "the one asked for") -> str | None:
    """A refusal when ``found`` is not ``expected`` (compared as values); None when they agree or none is asked."""
    if expected is None or found == expected:
        return None
    return f"debug ID {found if found is not None else 'none'} does not match {what} {expected}"
