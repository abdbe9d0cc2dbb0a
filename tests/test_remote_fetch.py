"""The transfer core for remote debug files (symbolize/remote/): fetch, verify, store, race, faults.

Every server here is real: tests/servers/http_store.py on 127.0.0.1, serving fixture ELF files in
debuginfod's layout (``/buildid/<hex>/debuginfo``) and misbehaving as each test asks. The files are
verified by their GNU build ID, read by our ELF reader, as the debuginfod locator does.
"""

from __future__ import annotations

import _thread
import io
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from symbolize.cli.app import app
from symbolize.errors import SymbolizeError
from symbolize.formats.elf import ElfFile
from symbolize.remote import (
    DownloadProgress,
    Fetched,
    Fetcher,
    FetchRequest,
    GetAttempt,
    Missed,
    RemoteOptions,
    StoreKey,
    StoreTier,
    TerminalDownloadProgress,
    UnsafeKeyError,
    from_environment,
    stderr_download_progress,
)
from symbolize.remote.options import download_store_root, server_url
from symbolize.remote.prune import PRUNED_STAMP, parse_age, parse_size, prune_if_due, prune_store
from symbolize.remote.store import MISSES, DownloadStore
from tests.fixtures_data import BIN, ROOT
from tests.servers.http_store import Fault, HttpProxy, HttpStore, wait_for_request

WANTED = BIN / "cdemo-gcc-dwarf5-pie"
ANOTHER_BUILD = BIN / "cppdemo-gcc-dwarf5-pie"


def build_id(path: Path) -> str:
    with ElfFile(path) as elf:
        assert elf.debug_id is not None
        return elf.debug_id.value.hex()


WANTED_ID = build_id(WANTED)
PATH = f"/buildid/{WANTED_ID}/debuginfo"
KEY = StoreKey("debuginfod", (WANTED_ID, "debuginfo"))


def verify_build_id(expected: str):  # type: ignore[no-untyped-def]
    def verify(path: Path) -> str | None:
        found = build_id(path)
        return None if found == expected else f"build ID {found} is not {expected}"

    return verify


VERIFY = verify_build_id(WANTED_ID)


def serve(root: Path, files: dict[str, Path]) -> Path:
    """A debuginfod tree under ``root``: ``files`` maps build IDs to the file served for each."""
    for hex_id, source in files.items():
        (root / "buildid" / hex_id).mkdir(parents=True, exist_ok=True)
        (root / "buildid" / hex_id / "debuginfo").write_bytes(source.read_bytes())
    return root


@pytest.fixture
def servers(tmp_path: Path) -> Iterator[tuple[HttpStore, HttpStore]]:
    """Two servers that both hold WANTED (each test makes them misbehave)."""
    with (
        HttpStore(serve(tmp_path / "a", {WANTED_ID: WANTED})) as first,
        HttpStore(serve(tmp_path / "b", {WANTED_ID: WANTED})) as second,
    ):
        yield first, second


def make_fetcher(tmp_path: Path, servers: Sequence[HttpStore], **options: object) -> Fetcher:
    settings_: dict[str, object] = {"stall_timeout": 5.0, "cache_dir": tmp_path / "store"}
    settings_.update(options)
    return Fetcher(RemoteOptions(debuginfod_urls=tuple(server.url for server in servers), **settings_))  # type: ignore[arg-type]


def attempts(servers: Sequence[HttpStore], path: str = PATH) -> list[GetAttempt]:
    return [GetAttempt(server.url, server.url + path) for server in servers]


def fetch(fetcher: Fetcher, servers: Sequence[HttpStore], path: str = PATH, key: StoreKey = KEY) -> Fetched | Missed:
    return fetcher.fetch(key, "cdemo debuginfo", attempts(servers, path), VERIFY)


def store_files(fetcher: Fetcher) -> list[Path]:
    """Every file in the store but the miss records and the prune stamp."""
    root = fetcher.store.root
    if not root.exists():
        return []
    return sorted(
        path for path in root.rglob("*") if path.is_file() and MISSES not in path.parts and path.name != PRUNED_STAMP
    )


def entry(fetcher: Fetcher) -> Path:
    return KEY.under(fetcher.store.root / "debuginfod")


# Fetch, verify, store, cache.


def test_a_fetched_file_is_verified_stored_and_then_served_from_the_store_without_a_request(
    tmp_path: Path, servers: tuple[HttpStore, HttpStore]
) -> None:
    first, _ = servers
    fetcher = make_fetcher(tmp_path, [first])
    result = fetch(fetcher, [first])
    assert isinstance(result, Fetched)
    assert result.url == first.url + PATH
    assert result.path == entry(fetcher)
    assert result.path.read_bytes() == WANTED.read_bytes()
    assert store_files(fetcher) == [result.path]
    assert fetcher.report() == [f"fetched 1 debug file ({WANTED.stat().st_size / 1024:.1f} KiB) from {first.url} (1)"]
    first.clear_log()
    second_run = make_fetcher(tmp_path, [first])
    again = fetch(second_run, [first])
    assert isinstance(again, Fetched)
    assert again.cached and again.path == result.path
    assert first.requests == []
    assert second_run.report() == ["1 debug file from the download cache"]


def test_offline_reads_the_store_and_never_asks(tmp_path: Path, servers: tuple[HttpStore, HttpStore]) -> None:
    first, _ = servers
    offline = make_fetcher(tmp_path, [first], offline=True)
    missed = fetch(offline, [first])
    assert isinstance(missed, Missed)
    assert missed.reason == "not-in-cache" and missed.tried == ()
    assert first.requests == []
    assert isinstance(fetch(make_fetcher(tmp_path, [first]), [first]), Fetched)
    first.clear_log()
    cached = fetch(make_fetcher(tmp_path, [first], offline=True), [first])
    assert isinstance(cached, Fetched) and cached.cached
    assert first.requests == []


def test_no_server_named_means_no_request(tmp_path: Path, servers: tuple[HttpStore, HttpStore]) -> None:
    first, _ = servers
    fetcher = Fetcher(RemoteOptions(cache_dir=tmp_path / "store"))
    assert not fetcher.options.asked
    result = fetch(fetcher, [first])
    assert isinstance(result, Missed) and result.reason == "not-in-cache"
    assert first.requests == []


def test_a_read_only_tier_is_read_and_elfutils_empty_miss_files_are_skipped(
    tmp_path: Path, servers: tuple[HttpStore, HttpStore]
) -> None:
    first, _ = servers
    system_cache = tmp_path / "debuginfod_client"
    tier = StoreTier(system_cache, writable=False)
    # elfutils records a miss as an empty file at the key: it is no entry.
    KEY.under(system_cache).parent.mkdir(parents=True)
    KEY.under(system_cache).touch()
    fetcher = make_fetcher(tmp_path, [first])
    fetched = fetcher.fetch(KEY, "cdemo", attempts([first]), VERIFY, tiers=[tier])
    assert isinstance(fetched, Fetched) and not fetched.cached
    assert fetched.path == entry(fetcher)  # stored in ours, the read-only tier untouched
    assert KEY.under(system_cache).stat().st_size == 0
    # A file gdb's debuginfod client fetched is used as it is, without a request.
    entry(fetcher).unlink()
    KEY.under(system_cache).write_bytes(WANTED.read_bytes())
    first.clear_log()
    reused = make_fetcher(tmp_path, [first]).fetch(KEY, "cdemo", attempts([first]), VERIFY, tiers=[tier])
    assert isinstance(reused, Fetched) and reused.cached and reused.path == KEY.under(system_cache)
    assert first.requests == []


def test_a_file_in_a_tier_that_fails_verification_is_not_used(
    tmp_path: Path, servers: tuple[HttpStore, HttpStore]
) -> None:
    first, _ = servers
    fetcher = make_fetcher(tmp_path, [first])
    entry(fetcher).parent.mkdir(parents=True)
    entry(fetcher).write_bytes(ANOTHER_BUILD.read_bytes())
    result = fetch(fetcher, [first])
    assert isinstance(result, Fetched) and not result.cached
    assert entry(fetcher).read_bytes() == WANTED.read_bytes()


def test_a_writable_tier_receives_the_download(tmp_path: Path, servers: tuple[HttpStore, HttpStore]) -> None:
    first, _ = servers
    downstream = tmp_path / "downstream"
    fetcher = make_fetcher(tmp_path, [first])
    result = fetcher.fetch(KEY, "cdemo", attempts([first]), VERIFY, tiers=[StoreTier(downstream, writable=True)])
    assert isinstance(result, Fetched) and result.path == KEY.under(downstream)
    assert store_files(fetcher) == []


class _StoreWhereAnotherProcessWins(DownloadStore):
    """Windows' answer to a rename over a file another process holds open, after that process
    stored the same key: the file is there, the rename refused."""

    def commit(self, partial: Path, destination: Path) -> Path:
        destination.write_bytes(WANTED.read_bytes())
        raise PermissionError(13, "Access is denied", str(destination))


def test_a_file_another_process_stored_meanwhile_serves_when_the_rename_is_refused(
    tmp_path: Path, servers: tuple[HttpStore, HttpStore]
) -> None:
    first, _ = servers
    fetcher = make_fetcher(tmp_path, [first])
    fetcher.store = _StoreWhereAnotherProcessWins(fetcher.store.root)
    result = fetch(fetcher, [first])
    assert isinstance(result, Fetched) and result.path == entry(fetcher)
    assert store_files(fetcher) == [result.path]  # no temporary left


def test_a_store_that_cannot_be_written_refuses_the_download_naming_why(
    tmp_path: Path, servers: tuple[HttpStore, HttpStore]
) -> None:
    first, _ = servers
    fetcher = make_fetcher(tmp_path, [first])
    entry(fetcher).mkdir(parents=True)  # a directory where the file would go
    result = fetch(fetcher, [first])
    assert isinstance(result, Missed) and len(result.refused) == 1
    assert result.refused[0].startswith(f"{first.url}: cannot store cdemo debuginfo")
    assert [path for path in entry(fetcher).parent.iterdir() if path.is_file()] == []


# The race and its faults.


def test_a_stalled_server_is_abandoned_while_a_second_one_answers(
    tmp_path: Path, servers: tuple[HttpStore, HttpStore]
) -> None:
    first, second = servers
    first.fault(PATH, Fault(stall_before_headers=True))
    second.fault(PATH, Fault(delay=0.3))
    fetcher = make_fetcher(tmp_path, servers, stall_timeout=30.0)
    started = time.monotonic()
    result = fetch(fetcher, servers)
    elapsed = time.monotonic() - started
    assert isinstance(result, Fetched) and result.url == second.url + PATH
    # Neither the stall timeout nor the stalled server's answer was waited for.
    assert elapsed < 10
    assert store_files(fetcher) == [result.path]


def test_a_server_that_never_answers_is_given_up_after_the_stall_timeout(
    tmp_path: Path, servers: tuple[HttpStore, HttpStore]
) -> None:
    first, _ = servers
    first.fault(PATH, Fault(stall_before_headers=True))
    started = time.monotonic()
    result = fetch(make_fetcher(tmp_path, [first], stall_timeout=0.5), [first])
    assert isinstance(result, Missed) and result.reason == "server-unreachable"
    assert result.detail.endswith("stalled: no byte for 0.5 s")
    assert 0.5 <= time.monotonic() - started < 4


def test_a_server_that_stalls_mid_body_is_given_up_after_the_stall_timeout(
    tmp_path: Path, servers: tuple[HttpStore, HttpStore]
) -> None:
    first, _ = servers
    first.fault(PATH, Fault(stall_after=4096))
    fetcher = make_fetcher(tmp_path, [first], stall_timeout=0.5)
    started = time.monotonic()
    result = fetch(fetcher, [first])
    elapsed = time.monotonic() - started
    assert isinstance(result, Missed) and result.reason == "server-unreachable"
    assert "stalled: 4096 bytes in 0.5 s (less than 102400)" in result.detail
    assert 0.5 <= elapsed < 5
    assert store_files(fetcher) == []  # the 4096 bytes did not become an entry
    # A timeout is never remembered as a miss: the next fetch asks again.
    first.clear_log()
    fetch(fetcher, [first])
    assert len(first.requests_for(PATH)) == 1


def test_the_stall_timeout_is_a_stall_not_a_total(tmp_path: Path, servers: tuple[HttpStore, HttpStore]) -> None:
    first, _ = servers
    # 8 KiB pieces, each followed by a pause well under the stall timeout; the whole takes longer.
    pieces = -(-WANTED.stat().st_size // 8192)
    assert pieces >= 5
    first.fault(PATH, Fault(bytes_per_second=8192 / 0.4, piece_bytes=8192))
    fetcher = make_fetcher(tmp_path, [first], stall_timeout=1.0, stall_min_bytes=8192)
    started = time.monotonic()
    result = fetch(fetcher, [first])
    assert isinstance(result, Fetched)
    assert time.monotonic() - started > 1.5


def test_a_server_trickling_less_than_the_minimum_per_stall_timeout_is_given_up(
    tmp_path: Path, servers: tuple[HttpStore, HttpStore]
) -> None:
    """elfutils' rule: at least 100 KiB (or the rest of the file) per DEBUGINFOD_TIMEOUT, so a
    server dripping a few bytes just often enough to keep the socket busy is no less stalled."""
    first, _ = servers
    first.fault(PATH, Fault(bytes_per_second=500 / 0.2, piece_bytes=500))
    fetcher = make_fetcher(tmp_path, [first], stall_timeout=1.0)
    started = time.monotonic()
    result = fetch(fetcher, [first])
    assert isinstance(result, Missed) and result.reason == "server-unreachable"
    assert re.search(r"stalled: \d+ bytes in 1 s \(less than 102400\)", result.detail), result.detail
    assert 1.0 <= time.monotonic() - started < 4
    assert store_files(fetcher) == []


def test_the_total_timeout_caps_a_trickling_download(tmp_path: Path, servers: tuple[HttpStore, HttpStore]) -> None:
    first, _ = servers
    first.fault(PATH, Fault(bytes_per_second=8192 / 0.3, piece_bytes=8192))
    fetcher = make_fetcher(tmp_path, [first], stall_timeout=1.0, total_timeout=0.5)
    started = time.monotonic()
    result = fetch(fetcher, [first])
    assert isinstance(result, Missed) and result.reason == "server-unreachable"
    assert "total timeout reached" in result.detail
    assert time.monotonic() - started < 3
    assert store_files(fetcher) == []


def test_a_5xx_is_retried_after_a_pause_that_doubles(tmp_path: Path, servers: tuple[HttpStore, HttpStore]) -> None:
    first, _ = servers
    first.fault(PATH, Fault(fail_times=2, fail_status=503))
    started = time.monotonic()
    result = fetch(make_fetcher(tmp_path, [first], retry_delay=0.3), [first])
    assert isinstance(result, Fetched)
    assert [request.status for request in first.requests_for(PATH)] == [503, 503, 200]
    assert time.monotonic() - started >= 0.9  # 0.3 s, then 0.6 s


def test_a_server_failing_every_time_is_unreachable_and_never_cached_as_a_miss(
    tmp_path: Path, servers: tuple[HttpStore, HttpStore]
) -> None:
    first, _ = servers
    first.fault(PATH, Fault(fail_times=1000, fail_status=500))
    fetcher = make_fetcher(tmp_path, [first])
    result = fetch(fetcher, [first])
    assert isinstance(result, Missed) and result.reason == "server-unreachable"
    assert "server error 500" in result.detail and "(3 tries)" in result.detail
    assert len(first.requests_for(PATH)) == 3
    fetch(fetcher, [first])
    assert len(first.requests_for(PATH)) == 6


def test_a_reset_mid_body_is_retried_and_its_bytes_never_become_an_entry(
    tmp_path: Path, servers: tuple[HttpStore, HttpStore]
) -> None:
    first, _ = servers
    first.fault(PATH, Fault(reset_times=1, reset_after=5000))
    fetcher = make_fetcher(tmp_path, [first])
    result = fetch(fetcher, [first])
    assert isinstance(result, Fetched) and result.path.read_bytes() == WANTED.read_bytes()
    assert len(first.requests_for(PATH)) == 2
    first.fault(PATH, Fault(reset_times=1000, reset_after=5000))
    result.path.unlink()
    again = fetch(fetcher, [first])
    assert isinstance(again, Missed) and again.reason == "server-unreachable"
    assert "connection" in again.detail
    assert store_files(fetcher) == []


@pytest.mark.parametrize(
    ("fault", "answers"),
    [
        # The server offers ranges and its file is unchanged: the rest is asked for and spliced.
        (Fault(), [(200, None), (206, "bytes=20000-")]),
        # No ranges offered: the whole file again.
        (Fault(ranges=False), [(200, None), (200, None)]),
        # The file changed on the server (another ETag): If-Range gets the whole new file.
        (Fault(new_version_each_time=True), [(200, None), (200, "bytes=20000-")]),
        # A part that starts elsewhere than asked is never spliced in: start over.
        (Fault(range_shift=100), [(200, None), (206, "bytes=20000-"), (200, None)]),
    ],
    ids=["resumed", "no-ranges", "changed", "wrong-part"],
)
def test_a_cut_download_resumes_only_where_it_is_safe(
    tmp_path: Path, servers: tuple[HttpStore, HttpStore], fault: Fault, answers: list[tuple[int, str | None]]
) -> None:
    first, _ = servers
    fault.reset_times, fault.reset_after, fault.cut_clean = 1, 20000, True
    first.fault(PATH, fault)
    fetcher = make_fetcher(tmp_path, [first])
    result = fetch(fetcher, [first])
    assert isinstance(result, Fetched) and result.path.read_bytes() == WANTED.read_bytes()
    assert [(request.status, request.range) for request in first.requests] == answers
    assert store_files(fetcher) == [result.path]


def test_a_short_body_is_retried(tmp_path: Path, servers: tuple[HttpStore, HttpStore]) -> None:
    """A Content-Length the body does not reach is a reset, not a file."""
    first, _ = servers
    first.fault(PATH, Fault(lie_length=WANTED.stat().st_size + 100))
    fetcher = make_fetcher(tmp_path, [first])
    result = fetch(fetcher, [first])
    assert isinstance(result, Missed) and result.reason == "server-unreachable"
    assert len(first.requests_for(PATH)) == 3
    assert store_files(fetcher) == []


def test_a_404_is_cached_as_a_miss_for_its_ttl_and_not_asked_again(
    tmp_path: Path, servers: tuple[HttpStore, HttpStore]
) -> None:
    first, second = servers
    absent = "/buildid/" + "ab" * 20 + "/debuginfo"
    absent_key = StoreKey("debuginfod", ("ab" * 20, "debuginfo"))
    fetcher = make_fetcher(tmp_path, servers, miss_ttl=600.0)
    result = fetch(fetcher, servers, absent, absent_key)
    assert isinstance(result, Missed) and result.reason == "not-on-server"
    assert set(result.tried) == {first.url + absent, second.url + absent}
    assert "404" in result.detail
    assert store_files(fetcher) == []  # no directory or temporary left for a key not found
    assert not (fetcher.store.root / "debuginfod" / ("ab" * 20)).exists()
    # Within the TTL, and in another run: not asked again.
    first.clear_log()
    second.clear_log()
    again = fetch(make_fetcher(tmp_path, servers), servers, absent, absent_key)
    assert isinstance(again, Missed) and again.reason == "not-on-server"
    assert "cached miss" in again.detail
    assert first.requests == [] and second.requests == []
    # Once the TTL is over, asked again.
    for record in (fetcher.store.root / MISSES).iterdir():
        os.utime(record, (time.time() - 601, time.time() - 601))
    fetch(make_fetcher(tmp_path, servers), servers, absent, absent_key)
    assert len(first.requests_for(absent)) == 1 and len(second.requests_for(absent)) == 1


def test_a_miss_is_per_server(tmp_path: Path, servers: tuple[HttpStore, HttpStore]) -> None:
    """A server added since the miss is asked."""
    first, second = servers
    first.fault(PATH, Fault(status=404))
    assert isinstance(fetch(make_fetcher(tmp_path, [first]), [first]), Missed)
    result = fetch(make_fetcher(tmp_path, servers), servers)
    assert isinstance(result, Fetched) and result.url == second.url + PATH
    assert len(first.requests_for(PATH)) == 1


@pytest.mark.parametrize("status", [403, 401, 400])
def test_other_4xx_are_not_on_server_but_not_cached(
    tmp_path: Path, servers: tuple[HttpStore, HttpStore], status: int
) -> None:
    first, _ = servers
    first.fault(PATH, Fault(status=status))
    fetcher = make_fetcher(tmp_path, [first])
    result = fetch(fetcher, [first])
    assert isinstance(result, Missed) and result.reason == "not-on-server" and str(status) in result.detail
    fetch(fetcher, [first])
    assert len(first.requests_for(PATH)) == 2


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_the_size_cap_refuses_a_larger_file(
    tmp_path: Path, servers: tuple[HttpStore, HttpStore], chunked: bool
) -> None:
    first, _ = servers
    first.fault(PATH, Fault(chunked=chunked))
    fetcher = make_fetcher(tmp_path, [first], max_file_bytes=20_000)
    result = fetch(fetcher, [first])
    assert isinstance(result, Missed)
    assert len(result.refused) == 1 and "larger than the cap of 20000 bytes" in result.refused[0]
    assert result.refused[0].startswith(first.url + PATH)
    assert store_files(fetcher) == []


def test_a_chunked_answer_is_read_whole(tmp_path: Path, servers: tuple[HttpStore, HttpStore]) -> None:
    first, _ = servers
    first.fault(PATH, Fault(chunked=True))
    result = fetch(make_fetcher(tmp_path, [first]), [first])
    assert isinstance(result, Fetched) and result.path.read_bytes() == WANTED.read_bytes()


def test_the_test_server_folds_case_only_when_asked(tmp_path: Path) -> None:
    """IIS-hosted symbol stores answer a key in any case; tests of symsrv keys rely on the knob."""
    root = serve(tmp_path / "served", {WANTED_ID: WANTED})
    upper = PATH.replace("buildid", "BuildId").replace("debuginfo", "DebugInfo")
    for fold_case, status in ((True, 200), (False, 404)):
        with HttpStore(root, fold_case=fold_case) as server:
            fetcher = Fetcher(RemoteOptions(debuginfod_urls=(server.url,), cache_dir=tmp_path / f"store{fold_case}"))
            result = fetcher.fetch(KEY, "cdemo", [GetAttempt(server.url, server.url + upper)], VERIFY)
            assert isinstance(result, Fetched) == (status == 200)
            assert [request.status for request in server.requests] == [status]


def test_a_redirect_is_followed(tmp_path: Path, servers: tuple[HttpStore, HttpStore]) -> None:
    first, second = servers
    first.fault(PATH, Fault(redirect=second.url + PATH))
    fetcher = make_fetcher(tmp_path, [first])
    result = fetch(fetcher, [first])
    assert isinstance(result, Fetched) and result.url == second.url + PATH
    assert [request.status for request in first.requests] == [302]
    assert [request.status for request in second.requests] == [200]


@pytest.mark.parametrize(
    ("location", "why"),
    [("ftp://127.0.0.1/x", "not http or https"), ("file:///etc/passwd", "not http or https"), (PATH, "redirects")],
)
def test_a_redirect_elsewhere_than_http_or_in_a_loop_is_refused(
    tmp_path: Path, servers: tuple[HttpStore, HttpStore], location: str, why: str
) -> None:
    first, _ = servers
    first.fault(PATH, Fault(redirect=location))
    fetcher = make_fetcher(tmp_path, [first])
    result = fetch(fetcher, [first])
    assert isinstance(result, Missed) and len(result.refused) == 1 and why in result.refused[0]
    assert store_files(fetcher) == []


def test_another_builds_file_is_refused_and_the_right_one_kept(
    tmp_path: Path, servers: tuple[HttpStore, HttpStore]
) -> None:
    first, second = servers
    first.fault(PATH, Fault(serve=ANOTHER_BUILD))
    second.fault(PATH, Fault(delay=0.3))
    result = fetch(make_fetcher(tmp_path, servers), servers)
    assert isinstance(result, Fetched) and result.url == second.url + PATH
    assert result.refused == (f"{first.url + PATH}: build ID {build_id(ANOTHER_BUILD)} is not {WANTED_ID}",)


def test_another_builds_file_alone_is_not_on_server(tmp_path: Path, servers: tuple[HttpStore, HttpStore]) -> None:
    first, _ = servers
    first.fault(PATH, Fault(serve=ANOTHER_BUILD))
    fetcher = make_fetcher(tmp_path, [first])
    result = fetch(fetcher, [first])
    assert isinstance(result, Missed) and result.reason == "not-on-server"
    assert result.refused and build_id(ANOTHER_BUILD) in result.refused[0]
    assert store_files(fetcher) == []


def test_a_verifier_that_raises_refuses_with_its_message(
    tmp_path: Path, servers: tuple[HttpStore, HttpStore]
) -> None:
    first, _ = servers
    first.fault(PATH, Fault(serve=ROOT / "README.md"))  # not an ELF file: the reader raises
    fetcher = make_fetcher(tmp_path, [first])
    result = fetch(fetcher, [first])
    assert isinstance(result, Missed) and len(result.refused) == 1 and "ELF" in result.refused[0]


@pytest.mark.parametrize("garbage", [b"", b"SSH-2.0-OpenSSH_9.6\r\n", b"HTTP/1.1 banana\r\n\r\n"])
def test_an_answer_that_is_not_http_is_unreachable(
    tmp_path: Path, servers: tuple[HttpStore, HttpStore], garbage: bytes
) -> None:
    first, _ = servers
    first.fault(PATH, Fault(garbage=garbage))
    result = fetch(make_fetcher(tmp_path, [first]), [first])
    assert isinstance(result, Missed) and result.reason == "server-unreachable"


def test_a_server_that_is_not_there_is_unreachable(tmp_path: Path) -> None:
    with HttpStore(tmp_path) as gone:
        url = gone.url
    fetcher = Fetcher(RemoteOptions(debuginfod_urls=(url,), cache_dir=tmp_path / "store"))
    result = fetcher.fetch(KEY, "cdemo", [GetAttempt(url, url + PATH)], VERIFY)
    assert isinstance(result, Missed) and result.reason == "server-unreachable"
    assert "cannot connect" in result.detail and result.tried == (url + PATH,)


# Any mix of faults: a verified file, or a miss and a clean store; never an exception.

_SIZE = WANTED.stat().st_size
_FAULTS = st.builds(
    Fault,
    fail_times=st.integers(0, 3),
    fail_status=st.sampled_from([500, 502, 503, 504]),
    reset_times=st.integers(0, 3),
    reset_after=st.integers(0, _SIZE),
    chunked=st.booleans(),
    stall_after=st.none() | st.integers(0, _SIZE),
    status=st.none() | st.sampled_from([404, 410, 403]),
    serve=st.none() | st.just(ANOTHER_BUILD),
    lie_length=st.none() | st.integers(_SIZE + 1, 2 * _SIZE),
    redirect=st.none() | st.just("/elsewhere") | st.just(PATH),
    cut_clean=st.booleans(),
    ranges=st.booleans(),
    new_version_each_time=st.booleans(),
    range_shift=st.sampled_from([0, 0, 1, -1, 5000]),
)


@given(fault=_FAULTS)
@settings(max_examples=40, deadline=None)
def test_any_mix_of_faults_gives_the_verified_file_or_a_clean_miss(fault: Fault) -> None:
    # Whether the retries (two) reach a good answer; known before the server counts the faults down.
    clean = (
        fault.stall_after is None
        and fault.status is None
        and fault.serve is None
        and fault.lie_length is None
        and fault.redirect != PATH  # a redirect to itself: a loop
        and fault.fail_times + fault.reset_times <= 2
        # A part that starts elsewhere than asked costs one more try (a fresh start).
        and (fault.range_shift == 0 or fault.reset_times == 0)
    )
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        with HttpStore(serve(work / "served", {WANTED_ID: WANTED})) as server:
            (work / "served" / "elsewhere").write_bytes(WANTED.read_bytes())
            server.fault(PATH, fault)
            fetcher = make_fetcher(work, [server], stall_timeout=0.3, max_file_bytes=4 * _SIZE, retry_delay=0.02)
            result = fetch(fetcher, [server])
        if isinstance(result, Fetched):
            assert result.path.read_bytes() == WANTED.read_bytes()
            assert store_files(fetcher) == [result.path]
        else:
            assert not clean, result
            assert store_files(fetcher) == []
            assert result.tried and result.detail


def test_credentials_in_a_server_url_are_sent_to_it_alone_and_never_shown(
    tmp_path: Path, servers: tuple[HttpStore, HttpStore]
) -> None:
    first, second = servers
    secret = first.url.replace("http://", "http://builder:s3cret@")
    second.fault(PATH, Fault(status=404))
    first.fault("/moved" + PATH, Fault(redirect=second.url.replace("http://", "http://other:pw@") + PATH))
    fetcher = make_fetcher(tmp_path, [first])
    fetched = fetcher.fetch(KEY, "cdemo", [GetAttempt(secret, secret + PATH)], VERIFY)
    assert isinstance(fetched, Fetched)
    assert first.requests_for(PATH)[0].authorization == "Basic YnVpbGRlcjpzM2NyZXQ="  # builder:s3cret
    # A redirect to another host takes that URL's own credentials, never the first one's.
    other = StoreKey("debuginfod", ("ef" * 20, "debuginfo"))
    missed = fetcher.fetch(other, "x", [GetAttempt(secret, secret + "/moved" + PATH)], VERIFY)
    assert isinstance(missed, Missed)
    assert second.requests_for(PATH)[0].authorization == "Basic b3RoZXI6cHc="  # other:pw
    shown = " ".join([str(fetched), *fetcher.report(), str(missed), *missed.tried])
    assert "s3cret" not in shown and "pw@" not in shown and "***@127.0.0.1" in shown
    assert all("s3cret" not in path.read_text() for path in (fetcher.store.root / MISSES).iterdir())


# Proxies, as libcurl and urllib take them from the environment.

_PROXY_VARIABLES = ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "no_proxy", "NO_PROXY", "all_proxy")


@pytest.fixture(autouse=True)
def _no_proxy_from_the_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in _PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)


def fetch_by_a_name_only_the_proxy_knows(
    tmp_path: Path, server: HttpStore, monkeypatch: pytest.MonkeyPatch, variable: str, credentials: str = ""
) -> tuple[Fetched | Missed, list[tuple[str, str | None]], str]:
    """Fetch WANTED from ``server`` by the name symbols.invalid, which only the proxy set in
    ``variable`` maps to it: a download can only have gone through the proxy. Returns the result,
    the proxy's log and the URL asked."""
    origin = f"symbols.invalid:{server.port}"
    with HttpProxy({origin: ("127.0.0.1", server.port)}) as proxy:
        monkeypatch.setenv(variable, f"http://{credentials}{proxy.address}")
        url = f"{server.url.partition(':')[0]}://{origin}"
        fetcher = Fetcher(RemoteOptions(debuginfod_urls=(url,), cache_dir=tmp_path / "store"))
        result = fetcher.fetch(KEY, "cdemo", [GetAttempt(url, url + PATH)], VERIFY)
        return result, proxy.requests, url


def test_http_proxy_from_the_environment_is_used_with_its_credentials(
    tmp_path: Path, servers: tuple[HttpStore, HttpStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    first, _ = servers
    result, proxied, url = fetch_by_a_name_only_the_proxy_knows(
        tmp_path, first, monkeypatch, "http_proxy", credentials="user:p%40ss@"
    )
    assert isinstance(result, Fetched) and result.url == url + PATH
    assert proxied == [(url + PATH, "Basic dXNlcjpwQHNz")]  # user:p@ss
    assert [request.path for request in first.requests] == [PATH]


def test_no_proxy_sends_a_host_past_the_proxy(
    tmp_path: Path, servers: tuple[HttpStore, HttpStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    first, _ = servers
    monkeypatch.setenv("no_proxy", "symbols.invalid")
    # Asked directly, the made-up name does not resolve.
    result, proxied, _ = fetch_by_a_name_only_the_proxy_knows(tmp_path, first, monkeypatch, "http_proxy")
    assert isinstance(result, Missed) and result.reason == "server-unreachable"
    assert proxied == [] and first.requests == []


def test_a_proxy_is_never_used_for_loopback(
    tmp_path: Path, servers: tuple[HttpStore, HttpStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    first, _ = servers
    monkeypatch.setenv("http_proxy", "http://127.0.0.1:9")  # the discard port: nothing answers there
    assert isinstance(fetch(make_fetcher(tmp_path, [first]), [first]), Fetched)


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 and symbols.invalid, made by the openssl command."""
    if shutil.which("openssl") is None:
        pytest.skip("the openssl command is not installed (.ci/run installs it)")
    directory = tmp_path_factory.mktemp("tls")
    certificate, key = directory / "cert.pem", directory / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=localhost",
         "-addext", "subjectAltName=DNS:symbols.invalid,IP:127.0.0.1", "-keyout", str(key), "-out", str(certificate)],
        check=True, capture_output=True,
    )
    return certificate, key


def test_https_is_verified_against_the_trusted_certificates(
    tmp_path: Path, certificate: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    with HttpStore(serve(tmp_path / "served", {WANTED_ID: WANTED}), tls=certificate) as secure:
        assert secure.url.startswith("https://")
        untrusted = fetch(make_fetcher(tmp_path, [secure], cache_dir=tmp_path / "one"), [secure])
        assert isinstance(untrusted, Missed) and untrusted.reason == "server-unreachable"
        assert "CERTIFICATE_VERIFY_FAILED" in untrusted.detail
        # OpenSSL's own setting names the certificates to trust (as for curl, git, pip).
        monkeypatch.setenv("SSL_CERT_FILE", str(certificate[0]))
        trusted = fetch(make_fetcher(tmp_path, [secure], cache_dir=tmp_path / "two"), [secure])
        assert isinstance(trusted, Fetched) and trusted.path.read_bytes() == WANTED.read_bytes()


def test_https_through_a_proxy_goes_through_a_tunnel(
    tmp_path: Path, certificate: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(certificate[0]))
    with HttpStore(serve(tmp_path / "served", {WANTED_ID: WANTED}), tls=certificate) as secure:
        # The certificate names symbols.invalid: checked against the name the tunnel leads to.
        result, proxied, url = fetch_by_a_name_only_the_proxy_knows(tmp_path, secure, monkeypatch, "https_proxy")
    assert proxied == [(f"CONNECT {url.removeprefix('https://')}", None)]
    assert isinstance(result, Fetched) and result.path.read_bytes() == WANTED.read_bytes()
    assert [request.path for request in secure.requests] == [PATH]


# Cancelling: Ctrl-C, another thread.


def test_keyboard_interrupt_mid_download_leaves_no_partial_file(
    tmp_path: Path, servers: tuple[HttpStore, HttpStore]
) -> None:
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("KeyboardInterrupt is delivered to the main thread only")
    first, _ = servers
    first.fault(PATH, Fault(stall_after=8192))
    fetcher = make_fetcher(tmp_path, [first], stall_timeout=60.0)
    partial_seen = threading.Event()

    def interrupt_once_the_partial_holds_bytes() -> None:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            partials = list(fetcher.store.root.rglob("*.tmp"))
            if partials and partials[0].stat().st_size > 0:
                partial_seen.set()
                break
            time.sleep(0.01)
        _thread.interrupt_main()

    threading.Thread(target=interrupt_once_the_partial_holds_bytes, daemon=True).start()
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        fetch(fetcher, [first])
    assert partial_seen.is_set()
    assert time.monotonic() - started < 10
    assert store_files(fetcher) == []


def test_keyboard_interrupt_during_fetch_many_cancels_every_file(tmp_path: Path) -> None:
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("KeyboardInterrupt is delivered to the main thread only")
    sources = {build_id(path): path for path in (WANTED, ANOTHER_BUILD)}
    with HttpStore(serve(tmp_path / "served", sources)) as stalling:
        for hex_id in sources:
            stalling.fault(f"/buildid/{hex_id}/debuginfo", Fault(stall_after=4096))
        fetcher = make_fetcher(tmp_path, [stalling], stall_timeout=60.0)
        requests = [
            FetchRequest(
                StoreKey("debuginfod", (hex_id, "debuginfo")),
                hex_id,
                attempts([stalling], f"/buildid/{hex_id}/debuginfo"),
                verify_build_id(hex_id),
            )
            for hex_id in sources
        ]

        def interrupt_once_both_are_under_way() -> None:
            deadline = time.monotonic() + 10
            while len(list(fetcher.store.root.rglob("*.tmp"))) < 2 and time.monotonic() < deadline:
                time.sleep(0.01)
            _thread.interrupt_main()

        threading.Thread(target=interrupt_once_both_are_under_way, daemon=True).start()
        started = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            fetcher.fetch_many(requests)
        assert time.monotonic() - started < 10
        assert len(stalling.requests) == 2
    assert store_files(fetcher) == []


_CTRL_C_CHILD = """
import sys
from pathlib import Path
from symbolize.remote import Fetcher, GetAttempt, RemoteOptions, StoreKey
url, store, build_id = sys.argv[1:]
fetcher = Fetcher(RemoteOptions(debuginfod_urls=(url,), cache_dir=Path(store), stall_timeout=60))
fetcher.fetch(StoreKey("debuginfod", (build_id, "debuginfo")), "cdemo",
              [GetAttempt(url, f"{url}/buildid/{build_id}/debuginfo")], lambda path: None)
"""


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a child is POSIX")
def test_ctrl_c_in_a_real_process_leaves_no_partial_file(tmp_path: Path, servers: tuple[HttpStore, HttpStore]) -> None:
    first, _ = servers
    first.fault(PATH, Fault(stall_after=8192))
    store = tmp_path / "store"
    child = subprocess.Popen(
        [sys.executable, "-c", _CTRL_C_CHILD, first.url, str(store), WANTED_ID],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert wait_for_request(first, PATH)
        deadline = time.monotonic() + 10
        while not [path for path in store.rglob("*.tmp") if path.stat().st_size] and time.monotonic() < deadline:
            time.sleep(0.01)
        assert list(store.rglob("*.tmp")), "the download never started writing"
        child.send_signal(signal.SIGINT)
        _, stderr = child.communicate(timeout=10)
    finally:
        child.kill()
    assert child.returncode != 0 and "KeyboardInterrupt" in stderr
    assert [path for path in store.rglob("*") if path.is_file() and MISSES not in path.parts] == []


def test_cancel_from_another_thread_ends_every_download_at_once(
    tmp_path: Path, servers: tuple[HttpStore, HttpStore]
) -> None:
    first, second = servers
    first.fault(PATH, Fault(stall_after=1000))
    second.fault(PATH, Fault(stall_before_headers=True))
    fetcher = make_fetcher(tmp_path, servers, stall_timeout=60.0)
    threading.Timer(0.5, fetcher.cancel).start()
    started = time.monotonic()
    result = fetch(fetcher, servers)
    assert isinstance(result, Missed) and "cancelled" in result.detail
    assert time.monotonic() - started < 10
    assert store_files(fetcher) == []


# Many files, progress, the report.


def test_fetch_many_fetches_in_parallel_in_order(tmp_path: Path) -> None:
    sources = {build_id(path): path for path in (WANTED, ANOTHER_BUILD, BIN / "cdemo-clang-dwarf5-pie")}
    delay = 0.6
    with HttpStore(serve(tmp_path / "slow", sources)) as slow:
        for hex_id in sources:
            slow.fault(f"/buildid/{hex_id}/debuginfo", Fault(delay=delay))
        fetcher = make_fetcher(tmp_path, [slow])
        requests = [
            FetchRequest(
                StoreKey("debuginfod", (hex_id, "debuginfo")),
                path.name,
                attempts([slow], f"/buildid/{hex_id}/debuginfo"),
                verify_build_id(hex_id),
            )
            for hex_id, path in sources.items()
        ]
        started = time.monotonic()
        results = fetcher.fetch_many(requests)
        elapsed = time.monotonic() - started
    assert [result.path.read_bytes() for result in results if isinstance(result, Fetched)] == [
        path.read_bytes() for path in sources.values()
    ]
    assert elapsed < delay * len(sources) * 0.8  # not one after the other
    assert fetcher.report()[0].startswith("fetched 3 debug files (")


class _Recorder(DownloadProgress):
    def __init__(self) -> None:
        self.events: list[tuple[str, object]] = []
        self.lock = threading.Lock()

    def start(self, what: str, server: str) -> int:
        with self.lock:
            self.events.append(("start", (what, server)))
        return 7

    def sized(self, ticket: int, url: str, total: int | None) -> None:
        with self.lock:
            self.events.append(("sized", total))

    def advance(self, ticket: int, count: int) -> None:
        with self.lock:
            self.events.append(("advance", count))

    def end(self, ticket: int, *, ok: bool) -> None:
        with self.lock:
            self.events.append(("end", ok))


def test_progress_hears_of_each_download(tmp_path: Path, servers: tuple[HttpStore, HttpStore]) -> None:
    first, _ = servers
    recorder = _Recorder()
    fetcher = Fetcher(
        RemoteOptions(debuginfod_urls=(first.url,), cache_dir=tmp_path / "store"), progress=recorder
    )
    assert isinstance(fetcher.fetch(KEY, "cdemo debuginfo", attempts([first]), VERIFY), Fetched)
    size = WANTED.stat().st_size
    assert recorder.events[0] == ("start", ("cdemo debuginfo", first.url))
    assert recorder.events[1] == ("sized", size)
    assert sum(count for kind, count in recorder.events if kind == "advance") == size  # type: ignore[misc]
    assert recorder.events[-1] == ("end", True)


def test_a_terminal_shows_one_line_per_download_while_it_runs(
    tmp_path: Path, servers: tuple[HttpStore, HttpStore]
) -> None:
    first, _ = servers
    first.fault(PATH, Fault(bytes_per_second=8192 / 0.25, piece_bytes=8192))  # about 1.3 s
    terminal = io.StringIO()
    progress = TerminalDownloadProgress(terminal)
    fetcher = Fetcher(RemoteOptions(debuginfod_urls=(first.url,), cache_dir=tmp_path / "store"), progress=progress)
    assert isinstance(fetcher.fetch(KEY, "cdemo debuginfo", attempts([first]), VERIFY), Fetched)
    progress.close()
    drawn = terminal.getvalue()
    assert f"cdemo debuginfo from {first.url}" in drawn
    assert "/42.6 kB" in drawn  # rich's DownloadColumn: received/total, in decimal units


def test_download_lines_join_the_runs_bar_or_stay_off_a_pipe() -> None:
    from symbolize.progress import ProgressReport, TerminalProgress

    assert type(stderr_download_progress(ProgressReport())) is DownloadProgress  # pytest's stderr: no terminal
    bar = TerminalProgress(io.StringIO())
    try:
        joined = stderr_download_progress(bar)
        assert isinstance(joined, TerminalDownloadProgress)
        ticket = joined.start("libc.so.6 debuginfo", "http://server")
        assert [task.description for task in bar.display.tasks] == ["libc.so.6 debuginfo from http://server"]
        joined.end(ticket, ok=True)
        assert bar.display.tasks == []
    finally:
        bar.close()


def test_an_attempt_with_a_bug_raises_in_the_caller(tmp_path: Path, servers: tuple[HttpStore, HttpStore]) -> None:
    class Broken:
        server = "http://broken"

        def run(self, session: object, sink: object) -> str:
            raise ZeroDivisionError("a bug")

    fetcher = make_fetcher(tmp_path, servers[:1])
    with pytest.raises(ZeroDivisionError):
        fetcher.fetch(KEY, "cdemo", [Broken()], VERIFY)
    assert store_files(fetcher) == []


# Store keys: a path only from validated parts.


@given(parts=st.lists(st.text(min_size=0, max_size=12), min_size=0, max_size=4))
@settings(max_examples=300, deadline=None)
def test_a_store_key_is_a_path_under_the_root_or_refused(parts: list[str]) -> None:
    root = Path("/store/root")
    try:
        key = StoreKey("symsrv", tuple(parts))
    except UnsafeKeyError as error:
        assert isinstance(error, SymbolizeError)
        return
    path = key.under(root)
    assert path.parent.parts[: len(root.parts)] == root.parts
    assert path.relative_to(root).parts == tuple(parts)
    assert all(part not in ("", ".", "..") and "/" not in part and "\\" not in part for part in parts)


@pytest.mark.parametrize(
    "parts",
    [("..", "x"), ("a/b",), ("a\\b",), (".hidden",), ("",), ("con",), ("NUL.pdb",), ("x.",), ("a\x00b",), ()],
)
def test_unsafe_store_keys_are_refused(parts: tuple[str, ...]) -> None:
    with pytest.raises(UnsafeKeyError):
        StoreKey("debuginfod", parts)


def test_ordinary_keys_are_accepted() -> None:
    assert StoreKey("symsrv", ("ntdll.pdb", "1EB3B1D4F2E94B1A9C1C0A3E8E1C7B2F1", "ntdll.pdb")).name == "ntdll.pdb"
    assert StoreKey("symsrv", ("libc.so.6", "elf-buildid-sym-" + "ab" * 20, "_.debug")).parts[0] == "libc.so.6"


# Pruning.


def _entry(root: Path, relative: str, size: int, age: float, now: float) -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"x" * size)
    os.utime(path, (now - age, now - age))
    return path


def test_prune_removes_the_unused_then_the_least_recently_used_to_fit(tmp_path: Path) -> None:
    now = time.time()
    root = tmp_path / "downloads"
    old = _entry(root, "debuginfod/aa/debuginfo", 100, 8 * 86400, now)
    lru = _entry(root, "symsrv/a.pdb/GUID1/a.pdb", 300, 3 * 86400, now)
    recent = _entry(root, "symsrv/b.pdb/GUID2/b.pdb", 300, 3600, now)
    newest = _entry(root, "debuginfod/bb/executable", 300, 60, now)
    stale_partial = _entry(root, "debuginfod/cc/.debuginfo.abcd1234.tmp", 50, 3600, now)
    live_partial = _entry(root, "debuginfod/cc/.debuginfo.wxyz5678.tmp", 50, 10, now)
    old_miss = _entry(root, f"{MISSES}/" + "1" * 40, 5, 700, now)
    fresh_miss = _entry(root, f"{MISSES}/" + "2" * 40, 5, 10, now)
    # A link out of the store is not followed, what it points to never removed.
    outside = _entry(tmp_path, "outside/precious", 1000, 30 * 86400, now)
    (root / "symsrv" / "link").symlink_to(outside.parent, target_is_directory=True)
    result = prune_store(root, max_bytes=700, max_age=7 * 86400, now=now)
    assert not old.exists() and not lru.exists()
    assert recent.exists() and newest.exists()
    assert not stale_partial.exists() and live_partial.exists()
    assert not old_miss.exists() and fresh_miss.exists()
    assert outside.exists()
    assert not (root / "debuginfod" / "aa").exists()  # emptied directories go
    assert (result.removed_files, result.removed_bytes) == (2, 400)
    assert (result.kept_files, result.kept_bytes) == (2, 600)
    assert (result.removed_misses, result.removed_temporaries) == (1, 1)


def test_prune_of_a_store_that_does_not_exist_removes_nothing(tmp_path: Path) -> None:
    assert prune_store(tmp_path / "none").removed_files == 0


def test_a_cache_hit_counts_as_a_use_for_pruning(tmp_path: Path, servers: tuple[HttpStore, HttpStore]) -> None:
    first, _ = servers
    fetcher = make_fetcher(tmp_path, [first])
    assert isinstance(fetch(fetcher, [first]), Fetched)
    week_ago = time.time() - 8 * 86400
    os.utime(entry(fetcher), (week_ago, week_ago))
    assert isinstance(fetch(fetcher, [first]), Fetched)  # from the store: touched
    assert prune_store(fetcher.store.root).removed_files == 0


def test_the_fetcher_prunes_once_a_day(tmp_path: Path) -> None:
    now = time.time()
    root = tmp_path / "downloads"
    _entry(root, "debuginfod/aa/debuginfo", 10, 30 * 86400, now)
    assert prune_if_due(root, now=now) is not None
    assert not (root / "debuginfod" / "aa").exists()
    _entry(root, "debuginfod/bb/debuginfo", 10, 30 * 86400, now)
    assert prune_if_due(root, now=now) is None  # pruned less than a day ago
    Fetcher(RemoteOptions(offline=True, cache_dir=root))
    assert (root / "debuginfod" / "bb" / "debuginfo").exists()
    os.utime(root / PRUNED_STAMP, (now - 2 * 86400, now - 2 * 86400))
    Fetcher(RemoteOptions(offline=True, cache_dir=root))
    assert not (root / "debuginfod" / "bb").exists()


def test_cache_prune_command(tmp_path: Path) -> None:
    now = time.time()
    root = download_store_root(tmp_path / "cache")
    _entry(root, "debuginfod/aa/debuginfo", 2048, 2 * 86400, now)
    kept = _entry(root, "debuginfod/bb/debuginfo", 1024, 60, now)
    result = CliRunner().invoke(app, ["cache", "prune", "--cache-dir", str(tmp_path / "cache"), "--max-age", "1d"])
    assert result.exit_code == 0, result.output
    assert f"removed 1 downloaded files (2.0 KiB) from {root}; kept 1 (1.0 KiB)" in result.output
    assert kept.exists()
    bad = CliRunner().invoke(app, ["cache", "prune", "--max-size", "lots"])
    assert bad.exit_code == 2 and "--max-size" in bad.output


@pytest.mark.parametrize(
    ("text", "size"), [("1024", 1024), ("64k", 65536), ("500M", 500 << 20), ("10G", 10 << 30), ("1.5GiB", 3 << 29)]
)
def test_parse_size(text: str, size: int) -> None:
    assert parse_size(text) == size


@pytest.mark.parametrize(("text", "seconds"), [("3600", 3600), ("7d", 7 * 86400), ("12h", 43200), ("30m", 1800)])
def test_parse_age(text: str, seconds: float) -> None:
    assert parse_age(text) == seconds


@pytest.mark.parametrize("text", ["", "ten", "-1", "5x"])
def test_parse_size_and_age_refuse_nonsense(text: str) -> None:
    with pytest.raises(ValueError, match="is not a"):
        parse_size(text)
    with pytest.raises(ValueError, match="is not an"):
        parse_age(text)


# Options from the environment.


def test_from_environment_reads_what_elfutils_and_symsrv_read(tmp_path: Path) -> None:
    options = from_environment(
        {
            "DEBUGINFOD_URLS": " https://a.example/  https://b.example ",
            "DEBUGINFOD_TIMEOUT": "7",
            "DEBUGINFOD_MAXTIME": "30",
            "DEBUGINFOD_MAXSIZE": "1000000",
            "_NT_SYMBOL_PATH": r"srv*C:\symbols*https://msdl.microsoft.com/download/symbols;;C:\local",
        },
        cache_dir=tmp_path,
    )
    assert options.debuginfod_urls == ("https://a.example/", "https://b.example")
    assert options.symbol_servers == (r"srv*C:\symbols*https://msdl.microsoft.com/download/symbols", r"C:\local")
    assert (options.stall_timeout, options.total_timeout, options.max_file_bytes) == (7.0, 30.0, 1_000_000)
    assert options.cache_dir == tmp_path and options.asked and options.network


@pytest.mark.parametrize(
    ("text", "url"),
    [("https://debuginfod.elfutils.org/", "https://debuginfod.elfutils.org"), ("http://127.0.0.1:8002", None)],
)
def test_server_urls_are_checked(text: str, url: str | None) -> None:
    assert server_url(text) == (url or text)


@pytest.mark.parametrize(
    "text", ["debuginfod.example", "ftp://x/", "file:///srv", "http://", "http://h:99999", "http://a b"]
)
def test_what_is_no_server_url_is_refused_naming_it(text: str) -> None:
    with pytest.raises(SymbolizeError, match="not a server URL") as caught:
        server_url(text)
    assert str(caught.value).startswith(text.strip())


def test_from_environment_ignores_what_it_cannot_read() -> None:
    options = from_environment({"DEBUGINFOD_TIMEOUT": "soon", "DEBUGINFOD_MAXSIZE": "-5"})
    assert options == RemoteOptions()
    assert not options.asked and not options.network
    assert RemoteOptions(offline=True, debuginfod_urls=("http://x",)).asked
    assert not RemoteOptions(offline=True, debuginfod_urls=("http://x",)).network


def test_a_temporarys_directory_removed_by_another_downloads_clean_up_is_made_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """debuginfod's ``<build ID>/executable`` and ``<build ID>/debuginfo`` are asked at once: the one
    that stores nothing removes the directories it made that stayed empty, which may be the ones the
    other has just made for its temporary (seen as "cannot store ... No such file or directory")."""
    destination = tmp_path / "store" / "buildid" / "ab" / "debuginfo"
    made = tempfile.mkstemp
    removed: list[Path] = []

    def after_a_clean_up(*args: object, **kwargs: object) -> tuple[int, str]:
        if not removed:  # the other download's clean-up, between this one's mkdir and its mkstemp
            shutil.rmtree(destination.parent)
            removed.append(destination.parent)
        return made(*args, **kwargs)  # type: ignore[call-overload,no-any-return]

    monkeypatch.setattr(tempfile, "mkstemp", after_a_clean_up)
    partial, sink = DownloadStore.open_partial(destination)
    with sink:
        sink.write(b"data")
    assert removed and partial.parent == destination.parent and partial.read_bytes() == b"data"
