"""The client side of the pass-through: a named export POSTed to the receiver, retried while the
receiver is down or busy, within a deadline.

http.client, not urllib: connections are kept and reused (one pool, a connection per request in
flight), and a status is a value, not an exception. Retried, as OTLP's exporters retry: refused
or reset connections, timeouts, and 429, 502, 503 and 504 (honouring their ``Retry-After``),
with exponential backoff and jitter. What no retry fixed before the deadline becomes
:class:`Unavailable`, which the server answers with a retryable status, so the sender keeps the
data: nothing is dropped here.
"""

from __future__ import annotations

import contextlib
import http.client
import random
import socket
import threading
import time
import urllib.parse
from dataclasses import dataclass

from symbolize.errors import SymbolizeError
from symbolize.serve.protocol import PROFILES_PATH, RETRYABLE_STATUSES, VERSION_HEADER, parse_retry_after

# A receiver's answer body we keep to pass back (a Status message or a partial-success response).
MAX_ANSWER_BYTES = 1 << 20
_FIRST_BACKOFF = 0.1
_MAX_BACKOFF = 2.0


@dataclass(frozen=True)
class Delivered:
    """The receiver's final answer (a success, or a refusal the sender must not retry)."""

    status: int
    body: bytes
    content_type: str | None


@dataclass(frozen=True)
class Unavailable:
    """No answer the sender should keep: the receiver was down or busy until the deadline."""

    reason: str
    retry_after: float
    status: int = 503  # 503, or the receiver's own retryable status when it answered one


class ForwardTarget:
    """The receiver's URL, checked: http or https with a host; no path means the OTLP path."""

    def __init__(self, url: str) -> None:
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise SymbolizeError(f"--forward needs an http(s) URL with a host, not {url!r}")
        try:
            self.port = parts.port
        except ValueError as exc:
            raise SymbolizeError(f"--forward {url!r}: {exc}") from exc
        self.scheme = parts.scheme
        self.host = parts.hostname
        path = parts.path if parts.path not in ("", "/") else PROFILES_PATH
        self.path = path + (f"?{parts.query}" if parts.query else "")
        self.shown = urllib.parse.urlunsplit((parts.scheme, parts.netloc.rpartition("@")[2], path, "", ""))

    def connect(self, timeout: float) -> http.client.HTTPConnection:
        if self.scheme == "https":
            return http.client.HTTPSConnection(self.host, self.port, timeout=timeout)
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout)


class Forwarder:
    """POSTs exports to one receiver, from many threads (a pool of kept connections)."""

    def __init__(self, target: ForwardTarget, *, deadline: float, attempt_timeout: float,
                 headers: dict[str, str] | None = None) -> None:  # fmt: skip
        self.target = target
        self.headers = dict(headers or {})
        self.deadline = deadline
        self.attempt_timeout = attempt_timeout
        self._idle: list[http.client.HTTPConnection] = []
        self._busy: set[http.client.HTTPConnection] = set()
        self._lock = threading.Lock()
        self.retries = 0  # attempts after a first one, over the server's life (/health)

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for connection in idle:
            connection.close()

    def abort(self) -> None:
        """Cut every request waiting on the receiver (shutdown past its deadline): each one's
        sender is answered at once, with a retryable status."""
        with self._lock:
            busy = list(self._busy)
        for connection in busy:
            if connection.sock is not None:
                with contextlib.suppress(OSError):
                    connection.sock.shutdown(socket.SHUT_RDWR)

    def send(
        self, body: bytes, *, content_type: str, gzipped: bool, version: str, stop: threading.Event
    ) -> Delivered | Unavailable:
        """POST ``body`` until the receiver answers something final, the deadline passes or ``stop``
        is set (shutdown: the sender is told to retry elsewhere or later)."""
        headers = {**self.headers, "Content-Type": content_type, VERSION_HEADER: version}
        if gzipped:
            headers["Content-Encoding"] = "gzip"
        give_up = time.monotonic() + self.deadline
        backoff = _FIRST_BACKOFF
        while True:
            if stop.is_set():
                return Unavailable(f"{self.target.shown}: not sent (shutting down)", 1.0)
            outcome = self._attempt(body, headers)
            if isinstance(outcome, Delivered):
                return outcome
            wait = outcome.retry_after if outcome.retry_after > 0 else backoff * (0.5 + random.random() / 2)
            left = give_up - time.monotonic()
            if wait >= left or stop.is_set():
                retry_after = max(outcome.retry_after, 1.0)
                return Unavailable(f"{self.target.shown}: {outcome.reason}", retry_after, outcome.status)
            with self._lock:
                self.retries += 1
            if stop.wait(wait):
                return Unavailable(f"{self.target.shown}: {outcome.reason} (shutting down)", 1.0, outcome.status)
            backoff = min(backoff * 2, _MAX_BACKOFF)

    def _attempt(self, body: bytes, headers: dict[str, str]) -> Delivered | Unavailable:
        connection = self._take()
        with self._lock:
            self._busy.add(connection)
        keep = False
        try:
            connection.request("POST", self.target.path, body=body, headers=headers)
            response = connection.getresponse()
            answer = response.read(MAX_ANSWER_BYTES + 1)
            keep = len(answer) <= MAX_ANSWER_BYTES and not response.will_close
        except (OSError, http.client.HTTPException) as exc:
            return Unavailable(_connection_reason(exc), 0.0)
        finally:
            with self._lock:
                self._busy.discard(connection)
                if keep:
                    self._idle.append(connection)
            if not keep:
                connection.close()
        if response.status in RETRYABLE_STATUSES:
            waited = parse_retry_after(response.getheader("Retry-After")) or 0.0
            return Unavailable(f"answered {response.status}", waited, response.status)
        return Delivered(response.status, answer[:MAX_ANSWER_BYTES], response.getheader("Content-Type"))

    def _take(self) -> http.client.HTTPConnection:
        with self._lock:
            if self._idle:
                return self._idle.pop()
        return self.target.connect(self.attempt_timeout)


# A header's name (RFC 9110 token) and what its value may hold (no CR, LF or NUL: no injection).
_TOKEN = frozenset("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
_OWN_HEADERS = frozenset({"content-type", "content-encoding", "content-length", "host", VERSION_HEADER.lower()})


def parse_header(text: str) -> tuple[str, str]:
    """``NAME: VALUE`` (``NAME=VALUE`` too, as OTEL_EXPORTER_OTLP_HEADERS spells it) as a pair;
    ValueError for a name that is no token, a value with a line break, or a header we set."""
    name, separator, value = text.partition(":") if ":" in text else text.partition("=")
    name, value = name.strip(), value.strip()
    if not separator or not name or not set(name) <= _TOKEN:
        raise ValueError(f"not NAME: VALUE: {text!r}")
    if any(character in value for character in "\r\n\0"):
        raise ValueError(f"a line break in the value of {name}")
    if name.lower() in _OWN_HEADERS:
        raise ValueError(f"{name} is set by the service itself")
    return name, value


def _connection_reason(exc: BaseException) -> str:
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused"
    if isinstance(exc, TimeoutError):
        return "timed out"
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
