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

Providers: debuginfod's (``/buildid/<hex>/debuginfo`` and ``/executable``, symbolize/remote/
debuginfod.py). Others register with :func:`register_server_requests` (a symbol server's: PDB by
GUID + age, PE by code ID, SSQP's ELF and Mach-O keys).
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


# A provider: the requests for ``image`` to the servers ``options`` name, or a ServerCheck saying
# why none can be made (``not-asked``); [] when its protocol has no server named or does not
# serve the image's format.
ServerRequests = Callable[[ObjectFile, RemoteOptions], "list[ServerRequest | ServerCheck]"]
_PROVIDERS: list[ServerRequests] = []


def register_server_requests(provider: ServerRequests) -> ServerRequests:
    """Ask ``provider`` too for every audited binary (a protocol's module registers its own)."""
    _PROVIDERS.append(provider)
    return provider


def check_servers(
    image: ObjectFile, options: RemoteOptions, *, progress: DownloadProgress | None = None
) -> tuple[ServerCheck, ...]:
    """Every file of ``image`` the servers ``options`` names should have, fetched and verified now
    (module docstring). A ``not-asked`` check when no provider can ask any named server for it."""
    asked = [item for provider in _PROVIDERS for item in provider(image, options)]
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
        from symbolize.formats.open import open_object

        try:
            opened = open_object(path)
        except SymbolizeError as err:
            return f"not a readable object file: {err.reason}"
        try:
            info = opened.debug_info()
            return None if info.has_dwarf or info.has_line_info else "holds no debug info (stripped)"
        finally:
            opened.close()

    return verify_debug_file


def _debuginfod_requests(image: ObjectFile, options: RemoteOptions) -> list[ServerRequest | ServerCheck]:
    """debuginfod's ``debuginfo`` (required) and ``executable`` of an ELF image, by its build ID."""
    if not options.debuginfod_urls or image.format != "elf":
        return []
    from symbolize.remote import debuginfod

    build_id = debuginfod.build_id_hex(image.debug_id)
    if build_id is None or image.debug_id is None:
        detail = "the binary has no GNU build ID (link with --build-id): debuginfod serves files by build ID"
        return [ServerCheck(DEBUG_FILE, "debuginfod", image.path.name, "not-asked", True, detail=detail)]
    verify = debuginfod.build_id_verifier(image.debug_id)
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


register_server_requests(_debuginfod_requests)
