"""End to end against elfutils' own debuginfod: a Linux fixture profile whose debug files (or
binaries) are only on the server is fully named with ``--debuginfod``; a second run makes no
request (the server's log says so); ``--offline`` names what the cache holds; what
``debuginfod-find`` put in elfutils' cache is used without a request.

The server runs in a private network namespace (tests/servers/debuginfod.py) and each client run
is ``python -m symbolize`` inside it (``nsenter --net``): the real command line, one process per
run. The answers are compared with the same command's on the same files found on disk, so
nothing here states a name or a line by hand.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from symbolize.pprof import read_profile, write_profile
from tests.fixtures_data import BIN, DEBUG_DIR, PROFILES
from tests.servers.debuginfod import (
    DebuginfodServer,
    Unavailable,
    client_environment,
    debuginfod_serving,
    unavailable_reason,
)

# cppdemo-gcc-buildid is cppdemo-gcc-dwarf5-pie stripped of its DWARF (same build ID): its debug
# file is found on disk only under fixtures/bin/debug/.build-id, here only on the server.
STRIPPED = BIN / "cppdemo-gcc-buildid"
HEAP_PROFILE = PROFILES / "cppdemo-gcc-dwarf5-pie.heap.pb"
CPU_PROFILE = PROFILES / "cdemo-gcc-dwarf5-pie.cpu.pb"
SERVED_BINARY = BIN / "cdemo-gcc-dwarf5-pie"
# The debug file by build ID (the only file under its .build-id/xx directory).
DEBUG_FILE = next(path for path in sorted(DEBUG_DIR.glob(".build-id/*/*.debug")))


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DebuginfodServer]:
    reason = unavailable_reason()
    if reason is not None:
        pytest.skip(reason)
    try:
        with debuginfod_serving([DEBUG_FILE, SERVED_BINARY], tmp_path_factory.mktemp("debuginfod")) as running:
            yield running
    except Unavailable as unavailable:
        pytest.skip(str(unavailable))


def _symbolize(server: DebuginfodServer | None, home: Path, *words: str | Path) -> subprocess.CompletedProcess[str]:
    """``symbolize WORDS...`` with its caches under ``home``, in the server's namespace (or here)."""
    argv = [sys.executable, "-m", "symbolize", *map(str, words)]
    env = client_environment(home)
    if server is None:
        return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120, check=False)
    return server.run(argv, env=env)


def _profile(server: DebuginfodServer | None, home: Path, profile: Path, out: Path, *options: str | Path) -> dict:
    done = _symbolize(server, home, "profile", profile, "-o", out, "--json-summary", *options)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _mapping(summary: dict, name: str) -> dict:
    return next(mapping for mapping in summary["mappings"] if Path(mapping["filename"]).name == name)


def _moved(profile: Path, name: str, out: Path) -> Path:
    """``profile`` with the mapping of ``name`` recorded under a directory that exists nowhere."""
    message, _ = read_profile(profile)
    strings = list(message.string_table)
    for mapping in message.mapping:
        if Path(strings[mapping.filename]).name == name:
            message.string_table[mapping.filename] = f"/nonexistent/build/{name}"
    write_profile(message, out, gzip=False)
    return out


def test_debug_file_only_on_the_server_names_the_profile_then_comes_from_the_cache(
    server: DebuginfodServer, tmp_path: Path
) -> None:
    name = "cppdemo-gcc-dwarf5-pie"
    # No debug directory but the fixtures' (the reference) or an empty one: the machine's own
    # /usr/lib/debug would name the system libraries in one run and not in the other.
    empty = tmp_path / "no-debug-files"
    empty.mkdir()
    reference = _profile(None, tmp_path / "local", HEAP_PROFILE, tmp_path / "local.pb",
                         "--binary", STRIPPED, "--debug-dir", DEBUG_DIR)  # fmt: skip
    without = _profile(None, tmp_path / "bare", HEAP_PROFILE, tmp_path / "bare.pb",
                       "--binary", STRIPPED, "--debug-dir", empty)  # fmt: skip
    assert _mapping(without, name)["missing_lines"], "the stripped binary alone names no lines"

    before = len(server.requests())
    first = _profile(server, tmp_path / "client", HEAP_PROFILE, tmp_path / "first.pb",
                     "--binary", STRIPPED, "--debug-dir", empty, "--debuginfod", server.url)  # fmt: skip
    asked = server.requests()[before:]
    build_id = DEBUG_FILE.parent.name + DEBUG_FILE.stem
    assert (f"/buildid/{build_id}/debuginfo", 200) in asked
    mapping = _mapping(first, name)
    assert mapping["missing_lines"] is None and mapping["named"] == mapping["locations"]
    assert mapping["debug_file"].endswith(f"{build_id}/debuginfo")
    # Every answer is the one the debug file on disk gives.
    assert (tmp_path / "first.pb").read_bytes() == (tmp_path / "local.pb").read_bytes()
    assert first["named"] == reference["named"]
    assert any("fetched 1 debug file" in line for line in first["downloads"]), first["downloads"]

    before = len(server.requests())
    second = _profile(server, tmp_path / "client", HEAP_PROFILE, tmp_path / "second.pb",
                      "--binary", STRIPPED, "--debug-dir", empty, "--debuginfod", server.url)  # fmt: skip
    assert server.requests()[before:] == [], "the second run asks the server nothing"
    assert (tmp_path / "second.pb").read_bytes() == (tmp_path / "local.pb").read_bytes()
    assert any("from the download cache" in line for line in second["downloads"]), second["downloads"]

    # --offline, no server named: the cache alone names it, and no request is made.
    offline = _profile(server, tmp_path / "client", HEAP_PROFILE, tmp_path / "offline.pb",
                       "--binary", STRIPPED, "--debug-dir", empty, "--offline")  # fmt: skip
    assert server.requests()[before:] == []
    assert _mapping(offline, name)["missing_lines"] is None
    assert (tmp_path / "offline.pb").read_bytes() == (tmp_path / "local.pb").read_bytes()


def test_a_binary_only_on_the_server_is_fetched_by_build_id(server: DebuginfodServer, tmp_path: Path) -> None:
    name = SERVED_BINARY.name
    moved = _moved(CPU_PROFILE, name, tmp_path / "moved.pb")
    _profile(None, tmp_path / "local", moved, tmp_path / "local.pb", "--binary", SERVED_BINARY)
    absent = _profile(None, tmp_path / "bare", moved, tmp_path / "bare.pb")
    assert "binary-not-found" in _mapping(absent, name)["reasons"]

    before = len(server.requests())
    summary = _profile(server, tmp_path / "client", moved, tmp_path / "fetched.pb", "--debuginfod", server.url)
    mapping = _mapping(summary, name)
    assert mapping["named"] == mapping["locations"] > 0
    assert mapping["binary"].endswith("/executable")
    build_id = Path(mapping["binary"]).parent.name
    asked = [path for path, _ in server.requests()[before:] if build_id in path]
    assert asked == [f"/buildid/{build_id}/executable"], "a binary with its own DWARF needs no debuginfo"
    assert (tmp_path / "fetched.pb").read_bytes() == (tmp_path / "local.pb").read_bytes()


def test_a_binary_on_no_server_is_counted_not_on_server_with_the_urls_tried(
    server: DebuginfodServer, tmp_path: Path
) -> None:
    moved = _moved(CPU_PROFILE, "sampler.so", tmp_path / "moved.pb")
    summary = _profile(server, tmp_path / "client", moved, tmp_path / "out.pb", "--debuginfod", server.url)
    mapping = _mapping(summary, "sampler.so")
    assert mapping["unnamed"] > 0
    assert mapping["reasons"] == {"not-on-server": mapping["unnamed"]}
    tried = [url for miss in mapping["missed"] for url in miss["tried"]]
    assert tried and all(url.startswith(server.url + "/buildid/") for url in tried)
    assert {miss["reason"] for miss in mapping["missed"]} == {"not-on-server"}

    # The same file asked of a server that does not answer: server-unreachable, named as such.
    dead = "http://127.0.0.1:9"  # the discard port: nothing listens in the namespace
    summary = _profile(server, tmp_path / "other", moved, tmp_path / "out2.pb", "--debuginfod", dead)
    mapping = _mapping(summary, "sampler.so")
    assert mapping["reasons"] == {"server-unreachable": mapping["unnamed"]}
    assert all(url.startswith(dead) for miss in mapping["missed"] for url in miss["tried"])


def test_what_debuginfod_find_cached_is_used_without_a_request(server: DebuginfodServer, tmp_path: Path) -> None:
    if shutil.which("debuginfod-find") is None:
        pytest.skip("debuginfod-find (elfutils) is not installed")
    home = tmp_path / "client"
    build_id = DEBUG_FILE.parent.name + DEBUG_FILE.stem
    env = client_environment(home, DEBUGINFOD_URLS=server.url)
    found = server.run(["debuginfod-find", "debuginfo", build_id], env=env)
    assert found.returncode == 0, found.stderr
    assert Path(found.stdout.strip()).is_relative_to(home / "xdg-cache" / "debuginfod_client")

    before = len(server.requests())
    summary = _profile(server, home, HEAP_PROFILE, tmp_path / "out.pb", "--binary", STRIPPED,
                       "--debuginfod", server.url)  # fmt: skip
    assert all(f"/buildid/{build_id}/" not in path for path, _ in server.requests()[before:])
    mapping = _mapping(summary, "cppdemo-gcc-dwarf5-pie")
    assert mapping["missing_lines"] is None
    assert mapping["debug_file"] == found.stdout.strip()
