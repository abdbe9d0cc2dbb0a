"""Debug files from servers: options, the download store, the capped transfer and the fetcher.

Remote sources are locators with a download store behind them (PLAN: issue 24): a locator asks
:class:`Fetcher` for a key, gets the path of a verified file in a store tier, and the registry
opens it like any local candidate. Nothing here touches the network unless
:class:`RemoteOptions` names a server.
"""

from symbolize.remote.fetcher import Attempt, Fetched, Fetcher, FetchRecord, FetchRequest, GetAttempt, Missed, Verify
from symbolize.remote.options import RemoteOptions, download_store_root, from_environment, server_url
from symbolize.remote.progress import DownloadProgress, TerminalDownloadProgress, stderr_download_progress
from symbolize.remote.store import DownloadStore, StoreKey, StoreTier, UnsafeKeyError
from symbolize.remote.transfer import (
    Cancellation,
    CancelledError,
    DownloadRefusedError,
    Limits,
    NotOnServerError,
    ServerUnreachableError,
    Session,
    TransferError,
    redact,
)

__all__ = [
    "Attempt",
    "Cancellation",
    "CancelledError",
    "DownloadProgress",
    "DownloadRefusedError",
    "DownloadStore",
    "FetchRecord",
    "FetchRequest",
    "Fetched",
    "Fetcher",
    "GetAttempt",
    "Limits",
    "Missed",
    "NotOnServerError",
    "RemoteOptions",
    "ServerUnreachableError",
    "Session",
    "StoreKey",
    "StoreTier",
    "TerminalDownloadProgress",
    "TransferError",
    "UnsafeKeyError",
    "Verify",
    "download_store_root",
    "from_environment",
    "redact",
    "server_url",
    "stderr_download_progress",
]
