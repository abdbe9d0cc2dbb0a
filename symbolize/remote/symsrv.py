"""Symbol stores: symsrv's layout, SSQP's keys, ``file.ptr``, and asking HTTP stores for a key.

Specs: Microsoft's "Symbol Storage Format" and "SymStore" (symstore.exe's layout, ``file.ptr``,
``index2.txt``), and the .NET symbol store's "SSQP Key Conventions" (dotnet/symstore,
docs/specs/SSQP_Key_Conventions.md).

A file is stored as ``<name>/<index>/<name>`` under a store's root; a two-tier store (one with an
``index2.txt`` at its root, ``symstore /3``) puts the first two characters of the name in front:
``<na>/<name>/<index>/<name>``. The index of

- a PDB is its GUID as Windows prints it (Data1 to Data3 as numbers, then Data4), then its age in
  hex: ``winapp.pdb/D01E5215C14845FF4C4C44205044422E1/winapp.pdb`` (:meth:`DebugId.__str__`);
- a PE image is its TimeDateStamp as 8 hex digits then its SizeOfImage in as few as it needs:
  ``winapp.exe/DD1324EA5000/winapp.exe`` (the image's code ID);
- an ELF file (SSQP) is ``elf-buildid-<build ID>`` for the binary (under its own name) and
  ``elf-buildid-sym-<build ID>`` for its debug file, always named ``_.debug``; a build ID shorter
  than 20 bytes is padded with zero bytes to 20;
- a Mach-O file (SSQP) is ``mach-uuid-<UUID>`` for the binary and ``mach-uuid-sym-<UUID>`` for its
  dSYM's DWARF file, always named ``_.dwarf``.

SSQP spells keys in lower case; symsrv stores keep the name as the image records it and the index
in upper case, and a store on IIS answers either (it folds case): both spellings are asked
(:meth:`SymbolStoreKey.spellings`). A file may be stored compressed (a one-file cabinet whose
name ends in ``_`` instead of its last character: ``winapp.pd_``) or as a ``file.ptr`` whose one
line says where the file is (``PATH:<path>``, or a bare path) or why it is not there
(``MSG:<text>``).

Names come from files we do not trust (an RSDS record, a profile's mapping): a key is built only
from a bare file name (:func:`symbolize.discovery.paths.is_file_name`) of at most
``MAX_NAME_CHARS`` characters, without control characters, and from an index made of hex digits
and the SSQP prefixes, so a key never holds a separator or ``..``.

The remote part (:func:`fetch_from_symbol_servers`): the run's symbol path (``--symbol-server``,
and with ``--remote`` the environment's) gives HTTP stores and the downstream stores their files
are kept in; a key is asked of every store at once through the run's Fetcher
(symbolize/remote/fetcher.py), each store by a :class:`SymbolStoreAttempt` (every spelling and
form, as symsrv asks), a compressed form in a local store by a :class:`LocalCabinetAttempt`,
and the first answer that verifies by ID (:func:`pdb_verifier`, :func:`code_id_verifier`,
:func:`uuid_verifier`) is stored, then opened by the registry like any local candidate. A
mapping's binary comes the same way by its ID (:func:`fetch_binary`).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, BinaryIO, NamedTuple
from urllib.parse import quote, urlsplit

from symbolize.discovery.paths import base_name, is_file_name, lies_under
from symbolize.discovery.registry import Candidate, FileLoader
from symbolize.formats.errors import InputLimitError, MalformedInputError, SymbolizeError
from symbolize.formats.types import DebugId, DebugIdKind
from symbolize.module import FileIdentity
from symbolize.remote.fetcher import Attempt, Verify
from symbolize.remote.options import RemoteOptions
from symbolize.remote.store import StoreKey, StoreTier, UnsafeKeyError
from symbolize.remote.symbol_path import SymbolPath, parse_symbol_path
from symbolize.remote.transfer import DownloadRefusedError, NotOnServerError, Session

if TYPE_CHECKING:
    from symbolize.remote.run import RemoteRun

MAX_NAME_CHARS = 255
SSQP_BUILD_ID_BYTES = 20
# A file.ptr is one line naming a path; a longer answer is not one.
MAX_FILE_PTR_BYTES = 4096
TWO_TIER_MARKER = "index2.txt"
FILE_PTR = "file.ptr"
ELF_DEBUG_NAME = "_.debug"
MACHO_DWARF_NAME = "_.dwarf"


@dataclass(frozen=True)
class SymbolStoreKey:
    """Where a file sits in a symbol store: ``<name>/<index>/<name>`` (see the module docstring)."""

    name: str
    index: str

    def relative(self, *, two_tier: bool = False, file_name: str | None = None) -> PurePosixPath:
        """The key as a relative path; ``file_name`` replaces the last part (the compressed name,
        ``file.ptr``); ``two_tier`` puts the name's first two characters in front."""
        path = PurePosixPath(self.name, self.index, file_name or self.name)
        return PurePosixPath(self.name[:2]) / path if two_tier else path

    def url(self, base: str, *, two_tier: bool = False, file_name: str | None = None) -> str:
        """The key's URL under the store at ``base`` (each part percent-encoded)."""
        parts = self.relative(two_tier=two_tier, file_name=file_name).parts
        return base.rstrip("/") + "/" + "/".join(quote(part, safe="") for part in parts)

    @property
    def compressed_name(self) -> str:
        """The name of the file's compressed form: its last character replaced by ``_``."""
        return self.name[:-1] + "_"

    def spellings(self) -> list[SymbolStoreKey]:
        """The key as symsrv stores spell it, then as SSQP does (lower case), without repeats: what a
        server, which may fold case, is asked for."""
        return list(dict.fromkeys([self, SymbolStoreKey(self.name.lower(), self.index.lower())]))

    def local_spellings(self) -> list[SymbolStoreKey]:
        """Every spelling a store on a case-sensitive file system may hold: the name as recorded and
        in lower case, the index in upper case, lower case, and with a PDB's age (after the 32 digits
        of its GUID) in lower case, as some tools write it."""
        indexes = [self.index, self.index.lower(), self.index[:32] + self.index[32:].lower()]
        names = [self.name, self.name.lower()]
        return list(dict.fromkeys(SymbolStoreKey(name, index) for name in names for index in indexes))

    def __str__(self) -> str:
        return str(self.relative())


def store_name(name: str) -> str | None:
    """``name`` when it can be part of a store path: a bare file name, not too long, printable."""
    if not is_file_name(name) or len(name) > MAX_NAME_CHARS or not name.isprintable():
        return None
    return name


def pdb_key(pdb_name: str, debug_id: DebugId | None) -> SymbolStoreKey | None:
    """``<pdb_name>/<GUID><age>/<pdb_name>`` for a PDB's GUID and age; None when either is unusable."""
    name = store_name(pdb_name)
    if name is None or debug_id is None or debug_id.kind is not DebugIdKind.PDB or len(debug_id.value) != 16:
        return None
    return SymbolStoreKey(name, str(debug_id))


def pe_key(image_name: str, code_id: DebugId | None) -> SymbolStoreKey | None:
    """``<image_name>/<TIMESTAMP><SizeOfImage>/<image_name>`` for a PE image's code ID."""
    name = store_name(image_name)
    if name is None or code_id is None or code_id.kind is not DebugIdKind.PE_CODE_ID or len(code_id.value) != 8:
        return None
    return SymbolStoreKey(name, str(code_id))


def elf_binary_key(name: str, build_id: DebugId | None) -> SymbolStoreKey | None:
    """SSQP's ``<name>/elf-buildid-<build ID>/<name>`` for an ELF binary."""
    return _ssqp_key(name, "elf-buildid-", _ssqp_build_id(build_id))


def elf_debug_key(build_id: DebugId | None) -> SymbolStoreKey | None:
    """SSQP's ``_.debug/elf-buildid-sym-<build ID>/_.debug`` for an ELF debug file."""
    return _ssqp_key(ELF_DEBUG_NAME, "elf-buildid-sym-", _ssqp_build_id(build_id))


def macho_binary_key(name: str, uuid: DebugId | None) -> SymbolStoreKey | None:
    """SSQP's ``<name>/mach-uuid-<UUID>/<name>`` for a Mach-O binary."""
    return _ssqp_key(name, "mach-uuid-", _ssqp_uuid(uuid))


def macho_dwarf_key(uuid: DebugId | None) -> SymbolStoreKey | None:
    """SSQP's ``_.dwarf/mach-uuid-sym-<UUID>/_.dwarf`` for a dSYM's DWARF file."""
    return _ssqp_key(MACHO_DWARF_NAME, "mach-uuid-sym-", _ssqp_uuid(uuid))


def _ssqp_key(name: str, prefix: str, hex_id: str | None) -> SymbolStoreKey | None:
    stored = store_name(name)
    return None if hex_id is None or stored is None else SymbolStoreKey(stored, prefix + hex_id)


def _ssqp_uuid(uuid: DebugId | None) -> str | None:
    """A Mach-O UUID in SSQP's spelling: its 16 bytes in lower-case hex."""
    if uuid is None or uuid.kind is not DebugIdKind.MACHO_UUID or len(uuid.value) != 16:
        return None
    return uuid.value.hex()


def _ssqp_build_id(build_id: DebugId | None) -> str | None:
    """A GNU build ID in SSQP's spelling: lower-case hex, zero-padded to 20 bytes."""
    if build_id is None or build_id.kind is not DebugIdKind.GNU_BUILD_ID or not 2 <= len(build_id.value) <= 64:
        return None
    return build_id.value.ljust(SSQP_BUILD_ID_BYTES, b"\0").hex()


class FilePointer(NamedTuple):
    """What a ``file.ptr`` says: where the file is (``target``) or why it is not there (``message``)."""

    target: str | None
    message: str | None


def parse_file_ptr(data: bytes, where: str | Path) -> FilePointer:
    """The ``file.ptr`` at ``where`` (a URL or a path), whose bytes are ``data``.

    Its first non-blank line is ``PATH:<path>``, ``MSG:<text>`` (the store's reason for not
    having the file), or a bare path (symstore's own pointers). Raises MalformedInputError naming
    ``where`` for anything else: a pointer too long to be one, bytes that are not text, nothing.
    """
    if len(data) > MAX_FILE_PTR_BYTES:
        raise InputLimitError("a file.ptr longer than a pointer", where, None, limit=MAX_FILE_PTR_BYTES)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise MalformedInputError("a file.ptr that is not text", where, err.start) from err
    line = next((line.strip() for line in text.splitlines() if line.strip()), "")
    if not line or not line.isprintable():
        raise MalformedInputError("a file.ptr that names no file", where)
    head, colon, rest = line.partition(":")
    if colon and head.upper() == "MSG":
        return FilePointer(None, rest.strip())
    if colon and head.upper() == "PATH":
        line = rest.strip()
        if not line:
            raise MalformedInputError("a file.ptr whose PATH is empty", where)
    return FilePointer(line, None)


def is_two_tier(root: Path) -> bool:
    """Whether the local store ``root`` has an ``index2.txt`` at its root; a store that cannot be
    looked at is not (its candidates are then refused, with why, as the registry stats them)."""
    try:
        return (root / TWO_TIER_MARKER).is_file()
    except OSError:
        return False


def local_store_candidates(
    stores: Iterable[Path], key: SymbolStoreKey, loader: FileLoader, roots: Sequence[Path]
) -> Iterator[Candidate]:
    """Where ``key`` may be in each local store of ``stores``, in order: the file in every local
    spelling (the two-tier layout first in a store with ``index2.txt``), then the file a
    ``file.ptr`` beside it points to.

    A ``file.ptr`` is read here (a line of text, through the loader) because where it points is a
    candidate; its target is yielded with the root of ``roots`` (every directory the user named)
    that holds it, else with the store, so the registry refuses a pointer out of them, with why:
    a store's pointer is followed only where the user said to look, as a PDB's recorded path is.
    """
    for store in dict.fromkeys(stores):
        layouts = (True, False) if is_two_tier(store) else (False,)
        for spelling in key.local_spellings():
            for two_tier in layouts:
                path = store / spelling.relative(two_tier=two_tier)
                yield Candidate(path, store)
                pointed = _pointed_to(path.parent / FILE_PTR, store, loader, roots)
                if pointed is not None:
                    yield pointed


def _pointed_to(pointer: Path, store: Path, loader: FileLoader, roots: Sequence[Path]) -> Candidate | None:
    """The candidate the local ``file.ptr`` at ``pointer`` names; None when there is none, it
    says why the file is missing (``MSG:``), or it names no file of this system."""
    try:
        if not pointer.is_file():
            return None
        with loader.byte_stream(pointer) as stream:
            data = stream.read(MAX_FILE_PTR_BYTES + 1)
        target = parse_file_ptr(data, pointer).target
    except (OSError, SymbolizeError):
        return None  # an unreadable or malformed pointer points nowhere; the next spelling may
    if target is None or "://" in target or (os.name != "nt" and (target.startswith("\\\\") or target[1:2] == ":")):
        return None
    path = Path(target) if Path(target).is_absolute() else store / target
    root = next((root for root in roots if lies_under(path, root)), store)
    return Candidate(path, root)


# The remote part: a key from the symbol path's HTTP stores (and the download caches), verified.

NAMESPACE = "symsrv"
# index2.txt is a marker (symstore writes a line of text); an answer longer than this is still one.
_MAX_MARKER_BYTES = 1 << 16


def download_key(key: SymbolStoreKey) -> StoreKey | None:
    """``key`` as the download store lays it out (``symsrv/<name>/<index>/<name>``, a downstream
    store's own layout); None when the name cannot name a file on every system (the store's rules)."""
    try:
        return StoreKey(NAMESPACE, (key.name, key.index, key.name))
    except UnsafeKeyError:
        return None


class StoreMessageError(NotOnServerError):
    """A ``file.ptr`` whose ``MSG:`` says why the store has no such file (a miss, in its words)."""


@dataclass(frozen=True)
class SymbolStoreAttempt:
    """Getting ``key`` from the symbol store at ``server`` (an :class:`~symbolize.remote.fetcher.Attempt`).

    As symsrv asks an HTTP store, for each spelling of the key (symsrv's, then SSQP's lower case):
    the file, then its compressed form (a one-file cabinet, decoded by
    :func:`symbolize.formats.cab.extract_single`), then ``file.ptr``; when every form is missing,
    the store's ``index2.txt`` says whether it is two-tier, and the two-tier layout is asked the
    same way. A ``file.ptr`` is followed only to a URL on the same server (scheme, host and port):
    a path on the server's network, or another host, is refused with why. ``MSG:`` is the store
    saying it has no such file.
    """

    server: str
    key: SymbolStoreKey

    def run(self, session: Session, sink: BinaryIO) -> str:
        last: NotOnServerError | None = None
        for two_tier in (False, True):
            if two_tier and not self._is_two_tier(session):
                break
            for spelling in self.key.spellings():
                try:
                    return self._get(session, sink, spelling, two_tier)
                except StoreMessageError:
                    raise  # the store said why it has no such file: no other spelling is asked
                except NotOnServerError as error:
                    last = error
        if last is None:  # no spelling: cannot happen for a key, said for the type checker
            raise NotOnServerError("no key to ask for", self.server, status=404, cacheable=False)
        raise last

    def _get(self, session: Session, sink: BinaryIO, spelling: SymbolStoreKey, two_tier: bool) -> str:
        plain = spelling.url(self.server, two_tier=two_tier)
        try:
            return session.download(plain, sink)
        except NotOnServerError:
            pass
        compressed = spelling.url(self.server, two_tier=two_tier, file_name=spelling.compressed_name)
        try:
            data = session.get_bytes(compressed, max_bytes=session.limits.max_bytes)
        except NotOnServerError:
            pass
        else:
            from symbolize.formats.cab import extract_single  # the cabinet reader, only for a `_` answer

            try:
                name, contents = extract_single(data, path=compressed, max_bytes=session.limits.max_bytes)
            except SymbolizeError as err:  # said as the refusal of this URL (a URL is no path)
                raise DownloadRefusedError(err.reason, compressed) from err
            if name.casefold() != spelling.name.casefold():
                raise DownloadRefusedError(f"the cabinet holds {name!r}, not {spelling.name}", compressed)
            sink.seek(0)
            sink.truncate()
            sink.write(contents)
            return compressed
        pointer_url = spelling.url(self.server, two_tier=two_tier, file_name=FILE_PTR)
        try:
            pointer = parse_file_ptr(session.get_bytes(pointer_url, max_bytes=MAX_FILE_PTR_BYTES), pointer_url)
        except MalformedInputError as err:
            raise DownloadRefusedError(err.reason, pointer_url) from err
        if pointer.message is not None:
            raise StoreMessageError(f"the store says: {pointer.message[:200]}", pointer_url, status=404, cacheable=True)
        target = pointer.target or ""
        if not _same_server(target, self.server):
            raise DownloadRefusedError(f"file.ptr points to {target[:200]!r}, not a URL on this server", pointer_url)
        return session.download(target, sink)

    def _is_two_tier(self, session: Session) -> bool:
        try:
            session.get_bytes(f"{self.server.rstrip('/')}/{TWO_TIER_MARKER}", max_bytes=_MAX_MARKER_BYTES)
        except NotOnServerError:
            return False
        except DownloadRefusedError:
            return True  # there, only larger than a marker needs to be
        return True


def _same_server(target: str, server: str) -> bool:
    """Whether ``target`` is an http(s) URL on the host and port of ``server`` (with its scheme);
    credentials in either do not count (they are sent only to the URL they are written in)."""
    wanted, found = urlsplit(server), urlsplit(target)
    try:
        return found.scheme in ("http", "https") and (found.scheme, found.hostname, found.port) == (
            wanted.scheme,
            wanted.hostname,
            wanted.port,
        )
    except ValueError:  # a port that is no number
        return False


def configured_symbol_path(options: RemoteOptions | None) -> SymbolPath:
    """The symbol path the run was given (``--symbol-server`` entries, and with ``--remote`` the
    environment's), read as one path so that a ``cache*`` entry applies to the entries after it."""
    return parse_symbol_path(";".join(options.symbol_servers)) if options is not None else SymbolPath()


@dataclass(frozen=True)
class LocalCabinetAttempt:
    """The compressed form of a key in a local store (``symstore /compress``'s output, a share
    mounted here): decoded into the download like an HTTP store's ``_`` answer, so it is verified
    and kept in a store tier before it is opened (an :class:`~symbolize.remote.fetcher.Attempt`).
    ``read(path, cap)`` reads the cabinet (the loader's, so that the loader stays the one that
    opens files); ``server`` is the store's directory."""

    server: str
    cabinet: Path
    name: str
    read: Callable[[Path, int], bytes]

    def run(self, session: Session, sink: BinaryIO) -> str:
        from symbolize.formats.cab import extract_single

        cap = session.limits.max_bytes
        stored, contents = extract_single(self.read(self.cabinet, cap), path=str(self.cabinet), max_bytes=cap)
        if stored.casefold() != self.name.casefold():
            raise MalformedInputError(f"the cabinet holds {stored!r}, not {self.name}", self.cabinet)
        sink.write(contents)
        return str(self.cabinet)


@dataclass(frozen=True)
class LocalStores:
    """The local stores a locator looked in, and how to read a file there (the loader's)."""

    roots: Sequence[Path]
    read: Callable[[Path, int], bytes]

    def cabinets(self, key: SymbolStoreKey) -> list[LocalCabinetAttempt]:
        """An attempt for each compressed form of ``key`` in the stores, in their order."""
        found: list[LocalCabinetAttempt] = []
        for root in dict.fromkeys(self.roots):
            layouts = (True, False) if is_two_tier(root) else (False,)
            for spelling in key.local_spellings():
                for two_tier in layouts:
                    path = root / spelling.relative(two_tier=two_tier, file_name=spelling.compressed_name)
                    with contextlib.suppress(OSError):
                        if lies_under(path, root) and path.is_file():
                            found.append(LocalCabinetAttempt(str(root), path, key.name, self.read))
        return found


def loader_reader(loader: FileLoader) -> Callable[[Path, int], bytes]:
    """``read(path, cap)``: at most ``cap`` bytes of ``path`` through the loader; more is an error."""

    def read(path: Path, cap: int) -> bytes:
        with loader.byte_stream(path) as stream:
            data = stream.read(cap + 1)
        if len(data) > cap:
            raise InputLimitError("a compressed file larger than the size cap", path, None, limit=cap)
        return data

    return read


def fetch_from_symbol_servers(
    remote: RemoteRun, owner: str, key: SymbolStoreKey, what: str, verify: Verify, local: LocalStores | None = None
) -> Path | None:
    """``key``'s verified file from the download caches, the compressed forms in ``local``'s
    stores and the run's symbol servers, raced; None when no symbol store is asked (none named,
    none holding a compressed form, not offline) or none has it (the miss kept for ``owner``).
    The chains' downstream stores are cache tiers, read and written (the first named receives
    the download, as symsrv's bottom-most store does); without one, the download store. A
    compressed form in a local store is decoded only when the run may make requests (not with
    ``--offline``): what it holds is then in a cache tier."""
    options = remote.options
    servers = configured_symbol_path(options).servers()
    stored = download_key(key)
    cabinets: list[LocalCabinetAttempt] = [] if local is None else local.cabinets(key)
    if stored is None or not (servers or cabinets or options.offline):
        return None
    caches = dict.fromkeys(cache for _, cache in servers if cache is not None)
    tiers = [StoreTier(cache, writable=True) for cache in caches]
    urls = dict.fromkeys(url for url, _ in servers)
    attempts: list[Attempt] = [*cabinets, *(SymbolStoreAttempt(url, key) for url in urls)]
    return remote.fetch(owner, stored, what, attempts, verify, tiers)


def pdb_verifier(expected: DebugId) -> Verify:
    """``verify(path)``: None when ``path`` is a PDB with ``expected``'s GUID and (DBI) age, else why not.
    Reads the PDB's identity from a few blocks (formats/pdb/deferred.py), not the PDB."""

    def verify(path: Path) -> str | None:
        from symbolize.formats.pdb.deferred import read_pdb_identity

        identity = read_pdb_identity(path)
        if identity is None:
            return "not a PDB (MSF 7.0) with an info and a DBI stream"
        if identity.debug_id != expected:
            return f"PDB {identity.debug_id} is not the one asked for, {expected}"
        return None

    return verify


def code_id_verifier(expected: DebugId, identify: Callable[[Path], FileIdentity]) -> Verify:
    """``verify(path)``: None when ``path`` is a PE image whose code ID (TimeDateStamp, SizeOfImage)
    is ``expected``, else why not (``identify`` is the loader's, which reads the file's headers)."""

    def verify(path: Path) -> str | None:
        try:
            found = identify(path)
        except SymbolizeError as err:
            return f"not a readable object file: {err.reason}"
        code_ids = [identity for identity in found.identities if identity.kind is DebugIdKind.PE_CODE_ID]
        if expected in code_ids:
            return None
        return f"code ID {', '.join(map(str, code_ids)) or 'none'} is not the one asked for, {expected}"

    return verify


def uuid_verifier(expected: DebugId) -> Verify:
    """``verify(path)``: None when a slice of the Mach-O file ``path`` has UUID ``expected``, else why
    not. Reads the load commands only (:func:`symbolize.formats.macho.load_commands.read_uuids`)."""

    def verify(path: Path) -> str | None:
        from symbolize.formats.macho.load_commands import read_uuids

        try:
            found = read_uuids(path)
        except SymbolizeError as err:
            return f"not a readable Mach-O file: {err.reason}"
        if expected in found.values():
            return None
        return f"UUID {', '.join(map(str, found.values())) or 'none'} is not the one asked for, {expected}"

    return verify


def identity_verifier(expected: DebugId, what: str, identify: Callable[[Path], FileIdentity]) -> Verify:
    """``verify(path)`` for an object file of ID ``expected``: :func:`code_id_verifier` for a PE code
    ID (through ``identify``, the loader's), :func:`uuid_verifier` for a Mach-O UUID; ``what`` is
    kept for callers that name the ID (the verifiers name it themselves)."""
    del what
    if expected.kind is DebugIdKind.MACHO_UUID:
        return uuid_verifier(expected)
    return code_id_verifier(expected, identify)


def build_id_verifier(expected: DebugId, identify: Callable[[Path], FileIdentity]) -> Verify:
    """debuginfod's check (symbolize/remote/debuginfod.py): an ELF file with GNU build ID ``expected``."""
    from symbolize.remote.debuginfod import build_id_verifier as elf_verifier

    return elf_verifier(expected, identify)


def fetch_elf_debug_file(remote: RemoteRun, owner: str, build_id: DebugId | None, loader: FileLoader) -> Path | None:
    """SSQP's ``_.debug/elf-buildid-sym-<build ID>/_.debug`` from the symbol stores, verified by
    build ID; None when it is no build ID or no store has it (the miss kept for ``owner``)."""
    key = elf_debug_key(build_id)
    if key is None or build_id is None:
        return None
    verify = build_id_verifier(build_id, loader.identify)
    return fetch_from_symbol_servers(remote, owner, key, f"{Path(owner).name} debug file ({key.index})", verify)


# The binaries a symbol store keeps by ID: (kind of the mapping's ID, its key, how a file is checked).
_BINARY_KEYS: tuple[
    tuple[DebugIdKind, Callable[[str, DebugId | None], SymbolStoreKey | None], Callable[[DebugId, FileLoader], Verify]],
    ...,
] = (
    (DebugIdKind.PE_CODE_ID, pe_key, lambda code_id, loader: code_id_verifier(code_id, loader.identify)),
    (DebugIdKind.MACHO_UUID, macho_binary_key, lambda uuid, _: uuid_verifier(uuid)),
    (DebugIdKind.GNU_BUILD_ID, elf_binary_key, lambda build_id, loader: build_id_verifier(build_id, loader.identify)),
)


def fetch_binary(remote: RemoteRun, filename: str, wanted: str, loader: FileLoader) -> Path | None:
    """The binary a mapping names (file ``filename``, ID text ``wanted``) from the symbol stores: a
    PE image by its code ID (``name.exe/<TIMESTAMP><SIZE>/name.exe``), a Mach-O binary by its
    UUID (SSQP's ``name/mach-uuid-<UUID>/name``), an ELF binary by its build ID (SSQP's
    ``name/elf-buildid-<build ID>/name``); None when ``wanted`` holds no such ID or no
    store has it (the miss kept under ``filename``). Each ``,``-separated part of ``wanted`` is
    read (a stamped mapping records several IDs)."""
    name = base_name(filename)
    for part in (part.strip() for part in wanted.split(",")):
        for kind, make_key, verifier in _BINARY_KEYS:
            debug_id = DebugId.parse(part, kind)
            key = make_key(name, debug_id)
            if key is None or debug_id is None:
                continue
            verify = verifier(debug_id, loader)
            found = fetch_from_symbol_servers(remote, filename, key, f"{name} ({key.index})", verify)
            if found is not None:
                return found
    return None
