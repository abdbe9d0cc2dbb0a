"""The debuginfod client: a file by GNU build ID from every server named, raced, verified, cached.

The protocol is elfutils' (debuginfod(8), "WEBAPI"): ``GET <server>/buildid/<hex>/debuginfo``
(the separate debug file, or the binary itself when it carries its DWARF) and
``GET <server>/buildid/<hex>/executable``, the build ID in lower-case hex. A 404 means the server
has no such file. The transfer (stall and total timeouts, size cap, retries on 5xx and resets
only, a 404 remembered for the miss TTL) and the race of the servers are the Fetcher's
(symbolize/remote/fetcher.py); this module says what to ask and how to check the answer: a file
is kept only when it is an ELF file whose GNU build ID is the one asked for.

Caches, in elfutils' layout ``<cache>/<buildid>/debuginfo|executable``: the download store's
``debuginfod/`` (read and write), and before it, read only, elfutils' own client cache
(``$DEBUGINFOD_CACHE_PATH``, else ``$XDG_CACHE_HOME/debuginfod_client``, else
``~/.cache/debuginfod_client``, as debuginfod-client(3) chooses it), so that what gdb or
debuginfod-find fetched is used without a request. Our store keeps elfutils' layout under its
``debuginfod/`` directory, so a user may point ``DEBUGINFOD_CACHE_PATH`` there for them too.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from symbolize.formats.errors import SymbolizeError
from symbolize.formats.types import DebugId, DebugIdKind
from symbolize.module import FileIdentity
from symbolize.remote.fetcher import GetAttempt, Verify
from symbolize.remote.store import StoreKey, StoreTier

if TYPE_CHECKING:
    from symbolize.remote.run import RemoteRun

Artifact = Literal["debuginfo", "executable"]
NAMESPACE = "debuginfod"
# What a build ID is on the wire: lower-case hex, as elfutils' client sends it. 8 bytes (lld's
# --build-id=fast) to 64; a PE code ID or a PDB GUID+age is another kind of ID, not asked here.
_BUILD_ID_HEX = re.compile(r"(?:[0-9a-f]{2}){8,64}")


def build_id_hex(debug_id: DebugId | None) -> str | None:
    """``debug_id`` as debuginfod names it (lower-case hex), or None when it is not a GNU build ID."""
    if debug_id is None or debug_id.kind is not DebugIdKind.GNU_BUILD_ID:
        return None
    text = debug_id.value.hex()
    return text if _BUILD_ID_HEX.fullmatch(text) else None


def store_key(build_id: str, artifact: Artifact) -> StoreKey:
    """Where the ``artifact`` of ``build_id`` (validated hex) lives in a store, elfutils' layout."""
    return StoreKey(NAMESPACE, (build_id, artifact))


def artifact_url(server: str, build_id: str, artifact: Artifact) -> str:
    """``<server>/buildid/<hex>/<artifact>``; a trailing slash of the server's URL is dropped."""
    return f"{server.rstrip('/')}/buildid/{build_id}/{artifact}"


def elfutils_cache_dir(environ: Mapping[str, str] | None = None) -> Path | None:
    """elfutils' client cache, as debuginfod-client(3) chooses it; None without a home to put it in."""
    env = os.environ if environ is None else environ
    if env.get("DEBUGINFOD_CACHE_PATH"):
        return Path(env["DEBUGINFOD_CACHE_PATH"])
    if env.get("XDG_CACHE_HOME"):
        return Path(env["XDG_CACHE_HOME"]) / "debuginfod_client"
    home = env.get("HOME")
    return Path(home) / ".cache" / "debuginfod_client" if home else None


def system_tiers(environ: Mapping[str, str] | None = None) -> tuple[StoreTier, ...]:
    """The caches read before our store: elfutils' client cache, read only."""
    directory = elfutils_cache_dir(environ)
    return () if directory is None else (StoreTier(directory, writable=False),)


def build_id_verifier(expected: DebugId, identify: Callable[[Path], FileIdentity]) -> Verify:
    """``verify(path)``: None when ``path`` is an ELF file with GNU build ID ``expected``, else why not
    (``identify`` is the loader's, which reads the file's headers)."""

    def verify(path: Path) -> str | None:
        try:
            found = identify(path)
        except SymbolizeError as err:
            return f"not a readable object file: {err.reason}"
        if found.format != "elf":
            return f"a {found.format} file, not ELF"
        if found.debug_id != expected:
            return f"build ID {found.debug_id or 'none'} is not the one asked for, {expected}"
        return None

    return verify


def attempts(servers: tuple[str, ...], build_id: str, artifact: Artifact) -> list[GetAttempt]:
    """One GET per server, raced by the Fetcher."""
    return [GetAttempt(server, artifact_url(server, build_id, artifact)) for server in servers]


def describe(artifact: Artifact, build_id: str, name: str) -> str:
    """``libc.so.6 debuginfo (build ID 93ac...)``: what a progress line and a miss call the file."""
    return f"{name} {artifact} (build ID {build_id})"


def fetch_artifact(
    remote: RemoteRun, debug_id: DebugId | None, artifact: Artifact, *, name: str, owner: str
) -> tuple[Path, Path] | None:
    """The ``artifact`` of the file whose GNU build ID is ``debug_id``, from the caches or the run's
    debuginfod servers, verified: (its path, the tier directory it lies under); None when it is not
    a build ID, debuginfod is not asked (no server named, not offline), or no one has it (the miss
    kept for ``owner``). ``name`` (the binary's file name) names it in progress lines and misses."""
    build_id = build_id_hex(debug_id)
    options = remote.options
    if build_id is None or debug_id is None or not (options.debuginfod_urls or options.offline):
        return None
    key = store_key(build_id, artifact)
    servers = attempts(options.debuginfod_urls, build_id, artifact)
    verify = build_id_verifier(debug_id, remote.identify)
    path = remote.fetch(owner, key, describe(artifact, build_id, name), servers, verify, system_tiers())
    return None if path is None else (path, path.parents[len(key.parts) - 1])
