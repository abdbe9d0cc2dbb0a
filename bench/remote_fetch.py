"""Fetching N debug files from two slow servers: wall time of racing them all at once vs one by one.

Two real loopback servers (tests/servers/http_store.py) hold the same N files; each answers every
request after a delay and trickles its body at a fixed rate, the first faster than the second.
Four ways are timed, each into an empty store:

- ``one by one, first server``: N fetches in a row, each asking only the first server, as a
  client that obeys a list of servers in order and a list of files in order does;
- ``one by one, raced``: N fetches in a row, each racing both servers (Fetcher.fetch);
- ``all at once, raced``: Fetcher.fetch_many, every file racing both servers, N at a time;
- ``all at once, first silent``: the same while the first server never answers.

The last two should take about the time of the slowest single download, not the sum (nor the
stall timeout). Files are
random bytes verified by their SHA-256 (the stand-in for a build ID): the transfer is what is
measured here, not a reader. Wall-clock figures on a shared machine: a second run varies by
tens of milliseconds.

    python bench/remote_fetch.py [--files N] [--size BYTES] [--delays 0.2,0.4] [--rates 4M,2M]
"""

from __future__ import annotations

import argparse
import hashlib
import random
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from symbolize.remote import Fetched, Fetcher, FetchRequest, GetAttempt, RemoteOptions, StoreKey  # noqa: E402
from symbolize.remote.prune import parse_size  # noqa: E402
from tests.servers.http_store import Fault, HttpStore  # noqa: E402


def _verify(expected: str) -> Callable[[Path], str | None]:
    def verify(path: Path) -> str | None:
        found = hashlib.sha256(path.read_bytes()).hexdigest()
        return None if found == expected else f"sha256 {found} is not {expected}"

    return verify


def _make_files(root: Path, count: int, size: int) -> list[str]:
    generator = random.Random(24)
    digests = []
    for _ in range(count):
        data = generator.randbytes(size)
        digest = hashlib.sha256(data).hexdigest()
        (root / "buildid" / digest).mkdir(parents=True)
        (root / "buildid" / digest / "debuginfo").write_bytes(data)
        digests.append(digest)
    return digests


def _requests(digests: list[str], servers: list[HttpStore]) -> list[FetchRequest]:
    return [
        FetchRequest(
            StoreKey("debuginfod", (digest, "debuginfo")),
            f"file {digest[:8]}",
            [GetAttempt(server.url, f"{server.url}/buildid/{digest}/debuginfo") for server in servers],
            _verify(digest),
        )
        for digest in digests
    ]


def _timed(work: Callable[[], list[object]]) -> tuple[float, int]:
    started = time.perf_counter()
    results = work()
    return time.perf_counter() - started, sum(isinstance(result, Fetched) for result in results)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--files", type=int, default=16)
    parser.add_argument("--size", default="256K", help="bytes per file (K, M suffixes)")
    parser.add_argument("--delays", default="0.2,0.4", help="each server's delay before answering, seconds")
    parser.add_argument("--rates", default="4M,2M", help="each server's body rate, bytes per second")
    arguments = parser.parse_args()
    size = parse_size(arguments.size)
    delays = [float(text) for text in arguments.delays.split(",")]
    rates = [parse_size(text) for text in arguments.rates.split(",")]
    with tempfile.TemporaryDirectory(prefix="remote-fetch-bench-") as scratch:
        work = Path(scratch)
        digests = _make_files(work / "served", arguments.files, size)
        with HttpStore(work / "served") as first, HttpStore(work / "served") as second:
            servers = [first, second]
            for server, delay, rate in zip(servers, delays, rates, strict=True):
                for digest in digests:
                    server.fault(f"/buildid/{digest}/debuginfo", Fault(delay=delay, bytes_per_second=rate))
            single = [delay + size / rate for delay, rate in zip(delays, rates, strict=True)]
            print(
                f"{arguments.files} files of {size} bytes; servers: "
                + ", ".join(f"delay {d:g} s, {r / 1e6:g} MB/s" for d, r in zip(delays, rates, strict=True))
            )
            print(f"one download from each server, in theory: {', '.join(f'{t:.2f} s' for t in single)}")
            print(f"  sum over the files from the first server, in theory: {arguments.files * single[0]:.2f} s")
            runs = 0

            def fresh(parallel: int = 8) -> Fetcher:
                nonlocal runs
                runs += 1
                urls = tuple(server.url for server in servers)
                return Fetcher(
                    RemoteOptions(debuginfod_urls=urls, cache_dir=work / f"store{runs}", parallel_fetches=parallel)
                )

            first_only = _requests(digests, [first])
            both = _requests(digests, servers)

            def one_by_one(requests: list[FetchRequest]) -> Callable[[], list[object]]:
                fetcher = fresh()
                return lambda: [fetcher.fetch(r.key, r.what, r.attempts, r.verify) for r in requests]

            parallel = fresh(parallel=arguments.files)
            rows = [
                ("one by one, first server", _timed(one_by_one(first_only))),
                ("one by one, raced", _timed(one_by_one(both))),
                ("all at once, raced", _timed(lambda: list(parallel.fetch_many(both)))),
            ]
            # The first server now never answers: the race goes to the second without waiting for
            # the stall timeout (90 s, elfutils' default).
            for digest in digests:
                first.fault(f"/buildid/{digest}/debuginfo", Fault(stall_before_headers=True))
            silent_first = fresh(parallel=arguments.files)
            rows.append(("all at once, first silent", _timed(lambda: list(silent_first.fetch_many(both)))))
            for label, (seconds, fetched) in rows:
                print(f"  {label:<26} {seconds:6.2f} s  ({fetched}/{arguments.files} fetched)")
            first.clear_log()
            second.clear_log()
            seconds, fetched = _timed(lambda: list(parallel.fetch_many(both)))  # every file in its store now
            requests = len(first.requests) + len(second.requests)
            label = "again, from the store"
            print(f"  {label:<26} {seconds:6.2f} s  ({fetched}/{arguments.files}, {requests} requests)")


if __name__ == "__main__":
    main()
