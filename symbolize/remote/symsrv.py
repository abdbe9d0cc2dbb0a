"""Asking symbol stores for a key: the run's HTTP stores and the compressed forms in local stores,
raced through the run's Fetcher, the first answer that verifies by ID kept.

The layout (keys, ``file.ptr``, two-tier stores) is symbolize/remote/symsrv_layout.py's. The run's
symbol path (``--symbol-server``, and with ``--remote`` the environment's) gives HTTP stores and the
downstream stores their files are kept in; a key is asked of every store at once through the run's
Fetcher (symbolize/remote/fetcher.py), each store by a :class:`SymbolStoreAttempt` (every spelling
and form, as symsrv asks), a compressed form in a local store by a :class:`LocalCabinetAttempt`,
and the first answer that verifies by ID (symbolize/remote/verifiers.py) is stored, then opened by
the registry like any local candidate. A mapping's binary comes the same way by its ID
(:func:`fetch_binary`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO
from urllib.parse import urlsplit

from symbolize.discovery.paths import base_name, lies_under
from symbolize.discovery.registry import FileLoader
from symbolize.formats.errors import InputLimitError, MalformedInputError, SymbolizeError
from symbolize.formats.types import DebugId, DebugIdKind
from symbolize.remote.fetcher import Attempt, Verify
from symbolize.remote.store import StoreKey, StoreTier, UnsafeKeyError
from symbolize.remote.symsrv_layout import (
    FILE_PTR,
    MAX_FILE_PTR_BYTES,
    TWO_TIER_MARKER,
    SymbolStoreKey,
    configured_symbol_path,
    elf_binary_key,
    elf_debug_key,
    is_two_tier,
    macho_binary_key,
    parse_file_ptr,
    pe_key,
)
from symbolize.remote.transfer import DownloadRefusedError, NotOnServerError, Session
from symbolize.remote.verifiers import build_id_verifier, code_id_verifier, uuid_verifier

if TYPE_CHECKING:
    from symbolize.remote.run import RemoteRun

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
