"""Which servers a run may ask for debug files, and the caps on each download.

Network only when asked: the default :class:`RemoteOptions` names no server and reads no cache.
:func:`from_environment` reads what elfutils' debuginfod client and Microsoft's symsrv read
(``DEBUGINFOD_URLS``, ``DEBUGINFOD_TIMEOUT``, ``DEBUGINFOD_MAXTIME``, ``DEBUGINFOD_MAXSIZE``,
``_NT_SYMBOL_PATH``), for ``--remote`` (the user's opt-in to the environment's servers), with
the meanings elfutils' debuginfod-client(3) gives them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

# elfutils' defaults: DEBUGINFOD_TIMEOUT 90 s, cache_miss_s 600 s.
DEFAULT_STALL_TIMEOUT = 90.0
DEFAULT_MISS_TTL = 600.0
# No server has a reason to send a debug file above 4 GiB (elfutils has no default cap: its
# 0 means none, which a hostile server fills a disk with).
DEFAULT_MAX_FILE_BYTES = 4 << 30
# Files fetched at once by Fetcher.fetch_many (each racing its servers).
DEFAULT_PARALLEL_FETCHES = 8


@dataclass(frozen=True)
class RemoteOptions:
    """Servers and caps for the debug files of one run; frozen, read by the Fetcher.

    ``debuginfod_urls``: base URLs of debuginfod servers (``<url>/buildid/<hex>/debuginfo``).
    ``symbol_servers``: raw symbol path entries (``srv*cache*URL``, directories...), parsed by
    symbolize/remote/symbol_path.py. ``offline``: caches only, no request. ``cache_dir``: the
    download store's root (None: ``downloads`` under the per-user cache directory).
    ``stall_timeout``: seconds without a byte after which a server is abandoned (a stall, not a
    total). ``total_timeout``: seconds one download may take in all (None: no cap).
    ``max_file_bytes``: the largest file accepted. ``miss_ttl``: seconds a server's "not found"
    (404/410) is believed without asking again.
    """

    debuginfod_urls: tuple[str, ...] = ()
    symbol_servers: tuple[str, ...] = ()
    offline: bool = False
    cache_dir: Path | None = None
    stall_timeout: float = DEFAULT_STALL_TIMEOUT
    total_timeout: float | None = None
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    miss_ttl: float = DEFAULT_MISS_TTL
    parallel_fetches: int = DEFAULT_PARALLEL_FETCHES

    @property
    def asked(self) -> bool:
        """Whether any remote source or cache is to be consulted: a server named, or offline."""
        return self.offline or bool(self.debuginfod_urls) or bool(self.symbol_servers)

    @property
    def network(self) -> bool:
        """Whether requests may be made at all."""
        return not self.offline and (bool(self.debuginfod_urls) or bool(self.symbol_servers))

    def store_root(self) -> Path:
        """The download store's root: ``cache_dir``, else ``downloads`` in the per-user cache."""
        if self.cache_dir is not None:
            return self.cache_dir
        from symbolize.cache import default_cache_dir

        return default_cache_dir() / "downloads"


def _seconds(text: str | None) -> float | None:
    """A positive number of seconds, else None (elfutils ignores what it cannot read too)."""
    if not text:
        return None
    try:
        value = float(text.strip())
    except ValueError:
        return None
    return value if value > 0 else None


def _bytes(text: str | None) -> int | None:
    if not text:
        return None
    try:
        value = int(text.strip(), 0)
    except ValueError:
        return None
    return value if value > 0 else None


def from_environment(environ: Mapping[str, str] | None = None, **overrides: object) -> RemoteOptions:
    """Options from the environment, as elfutils' client and symsrv read it; ``overrides`` (any
    :class:`RemoteOptions` field) win over it.

    ``DEBUGINFOD_URLS``: space-separated base URLs. ``DEBUGINFOD_TIMEOUT``: the stall timeout.
    ``DEBUGINFOD_MAXTIME``: the total timeout. ``DEBUGINFOD_MAXSIZE``: the size cap.
    ``_NT_SYMBOL_PATH``: ``;``-separated entries, kept raw in ``symbol_servers``.
    Call it only when the user opted in (``--remote``): it names servers.
    """
    env = os.environ if environ is None else environ
    fields: dict[str, object] = {
        "debuginfod_urls": tuple(url for url in env.get("DEBUGINFOD_URLS", "").split() if url),
        "symbol_servers": tuple(part for part in env.get("_NT_SYMBOL_PATH", "").split(";") if part.strip()),
    }
    if (stall := _seconds(env.get("DEBUGINFOD_TIMEOUT"))) is not None:
        fields["stall_timeout"] = stall
    if (total := _seconds(env.get("DEBUGINFOD_MAXTIME"))) is not None:
        fields["total_timeout"] = total
    if (size := _bytes(env.get("DEBUGINFOD_MAXSIZE"))) is not None:
        fields["max_file_bytes"] = size
    fields.update(overrides)
    return RemoteOptions(**fields)  # type: ignore[arg-type]
