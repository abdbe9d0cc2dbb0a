"""The HTTP side of ``symbolize serve``: OTLP/HTTP profile exports in, named exports forwarded.

The stdlib's ThreadingHTTPServer (a thread per connection, HTTP/1.1 keep-alive) and not an
asyncio framework or a WSGI server: the work per request is a wait (on the naming worker, then
on the receiver), the naming itself is one thread (symbolize/serve/naming.py), and a wheel would
add a dependency to every install for what 300 lines of stdlib do. The threads are bounded:
connections past ``max_connections`` get a 503 at once, and each connection's reads time out.

Every export is answered with what became of it, so the sender's retry logic is the delivery
guarantee (no silent loss): 200 only when the receiver took the named export; the receiver's
own final refusal passed back; 429 + Retry-After when ``max_pending`` exports are in flight
already (bounded memory: each in flight holds at most ``max_body`` bytes, inflated to at most
the profile cap); 503 + Retry-After when the receiver stayed down or busy past the forward
deadline, when naming took longer than the naming timeout, and while shutting down. Requests
OTLP says not to retry get their 4xx: a bad version header (before the body is decoded), a
content type or encoding we do not read, a body that is no export.

Shutdown (SIGTERM, SIGINT; :func:`serve`): the listener closes, idle kept connections are closed,
exports in flight finish within ``shutdown_timeout`` and are answered; past it the rest are
answered 503 + Retry-After (the sender retries elsewhere or later); a request arriving on a kept
connection meanwhile gets the same 503.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import socket
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from symbolize.errors import SymbolizeError
from symbolize.serve.diagnostics import log
from symbolize.serve.forward import Delivered, Forwarder
from symbolize.serve.naming import NamingJob, NamingWorker, QueueFull
from symbolize.serve.protocol import (
    CODE_INVALID_ARGUMENT,
    CODE_RESOURCE_EXHAUSTED,
    CODE_UNAVAILABLE,
    HEALTH_PATH,
    PROFILES_PATH,
    VERSION_HEADER,
    WRITTEN_VERSION,
    Answer,
    BodyType,
    VersionProblem,
    body_type,
    development_version,
    retry_after_text,
    status_body,
)

_READ_STEP = 1 << 16


@dataclass(frozen=True)
class ServeLimits:
    """The service's caps and deadlines (seconds, bytes, counts)."""

    max_pending: int = 32  # exports admitted at once (queued, naming or forwarding)
    max_body: int = 32 << 20  # a request body, as sent (compressed or not)
    max_connections: int = 128
    idle_timeout: float = 30.0  # a kept connection's read timeout
    # How long a sender waits for its export to be named, and for the receiver to take it: the two
    # stay within the 30 s an OTLP exporter waits by default (the Collector's otlphttp exporter),
    # for a sender that gave up would send again what we may still deliver (a duplicate). An
    # export whose naming outlasts it (a large binary's first index build) is answered 503 and
    # its retry finds the index built.
    name_timeout: float = 15.0
    forward_deadline: float = 10.0
    attempt_timeout: float = 10.0  # one connection / request to the receiver
    shutdown_timeout: float = 20.0
    body_timeout: float = 30.0  # reading one request's body, in all
    busy_retry_after: float = 1.0  # Retry-After of a 429


class ProfileService:
    """Admission, naming and forwarding of one export; the handler threads call :meth:`export`."""

    def __init__(self, worker: NamingWorker, forwarder: Forwarder, limits: ServeLimits) -> None:
        self.worker = worker
        self.forwarder = forwarder
        self.limits = limits
        self.stopping = threading.Event()  # shutdown asked: refuse new exports
        self.aborting = threading.Event()  # shutdown deadline passed: answer the rest now
        self.counts: Counter[str] = Counter()
        self._in_flight = 0
        self._receiver_down = False  # said on stderr when it goes down and when it is back
        self._lock = threading.Lock()
        self._idle_drained = threading.Condition(self._lock)

    @property
    def in_flight(self) -> int:
        return self._in_flight

    def health(self) -> tuple[int, dict[str, Any]]:
        with self._lock:
            counts = dict(self.counts)
            in_flight = self._in_flight
        state = "draining" if self.stopping.is_set() else "serving"
        return (503 if self.stopping.is_set() else 200), {
            "status": state,
            "in_flight": in_flight,
            "queued": self.worker.queued,
            "named": self.worker.named,
            "naming_errors": self.worker.failed,
            "locations": self.worker.locations(),
            "capacity": self.limits.max_pending,
            "forward": self.forwarder.target.shown,
            "forward_retries": self.forwarder.retries,
            **counts,
        }

    def wait_idle(self, timeout: float) -> bool:
        """Whether every export in flight was answered within ``timeout``."""
        give_up = time.monotonic() + timeout
        with self._idle_drained:
            while self._in_flight:
                left = give_up - time.monotonic()
                if left <= 0:
                    return False
                self._idle_drained.wait(left)
        return True

    def _admit(self) -> bool:
        with self._lock:
            if self._in_flight >= self.limits.max_pending:
                return False
            self._in_flight += 1
            return True

    def _release(self) -> None:
        with self._lock:
            self._in_flight -= 1
            self._idle_drained.notify_all()

    def _receiver_state(self, *, down: bool, reason: str) -> None:
        with self._lock:
            changed = self._receiver_down != down
            self._receiver_down = down
        if changed:
            log(f"receiver unavailable, senders told to retry: {reason}" if down else "receiver answering again")

    def count(self, what: str) -> None:
        with self._lock:
            self.counts[what] += 1

    def export(self, request: ExportHandler) -> Answer:
        """The answer to one POST of an export (module docstring)."""
        headers = request.headers
        encoding = body_type(headers.get("Content-Type")) or BodyType.PROTOBUF
        refusal = self._refusal_before_body(request, encoding)
        if refusal is not None:
            self.count(f"refused_{refusal.status}")
            return refusal
        length = int(headers["Content-Length"])
        if not self._admit():
            request.discard_body(length)
            self.count("refused_busy")
            message = f"{self.limits.max_pending} exports in flight already"
            return Answer(429, status_body(CODE_RESOURCE_EXHAUSTED, message, encoding), encoding.content_type,
                          retry_after=self.limits.busy_retry_after)  # fmt: skip
        try:
            return self._admitted(request, length, encoding)
        finally:
            self._release()

    def _refusal_before_body(self, request: ExportHandler, encoding: BodyType) -> Answer | None:
        headers = request.headers

        def refuse(status: int, message: str, *, close: bool = False, retry_after: float | None = None) -> Answer:
            code = CODE_UNAVAILABLE if status == 503 else CODE_INVALID_ARGUMENT
            return Answer(status, status_body(code, message, encoding), encoding.content_type,
                          retry_after=retry_after, close=close)  # fmt: skip

        if request.path.split("?", 1)[0] != PROFILES_PATH:
            return refuse(404, f"no such path: this server takes POST {PROFILES_PATH}", close=True)
        if self.stopping.is_set():
            return refuse(503, "shutting down", close=True, retry_after=1.0)
        if headers.get("Transfer-Encoding") is not None or headers.get("Content-Length") is None:
            return refuse(411, "a Content-Length is required (no chunked bodies)", close=True)
        length_text = headers["Content-Length"].strip()
        if not length_text.isdigit():
            return refuse(400, f"bad Content-Length {length_text[:32]!r}", close=True)
        length = int(length_text)
        if length > self.limits.max_body:
            return refuse(413, f"body of {length} bytes, above the cap of {self.limits.max_body}", close=True)
        version = development_version(headers.get_all(VERSION_HEADER) or [])
        problem: str | None = version.message if isinstance(version, VersionProblem) else None
        status = 400
        if problem is None and body_type(headers.get("Content-Type")) is None:
            shown = headers.get("Content-Type")
            problem, status = f"Content-Type {shown!r}: not application/x-protobuf nor application/json", 415
        content_encoding = (headers.get("Content-Encoding") or "identity").strip().lower()
        if problem is None and content_encoding not in ("gzip", "identity"):
            problem, status = f"Content-Encoding {content_encoding!r}: only gzip is read", 415
        if problem is None:
            return None
        request.discard_body(length)
        return refuse(status, problem)

    def _admitted(self, request: ExportHandler, length: int, encoding: BodyType) -> Answer:
        def failed(status: int, code: int, message: str, retry_after: float | None = None) -> Answer:
            self.count(f"answered_{status}")
            return Answer(status, status_body(code, message, encoding), encoding.content_type, retry_after=retry_after)

        body = request.read_body(length, self.limits.body_timeout)
        if len(body) != length:
            request.close_connection = True
            why = "cut short" if len(body) < length and not request.timed_out else "too slow"
            return failed(400 if why == "cut short" else 408, CODE_INVALID_ARGUMENT,
                          f"body {why}: {len(body)} of {length} bytes")  # fmt: skip
        gzipped = (request.headers.get("Content-Encoding") or "").strip().lower() == "gzip"
        source = f"export from {request.client_address[0]}"
        try:
            plain = _plain_body(body, gzipped, encoding, source)
        except SymbolizeError as exc:
            return failed(400, CODE_INVALID_ARGUMENT, str(exc))
        job = NamingJob(plain, source)
        try:
            self.worker.submit(job)
        except QueueFull:
            return failed(429, CODE_RESOURCE_EXHAUSTED, "naming queue full", self.limits.busy_retry_after)
        if not _wait_either(job.done, self.aborting, self.limits.name_timeout):
            if self.aborting.is_set():
                return failed(503, CODE_UNAVAILABLE, "shutting down", 1.0)
            reason = f"not named within {self.limits.name_timeout:g} s (its binaries are being indexed)"
            return failed(503, CODE_UNAVAILABLE, reason, self.limits.name_timeout / 3)
        if isinstance(job.error, SymbolizeError):
            return failed(400, CODE_INVALID_ARGUMENT, str(job.error))
        named = job.named
        if job.error is not None or named is None:
            # A bug of ours is no reason to lose the sender's data: it goes on unnamed, and is said.
            log(f"naming failed, forwarded unnamed: {type(job.error).__name__}: {job.error}")
            self.count("naming_failed")
            named = plain
        outgoing = gzip.compress(named, compresslevel=1, mtime=0) if gzipped else named
        result = self.forwarder.send(outgoing, content_type=encoding.content_type, gzipped=gzipped,
                                     version=WRITTEN_VERSION, stop=self.aborting)  # fmt: skip
        if isinstance(result, Delivered):
            self.count("forwarded" if 200 <= result.status < 300 else f"receiver_{result.status}")
            self._receiver_state(down=False, reason="")
            return Answer(result.status, result.body, result.content_type or encoding.content_type)
        self.count("receiver_unavailable")
        self._receiver_state(down=True, reason=result.reason)
        return failed(result.status, CODE_UNAVAILABLE, f"receiver unavailable: {result.reason}", result.retry_after)


def _plain_body(body: bytes, gzipped: bool, encoding: BodyType, source: str) -> bytes:
    """The export's bytes, inflated (capped as a profile is); SymbolizeError when the bytes are
    not what the headers say."""
    from symbolize.otlp.encoding import is_json
    from symbolize.pprof import GZIP_MAGIC, gunzip

    if gzipped:
        if body[:2] != GZIP_MAGIC:
            raise SymbolizeError("Content-Encoding gzip, but the body is not gzip", source)
        body = gunzip(body, source)
    if is_json(body) != (encoding is BodyType.JSON):
        said = "application/json" if encoding is BodyType.JSON else "application/x-protobuf"
        raise SymbolizeError(f"Content-Type {said}, but the body is {'not ' if encoding is BodyType.JSON else ''}JSON",
                             source)  # fmt: skip
    return body


def _wait_either(first: threading.Event, second: threading.Event, timeout: float) -> bool:
    """Whether ``first`` was set within ``timeout``, giving up early when ``second`` is set."""
    give_up = time.monotonic() + timeout
    while not first.wait(0.05):
        if second.is_set() or time.monotonic() >= give_up:
            return first.is_set()
    return True


class ExportHandler(BaseHTTPRequestHandler):
    """One connection's requests (HTTP/1.1, kept alive)."""

    protocol_version = "HTTP/1.1"
    server: ServeHTTPServer

    def setup(self) -> None:
        super().setup()
        # The class's ``timeout``, per server: a kept connection's reads time out (slow senders too).
        self.connection.settimeout(self.server.service.limits.idle_timeout)

    def handle_one_request(self) -> None:
        self.server.mark(self, busy=False)
        super().handle_one_request()

    def parse_request(self) -> bool:
        self.server.mark(self, busy=True)
        return super().parse_request()

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.forget(self)

    def do_POST(self) -> None:
        try:
            self._send(self.server.service.export(self))
        except (TimeoutError, ConnectionError):
            self.close_connection = True  # a sender that stalled or left: nobody to answer

    def do_GET(self) -> None:
        if self.path.split("?", 1)[0] != HEALTH_PATH:
            self._send(Answer(404, b"not found\n", "text/plain"))
            return
        status, state = self.server.service.health()
        self._send(Answer(status, json.dumps(state).encode(), "application/json"))

    timed_out = False

    def read_body(self, length: int, timeout: float) -> bytes:
        """The body, read within ``timeout`` in all (a sender trickling bytes holds an admission
        slot no longer); shorter when the sender stopped or was too slow (:attr:`timed_out`)."""
        give_up = time.monotonic() + timeout
        pieces = bytearray()
        while len(pieces) < length:
            left = give_up - time.monotonic()
            if left <= 0:
                self.timed_out = True
                break
            self.connection.settimeout(min(left, self.server.service.limits.idle_timeout))
            try:
                piece = self.rfile.read1(min(length - len(pieces), _READ_STEP))
            except TimeoutError:
                self.timed_out = True
                break
            if not piece:
                break
            pieces += piece
        self.connection.settimeout(self.server.service.limits.idle_timeout)
        return bytes(pieces)

    def discard_body(self, length: int) -> None:
        """Read ``length`` body bytes into nothing: the connection stays usable, memory untouched."""
        while length > 0:
            piece = self.rfile.read(min(length, _READ_STEP))
            if not piece:
                self.close_connection = True
                return
            length -= len(piece)

    def _send(self, answer: Answer) -> None:
        close = answer.close or self.server.service.stopping.is_set()
        self.send_response(answer.status)
        self.send_header("Content-Type", answer.content_type)
        self.send_header("Content-Length", str(len(answer.body)))
        if answer.retry_after is not None:
            self.send_header("Retry-After", retry_after_text(answer.retry_after))
        if close:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        self.wfile.write(answer.body)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # one line per request is no log for a service under load; /health counts them


class ServeHTTPServer(ThreadingHTTPServer):
    """ThreadingHTTPServer with a cap on connections and a record of which ones are idle."""

    daemon_threads = False
    block_on_close = True
    request_queue_size = 128  # the listen backlog: socketserver's 5 resets a burst of senders

    def __init__(self, address: tuple[str, int], service: ProfileService) -> None:
        self.service = service
        self._connections: dict[ExportHandler, bool] = {}  # handler -> busy
        self._open = 0
        self._guard = threading.Lock()
        if ":" in address[0]:
            self.address_family = socket.AF_INET6  # --listen [::1]:4318
        super().__init__(address, ExportHandler)

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._guard:
            full = self._open >= self.service.limits.max_connections
            if not full:
                self._open += 1
        if full:
            self.service.count("refused_connection")
            with contextlib.suppress(OSError):
                request.sendall(b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nConnection: close\r\n"
                                b"Content-Length: 0\r\n\r\n")  # fmt: skip
            self.shutdown_request(request)
            return
        super().process_request(request, client_address)

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            with self._guard:
                self._open -= 1

    def handle_error(self, request: Any, client_address: Any) -> None:
        """One line, not socketserver's traceback: a service's stderr is its log."""
        error = sys.exc_info()[1]
        log(f"connection from {client_address[0]}: {type(error).__name__}: {error}")

    def mark(self, handler: ExportHandler, *, busy: bool) -> None:
        with self._guard:
            self._connections[handler] = busy

    def forget(self, handler: ExportHandler) -> None:
        with self._guard:
            self._connections.pop(handler, None)

    def close_idle(self) -> None:
        """Wake every connection waiting for its next request: it ends (shutdown)."""
        with self._guard:
            idle = [handler for handler, busy in self._connections.items() if not busy]
        for handler in idle:
            with contextlib.suppress(OSError):
                handler.connection.shutdown(socket.SHUT_RDWR)
