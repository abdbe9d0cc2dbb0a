"""``symbolize serve --forward URL`` end to end on loopback: the service in its own process
(``python -m symbolize serve``), the receiver in another (tests/servers/otlp_receiver.py, which a
test stops, starts again and tells to answer 5xx), a real HTTP client (http.client) as the
exporter, retrying what OTLP says to retry (429, 502, 503, 504, after their Retry-After).

Exports are fixture pprof profiles converted to OTLP by the converter (no OTLP producer runs
here); what the receiver gets must name the frames ``symbolize profile`` names on the pprof.
Load figures are bench/serve_load.py's, not these tests'.
"""

from __future__ import annotations

import gzip
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from symbolize.api import Session, symbolize_profile
from symbolize.cache import cache_entries
from symbolize.otlp.convert import Target, convert
from symbolize.otlp.encoding import Encoding, read_profiles_data
from symbolize.proto import profile_pb2 as pprof
from symbolize.rewrite import RewriteOptions
from symbolize.serve.forward import Forwarder, ForwardTarget, parse_header
from symbolize.serve.naming import NAME_EXPORT, NamingWorker
from symbolize.serve.protocol import VERSION_HEADER, development_version, parse_retry_after
from symbolize.serve.server import ProfileService, ServeHTTPServer, ServeLimits
from tests.fixtures_data import BIN, PROFILES, ROOT
from tests.servers.otlp_receiver import PATH, Receiver

FIXTURE = PROFILES / "cdemo-gcc-dwarf5-pie.cpu.pb"
# The eBPF profiler's shape (ELF virtual addresses, htlhash only): otlpsym25's fixtures.
EBPF_EXPORTS = sorted((ROOT / "fixtures" / "otlp").glob("*.ebpf.otlp.pb"))
PROTOBUF = "application/x-protobuf"
JSON = "application/json"


class Service:
    """``symbolize serve`` in its own process, on a port it picked (read from its first line)."""

    def __init__(self, receiver_url: str, cache_dir: Path, *options: str) -> None:
        self.cache_dir = cache_dir
        self.process = subprocess.Popen(
            [sys.executable, "-m", "symbolize", "serve", "--forward", receiver_url, "--listen", "127.0.0.1:0",
             "--search-path", str(BIN), "--cache-dir", str(cache_dir), *options],
            cwd=ROOT, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert self.process.stderr is not None
        line = self.process.stderr.readline()
        if "listening on http://127.0.0.1:" not in line:
            self.process.kill()
            raise RuntimeError(f"symbolize serve did not start: {line!r}{self.process.stderr.read()}")
        self.port = int(line.split("127.0.0.1:")[1].split(",")[0])
        # stderr read as it comes: a service's log must never fill the pipe and block it.
        self.log: list[str] = []
        self._reading = threading.Thread(target=lambda stream: self.log.extend(stream), args=(self.process.stderr,))
        self._reading.start()

    def stop(self, timeout: float = 30) -> tuple[int, str]:
        """SIGTERM, then the exit code and the rest of stderr."""
        self.process.send_signal(signal.SIGTERM)
        code = self.process.wait(timeout)
        self._reading.join(timeout)
        return code, "".join(self.log)

    def health(self) -> dict[str, object]:
        status, _, body = request(self.port, "GET", "/health")
        health: dict[str, object] = json.loads(body)
        assert status == (200 if health["status"] == "serving" else 503)
        return health


def request(port: int, method: str, path: str, body: bytes | None = None,
            headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:  # fmt: skip
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        connection.request(method, path, body=body, headers=headers or {})
        response = connection.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        connection.close()


def export(port: int, body: bytes, content_type: str = PROTOBUF, **headers: str) -> tuple[int, dict[str, str], bytes]:
    return request(port, "POST", PATH, body, {"Content-Type": content_type, **headers})


def export_until_taken(port: int, body: bytes, deadline: float = 60.0, **headers: str) -> tuple[int, int]:
    """An OTLP exporter's loop: send, and on 429/502/503/504 wait its Retry-After and send again.
    Returns (final status, attempts)."""
    give_up = time.monotonic() + deadline
    attempts = 0
    while True:
        attempts += 1
        try:
            status, answer_headers, _ = export(port, body, **headers)
        except (ConnectionError, http.client.RemoteDisconnected):
            status, answer_headers = 503, {"retry-after": "1"}
        if status not in (429, 502, 503, 504) or time.monotonic() > give_up:
            return status, attempts
        wait = parse_retry_after(answer_headers.get("retry-after"))
        assert wait is not None, f"a {status} without Retry-After"
        time.sleep(min(wait, 1.0))


def otlp_of(profile: Path, encoding: Encoding = Encoding.PROTOBUF) -> bytes:
    return convert(profile.read_bytes(), Target.OTLP, encoding=encoding).data


def named_functions(profile: pprof.Profile) -> set[str]:
    strings = profile.string_table
    return {strings[function.name] for function in profile.function if function.name}


def received_functions(body: bytes, gzipped: bool = False) -> set[str]:
    """The function names an OTLP export's dictionary holds."""
    message, _, _ = read_profiles_data(gzip.decompress(body) if gzipped else body)
    strings = message.dictionary.string_table
    return {strings[function.name_strindex] for function in message.dictionary.function_table
            if function.name_strindex}  # fmt: skip


@pytest.fixture(scope="module")
def receiver() -> Iterator[Receiver]:
    started = Receiver()
    started.start()
    yield started
    started.stop()


@pytest.fixture(scope="module")
def service(receiver: Receiver, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    started = Service(receiver.url, tmp_path_factory.mktemp("serve-cache"), "--forward-deadline", "1.5",
                      "--forward-header", "Authorization: Bearer t0ken")  # fmt: skip
    yield started
    code, _ = started.stop()
    assert code == 0


@pytest.fixture(autouse=True)
def _receiver_answers(receiver: Receiver) -> None:
    """Every test starts with a receiver up and answering 200 at once."""
    if receiver.process is None:
        receiver.start()
    receiver.control(status=200, delay=0, retry_after=None)


@pytest.fixture(scope="module")
def expected_names() -> set[str]:
    profile = pprof.Profile()
    profile.ParseFromString(FIXTURE.read_bytes())
    named, _ = symbolize_profile(profile, search_paths=[BIN], background_index=False)
    names = named_functions(named)
    assert "main" in names  # the fixture names something, or the comparison says nothing
    return names


@pytest.mark.parametrize(("encoding", "gzipped"), [(Encoding.PROTOBUF, False), (Encoding.JSON, True)])
def test_an_export_is_named_and_forwarded(service: Service, receiver: Receiver, expected_names: set[str],
                                          encoding: Encoding, gzipped: bool) -> None:  # fmt: skip
    before = len(receiver.received())
    body = otlp_of(FIXTURE, encoding)
    assert received_functions(body, False) == set()  # bare addresses going in
    headers = {"Content-Encoding": "gzip"} if gzipped else {}
    content_type = PROTOBUF if encoding is Encoding.PROTOBUF else JSON
    status, answer_headers, _ = export(service.port, gzip.compress(body) if gzipped else body, content_type,
                                       **headers)  # fmt: skip
    assert status == 200
    assert answer_headers["content-type"] == content_type
    kept = receiver.received()[before:]
    assert len(kept) == 1
    assert kept[0]["versions"] == ["1"]
    assert kept[0]["authorization"] == "Bearer t0ken"  # --forward-header
    assert kept[0]["content_type"] == content_type
    assert kept[0]["content_encoding"] == ("gzip" if gzipped else None)
    assert received_functions(kept[0]["body"], gzipped) == expected_names
    # The binary's index was built by the service and kept, for every later export.
    indexed = {entry.source_path.name for entry in cache_entries(service.cache_dir) if entry.source_path}
    assert "cdemo-gcc-dwarf5-pie" in indexed


@pytest.mark.skipif(not EBPF_EXPORTS, reason="no eBPF-shaped OTLP fixture (fixtures/otlp/*.ebpf.otlp.pb)")
@pytest.mark.parametrize("fixture", EBPF_EXPORTS, ids=lambda path: path.name)
def test_an_ebpf_shaped_export_is_named_as_the_naming_function_names_it(
    service: Service, receiver: Receiver, fixture: Path, tmp_path: Path
) -> None:
    body = fixture.read_bytes()
    session = Session(search_paths=[BIN], cache_dir=tmp_path)
    loader = session.loader()
    try:
        named, _ = NAME_EXPORT(body, RewriteOptions(discovery=loader), source=str(fixture))
    finally:
        session.finish(loader)
    expected = received_functions(named)
    assert expected, "the fixture names nothing: the comparison would say nothing"
    before = len(receiver.received())
    assert export(service.port, body)[0] == 200
    assert received_functions(receiver.received()[before]["body"]) == expected


@pytest.mark.parametrize("values", [["2"], ["01"], [""], ["1", "1"], ["1, 2"]])
def test_a_version_it_does_not_read_is_refused_before_decoding(service: Service, receiver: Receiver,
                                                               values: list[str]) -> None:  # fmt: skip
    before = receiver.count()
    connection = http.client.HTTPConnection("127.0.0.1", service.port, timeout=30)
    connection.putrequest("POST", PATH)
    connection.putheader("Content-Type", PROTOBUF)
    for value in values:
        connection.putheader(VERSION_HEADER, value)
    body = b"\xff" * 64  # no export at all: refused on the header alone
    connection.putheader("Content-Length", str(len(body)))
    connection.endheaders(body)
    response = connection.getresponse()
    answer = response.read()
    connection.close()
    assert response.status == 400
    assert response.getheader("Retry-After") is None  # OTLP: the sender drops it, never retries
    assert VERSION_HEADER.encode() in answer  # the google.rpc.Status message says why
    assert receiver.count() == before


def test_version_one_said_or_not_is_read(service: Service) -> None:
    body = otlp_of(FIXTURE)
    assert export(service.port, body, **{VERSION_HEADER: "1"})[0] == 200
    assert export(service.port, body)[0] == 200


@pytest.mark.parametrize(
    ("body", "headers", "status"),
    [
        (b"{}", {"Content-Type": "text/plain"}, 415),
        (b"{}", {"Content-Type": PROTOBUF}, 400),  # JSON bytes sent as protobuf
        (b"\x0a\x00", {"Content-Type": JSON}, 400),
        (b"not gzip", {"Content-Type": PROTOBUF, "Content-Encoding": "gzip"}, 400),
        (b"x", {"Content-Type": PROTOBUF, "Content-Encoding": "br"}, 415),
        (b"\x0a\xff\xff\xff\xff\x0f", {"Content-Type": PROTOBUF}, 400),  # a length past the end
    ],
)
def test_bad_requests_get_a_status_the_sender_does_not_retry(
    service: Service, receiver: Receiver, body: bytes, headers: dict[str, str], status: int
) -> None:
    before = receiver.count()
    assert request(service.port, "POST", PATH, body, headers)[0] == status
    assert receiver.count() == before


def test_health_and_unknown_paths(service: Service, receiver: Receiver) -> None:
    health = service.health()
    assert health["status"] == "serving"
    assert health["forward"] == receiver.url
    assert request(service.port, "GET", "/nothing")[0] == 404
    assert request(service.port, "POST", "/v1/traces", b"x", {"Content-Type": PROTOBUF})[0] == 404


def test_a_receiver_that_answers_5xx_is_retried_then_the_sender_told_to_retry(service: Service,
                                                                              receiver: Receiver) -> None:  # fmt: skip
    receiver.control(status=503, retry_after="1")
    status, headers, _ = export(service.port, otlp_of(FIXTURE))
    assert status == 503
    assert parse_retry_after(headers["retry-after"]) is not None
    receiver.control(status=400)
    assert export(service.port, otlp_of(FIXTURE))[0] == 400  # final: passed back, not retried into a 503


def test_a_receiver_busy_for_less_than_the_deadline_costs_the_sender_nothing(service: Service,
                                                                             receiver: Receiver) -> None:  # fmt: skip
    receiver.control(status=503, retry_after="1")
    before, retries = receiver.count(), service.health()["forward_retries"]
    with ThreadPoolExecutor(1) as pool:
        sent = pool.submit(export, service.port, otlp_of(FIXTURE))
        give_up = time.monotonic() + 30
        while service.health()["forward_retries"] == retries and time.monotonic() < give_up:
            time.sleep(0.02)  # until the first attempt was refused: the service waits its Retry-After
        receiver.control(status=200)
        status, _, _ = sent.result()
    assert status == 200
    assert receiver.count() == before + 1
    assert service.health()["forward_retries"] == retries + 1  # type: ignore[operator]


def test_nothing_is_lost_while_the_receiver_is_down(service: Service, receiver: Receiver) -> None:
    """Down: the sender is answered 503 + Retry-After and keeps its data; back: every export arrives."""
    receiver.stop()
    body = otlp_of(FIXTURE)
    status, headers, _ = export(service.port, body)
    assert status == 503
    assert "retry-after" in headers
    with ThreadPoolExecutor(4) as pool:
        sent = [pool.submit(export_until_taken, service.port, body) for _ in range(6)]
        time.sleep(2.0)  # every sender has been refused at least once by now
        receiver.start()
        outcomes = [future.result() for future in sent]
    assert all(status == 200 for status, _ in outcomes)
    assert max(attempts for _, attempts in outcomes) > 1
    assert receiver.count() == 6  # the restarted receiver's own count: each export once


def test_many_concurrent_exports_are_each_delivered_once(service: Service, receiver: Receiver) -> None:
    before = receiver.count()
    body = otlp_of(FIXTURE)
    with ThreadPoolExecutor(16) as pool:
        outcomes = list(pool.map(lambda _: export_until_taken(service.port, body), range(48)))
    assert [status for status, _ in outcomes] == [200] * 48
    assert receiver.count() == before + 48
    health = service.health()
    assert health["in_flight"] == 0
    assert health["queued"] == 0
    assert health["named"] >= 48  # type: ignore[operator]
    assert health["locations"]["named"] > 0  # type: ignore[index]


def test_a_full_queue_answers_429_and_no_export_is_lost(receiver: Receiver, tmp_path: Path) -> None:
    receiver.control(delay=0.5)
    service = Service(receiver.url, tmp_path, "--max-pending", "2")
    try:
        before = receiver.count()
        body = otlp_of(FIXTURE)
        with ThreadPoolExecutor(8) as pool:
            first = list(pool.map(lambda _: export(service.port, body), range(8)))
        busy = [headers for status, headers, _ in first if status == 429]
        assert busy, "8 at once past a queue of 2: some must be refused"
        assert all(headers.get("retry-after") == "1" for headers in busy)
        assert sorted({status for status, _, _ in first}) == [200, 429]
        with ThreadPoolExecutor(8) as pool:
            retried = list(pool.map(lambda _: export_until_taken(service.port, body), range(len(busy))))
        assert [status for status, _ in retried] == [200] * len(busy)
        assert receiver.count() == before + 8
        assert service.health()["refused_busy"] >= len(busy)
    finally:
        assert service.stop()[0] == 0


def test_sigterm_finishes_what_is_in_flight(receiver: Receiver, tmp_path: Path) -> None:
    receiver.control(delay=1.5)
    service = Service(receiver.url, tmp_path)
    before = receiver.count()
    with ThreadPoolExecutor(3) as pool:
        sent = [pool.submit(export, service.port, otlp_of(FIXTURE)) for _ in range(3)]
        time.sleep(0.7)  # named, now waiting on the slow receiver
        code, stderr = service.stop()
        statuses = [future.result()[0] for future in sent]
    assert code == 0
    assert statuses == [200, 200, 200]
    assert receiver.count() == before + 3
    assert "every export answered" in stderr
    with pytest.raises(ConnectionRefusedError):
        export(service.port, otlp_of(FIXTURE))


def test_sigterm_past_its_deadline_answers_retry_later(receiver: Receiver, tmp_path: Path) -> None:
    receiver.control(delay=5)
    service = Service(receiver.url, tmp_path, "--shutdown-timeout", "1")
    with ThreadPoolExecutor(1) as pool:
        sent = pool.submit(export, service.port, otlp_of(FIXTURE))
        time.sleep(0.7)
        started = time.monotonic()
        code, stderr = service.stop()
        status, headers, _ = sent.result()
    assert code == 0
    assert time.monotonic() - started < 4.5  # not the receiver's 5 s
    assert status == 503
    assert "retry-after" in headers
    assert "answered 503" in stderr
    # The receiver would still take the cut export once its 5 s are up (at least once, as OTLP
    # is: the sender, told 503, sends it again): a new receiver, so no later test counts it.
    receiver.stop()
    receiver.start()


def test_the_command_refuses_bad_options_in_one_line(tmp_path: Path) -> None:
    run = subprocess.run(
        [sys.executable, "-m", "symbolize", "serve", "--forward", "ftp://x", "--listen", "127.0.0.1:0"],
        cwd=ROOT, capture_output=True, text=True, timeout=60, env={**os.environ, "SYMBOLIZE_CACHE_DIR": str(tmp_path)},
    )  # fmt: skip
    assert run.returncode == 1
    assert run.stderr.strip().splitlines() == ["symbolize: error: --forward needs an http(s) URL with a host, not 'ftp://x'"]
    run = subprocess.run([sys.executable, "-m", "symbolize", "serve", "--forward", "http://h", "--max-pending", "0"],
                         cwd=ROOT, capture_output=True, text=True, timeout=60)  # fmt: skip
    assert run.returncode == 2
    assert "--max-pending" in run.stderr
    run = subprocess.run([sys.executable, "-m", "symbolize", "serve", "--forward", "http://h", "--forward-header",
                          "X-Evil: a\r\nHost: b"], cwd=ROOT, capture_output=True, text=True, timeout=60)  # fmt: skip
    assert run.returncode == 2
    assert "line break" in run.stderr
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        address = f"127.0.0.1:{taken.getsockname()[1]}"
        run = subprocess.run([sys.executable, "-m", "symbolize", "serve", "--forward", "http://h", "--listen", address],
                             cwd=ROOT, capture_output=True, text=True, timeout=60)  # fmt: skip
    assert run.returncode == 1
    assert run.stderr.splitlines() == [f"symbolize: error: {address}: cannot listen: address already in use"]


@given(st.lists(st.text(max_size=6), max_size=3))
def test_only_one_version_one_is_read(values: list[str]) -> None:
    read = development_version(values)
    assert (read == "1") == (values in ([], ["1"]) or (len(values) == 1 and values[0].strip() == "1"))


def test_retry_after_in_both_forms() -> None:
    assert parse_retry_after("3") == 3.0
    assert parse_retry_after("Wed, 02 Dec 2026 10:00:05 GMT", now=1796205600.0) == pytest.approx(5.0)
    assert parse_retry_after("soon") is None
    assert parse_retry_after(None) is None



SMALL_LIMITS = ServeLimits(max_pending=1, max_connections=2, body_timeout=0.5, idle_timeout=2.0, max_body=1 << 16)


@pytest.fixture
def in_process(receiver: Receiver, tmp_path: Path) -> Iterator[Callable[[ServeLimits], tuple[int, ProfileService]]]:
    """Starts the service in this process with the limits given (the command line has no option
    for most of them); its port and service."""
    stops: list[Callable[[], None]] = []

    def start(limits: ServeLimits) -> tuple[int, ProfileService]:
        session = Session(search_paths=[BIN], cache_dir=tmp_path)
        session.options = session.options._replace(build_missing_indexes=True)  # as the command does
        worker = NamingWorker(session, lambda loader: RewriteOptions(discovery=loader), capacity=limits.max_pending)
        forwarder = Forwarder(ForwardTarget(receiver.url), deadline=1.0, attempt_timeout=5.0)
        service = ProfileService(worker, forwarder, limits)
        httpd = ServeHTTPServer(("127.0.0.1", 0), service)
        accepting = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05})
        accepting.start()

        def stop() -> None:
            service.stopping.set()
            httpd.shutdown()
            accepting.join()
            httpd.close_idle()
            httpd.server_close()
            worker.stop(30)
            forwarder.close()

        stops.append(stop)
        return httpd.server_address[1], service

    yield start
    for stop in stops:
        stop()


@pytest.fixture
def small_service(in_process: Callable[[ServeLimits], tuple[int, ProfileService]]) -> tuple[int, ProfileService]:
    return in_process(SMALL_LIMITS)


def test_an_export_slower_to_name_than_the_timeout_is_retried_into_a_warm_index(
    in_process: Callable[[ServeLimits], tuple[int, ProfileService]], receiver: Receiver
) -> None:
    port, service = in_process(replace(SMALL_LIMITS, name_timeout=0.01))
    before = receiver.count()
    status, headers, _ = export(port, otlp_of(FIXTURE))  # its binaries' indexes are built meanwhile
    assert status == 503
    assert parse_retry_after(headers["retry-after"]) is not None
    give_up = time.monotonic() + 60
    while service.worker.named == 0 and time.monotonic() < give_up:
        time.sleep(0.05)
    assert receiver.count() == before  # named late: dropped, never forwarded behind the sender's back
    port, service = in_process(replace(SMALL_LIMITS, name_timeout=5.0))  # a fresh loader, the cache warm
    assert export(port, otlp_of(FIXTURE))[0] == 200


def test_a_trickled_body_frees_its_slot(small_service: tuple[int, ProfileService]) -> None:
    port, service = small_service
    with socket.create_connection(("127.0.0.1", port)) as slow:
        slow.sendall(f"POST {PATH} HTTP/1.1\r\nHost: x\r\nContent-Type: {PROTOBUF}\r\nContent-Length: 1000\r\n\r\n"
                     "abc".encode())  # fmt: skip
        answer = slow.recv(4096)  # the body deadline passes (0.5 s): 408, the connection closed
    assert answer.startswith(b"HTTP/1.1 408 ")
    assert service.in_flight == 0
    assert export(port, otlp_of(FIXTURE))[0] == 200  # the only slot is free again


def test_connections_past_the_cap_are_told_to_retry(small_service: tuple[int, ProfileService]) -> None:
    port, service = small_service
    kept = [socket.create_connection(("127.0.0.1", port)) for _ in range(2)]
    try:
        time.sleep(0.2)  # both accepted, each with its thread, waiting for a request
        status, headers, _ = request(port, "GET", "/health")
        assert status == 503
        assert headers["retry-after"] == "1"
        assert service.counts["refused_connection"] == 1
    finally:
        for connection in kept:
            connection.close()
    time.sleep(0.2)
    assert request(port, "GET", "/health")[0] == 200


@pytest.mark.parametrize(
    ("head", "status"),
    [
        ("Content-Length: 65537", 413),  # past max_body: refused before a byte of it is read
        ("Content-Length: -1", 400),
        ("Content-Length: 1e3", 400),
        ("Transfer-Encoding: chunked", 411),
        ("", 411),
    ],
)
def test_bodies_it_will_not_read(small_service: tuple[int, ProfileService], head: str, status: int) -> None:
    port, service = small_service
    with socket.create_connection(("127.0.0.1", port)) as client:
        client.sendall(f"POST {PATH} HTTP/1.1\r\nHost: x\r\nContent-Type: {PROTOBUF}\r\n{head}\r\n\r\n".encode())
        answer = client.makefile("rb").read()  # the server closes the connection after it
    assert answer.startswith(f"HTTP/1.1 {status} ".encode())
    assert service.in_flight == 0


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("Authorization: Bearer x", ("Authorization", "Bearer x")),
        ("api-key=abc=def", ("api-key", "abc=def")),  # OTEL_EXPORTER_OTLP_HEADERS' spelling
        ("X-Scope-OrgID:tenant-1", ("X-Scope-OrgID", "tenant-1")),
        ("no separator", None),
        ("bad name: x", None),
        ("X: a\nb", None),
        ("content-type: text/plain", None),  # the service's own
        (f"{VERSION_HEADER}: 2", None),
    ],
)
def test_forward_headers_as_written(text: str, parsed: tuple[str, str] | None) -> None:
    if parsed is None:
        with pytest.raises(ValueError):
            parse_header(text)
    else:
        assert parse_header(text) == parsed
