"""A small OTLP/HTTP profiles receiver, run as a second process by the tests of ``symbolize serve``.

``python -m tests.servers.otlp_receiver [--port N]`` listens on 127.0.0.1 (port 0: any free one)
and prints ``PORT <n>`` on stdout once it accepts. It keeps every export POSTed to
``/v1development/profiles`` (body and the headers that matter) and answers as told by
``POST /control`` (JSON ``{"status": 200|4xx|5xx, "delay": seconds, "retry_after": text}``):
a real server that really is slow or really answers 5xx. ``GET /received`` lists what it kept
(bodies base64), ``GET /received?count`` only how many (``--count-only`` keeps no bodies:
bench/serve_load.py's long runs). Stopped with SIGTERM (from then on a kept connection's export is answered 503, not
taken, and ``COUNT <n>`` on stdout is what this life took); started again on the same port for
"the receiver comes back".

:class:`Receiver` runs it from a test.
"""

from __future__ import annotations

import argparse
import base64
import json
import subprocess
import sys
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

PATH = "/v1development/profiles"
_ROOT = Path(__file__).resolve().parents[2]


class _State:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.received: list[dict[str, Any]] = []
        self.status = 200
        self.delay = 0.0
        self.retry_after: str | None = None
        self.count_only = False
        self.count = 0
        self.stopping = False  # SIGTERM: nothing more is taken, so COUNT is final
        self.answering = 0  # exports counted whose 200 is not written yet


STATE = _State()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path == "/control":
            told = json.loads(body)
            with STATE.lock:
                STATE.status = int(told.get("status", STATE.status))
                STATE.delay = float(told.get("delay", STATE.delay))
                STATE.retry_after = told.get("retry_after", STATE.retry_after)
            self._answer(200, b"{}", "application/json")
            return
        if self.path != PATH:
            self._answer(404, b"", "text/plain")
            return
        with STATE.lock:
            status, delay, retry_after = STATE.status, STATE.delay, STATE.retry_after
        time.sleep(delay)
        content_type = self.headers.get("Content-Type") or ""
        if status == 200:
            with STATE.lock:
                if STATE.stopping:  # a kept connection outlives the listener: it takes nothing now
                    self.close_connection = True
                    self._answer(503, b"stopping", "text/plain", "1")
                    return
                STATE.count += 1
                STATE.answering += 1
                if not STATE.count_only:
                    STATE.received.append({
                        "content_type": content_type,
                        "content_encoding": self.headers.get("Content-Encoding"),
                        "versions": self.headers.get_all("OTLP-Profiles-Development-Version") or [],
                        "authorization": self.headers.get("Authorization"),
                        "body": base64.b64encode(body).decode(),
                    })
            # An empty ExportProfilesServiceResponse, in the request's encoding.
            try:
                self._answer(200, b"{}" if content_type.startswith("application/json") else b"", content_type)
            finally:
                with STATE.lock:
                    STATE.answering -= 1
            return
        self._answer(status, f"receiver told to answer {status}".encode(), "text/plain", retry_after)

    def do_GET(self) -> None:
        with STATE.lock:
            received, count = list(STATE.received), STATE.count
        if self.path == "/received?count":
            self._answer(200, json.dumps(count).encode(), "application/json")
        elif self.path == "/received":
            self._answer(200, json.dumps(received).encode(), "application/json")
        else:
            self._answer(404, b"", "text/plain")

    def _answer(self, status: int, body: bytes, content_type: str, retry_after: str | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        if retry_after is not None:
            self.send_header("Retry-After", retry_after)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--count-only", action="store_true")
    arguments = parser.parse_args()
    port = arguments.port
    STATE.count_only = arguments.count_only
    server = ThreadingHTTPServer(("127.0.0.1", port), _Handler)
    server.daemon_threads = True
    print(f"PORT {server.server_address[1]}", flush=True)
    import signal

    def stop(*_: object) -> None:
        with STATE.lock:
            STATE.stopping = True
        threading.Thread(target=server.shutdown).start()

    signal.signal(signal.SIGTERM, stop)
    server.serve_forever(poll_interval=0.1)
    server.server_close()
    give_up = time.monotonic() + 5
    while STATE.answering and time.monotonic() < give_up:
        time.sleep(0.01)  # a counted export is answered before the process ends
    with STATE.lock:
        print(f"COUNT {STATE.count}", flush=True)  # what this instance took (final), for Receiver.total


class Receiver:
    """The receiver in its own process: started, stopped, started again on the same port."""

    def __init__(self, *, count_only: bool = False) -> None:
        self.port = 0
        self.count_only = count_only
        self.taken_before = 0  # what the instances stopped so far took
        self.process: subprocess.Popen[str] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}{PATH}"

    def start(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.servers.otlp_receiver", "--port", str(self.port),
             *(["--count-only"] if self.count_only else [])],
            cwd=_ROOT, stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line.startswith("PORT "):
            self.process.kill()
            raise RuntimeError(f"the receiver did not start: {line!r}")
        self.port = int(line.split()[1])

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            assert self.process.stdout is not None
            last = self.process.stdout.read().split()
            self.process.wait(10)
            self.process.stdout.close()
            self.process = None
            if last[:1] == ["COUNT"]:
                self.taken_before += int(last[1])

    def total(self) -> int:
        """Exports taken by every instance so far, this one included (when running)."""
        return self.taken_before + (self.count() if self.process is not None else 0)

    def control(self, **told: Any) -> None:
        request = urllib.request.Request(f"http://127.0.0.1:{self.port}/control", data=json.dumps(told).encode(),
                                         method="POST")  # fmt: skip
        urllib.request.urlopen(request, timeout=10).read()

    def received(self) -> list[dict[str, Any]]:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/received", timeout=10) as answer:
            kept: list[dict[str, Any]] = json.loads(answer.read())
        for export in kept:
            export["body"] = base64.b64decode(export["body"])
        return kept

    def count(self) -> int:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/received?count", timeout=10) as answer:
            return int(json.loads(answer.read()))


if __name__ == "__main__":
    main()
