"""``symbolize serve`` under load: requests/s, latency, RSS, 429s, and no loss across a receiver outage.

Real processes on loopback: the service (``python -m symbolize serve``), the receiver
(tests/servers/otlp_receiver.py ``--count-only``), and here ``--clients`` exporter threads, each
with its own kept http.client connection, sending one OTLP export again and again and doing what
an OTLP exporter does with 429/502/503/504: wait the Retry-After (capped at 1 s) and resend.
The export is a bare-address profile of ``--binary`` (bench/make_profile.py: ``--locations``
distinct addresses, stacks of 1-8) converted to OTLP protobuf, gzipped as exporters send it.
The service starts with an empty cache: the first export, timed alone, builds the binary's
index in the service; the phases then run warm.

Phases, each ``--seconds`` long:

- ``steady``: ``--clients`` senders, at most as many as ``--max-pending``;
- ``overload``: 4 x ``--max-pending`` senders: 429s expected, RSS must stay flat;
- ``outage``: ``--clients`` senders while the receiver is stopped for the middle third of the phase.

Per phase: exports delivered (answered 200) per second, latency of the delivered requests
(p50, p99, of the last attempt: what an exporter waits per request), 429 and 503 answers, and
the service's peak RSS (VmHWM from /proc, Linux only, sampled every 0.1 s as VmRSS too). At the
end, every export a sender saw answered 200 must be one the receiver counted: the check that
nothing was lost or sent twice. Wall-clock figures on a shared machine: they vary run to run.

    python bench/serve_load.py [--binary LIB] [--locations 2000] [--clients 8] [--max-pending 16]
                               [--seconds 15]
"""

from __future__ import annotations

import argparse
import gzip
import http.client
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from make_profile import write_profile  # noqa: E402

from symbolize.otlp.convert import Target, convert  # noqa: E402
from tests.servers.otlp_receiver import PATH, Receiver  # noqa: E402

RETRYABLE = {429, 502, 503, 504}


@dataclass
class Tally:
    """What the senders of one phase saw."""

    delivered: int = 0
    latencies: list[float] = field(default_factory=list)
    statuses: Counter[int] = field(default_factory=Counter)
    errors: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)


def sender(port: int, body: bytes, stop: threading.Event, tally: Tally) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    headers = {"Content-Type": "application/x-protobuf", "Content-Encoding": "gzip"}
    while not stop.is_set():
        started = time.perf_counter()
        try:
            connection.request("POST", PATH, body=body, headers=headers)
            response = connection.getresponse()
            response.read()
        except (OSError, http.client.HTTPException):
            connection.close()
            with tally.lock:
                tally.errors += 1
            time.sleep(0.2)
            continue
        took = time.perf_counter() - started
        with tally.lock:
            tally.statuses[response.status] += 1
            if response.status == 200:
                tally.delivered += 1
                tally.latencies.append(took)
        if response.will_close:
            connection.close()
        if response.status in RETRYABLE:
            retry_after = response.getheader("Retry-After")
            stop.wait(min(float(retry_after) if retry_after and retry_after.isdigit() else 1.0, 1.0))
    connection.close()


def rss_sampler(pid: int, stop: threading.Event, peak: list[int]) -> None:
    status = Path(f"/proc/{pid}/status")
    while not stop.wait(0.1):
        try:
            for line in status.read_text().splitlines():
                if line.startswith("VmRSS:"):
                    peak[0] = max(peak[0], int(line.split()[1]))
        except OSError:
            return


def run_phase(name: str, port: int, body: bytes, clients: int, seconds: float, service_pid: int,
              receiver: Receiver | None = None) -> tuple[Tally, int]:  # fmt: skip
    tally = Tally()
    stop = threading.Event()
    peak = [0]
    threads = [threading.Thread(target=sender, args=(port, body, stop, tally)) for _ in range(clients)]
    sampling = threading.Thread(target=rss_sampler, args=(service_pid, stop, peak))
    started = time.perf_counter()
    for thread in [*threads, sampling]:
        thread.start()
    if receiver is not None:
        time.sleep(seconds / 3)
        receiver.stop()
        time.sleep(seconds / 3)
        receiver.start()
        time.sleep(seconds / 3)
    else:
        time.sleep(seconds)
    stop.set()
    for thread in [*threads, sampling]:
        thread.join()
    elapsed = time.perf_counter() - started
    latencies = sorted(tally.latencies)
    p50 = statistics.median(latencies) * 1000 if latencies else float("nan")
    p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1000 if latencies else float("nan")
    cells = [name, clients, f"{tally.delivered / elapsed:.1f}", f"{p50:.0f}", f"{p99:.0f}", tally.statuses[429],
             tally.statuses[503], tally.errors, f"{peak[0] / 1024:.0f}"]  # fmt: skip
    print("| " + " | ".join(str(cell) for cell in cells) + " |", flush=True)
    return tally, peak[0]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default_binary = Path(sysconfig.get_config_var("LIBDIR")) / sysconfig.get_config_var("LDLIBRARY")
    parser.add_argument("--binary", type=Path, default=default_binary.resolve())
    parser.add_argument("--locations", type=int, default=2000)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--max-pending", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=15.0)
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="serve-load-") as work:
        return measure(arguments, Path(work))


def measure(arguments: argparse.Namespace, work: Path) -> int:
    pprof_path = work / "bare.pb.gz"
    write_profile(arguments.binary, pprof_path, arguments.locations, 1234)
    body = gzip.compress(convert(pprof_path.read_bytes(), Target.OTLP).data, compresslevel=6)
    cache = work / "cache"  # empty: the service builds the index on the first export
    size = arguments.binary.stat().st_size / 1e6
    print(f"binary {arguments.binary} ({size:.1f} MB); export: {arguments.locations} locations, "
          f"{len(body)} bytes gzipped")  # fmt: skip
    receiver = Receiver(count_only=True)
    receiver.start()
    service = subprocess.Popen(
        [sys.executable, "-m", "symbolize", "serve", "--forward", receiver.url, "--listen", "127.0.0.1:0",
         "--search-path", str(arguments.binary.parent), "--cache-dir", str(cache),
         "--max-pending", str(arguments.max_pending), "--forward-deadline", "2"],
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert service.stderr is not None
    port = int(service.stderr.readline().split("127.0.0.1:")[1].split(",")[0])
    log: list[str] = []  # read as it comes, so that the service never blocks on a full pipe
    reading = threading.Thread(target=lambda: log.extend(service.stderr or ()))
    reading.start()
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    started = time.perf_counter()
    connection.request("POST", PATH, body=body,
                       headers={"Content-Type": "application/x-protobuf", "Content-Encoding": "gzip"})  # fmt: skip
    first = connection.getresponse()
    first.read()
    connection.close()
    print(f"first export (the service builds the index): {first.status} in {time.perf_counter() - started:.2f} s")
    print("\n| phase | senders | delivered/s | p50 ms | p99 ms | 429s | 503s | conn. errors | peak RSS MiB |")
    print("|---|---|---|---|---|---|---|---|---|")
    tallies = [
        run_phase("steady", port, body, arguments.clients, arguments.seconds, service.pid),
        run_phase("overload", port, body, 4 * arguments.max_pending, arguments.seconds, service.pid),
        run_phase("outage", port, body, arguments.clients, arguments.seconds, service.pid, receiver),
    ]
    delivered = 1 + sum(tally.delivered for tally, _ in tallies)
    taken = receiver.total()
    print(f"\nanswered 200: {delivered}; taken by the receiver (both its lives): {taken}")
    service.send_signal(15)
    code = service.wait(60)
    reading.join(10)
    print(f"service stopped on SIGTERM: exit {code}; its log:\n{''.join(log).strip()}")
    receiver.stop()
    return 0 if delivered == taken and code == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
