"""A real HTTP file server on 127.0.0.1 that serves a directory and misbehaves on request.

ThreadingHTTPServer on an ephemeral loopback port, serving the files under ``root``. Faults are
set per URL path (:class:`Fault`): stall before the headers or after N bytes, answer 5xx the
first N times, reset the connection mid-body the first N times, redirect, delay, serve another
file, or answer a given status. ``fold_case`` looks paths up ignoring case, as IIS-hosted symbol
servers do. Every request is logged (:attr:`HttpStore.requests`), so a test can assert that
none was made. Stalls end when the test stops the server (or after ``stall_seconds``), so a
stopped server leaves no thread behind.

:class:`HttpProxy` is a forward proxy in front of such servers, for the proxy settings.

Used by tests/test_remote_fetch.py, the symbol-store tests and bench/remote_fetch.py::

    with HttpStore(directory) as store:
        store.fault("/buildid/ab/debuginfo", Fault(stall_after=4096))
        url = store.url + "/buildid/ab/debuginfo"
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import re
import socket
import struct
import threading
import time
import urllib.parse
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType


@dataclass
class Fault:
    """How one path misbehaves. Counters (``fail_times``, ``reset_times``) count down per request.

    ``delay``: seconds before answering. ``stall_before_headers``: never answer (until stopped or
    ``stall_seconds``). ``stall_after``: send the headers and this many body bytes, then nothing.
    ``fail_times``/``fail_status``: answer ``fail_status`` (5xx) to the first requests.
    ``reset_times``/``reset_after``: the first requests get ``reset_after`` body bytes then a TCP
    reset (or, with ``cut_clean``, a clean close: the client then has every byte sent).
    ``redirect``: answer 302 to this location (absolute, or a path of this server).
    ``serve``: send this file instead (another build's). ``status``: answer this status, no body.
    ``chunked``: send the body chunked, without a Content-Length. ``lie_length``: claim this
    Content-Length whatever the body is. ``bytes_per_second``: trickle the body, ``piece_bytes``
    at a time. ``garbage``: send these bytes instead of an HTTP answer, then close. ``ranges``: offer byte
    ranges (``Accept-Ranges``, an ``ETag``) and answer a ``Range: bytes=N-`` whose ``If-Range``
    matches with a 206 (the body faults then apply to the part). ``new_version_each_time``: the
    ETag changes with every request (a file replaced on the server). ``range_shift``: a 206 part
    starts this many bytes after the one asked for (its Content-Range says so).
    """

    delay: float = 0.0
    stall_before_headers: bool = False
    stall_after: int | None = None
    stall_seconds: float = 60.0
    fail_times: int = 0
    fail_status: int = 503
    reset_times: int = 0
    reset_after: int = 0
    cut_clean: bool = False
    redirect: str | None = None
    serve: Path | None = None
    status: int | None = None
    chunked: bool = False
    lie_length: int | None = None
    bytes_per_second: float | None = None
    piece_bytes: int = 16 * 1024
    garbage: bytes | None = None
    ranges: bool = True
    new_version_each_time: bool = False
    range_shift: int = 0


@dataclass(frozen=True)
class Request:
    """One request as the server saw it: method, path (unquoted), the status it answered, and the
    Range and Authorization headers it came with."""

    method: str
    path: str
    status: int
    range: str | None = None
    authorization: str | None = None


@dataclass
class _State:
    root: Path
    fold_case: bool
    faults: dict[str, Fault] = field(default_factory=dict)
    requests: list[Request] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    stopping: threading.Event = field(default_factory=threading.Event)
    versions: itertools.count[int] = field(default_factory=itertools.count)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    # socketserver's default backlog of 5 drops the SYNs of a burst of parallel fetches (each then
    # waits a second for the retransmission): a real server's backlog is in the hundreds.
    request_queue_size = 128
    state: _State

    def handle_error(self, request: object, client_address: object) -> None:
        """Quiet about clients that went away (a race lost, a cancel): that is the tests' normal."""
        import sys

        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)  # type: ignore[arg-type]


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:
        pass  # the request log is the record; stderr stays quiet

    def do_GET(self) -> None:
        state = self.server.state
        path = urllib.parse.unquote(urllib.parse.urlsplit(self.path).path)
        with state.lock:
            fault = state.faults.get(path) or (state.faults.get(path.lower()) if state.fold_case else None)
            fault = fault or Fault()
            fail = fault.fail_times > 0
            if fail:
                fault.fail_times -= 1
            reset = not fail and fault.reset_times > 0
            if reset:
                fault.reset_times -= 1
        if fault.delay:
            state.stopping.wait(fault.delay)
        if fault.stall_before_headers:
            self._log(path, 0)
            state.stopping.wait(fault.stall_seconds)
            self.close_connection = True
            return
        if fault.garbage is not None:
            self._log(path, 0)
            self.wfile.write(fault.garbage)
            self.close_connection = True
            return
        if fail:
            self._send_status(path, fault.fail_status)
            return
        if fault.status is not None:
            self._send_status(path, fault.status)
            return
        if fault.redirect is not None:
            self._log(path, 302)
            self.send_response(302)
            self.send_header("Location", fault.redirect)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        file = fault.serve or self._find(state, path)
        if file is None:
            self._send_status(path, 404)
            return
        body = self._answer_headers(path, file.read_bytes(), fault)
        if body is None:
            return
        if reset:
            self._write(body[: fault.reset_after], fault)
            if fault.cut_clean:
                self.close_connection = True
            else:
                self._reset()
            return
        if fault.stall_after is not None:
            self._write(body[: fault.stall_after], fault)
            self.wfile.flush()
            state.stopping.wait(fault.stall_seconds)
            self.close_connection = True
            return
        self._write(body, fault)
        if fault.chunked:
            self.wfile.write(b"0\r\n\r\n")
        if fault.lie_length is not None:
            self.close_connection = True  # the claimed length is never reached: end of body by EOF

    def _answer_headers(self, path: str, whole: bytes, fault: Fault) -> bytes | None:
        """Send the status and headers for ``whole`` (a 200, or a 206 for a range it may answer);
        returns the body to send, None when the answer is complete (a 416)."""
        state = self.server.state
        version = f"-{next(state.versions)}" if fault.new_version_each_time else ""
        etag = f'"{hashlib.sha256(whole).hexdigest()[:16]}{version}"'
        asked = self.headers.get("Range")
        start: int | None = None
        if fault.ranges and asked and self.headers.get("If-Range") in (None, etag):
            match = re.fullmatch(r"bytes=(\d+)-", asked.strip())
            start = int(match.group(1)) + fault.range_shift if match else None
        if start is not None and start >= len(whole):
            self._send_status(path, 416)
            return None
        body = whole if start is None else whole[start:]
        status = 200 if start is None else 206
        self._log(path, status)
        self.send_response(status)
        self.send_header("Content-Type", "application/octet-stream")
        if fault.ranges:
            self.send_header("Accept-Ranges", "bytes")
            self.send_header("ETag", etag)
        if start is not None:
            self.send_header("Content-Range", f"bytes {start}-{len(whole) - 1}/{len(whole)}")
        if fault.chunked:
            self.send_header("Transfer-Encoding", "chunked")
        else:
            self.send_header("Content-Length", str(fault.lie_length if fault.lie_length is not None else len(body)))
        self.end_headers()
        return body

    def _write(self, data: bytes, fault: Fault) -> None:
        step = fault.piece_bytes
        for start in range(0, len(data), step):
            piece = data[start : start + step]
            if fault.chunked:
                piece = f"{len(piece):x}\r\n".encode() + piece + b"\r\n"
            try:
                self.wfile.write(piece)
                self.wfile.flush()
            except OSError:
                self.close_connection = True
                return  # the client went away (it won a race elsewhere, or was cancelled)
            if fault.bytes_per_second and self.server.state.stopping.wait(len(piece) / fault.bytes_per_second):
                return

    def _reset(self) -> None:
        """Close with a TCP RST (SO_LINGER 0), as a crashed server or a proxy does."""
        with contextlib.suppress(OSError):
            self.wfile.flush()
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.close()

    def _send_status(self, path: str, status: int) -> None:
        self._log(path, status)
        body = f"{status}\n".encode()
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _log(self, path: str, status: int) -> None:
        with self.server.state.lock:
            self.server.state.requests.append(
                Request(self.command, path, status, self.headers.get("Range"), self.headers.get("Authorization"))
            )

    @staticmethod
    def _find(state: _State, path: str) -> Path | None:
        """The file under the root at ``path``, ignoring case when folding; never outside the root."""
        parts = [part for part in path.split("/") if part]
        if any(part in (".", "..") or "\\" in part for part in parts) or not parts:
            return None
        current = state.root
        for part in parts:
            candidate = current / part
            if not candidate.exists() and state.fold_case and current.is_dir():
                matches = [child for child in current.iterdir() if child.name.lower() == part.lower()]
                candidate = matches[0] if matches else candidate
            current = candidate
        return current if current.is_file() else None


class HttpStore:
    """The server: start it with ``with HttpStore(root) as store``; ``store.url`` is its base URL."""

    def __init__(self, root: Path, *, fold_case: bool = False, tls: tuple[Path, Path] | None = None) -> None:
        """``tls``: (certificate, key) PEM files: serve https (the handshake runs in the request's thread)."""
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.state = _State(root, fold_case)
        self._scheme = "http"
        if tls is not None:
            import ssl

            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*tls)
            self._server.socket = context.wrap_socket(
                self._server.socket, server_side=True, do_handshake_on_connect=False
            )
            self._scheme = "https"
        self._thread = _serving_thread(self._server)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"{self._scheme}://{host!s}:{port}"

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def root(self) -> Path:
        return self._server.state.root

    def fault(self, path: str, fault: Fault) -> None:
        """Make ``path`` (the URL path, e.g. ``/buildid/ab/debuginfo``) misbehave as ``fault`` says."""
        with self._server.state.lock:
            self._server.state.faults[path] = fault

    @property
    def requests(self) -> list[Request]:
        with self._server.state.lock:
            return list(self._server.state.requests)

    def requests_for(self, path: str) -> list[Request]:
        return [request for request in self.requests if request.path == path]

    def clear_log(self) -> None:
        with self._server.state.lock:
            self._server.state.requests.clear()

    def start(self) -> HttpStore:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.state.stopping.set()  # ends every stall
        _stop(self._server, self._thread)

    def __enter__(self) -> HttpStore:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.stop()


def wait_for_request(store: HttpStore, path: str, *, timeout: float = 10.0) -> bool:
    """Whether ``path`` was requested within ``timeout`` seconds (polls the log)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if store.requests_for(path):
            return True
        time.sleep(0.01)
    return False


class _ProxyHandler(BaseHTTPRequestHandler):
    """A forward proxy's GET: the absolute URL's host is looked up in the proxy's table of
    origins (so the tests' made-up host names reach loopback servers only through it)."""

    server: _ProxyServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        import http.client

        target = urllib.parse.urlsplit(self.path)
        with self.server.lock:
            self.server.requests.append((self.path, self.headers.get("Proxy-Authorization")))
            origin = self.server.origins.get(target.netloc)
        if origin is None or not target.scheme:
            self.send_response(502)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        upstream = http.client.HTTPConnection(*origin, timeout=30)
        try:
            upstream.request("GET", urllib.parse.urlunsplit(("", "", target.path, target.query, "")))
            answer = upstream.getresponse()
            body = answer.read()
        finally:
            upstream.close()
        self.send_response(answer.status)
        for name in ("Location", "Content-Type"):
            if (value := answer.getheader(name)) is not None:
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


    def do_CONNECT(self) -> None:
        """A tunnel (https through the proxy): bytes relayed both ways until either side closes."""
        import select

        with self.server.lock:
            self.server.requests.append((f"CONNECT {self.path}", self.headers.get("Proxy-Authorization")))
            origin = self.server.origins.get(self.path)
        if origin is None:
            self.send_response(502)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        upstream = socket.create_connection(origin, timeout=30)
        self.send_response(200, "Connection established")
        self.end_headers()
        self.wfile.flush()
        self.close_connection = True
        sides = [self.connection, upstream]
        try:
            while True:
                readable, _, _ = select.select(sides, [], [], 30)
                if not readable:
                    return
                for side in readable:
                    data = side.recv(65536)
                    if not data:
                        return
                    (upstream if side is self.connection else self.connection).sendall(data)
        except OSError:
            return
        finally:
            upstream.close()


class _ProxyServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128
    origins: dict[str, tuple[str, int]]
    requests: list[tuple[str, str | None]]
    lock: threading.Lock


class HttpProxy:
    """A forward HTTP proxy on loopback: ``origins`` maps a made-up ``host:port`` to a real server's
    (host, port). ``requests`` logs (absolute URL, Proxy-Authorization header) of each request."""

    def __init__(self, origins: dict[str, tuple[str, int]]) -> None:
        self._server = _ProxyServer(("127.0.0.1", 0), _ProxyHandler)
        self._server.origins = origins
        self._server.requests = []
        self._server.lock = threading.Lock()
        self._thread = _serving_thread(self._server)

    @property
    def address(self) -> str:
        host, port = self._server.server_address[:2]
        return f"{host!s}:{port}"

    @property
    def requests(self) -> list[tuple[str, str | None]]:
        with self._server.lock:
            return list(self._server.requests)

    def __enter__(self) -> HttpProxy:
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, traceback: TracebackType | None
    ) -> None:
        _stop(self._server, self._thread)


def _serving_thread(server: ThreadingHTTPServer) -> threading.Thread:
    # A short poll: shutdown() waits for the loop's next look at its flag.
    return threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)


def _stop(server: ThreadingHTTPServer, thread: threading.Thread) -> None:
    server.shutdown()
    server.server_close()
    thread.join(5)
