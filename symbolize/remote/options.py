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

# elfutils' defaults: DEBUGINFOD_TIMEOUT 90 s for at least 100 KiB, cache_miss_s 600 s.
DEFAULT_STALL_TIMEOUT = 90.0
DEFAULT_STALL_MIN_BYTES = 100 * 1024
DEFAULT_MISS_TTL = 600.0
# No server has a reason to send a debug file above 4 GiB (elfutils has no default cap: its
# 0 means none, which a hostile server fills a disk with).
DEFAULT_MAX_FILE_BYTES = 4 << 30
# Files fetched at once by Fetcher.fetch_many (each racing its servers).
DEFAULT_PARALLEL_FETCHES = 8
# The pause before the first retry after a 5xx or a reset (it doubles for the second).
DEFAULT_RETRY_DELAY = 0.25


@dataclass(frozen=True)
class RemoteOptions:
    """Servers and caps for the debug files of one run; frozen, read by the Fetcher.

    ``debuginfod_urls``: base URLs of debuginfod servers (``<url>/buildid/<hex>/debuginfo``).
    ``symbol_servers``: raw symbol path entries (``srv*cache*URL``, directories...), parsed by
    symbolize/remote/symbol_path.py. ``offline``: caches only, no request. ``cache_dir``: the
    download store's root itself (None: :func:`download_store_root` of the per-user cache; for
    ``--cache-dir DIR`` pass ``download_store_root(DIR)``).
    ``stall_timeout``: a server that sends less than ``stall_min_bytes`` (or the rest of the
    file) in this many seconds is abandoned: elfutils' DEBUGINFOD_TIMEOUT rule, a rate, not a
    total. ``total_timeout``: seconds one download may take in all (None: no cap).
    ``max_file_bytes``: the largest file accepted. ``miss_ttl``: seconds a server's "not found"
    (404/410) is believed without asking again. ``parallel_fetches``: files fetched at once by
    Fetcher.fetch_many. ``retry_delay``: the pause before the first of the two retries after a 5xx
    or a reset (doubled before the second).
    """

    debuginfod_urls: tuple[str, ...] = ()
    symbol_servers: tuple[str, ...] = ()
    offline: bool = False
    cache_dir: Path | None = None
    stall_timeout: float = DEFAULT_STALL_TIMEOUT
    stall_min_bytes: int = DEFAULT_STALL_MIN_BYTES
    total_timeout: float | None = None
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    miss_ttl: float = DEFAULT_MISS_TTL
    parallel_fetches: int = DEFAULT_PARALLEL_FETCHES
    retry_delay: float = DEFAULT_RETRY_DELAY

    @property
    def asked(self) -> bool:
        """Whether any remote source or cache is to be consulted: a server named, or offline."""
        return self.offline or bool(self.debuginfod_urls) or bool(self.symbol_servers)

    @property
    def network(self) -> bool:
        """Whether requests may be made at all."""
        return not self.offline and (bool(self.debuginfod_urls) or bool(self.symbol_servers))

    def store_root(self) -> Path:
        """The download store's root: ``cache_dir``, else :func:`download_store_root`'s default."""
        return self.cache_dir if self.cache_dir is not None else download_store_root(None)


def download_store_root(cache_dir: Path | None) -> Path:
    """The download store of a cache directory (``--cache-dir``, else the per-user cache, as the
    indexes'): its ``downloads`` subdirectory."""
    if cache_dir is None:
        from symbolize.cache import default_cache_dir

        cache_dir = default_cache_dir()
    return cache_dir / "downloads"


def server_url(text: str) -> str:
    """``text`` as a server's base URL (http or https, with a host; no trailing ``/``), else a
    SymbolizeError naming it: what ``--debuginfod URL`` and DEBUGINFOD_URLS entries are checked by
    before any request."""
    import urllib.parse

    from symbolize.errors import SymbolizeError

    stripped = text.strip()
    try:
        parts = urllib.parse.urlsplit(stripped)
        parts.port  # noqa: B018 - raises ValueError for a port that is no number or out of range
    except ValueError as error:
        raise SymbolizeError(f"{stripped}: not a server URL: {error}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname or any(c.isspace() for c in stripped):
        # The URL in the message, not as the error's path: a Path would fold its "//".
        raise SymbolizeError(f"{stripped}: not a server URL (http:// or https:// and a host)")
    return stripped.rstrip("/")


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
