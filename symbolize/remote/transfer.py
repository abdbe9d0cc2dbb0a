"""One capped HTTP GET into a file: stall timeout, total timeout, size cap, redirects, retries, cancel.

Hand-written on the standard library's http.client rather than urllib or a third-party client:
what a debug-file download needs is the socket, to abandon a stalled server the moment a
timeout (a stall: no byte for ``stall_timeout`` seconds, elfutils' DEBUGINFOD_TIMEOUT, not a
total) or another server's win says so, by shutting it down from another thread; and its own
redirect rule (http/https only, counted), its own retry rule (5xx and connection resets only,
never a timeout), and a size cap checked against Content-Length and again while reading.
urllib hides the socket and follows redirects to ftp:; requests/httpx are not in the
dependency set and would add nothing of this.
"""

from __future__ import annotations

import contextlib
import http.client
import socket
import ssl
import threading
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import BinaryIO

from symbolize.errors import SymbolizeError

_CHUNK = 64 * 1024
_REDIRECTS = {301, 302, 303, 307, 308}
# The statuses a server says "not here" with: 404 and 410 are cached as misses; other 4xx (403
# from a store behind S3, 401) are not, since credentials or a policy may change.
_CACHEABLE_MISS = {404, 410}
_USER_AGENT = "symbolize (debug-file fetcher)"


class TransferError(SymbolizeError):
    """A download failed; ``url`` is the one asked for (the message names it)."""

    def __init__(self, message: str, url: str) -> None:
        self.url = url
        super().__init__(message, None)
        self.args = (f"{url}: {message}",)

    def __str__(self) -> str:
        return f"{self.url}: {self.reason}"


class NotOnServerError(TransferError):
    """The server answered that it does not have the file (``status``); ``cacheable``: 404/410."""

    def __init__(self, message: str, url: str, *, status: int, cacheable: bool) -> None:
        self.status = status
        self.cacheable = cacheable
        super().__init__(message, url)


class ServerUnreachableError(TransferError):
    """No answer: connection refused or reset, a stall, the total timeout, 5xx after the retries."""


class DownloadRefusedError(TransferError):
    """An answer that is not accepted: too large, a redirect elsewhere than http(s), a bad body."""


class CancelledError(TransferError):
    """Another server's answer won, or the run was interrupted (Ctrl-C)."""


class Cancellation:
    """Cancels the downloads registered with it, from any thread: sets a flag the transfers check
    between reads and shuts their sockets down, so a read blocked on a silent server returns now
    rather than after the stall timeout. Children are cancelled with their parent."""

    def __init__(self, parent: Cancellation | None = None) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._sockets: set[socket.socket] = set()
        self._children: set[Cancellation] = set()
        self._parent = parent
        if parent is not None:
            parent._adopt(self)

    def _adopt(self, child: Cancellation) -> None:
        with self._lock:
            self._children.add(child)
            cancelled = self._event.is_set()
        if cancelled:
            child.cancel()

    def detach(self) -> None:
        """Forget this one in its parent (it is done)."""
        if self._parent is not None:
            with self._parent._lock:
                self._parent._children.discard(self)

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def wait(self, seconds: float) -> bool:
        """Sleep ``seconds`` or until cancelled; whether it was cancelled."""
        return self._event.wait(seconds)

    def cancel(self) -> None:
        with self._lock:
            self._event.set()
            sockets = list(self._sockets)
            children = list(self._children)
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        for child in children:
            child.cancel()

    def register(self, sock: socket.socket) -> None:
        with self._lock:
            self._sockets.add(sock)
            cancelled = self._event.is_set()
        if cancelled:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def unregister(self, sock: socket.socket) -> None:
        with self._lock:
            self._sockets.discard(sock)


@dataclass(frozen=True)
class Limits:
    """The caps of one download. ``deadline``: time.monotonic() by which it must end, or None."""

    stall_timeout: float
    max_bytes: int
    deadline: float | None = None
    retries: int = 2
    retry_delay: float = 0.25
    max_redirects: int = 5


@dataclass
class Session:
    """The GETs of one attempt at one server, under its limits and cancellation.

    ``tried`` records every URL asked (redirect targets included), in order; ``on_bytes`` is
    told of every chunk received (progress), ``on_start`` of each response's URL and length.
    """

    limits: Limits
    cancellation: Cancellation
    on_start: Callable[[str, int | None], None] | None = None
    on_bytes: Callable[[int], None] | None = None
    tried: list[str] = field(default_factory=list)

    def download(self, url: str, sink: BinaryIO, *, max_bytes: int | None = None) -> str:
        """GET ``url`` into ``sink`` (from its start; a retry rewrites it); returns the URL the body
        came from (after redirects). Raises NotOnServerError, ServerUnreachableError,
        DownloadRefusedError or CancelledError; nothing is left out of ``sink`` on success."""
        cap = self.limits.max_bytes if max_bytes is None else min(max_bytes, self.limits.max_bytes)
        attempt = 0
        while True:
            sink.seek(0)
            sink.truncate()
            try:
                return self._follow(url, sink, cap)
            except _Retryable as error:
                attempt += 1
                if attempt > self.limits.retries:
                    raise ServerUnreachableError(f"{error.reason} ({attempt} tries)", error.url) from None
                delay = self.limits.retry_delay * 2 ** (attempt - 1)
                if self.limits.deadline is not None and time.monotonic() + delay >= self.limits.deadline:
                    raise ServerUnreachableError(f"{error.reason}; no time left to retry", error.url) from None
                if self.cancellation.wait(delay):
                    raise CancelledError("cancelled", url) from None

    def get_bytes(self, url: str, *, max_bytes: int) -> bytes:
        """GET a small answer (a file.ptr, an index2.txt probe) into memory, capped at ``max_bytes``."""
        import io

        buffer = io.BytesIO()
        self.download(url, buffer, max_bytes=max_bytes)
        return buffer.getvalue()

    def _follow(self, url: str, sink: BinaryIO, cap: int) -> str:
        current = url
        for _ in range(self.limits.max_redirects + 1):
            location = self._get_once(current, sink, cap)
            if location is None:
                return current
            current = location
        raise DownloadRefusedError(f"more than {self.limits.max_redirects} redirects", url)

    def _timeout(self, url: str) -> float:
        """The socket timeout for the next operation: the stall timeout, or less near the deadline."""
        if self.limits.deadline is None:
            return self.limits.stall_timeout
        left = self.limits.deadline - time.monotonic()
        if left <= 0:
            raise ServerUnreachableError("total timeout reached", url)
        return min(self.limits.stall_timeout, left)

    def _get_once(self, url: str, sink: BinaryIO, cap: int) -> str | None:
        """One request: None when the body is in ``sink``, else the redirect's absolute target."""
        if self.cancellation.cancelled:
            raise CancelledError("cancelled", url)
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise DownloadRefusedError("not an http or https URL", url)
        self.tried.append(url)
        connection = _connection(parts, self._timeout(url))
        sock: socket.socket | None = None
        try:
            try:
                connection.connect()
                sock = connection.sock
                if sock is not None:
                    self.cancellation.register(sock)
                target = urllib.parse.urlunsplit(("", "", parts.path or "/", parts.query, ""))
                connection.request(
                    "GET", target, headers={"User-Agent": _USER_AGENT, "Accept-Encoding": "identity"}
                )
                response = connection.getresponse()
                return self._answer(url, response, sink, cap, sock)
            except TimeoutError:
                self._raise_if_cancelled(url)
                if self.limits.deadline is not None and time.monotonic() >= self.limits.deadline:
                    raise ServerUnreachableError("total timeout reached", url) from None
                raise ServerUnreachableError(f"stalled: no byte for {self.limits.stall_timeout:g} s", url) from None
            except (ConnectionResetError, ConnectionAbortedError, BrokenPipeError, http.client.RemoteDisconnected,
                    http.client.IncompleteRead) as error:
                self._raise_if_cancelled(url)
                raise _Retryable(f"connection reset ({type(error).__name__})", url) from None
            except ssl.SSLError as error:
                self._raise_if_cancelled(url)
                raise ServerUnreachableError(f"TLS error: {error.reason or error}", url) from None
            except (http.client.HTTPException, OSError) as error:
                self._raise_if_cancelled(url)
                text = getattr(error, "strerror", None) or str(error) or type(error).__name__
                raise ServerUnreachableError(f"cannot connect: {text}", url) from None
        finally:
            if sock is not None:
                self.cancellation.unregister(sock)
            connection.close()

    def _raise_if_cancelled(self, url: str) -> None:
        if self.cancellation.cancelled:
            raise CancelledError("cancelled", url) from None

    def _answer(
        self, url: str, response: http.client.HTTPResponse, sink: BinaryIO, cap: int, sock: socket.socket | None
    ) -> str | None:
        status = response.status
        if status in _REDIRECTS:
            location = response.getheader("Location")
            if not location:
                raise DownloadRefusedError(f"redirect {status} without a Location", url)
            target = urllib.parse.urljoin(url, location.strip())
            if urllib.parse.urlsplit(target).scheme not in ("http", "https"):
                raise DownloadRefusedError(f"redirect to a URL that is not http or https: {target}", url)
            return target
        if status >= 500:
            raise _Retryable(f"server error {status} {response.reason}".rstrip(), url)
        if status >= 400:
            raise NotOnServerError(
                f"{status} {response.reason}".rstrip(), url, status=status, cacheable=status in _CACHEABLE_MISS
            )
        if status != 200:
            raise DownloadRefusedError(f"unexpected status {status} {response.reason}".rstrip(), url)
        length = _content_length(response)
        if length is not None and length > cap:
            raise DownloadRefusedError(f"file of {length} bytes is larger than the cap of {cap} bytes", url)
        if self.on_start is not None:
            self.on_start(url, length)
        received = 0
        while True:
            if sock is not None:
                sock.settimeout(self._timeout(url))
            chunk = response.read1(_CHUNK)
            self._raise_if_cancelled(url)
            if not chunk:
                break
            received += len(chunk)
            if received > cap:
                raise DownloadRefusedError(f"file is larger than the cap of {cap} bytes", url)
            sink.write(chunk)
            if self.on_bytes is not None:
                self.on_bytes(len(chunk))
        if length is not None and received < length:
            raise _Retryable(f"connection closed after {received} of {length} bytes", url)
        return None


class _Retryable(TransferError):
    """A 5xx or a reset: worth asking again (never a timeout)."""


def _content_length(response: http.client.HTTPResponse) -> int | None:
    text = response.getheader("Content-Length")
    if text is None or response.getheader("Transfer-Encoding"):
        return None
    try:
        value = int(text.strip())
    except ValueError:
        return None
    return value if value >= 0 else None


def _connection(parts: urllib.parse.SplitResult, timeout: float) -> http.client.HTTPConnection:
    host = parts.hostname or ""
    try:
        port = parts.port
    except ValueError:
        port = None
    if parts.scheme == "https":
        return http.client.HTTPSConnection(host, port, timeout=timeout, context=ssl.create_default_context())
    return http.client.HTTPConnection(host, port, timeout=timeout)
