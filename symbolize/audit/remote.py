"""``audit --remote``: do the named servers have each binary's debug file (and the binary itself)?

What a release pipeline checks after its upload step. For each binary the auditor asks every
server protocol that can serve it (a *provider* turns the binary into server requests: which
store key, which URLs, how to verify the answer) and fetches each file for real:

- through a fresh temporary download store, no cache tier and no remembered miss, so an answer is
  the servers' own today, never a cache's (the files are discarded with the store);
- verified as a run verifies it (the build ID, GUID + age or UUID asked for; a debug file must
  also hold debug info), so a server that holds another build's file, or a stripped one, does not
  pass.

A :class:`ServerCheck` per file says ``on-server`` (and from which URL), ``not-on-server`` or
``server-unreachable`` (the URLs tried, what each answered, the answers refused), or, when no
named server can be asked for it, ``not-asked`` (no build ID; no server of a protocol that serves
the format). A *required* check that does not pass (the debug file) is a shortfall, exit 1; the
binary's is reported, not required (a profile stamped where it was made is symbolized elsewhere
from it, but a debug file stands in for an ELF binary).

Providers (others register with :func:`register_server_requests`):

- debuginfod's, for ELF files: ``/buildid/<hex>/debuginfo`` and ``/executable``
  (symbolize/remote/debuginfod.py);
- the symbol servers' (``--symbol-server``, ``_NT_SYMBOL_PATH`` with ``--remote``;
  symbolize/remote/symsrv.py, every form a store may hold: plain, ``_`` cabinet, ``file.ptr``,
  two-tier): a PE image's PDB by GUID + age and the image by code ID; a Mach-O slice's dSYM DWARF
  file and binary by UUID and an ELF file's debug file and binary by build ID, in SSQP's keys.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import NamedTuple

from symbolize.audit.report import ServerCheck
from symbolize.formats.errors import SymbolizeError
from symbolize.formats.types import ObjectFile
from symbolize.module import FileIdentity
from symbolize.remote.fetcher import Attempt, Fetched, Fetcher, FetchRequest, Verify
from symbolize.remote.options import RemoteOptions
from symbolize.remote.progress import DownloadProgress
from symbolize.remote.store import StoreKey

__all__ = ["ServerCheck", "ServerRequest", "check_servers", "register_server_requests"]

DEBUG_FILE = "debug file"
BINARY = "binary"


class ServerRequest(NamedTuple):
    """One file a provider asks the servers of its protocol for."""

    role: str  # DEBUG_FILE or BINARY
    protocol: str  # "debuginfod", "symsrv"
    what: str  # names the file in reports: "app debuginfo (build ID 5d85...)"
    key: StoreKey
    attempts: Sequence[Attempt]
    verify: Verify
    required: bool


# What a download is verified by: the loader's reading of a file's format and IDs (Loader.identify).
Identify = Callable[[Path], FileIdentity]
# A provider: the requests for ``image`` to the servers ``options`` name, their downloads verified
# through ``identify``, or a ServerCheck saying why none can be made (``not-asked``); [] when its
# protocol has no server named or does not serve the image's format.
ServerRequests = Callable[[ObjectFile, RemoteOptions, Identify], "list[ServerRequest | ServerCheck]"]
_PROVIDERS: list[ServerRequests] = []


def register_server_requests(provider: ServerRequests) -> ServerRequests:
    """Ask ``provider`` too for every audited binary (a protocol's module registers its own)."""
    _PROVIDERS.append(provider)
    return provider


def check_servers(
    image: ObjectFile, options: RemoteOptions, identify: Identify, *, progress: DownloadProgress | None = None
) -> tuple[ServerCheck, ...]:
    """Every file of ``image`` the servers ``options`` names should have, fetched and verified now
    (module docstring; ``identify`` is the loader's). A ``not-asked`` check when no provider can ask
    any named server for it."""
    asked = [item for provider in _PROVIDERS for item in provider(image, options, identify)]
    requests = [item for item in asked if isinstance(item, ServerRequest)]
    checks = [item for item in asked if isinstance(item, ServerCheck)]
    if not asked:
        detail = f"no server named serves {image.format} files (debuginfod serves ELF; symbol servers PE, PDB, Mach-O)"
        checks.append(ServerCheck(DEBUG_FILE, "-", image.path.name, "not-asked", True, detail=detail))
    if requests:
        with tempfile.TemporaryDirectory(prefix="symbolize-audit-") as store:
            fetcher = Fetcher(replace(options, cache_dir=Path(store), offline=False), progress=progress)
            answers = fetcher.fetch_many(
                [FetchRequest(request.key, request.what, request.attempts, request.verify) for request in requests]
            )
        for request, answer in zip(requests, answers, strict=True):
            head = (request.role, request.protocol, request.what)
            if isinstance(answer, Fetched):
                checks.append(ServerCheck(*head, "on-server", request.required, url=answer.url, refused=answer.refused))
            else:
                verdict = answer.reason if answer.reason != "not-in-cache" else "not-asked"
                checks.append(ServerCheck(*head, verdict, request.required, tried=answer.tried, detail=answer.detail,
                                          refused=answer.refused))  # fmt: skip
    return tuple(checks)


def holding_debug_info(verify: Verify) -> Verify:
    """``verify``, and then the file must hold debug info (DWARF, or a PDB's): a debug file the
    server has only stripped is no debug file."""

    def verify_debug_file(path: Path) -> str | None:
        reason = verify(path)
        if reason is not None:
            return reason
        from symbolize.loader import Loader

        with Loader() as loader:
            try:
                info = loader.open(path).debug_info()
            except SymbolizeError as err:
                return f"not a readable object file: {err.reason}"
        return None if info.has_dwarf or info.has_line_info else "holds no debug info (stripped)"

    return verify_debug_file


def _debuginfod_requests(
    image: ObjectFile, options: RemoteOptions, identify: Identify
) -> list[ServerRequest | ServerCheck]:
    """debuginfod's ``debuginfo`` (required) and ``executable`` of an ELF image, by its build ID."""
    if not options.debuginfod_urls or image.format != "elf":
        return []
    from symbolize.remote import debuginfod

    build_id = debuginfod.build_id_hex(image.debug_id)
    if build_id is None or image.debug_id is None:
        detail = "the binary has no GNU build ID (link with --build-id): debuginfod serves files by build ID"
        return [ServerCheck(DEBUG_FILE, "debuginfod", image.path.name, "not-asked", True, detail=detail)]
    verify = debuginfod.build_id_verifier(image.debug_id, identify)
    requests: list[ServerRequest | ServerCheck] = []
    wanted: tuple[tuple[debuginfod.Artifact, str, bool], ...] = (("debuginfo", DEBUG_FILE, True),
                                                                  ("executable", BINARY, False))  # fmt: skip
    for artifact, role, required in wanted:
        requests.append(
            ServerRequest(
                role,
                "debuginfod",
                debuginfod.describe(artifact, build_id, image.path.name),
                debuginfod.store_key(build_id, artifact),
                debuginfod.attempts(options.debuginfod_urls, build_id, artifact),
                holding_debug_info(verify) if role == DEBUG_FILE else verify,
                required,
            )
        )
    return requests


def _symbol_server_requests(
    image: ObjectFile, options: RemoteOptions, identify: Identify
) -> list[ServerRequest | ServerCheck]:
    """The symbol stores' keys of ``image``'s debug file (required) and of the image itself."""
    from symbolize.remote import symsrv, symsrv_layout, verifiers

    servers = list(dict.fromkeys(url for url, _ in symsrv_layout.configured_symbol_path(options).servers()))
    if not servers:
        return []
    from symbolize.discovery.paths import base_name
    from symbolize.formats.types import DebugIdKind, HintKind
    from symbolize.remote.debuginfod import build_id_verifier

    name = image.path.name
    ids = {identity.kind: identity for identity in image.identities()}
    wanted: list[tuple[str, symsrv_layout.SymbolStoreKey | None, Verify | None]] = []
    if image.format == "pe":
        pdb_id = ids.get(DebugIdKind.PDB)
        pdb_name = next((base_name(hint.name) for hint in image.debug_hints() if hint.kind is HintKind.PDB), "")
        pdb_key = symsrv_layout.pdb_key(pdb_name, pdb_id)
        wanted.append((DEBUG_FILE, pdb_key, verifiers.pdb_verifier(pdb_id) if pdb_id is not None else None))
        code_id = ids.get(DebugIdKind.PE_CODE_ID)
        code_verify = verifiers.identity_verifier(code_id, "code ID", identify) if code_id is not None else None
        wanted.append((BINARY, symsrv_layout.pe_key(name, code_id), code_verify))
    elif image.format == "macho":
        uuid = ids.get(DebugIdKind.MACHO_UUID)
        verify = verifiers.identity_verifier(uuid, "UUID", identify) if uuid is not None else None
        wanted.append((DEBUG_FILE, symsrv_layout.macho_dwarf_key(uuid), holding_debug_info(verify) if verify else None))
        wanted.append((BINARY, symsrv_layout.macho_binary_key(name, uuid), verify))
    elif image.format == "elf":
        build_id = ids.get(DebugIdKind.GNU_BUILD_ID)
        verify = build_id_verifier(build_id, identify) if build_id is not None else None
        debug_verify = holding_debug_info(verify) if verify else None
        wanted.append((DEBUG_FILE, symsrv_layout.elf_debug_key(build_id), debug_verify))
        wanted.append((BINARY, symsrv_layout.elf_binary_key(name, build_id), verify))
    requests: list[ServerRequest | ServerCheck] = []
    for role, key, verify in wanted:
        stored = symsrv.download_key(key) if key is not None else None
        if key is None or stored is None or verify is None:
            detail = f"the {role} has no symbol-store key: the image records no ID (or name) of its kind"
            requests.append(ServerCheck(role, "symsrv", name, "not-asked", role == DEBUG_FILE, detail=detail))
            continue
        attempts = [symsrv.SymbolStoreAttempt(server, key) for server in servers]
        requests.append(ServerRequest(role, "symsrv", f"{key.name} ({key.index})", stored, attempts, verify,
                                      role == DEBUG_FILE))  # fmt: skip
    return requests


register_server_requests(_debuginfod_requests)
register_server_requests(_symbol_server_requests)
