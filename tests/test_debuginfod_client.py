"""The debuginfod client in this process, against tests/servers/http_store.py laid out as a
debuginfod server (``/buildid/<hex>/debuginfo``) that can misbehave: another build's file is
refused with its reason, a stalled server loses to one that answers, nothing is asked unless a
flag asks (``DEBUGINFOD_URLS`` alone is not a request), and the command line's remote options
(``--debuginfod``, ``--remote``, ``--offline``) reach the loader as declared."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from symbolize.api import lookup, remote_options, symbolize_profile
from symbolize.cli.app import app
from symbolize.formats.types import DebugId, DebugIdKind
from symbolize.module import Reason
from symbolize.remote.debuginfod import artifact_url, build_id_hex, elfutils_cache_dir, store_key
from symbolize.remote.options import RemoteOptions
from symbolize.summary import MappingSummary
from tests.fixtures_data import BIN, DEBUG_DIR, PROFILES, load_expected
from tests.posix import require
from tests.servers.http_store import Fault, HttpStore, wait_for_request

STRIPPED = BIN / "cppdemo-gcc-buildid"
HEAP_PROFILE = PROFILES / "cppdemo-gcc-dwarf5-pie.heap.pb"
DEBUG_FILE = next(path for path in sorted(DEBUG_DIR.glob(".build-id/*/*.debug")))
BUILD_ID = DEBUG_FILE.parent.name + DEBUG_FILE.stem
DEBUGINFO_PATH = f"/buildid/{BUILD_ID}/debuginfo"

runner = CliRunner()


def _served(root: Path, file: Path) -> Path:
    """``root`` laid out as a debuginfod server holding ``file`` as the debuginfo of BUILD_ID."""
    target = root / "buildid" / BUILD_ID / "debuginfo"
    target.parent.mkdir(parents=True)
    shutil.copyfile(file, target)
    return root


@pytest.fixture
def store(tmp_path: Path) -> Iterator[HttpStore]:
    with HttpStore(_served(tmp_path / "served", DEBUG_FILE)) as running:
        yield running


@pytest.fixture(autouse=True)
def _own_caches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """elfutils' cache and the servers of the environment are the test's own (none)."""
    for variable in ("DEBUGINFOD_URLS", "DEBUGINFOD_CACHE_PATH", "DEBUGINFOD_TIMEOUT", "_NT_SYMBOL_PATH"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))


def _vaddrs() -> list[int]:
    return [address.vaddr for address in load_expected("cppdemo-gcc-dwarf5-pie").addresses[:40]]


def test_lookup_names_lines_from_the_server_as_the_local_debug_file_does(store: HttpStore, tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    local = lookup(STRIPPED, _vaddrs(), debug_dirs=[DEBUG_DIR], use_cache=False)
    bare = lookup(STRIPPED, _vaddrs(), debug_dirs=[empty], use_cache=False)
    remote = remote_options(debuginfod_urls=[store.url], cache_dir=tmp_path / "cache")
    fetched = lookup(STRIPPED, _vaddrs(), debug_dirs=[empty], use_cache=False, remote=remote)
    assert fetched == local != bare
    assert [request.path for request in store.requests] == [DEBUGINFO_PATH]


def test_another_builds_file_is_refused_with_its_reason(tmp_path: Path) -> None:
    other = BIN / "cdemo-gcc-dwarf5-pie"  # an ELF file with DWARF, of another build ID
    with HttpStore(_served(tmp_path / "served", other)) as wrong:
        remote = remote_options(debuginfod_urls=[wrong.url], cache_dir=tmp_path / "cache")
        _, summary = symbolize_profile(HEAP_PROFILE, binaries=[STRIPPED], debug_dirs=[tmp_path], remote=remote)
    mapping = next(m for m in summary.mappings if m.filename.endswith("cppdemo-gcc-dwarf5-pie"))
    assert mapping.missing_lines, "named from the symbol table only"
    url = wrong.url + DEBUGINFO_PATH
    assert any(refusal.startswith(f"{url}: build ID ") and BUILD_ID in refusal for refusal in mapping.refused)
    assert [miss.reason.value for miss in mapping.missed] == ["not-on-server"]
    assert not (tmp_path / "cache" / "debuginfod" / BUILD_ID).exists(), "a refused file is never stored"


def test_a_stalled_server_loses_to_one_that_answers(
    store: HttpStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEBUGINFOD_TIMEOUT", "30")  # a stall far longer than the test may take
    with HttpStore(_served(tmp_path / "stalled", DEBUG_FILE)) as stalled:
        stalled.fault(DEBUGINFO_PATH, Fault(stall_after=1024))
        remote = remote_options(debuginfod_urls=[stalled.url, store.url], cache_dir=tmp_path / "cache")
        started = time.monotonic()
        results = lookup(STRIPPED, _vaddrs(), debug_dirs=[tmp_path], use_cache=False, remote=remote)
        elapsed = time.monotonic() - started
    assert results == lookup(STRIPPED, _vaddrs(), debug_dirs=[DEBUG_DIR], use_cache=False)
    assert elapsed < 15, f"waited {elapsed:.1f} s for the stalled server"


def test_nothing_is_asked_unless_a_flag_asks(store: HttpStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEBUGINFOD_URLS", store.url)
    monkeypatch.setenv("SYMBOLIZE_CACHE_DIR", str(tmp_path / "cache"))
    words = ["lookup", "--obj", str(STRIPPED), "--debug-dir", str(tmp_path), "--no-cache", "--json", "0x1000"]
    assert runner.invoke(app, words).exit_code == 0
    assert store.requests == [], "DEBUGINFOD_URLS alone asks nothing (llvm-symbolizer's silent block)"
    result = runner.invoke(app, [*words, "--offline", "--remote"])
    assert result.exit_code == 0 and store.requests == [], "--offline forbids the network"
    result = runner.invoke(app, [*words, "--remote"])
    assert result.exit_code == 0, result.output
    assert [request.path for request in store.requests] == [DEBUGINFO_PATH]
    assert "fetched 1 debug file" in result.stderr


def test_a_server_that_is_no_url_is_one_error_line(tmp_path: Path) -> None:
    result = runner.invoke(app, ["lookup", "--obj", str(STRIPPED), "--debuginfod", "ftp://example.org", "0x10"])
    assert result.exit_code == 1
    assert result.stderr.strip().splitlines() == [
        "symbolize: error: ftp://example.org: not a debuginfod server URL (http:// or https://)"
    ]


def test_the_system_cache_is_where_elfutils_puts_it(tmp_path: Path) -> None:
    assert elfutils_cache_dir({"DEBUGINFOD_CACHE_PATH": "/a", "XDG_CACHE_HOME": "/b"}) == Path("/a")
    assert elfutils_cache_dir({"XDG_CACHE_HOME": "/b", "HOME": "/h"}) == Path("/b/debuginfod_client")
    assert elfutils_cache_dir({"HOME": "/h"}) == Path("/h/.cache/debuginfod_client")
    assert elfutils_cache_dir({}) is None


@given(st.binary(min_size=1, max_size=80), st.sampled_from(list(DebugIdKind)))
def test_only_a_gnu_build_id_is_asked_and_its_key_is_a_safe_path(value: bytes, kind: DebugIdKind) -> None:
    hex_id = build_id_hex(DebugId(kind, value))
    if kind is not DebugIdKind.GNU_BUILD_ID or not 8 <= len(value) <= 64:
        assert hex_id is None
        return
    assert hex_id == value.hex()
    key = store_key(hex_id, "debuginfo")  # validated: no separator, no "..", or UnsafeKeyError
    assert key.under(Path("/store")) == Path("/store", hex_id, "debuginfo")
    assert artifact_url("http://h/", hex_id, "executable") == f"http://h/buildid/{hex_id}/executable"


def test_ctrl_c_mid_download_leaves_no_partial_file(tmp_path: Path) -> None:
    """The real command line, interrupted while a download is under way: it ends with one line,
    no traceback, and nothing of the download is left in the store."""
    require("killpg")  # a SIGINT sent to a child: POSIX's
    with HttpStore(_served(tmp_path / "served", DEBUG_FILE)) as stalling:
        stalling.fault(DEBUGINFO_PATH, Fault(stall_after=64 * 1024))
        env = {**os.environ, "SYMBOLIZE_CACHE_DIR": str(tmp_path / "cache"), "XDG_CACHE_HOME": str(tmp_path / "xdg")}
        empty = tmp_path / "empty"
        empty.mkdir()
        argv = [sys.executable, "-m", "symbolize", "lookup", "--obj", str(STRIPPED), "--debug-dir", str(empty),
                "--debuginfod", stalling.url, "0x1000"]  # fmt: skip
        process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        try:
            assert wait_for_request(stalling, DEBUGINFO_PATH, timeout=60), "the download never started"
            store = tmp_path / "cache" / "downloads"
            deadline = time.monotonic() + 10
            while not any(path.is_file() for path in store.rglob("*")) and time.monotonic() < deadline:
                time.sleep(0.02)  # until the partial file holds the bytes sent before the stall
            assert any(path.name.endswith(".tmp") for path in store.rglob("*")), "no download under way"
            process.send_signal(signal.SIGINT)
            _, stderr = process.communicate(timeout=30)
        finally:
            process.kill()
    assert process.returncode != 0
    assert "Traceback" not in stderr and stderr.strip().splitlines()[-1] == "Aborted!"
    left = [path for path in (tmp_path / "cache" / "downloads").rglob("*") if path.is_file()]
    assert left == [], left


def test_a_dwz_file_is_asked_by_its_build_id_as_libdw_asks(tmp_path: Path) -> None:
    """A binary whose shared DWARF is in a dwz file (``.gnu_debugaltlink``) that is not beside it:
    debuginfod is asked for the dwz file's build ID, and the answers are those with the file on disk."""
    binary, common = BIN / "cppdemo-gcc-dwz", BIN / "cppdemo-gcc-dwz.common.debug"
    alone = tmp_path / "alone" / binary.name
    alone.parent.mkdir()
    shutil.copyfile(binary, alone)
    common_id = read_object_debug_id(common)
    served = tmp_path / "served" / "buildid" / common_id / "debuginfo"
    served.parent.mkdir(parents=True)
    shutil.copyfile(common, served)
    vaddrs = [address.vaddr for address in load_expected("cppdemo-gcc-dwz").addresses[:60]]
    beside = lookup(binary, vaddrs, use_cache=False)
    without = lookup(alone, vaddrs, use_cache=False, debug_dirs=[tmp_path / "alone"])
    with HttpStore(tmp_path / "served") as dwz_server:
        remote = remote_options(debuginfod_urls=[dwz_server.url], cache_dir=tmp_path / "cache")
        fetched = lookup(alone, vaddrs, use_cache=False, debug_dirs=[tmp_path / "alone"], remote=remote)
        asked = [request.path for request in dwz_server.requests]
    assert fetched == beside != without
    assert asked == [f"/buildid/{common_id}/debuginfo"]


def read_object_debug_id(path: Path) -> str:
    from symbolize.formats.open import open_object

    opened = open_object(path)
    try:
        hex_id = build_id_hex(opened.debug_id)
    finally:
        opened.close()
    assert hex_id is not None
    return hex_id


def test_on_a_terminal_the_download_is_one_line_with_name_server_and_bytes(tmp_path: Path) -> None:
    require("openpty")
    import pty

    with HttpStore(_served(tmp_path / "served", DEBUG_FILE)) as slow:
        slow.fault(DEBUGINFO_PATH, Fault(bytes_per_second=200_000))  # about a second and a half
        leader, follower = pty.openpty()
        env = {**os.environ, "SYMBOLIZE_CACHE_DIR": str(tmp_path / "cache"), "COLUMNS": "250",
               "XDG_CACHE_HOME": str(tmp_path / "xdg")}  # fmt: skip
        argv = [sys.executable, "-m", "symbolize", "profile", str(HEAP_PROFILE), "-o", str(tmp_path / "out.pb"),
                "--binary", str(STRIPPED), "--debug-dir", str(tmp_path), "--debuginfod", slow.url]  # fmt: skip
        process = subprocess.Popen(argv, stderr=follower, stdout=subprocess.DEVNULL, env=env)
        os.close(follower)
        drawn = b""
        with contextlib.suppress(OSError):  # EIO once the process has closed the terminal
            while chunk := os.read(leader, 65536):
                drawn += chunk
        os.close(leader)
        assert process.wait(timeout=60) == 0
    text = drawn.decode(errors="replace")
    assert f"{STRIPPED.name} debuginfo (build ID {BUILD_ID}) from {slow.url}" in text
    assert "fetched 1 debug file" in text  # the summary's last line says what came from where


def test_a_binary_of_another_build_on_disk_gives_way_to_the_servers(tmp_path: Path) -> None:
    """The mapping's file name is on disk but of another build: the server's, by build ID, is used."""
    from symbolize.pprof import read_profile

    right = BIN / "cdemo-gcc-dwarf5-pie"
    right_id = read_object_debug_id(right)
    profile, _ = read_profile(PROFILES / "cdemo-gcc-dwarf5-pie.cpu.pb")
    strings = list(profile.string_table)
    for mapping in profile.mapping:
        if Path(strings[mapping.filename]).name == right.name:
            profile.string_table[mapping.filename] = f"/nonexistent/{right.name}"
    other_build = tmp_path / "search" / right.name
    other_build.parent.mkdir()
    shutil.copyfile(BIN / "cdemo-clang-dwarf5-pie", other_build)
    served = tmp_path / "served" / "buildid" / right_id / "executable"
    served.parent.mkdir(parents=True)
    shutil.copyfile(right, served)

    def summarized(remote: RemoteOptions | None) -> MappingSummary:
        copy = type(profile)()
        copy.CopyFrom(profile)
        _, summary = symbolize_profile(copy, search_paths=[other_build.parent], remote=remote)
        return next(m for m in summary.mappings if m.filename.endswith(right.name))

    refused = summarized(None)
    assert refused.reasons and set(refused.reasons) == {Reason.DEBUG_ID_MISMATCH}
    with HttpStore(tmp_path / "served") as server:
        fetched = summarized(remote_options(debuginfod_urls=[server.url], cache_dir=tmp_path / "cache"))
    assert fetched.named == fetched.locations > 0
    assert fetched.binary == str(tmp_path / "cache" / "downloads" / "debuginfod" / right_id / "executable")
