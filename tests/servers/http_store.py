"""A real HTTP file server on 127.0.0.1 that serves a directory and misbehaves on request.

ThreadingHTTPServer on an ephemeral loopback port, serving the files under ``root``. Faults are
set per URL path (:class:`Fault`): stall before the headers or after N bytes, answer 5xx the
first N times, reset the connection mid-body the first N times, redirect, delay, serve another
file, or answer a given status. ``fold_case`` looks paths up ignoring case, as IIS-hosted symbol
servers do. Every request is logged (:attr:`HttpStore.requests`), so a test can assert that
none was made. Stalls end when the test stops the server (or after ``stall_seconds``), so a
stopped server leaves no thread behind.

Used by tests/test_remote_fetch.py, the symbol-store tests and bench/remote_fetch.py::

    with HttpStore(directory) as store:
        store.fault("/buildid/ab/debuginfo", Fault(stall_after=4096))
        url = store.url + "/buildid/ab/debuginfo"
"""

from __future__ import annotations

import contextlib
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
    reset. ``redirect``: answer 302 to this location (absolute, or a path of this server).
    ``serve``: send this file instead (another build's). ``status``: answer this status, no body.
    ``chunked``: send the body chunked, without a Content-Length. ``lie_length``: claim this
    Content-Length whatever the body is.
    """

    delay: float = 0.0
    stall_before_headers: bool = False
    stall_after: int | None = None
    stall_seconds: float = 60.0
    fail_times: int = 0
    fail_status: int = 503
    reset_times: int = 0
    reset_after: int = 0
    redirect: str | None = None
    serve: Path | None = None
    status: int | None = None
    chunked: bool = False
    lie_length: int | None = None
    bytes_per_second: float | None = None


@dataclass(frozen=True)
class Request:
    """One request as the server saw it: method, path (unquoted), the status it answered."""

    method: str
    path: str
    status: int


@dataclass
class _State:
    root: Path
    fold_case: bool
    faults: dict[str, Fault] = field(default_factory=dict)
    requests: list[Request] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    stopping: threading.Event = field(default_factory=threading.Event)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    state: _State


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
        body = file.read_bytes()
        self._log(path, 200)
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        if fault.chunked:
            self.send_header("Transfer-Encoding", "chunked")
        else:
            self.send_header("Content-Length", str(fault.lie_length if fault.lie_length is not None else len(body)))
        self.end_headers()
        if reset:
            self._write(body[: fault.reset_after], fault)
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

    def _write(self, data: bytes, fault: Fault) -> None:
        step = 16 * 1024
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
            self.server.state.requests.append(Request(self.command, path, status))

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

    def __init__(self, root: Path, *, fold_case: bool = False) -> None:
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.state = _State(root, fold_case)
        self._thread = threading.Thread(target=self._server.serve_forever, name="http_store", daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

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
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)

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
