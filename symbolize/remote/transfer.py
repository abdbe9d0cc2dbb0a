"""One capped HTTP GET into a file: stall timeout, total timeout, size cap, redirects, retries, cancel.

Hand-written on the standard library's http.client rather than urllib or a third-party client:
what a debug-file download needs is the socket, to abandon a stalled server the moment a
timeout or another server's win says so, by shutting it down from another thread; and its own
redirect rule (http/https only, counted), its own retry rule (5xx and connection resets only,
never a timeout), and a size cap checked against Content-Length and again while reading.
urllib hides the socket and follows redirects to ftp:; requests/httpx are not in the
dependency set and would add nothing of this.

A retry after a reset resumes where the body stopped (``Range``, RFC 9110 section 14) when the
server offered it (``Accept-Ranges: bytes``) and named the file's version (a strong ``ETag``,
else ``Last-Modified``), sent back as ``If-Range``: a server whose file changed since answers
with the whole new file, which replaces what came; a part that does not start where asked is
never spliced in (the download starts over).

A stall is elfutils' DEBUGINFOD_TIMEOUT rule (debuginfod_find_debuginfo(3)): a server that does
not deliver ``stall_min_bytes`` (100 KiB), or the rest of the file, within ``stall_timeout``
seconds is abandoned; the count starts again each time that much has come. So a silent server
is dropped after the timeout, and so is one that trickles a byte at a time, but not a slow
steady one: the timeout is no cap on the whole transfer (``total_timeout`` is).
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


def redact(url: str) -> str:
    """``url`` as it may be shown (messages, summaries, logs): credentials in it replaced by ``***``."""
    parts = urllib.parse.urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    return urllib.parse.urlunsplit(parts._replace(netloc="***@" + parts.netloc.rpartition("@")[2]))


class TransferError(SymbolizeError):
    """A download failed; ``url`` is the one asked for, shown without credentials (:func:`redact`)."""

    def __init__(self, message: str, url: str) -> None:
        self.url = url = redact(url)
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
    stall_min_bytes: int = 100 * 1024
    deadline: float | None = None
    retries: int = 2
    retry_delay: float = 0.25
    max_redirects: int = 5


@dataclass
class Session:
    """The GETs of one attempt at one server, under its limits and cancellation.

    ``tried`` records every URL asked (redirect targets included, credentials redacted), in order; ``on_bytes`` is
    told of every chunk received (progress), ``on_start`` of each response's URL and length.
    """

    limits: Limits
    cancellation: Cancellation
    on_start: Callable[[str, int | None], None] | None = None
    on_bytes: Callable[[int], None] | None = None
    tried: list[str] = field(default_factory=list)
    # Where the body of the current download stopped and the version it was of, when resumable.
    _resume: _Resume | None = field(default=None, init=False, repr=False)

    def download(self, url: str, sink: BinaryIO, *, max_bytes: int | None = None) -> str:
        """GET ``url`` into ``sink`` (from its start; a retry rewrites it); returns the URL the body
        came from (after redirects). Raises NotOnServerError, ServerUnreachableError,
        DownloadRefusedError or CancelledError; nothing is left out of ``sink`` on success."""
        cap = self.limits.max_bytes if max_bytes is None else min(max_bytes, self.limits.max_bytes)
        attempt = 0
        self._resume = None
        while True:
            if self._resume is not None and self._resume.offset == 0:
                self._resume = None  # nothing came: a plain request again
            # A resumed try keeps the bytes before the resume point; any other starts empty.
            sink.seek(self._resume.offset if self._resume is not None else 0)
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

    def _timeout(self, url: str, window: _Window) -> float:
        """The socket timeout for the next operation: what is left of the stall window, or of the
        total time when that ends first."""
        now = time.monotonic()
        left = window.start + self.limits.stall_timeout - now
        if self.limits.deadline is not None:
            if self.limits.deadline <= now:
                raise ServerUnreachableError("total timeout reached", url)
            left = min(left, self.limits.deadline - now)
        if left <= 0:
            raise ServerUnreachableError(window.stalled(self.limits), url)
        return left

    def _get_once(self, url: str, sink: BinaryIO, cap: int) -> str | None:
        """One request: None when the body is in ``sink``, else the redirect's absolute target."""
        if self.cancellation.cancelled:
            raise CancelledError("cancelled", url)
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise DownloadRefusedError("not an http or https URL", url)
        self.tried.append(redact(url))
        window = _Window(time.monotonic())
        connection, target, route_headers = _route(parts, self._timeout(url, window))
        sock: socket.socket | None = None
        try:
            try:
                connection.connect()
                sock = connection.sock
                if sock is not None:
                    self.cancellation.register(sock)
                headers = {"User-Agent": _USER_AGENT, "Accept-Encoding": "identity", **route_headers}
                if self._resume is not None:
                    headers["Range"] = f"bytes={self._resume.offset}-"
                    headers["If-Range"] = self._resume.validator
                connection.request("GET", target, headers=headers)
                response = connection.getresponse()
                return self._answer(url, response, sink, cap, sock, window)
            except TimeoutError:
                self._raise_if_cancelled(url)
                if self.limits.deadline is not None and time.monotonic() >= self.limits.deadline:
                    raise ServerUnreachableError("total timeout reached", url) from None
                raise ServerUnreachableError(window.stalled(self.limits), url) from None
            except (ConnectionResetError, ConnectionAbortedError, BrokenPipeError, http.client.RemoteDisconnected,
                    http.client.IncompleteRead) as error:
                self._raise_if_cancelled(url)
                raise _Retryable(f"connection reset ({type(error).__name__})", url) from None
            except ssl.SSLError as error:
                self._raise_if_cancelled(url)
                raise ServerUnreachableError(f"TLS error: {error.reason or error}", url) from None
            except http.client.HTTPException as error:
                self._raise_if_cancelled(url)
                raise ServerUnreachableError(f"not an HTTP answer: {type(error).__name__} {error}", url) from None
            except OSError as error:
                self._raise_if_cancelled(url)
                raise ServerUnreachableError(f"cannot connect: {error.strerror or error}", url) from None
        finally:
            if sock is not None:
                self.cancellation.unregister(sock)
            connection.close()

    def _raise_if_cancelled(self, url: str) -> None:
        if self.cancellation.cancelled:
            raise CancelledError("cancelled", url) from None

    def _answer(
        self,
        url: str,
        response: http.client.HTTPResponse,
        sink: BinaryIO,
        cap: int,
        sock: socket.socket | None,
        window: _Window,
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
        if status == 416 and self._resume is not None:
            self._resume = None
            raise _Retryable("the server refused to resume (416)", url)
        if status >= 400:
            raise NotOnServerError(
                f"{status} {response.reason}".rstrip(), url, status=status, cacheable=status in _CACHEABLE_MISS
            )
        offset = self._resumed_at(url, response, sink)
        length = _content_length(response)
        if length is not None and offset + length > cap:
            raise DownloadRefusedError(f"file of {offset + length} bytes is larger than the cap of {cap} bytes", url)
        self._resume = _resume_point(response, offset)
        if self.on_start is not None:
            self.on_start(url, None if length is None else offset + length)
        if offset and self.on_bytes is not None:
            self.on_bytes(offset)
        received = 0
        while True:
            if sock is not None:
                sock.settimeout(self._timeout(url, window))
            chunk = response.read1(_CHUNK)
            self._raise_if_cancelled(url)
            if not chunk:
                break
            received += len(chunk)
            window.received(len(chunk), self.limits.stall_min_bytes)
            if offset + received > cap:
                raise DownloadRefusedError(f"file is larger than the cap of {cap} bytes", url)
            sink.write(chunk)
            if self._resume is not None:
                self._resume.offset = offset + received
            if self.on_bytes is not None:
                self.on_bytes(len(chunk))
        if length is not None and received < length:
            raise _Retryable(f"connection closed after {offset + received} of {offset + length} bytes", url)
        self._resume = None
        return None

    def _resumed_at(self, url: str, response: http.client.HTTPResponse, sink: BinaryIO) -> int:
        """Where this answer's body goes in ``sink``: the resume point for a 206 that starts there,
        0 for a whole file (a 200, also the answer to an If-Range whose version changed)."""
        if response.status == 200:
            if self._resume is not None:  # the whole file after all: what came before goes
                sink.seek(0)
                sink.truncate()
            return 0
        if response.status != 206 or self._resume is None:
            raise DownloadRefusedError(f"unexpected status {response.status} {response.reason}".rstrip(), url)
        start = _range_start(response.getheader("Content-Range"))
        if start != self._resume.offset:
            self._resume = None  # never splice a part that starts elsewhere: start over
            raise _Retryable(f"asked to resume at {sink.tell()}, got a part starting at {start}", url)
        return start


@dataclass
class _Resume:
    """Where a download's body stopped (``offset``) and the version it was of (``validator``)."""

    offset: int
    validator: str


def _resume_point(response: http.client.HTTPResponse, offset: int) -> _Resume | None:
    """A resume point for this answer's body, when the server allows one: it takes byte ranges and
    names the version (a strong ETag, else Last-Modified) that If-Range sends back."""
    ranges = response.status == 206 or "bytes" in (response.getheader("Accept-Ranges") or "").lower()
    etag = response.getheader("ETag")
    validator = etag if etag and not etag.startswith("W/") else response.getheader("Last-Modified")
    return _Resume(offset, validator) if ranges and validator else None


def _range_start(content_range: str | None) -> int | None:
    """The first byte of ``Content-Range: bytes START-END/TOTAL``, else None."""
    import re

    match = re.fullmatch(r"\s*bytes\s+(\d+)-(\d+)/(\d+|\*)\s*", content_range or "")
    return int(match.group(1)) if match else None


@dataclass
class _Window:
    """The current stall window: when it started and the bytes received in it."""

    start: float
    count: int = 0

    def received(self, count: int, enough: int) -> None:
        self.count += count
        if self.count >= enough:
            self.start, self.count = time.monotonic(), 0  # enough came: a new window

    def stalled(self, limits: Limits) -> str:
        if self.count == 0:
            return f"stalled: no byte for {limits.stall_timeout:g} s"
        return f"stalled: {self.count} bytes in {limits.stall_timeout:g} s (less than {limits.stall_min_bytes})"


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


def _port(parts: urllib.parse.SplitResult) -> int | None:
    try:
        return parts.port
    except ValueError:
        return None


def _route(parts: urllib.parse.SplitResult, timeout: float) -> tuple[http.client.HTTPConnection, str, dict[str, str]]:
    """The connection for ``parts``, the request target to send on it and the headers it needs.

    A proxy is used as libcurl (elfutils' client) and urllib use one: ``http_proxy``,
    ``https_proxy`` and ``no_proxy`` from the environment (the system's settings on Windows and
    macOS, through urllib.request.getproxies); never for a loopback host. An http URL is asked of
    the proxy by its absolute form, an https one through a CONNECT tunnel.
    """
    host = parts.hostname or ""
    path = urllib.parse.urlunsplit(("", "", parts.path or "/", parts.query, ""))
    # Credentials in the URL (a store behind basic authentication) go to that URL's host only: a
    # redirect elsewhere is asked without them, as curl does.
    headers = {"Authorization": _basic(parts)} if parts.username is not None else {}
    proxy = _proxy_for(parts.scheme, host)
    context = ssl.create_default_context() if parts.scheme == "https" else None
    if proxy is None:
        if context is not None:
            return http.client.HTTPSConnection(host, _port(parts), timeout=timeout, context=context), path, headers
        return http.client.HTTPConnection(host, _port(parts), timeout=timeout), path, headers
    proxy_parts = urllib.parse.urlsplit(proxy if "://" in proxy else f"http://{proxy}")
    proxy_headers = {"Proxy-Authorization": _basic(proxy_parts)} if proxy_parts.username is not None else {}
    proxy_host, proxy_port = proxy_parts.hostname or "", _port(proxy_parts) or 8080
    if context is not None:
        tunnel = http.client.HTTPSConnection(proxy_host, proxy_port, timeout=timeout, context=context)
        tunnel.set_tunnel(host, _port(parts) or 443, headers=proxy_headers)
        return tunnel, path, headers
    absolute = urllib.parse.urlunsplit(("http", parts.netloc.rpartition("@")[2], parts.path or "/", parts.query, ""))
    return http.client.HTTPConnection(proxy_host, proxy_port, timeout=timeout), absolute, headers | proxy_headers


def _basic(parts: urllib.parse.SplitResult) -> str:
    """The Basic credentials of a URL's ``user:password@`` (RFC 7617)."""
    import base64

    user = urllib.parse.unquote(parts.username or "")
    password = urllib.parse.unquote(parts.password or "")
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode("ascii")


def _proxy_for(scheme: str, host: str) -> str | None:
    import ipaddress
    import urllib.request

    if host == "localhost":
        return None
    with contextlib.suppress(ValueError):
        if ipaddress.ip_address(host).is_loopback:
            return None
    proxy = urllib.request.getproxies().get(scheme)
    if not proxy or urllib.request.proxy_bypass(host):
        return None
    return proxy
