"""``audit --remote``: whether the named servers have each binary's debug file, fetched for real
(never from a cache) and verified; a debug file they lack, hold only stripped, or hold of another
build fails the audit.

The servers: a loopback HTTP file server laid out as debuginfod answers (``/buildid/<hex>/...``,
tests/servers/http_store.py, which also misbehaves on demand) and, end to end, elfutils' own
``debuginfod`` in a private network namespace (tests/servers/debuginfod.py).
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from symbolize.api import remote_options
from symbolize.audit import EXIT_OK, EXIT_SHORT, audit_binaries
from symbolize.cli.app import app
from symbolize.formats.open import open_object
from tests.fixtures_data import BIN, DEBUG_DIR, MACOS_BIN, WINDOWS_BIN
from tests.servers.debuginfod import DebuginfodServer, Unavailable, client_environment, debuginfod_serving
from tests.servers.debuginfod import unavailable_reason as debuginfod_unavailable
from tests.servers.http_store import Fault, HttpStore

runner = CliRunner()

# cppdemo-gcc-dwarf5-pie stripped of its DWARF (same build ID); its debug file is DEBUG_FILE.
STRIPPED = BIN / "cppdemo-gcc-buildid"
DEBUG_FILE = next(path for path in sorted(DEBUG_DIR.glob(".build-id/*/*.debug")))
BUILD_ID = open_object(STRIPPED).debug_id.value.hex()  # type: ignore[union-attr]
DEBUGINFO = f"/buildid/{BUILD_ID}/debuginfo"


def _serve(root: Path, files: dict[str, Path]) -> Path:
    """``root`` holding ``files`` (artifact -> file) in debuginfod's URL layout."""
    directory = root / "buildid" / BUILD_ID
    directory.mkdir(parents=True, exist_ok=True)
    for artifact, path in files.items():
        shutil.copyfile(path, directory / artifact)
    return root


@pytest.fixture
def store(tmp_path: Path) -> Iterator[HttpStore]:
    with HttpStore(_serve(tmp_path / "served", {"debuginfo": DEBUG_FILE})) as running:
        yield running


def _audit(url: str, binary: Path = STRIPPED):  # type: ignore[no-untyped-def]
    return audit_binaries([binary], remote=remote_options(debuginfod_urls=[url]))


def test_a_debug_file_on_the_server_passes_and_is_asked_for_every_time(store: HttpStore) -> None:
    for _ in range(2):  # never answered from a cache: the second audit asks again
        report = _audit(store.url)
        checks = {check.role: check for check in report.binaries[0].servers}
        assert checks["debug file"].verdict == "on-server"
        assert checks["debug file"].url == store.url + DEBUGINFO
        assert checks["binary"].verdict == "not-on-server" and not checks["binary"].required
        assert report.exit_code == EXIT_OK and report.shortfalls == ()
    assert [request.status for request in store.requests_for(DEBUGINFO)] == [200, 200]


def test_a_debug_file_missing_from_the_server_fails_the_audit_with_the_urls_tried(tmp_path: Path) -> None:
    with HttpStore(_serve(tmp_path / "served", {"executable": STRIPPED})) as empty:
        report = _audit(empty.url)
    check = next(check for check in report.binaries[0].servers if check.role == "debug file")
    assert check.verdict == "not-on-server" and empty.url + DEBUGINFO in check.tried
    assert report.exit_code == EXIT_SHORT
    assert any("not-on-server" in shortfall and BUILD_ID in shortfall for shortfall in report.shortfalls)


@pytest.mark.parametrize(
    ("served", "refusal"),
    [(BIN / "cdemo-gcc-dwarf5-pie", "is not the one asked for"), (STRIPPED, "holds no debug info")],
    ids=["another build", "stripped"],
)
def test_a_server_file_of_another_build_or_stripped_is_refused(store: HttpStore, served: Path, refusal: str) -> None:
    store.fault(DEBUGINFO, Fault(serve=served))
    report = _audit(store.url)
    check = next(check for check in report.binaries[0].servers if check.role == "debug file")
    assert check.verdict == "not-on-server" and refusal in " ".join(check.refused)
    assert report.exit_code == EXIT_SHORT


def test_an_unreachable_server_fails_the_audit() -> None:
    with socket.socket() as bound:  # a port held, never listened on: connections are refused
        bound.bind(("127.0.0.1", 0))
        report = _audit(f"http://127.0.0.1:{bound.getsockname()[1]}")
    check = next(check for check in report.binaries[0].servers if check.role == "debug file")
    assert check.verdict == "server-unreachable" and report.exit_code == EXIT_SHORT


def test_a_binary_no_named_server_can_serve_is_not_asked_and_fails(store: HttpStore) -> None:
    report = _audit(store.url, WINDOWS_BIN / "winapp.exe")
    (check,) = report.binaries[0].servers
    assert check.verdict == "not-asked" and "serves" in check.detail
    assert report.exit_code == EXIT_SHORT and store.requests == []


def test_without_servers_nothing_is_asked(store: HttpStore) -> None:
    report = audit_binaries([STRIPPED])
    assert report.binaries[0].servers == () and store.requests == []


def test_cli_json_and_text(store: HttpStore) -> None:
    done = runner.invoke(app, ["audit", str(STRIPPED), "--debuginfod", store.url, "--json"])
    assert done.exit_code == EXIT_OK, done.output
    servers = json.loads(done.stdout)["binaries"][0]["servers"]
    assert {(entry["role"], entry["verdict"]) for entry in servers} == {
        ("debug file", "on-server"),
        ("binary", "not-on-server"),
    }
    text = runner.invoke(app, ["audit", str(STRIPPED), "--debuginfod", store.url])
    assert "server: debug file" in text.stdout and "on-server (cppdemo-gcc-buildid debuginfo" in text.stdout
    assert "not-on-server (cppdemo-gcc-buildid executable" in text.stdout


def test_cli_remote_with_no_server_in_the_environment_is_a_usage_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DEBUGINFOD_URLS", raising=False)
    monkeypatch.delenv("_NT_SYMBOL_PATH", raising=False)
    done = runner.invoke(app, ["audit", str(STRIPPED), "--remote"])
    assert done.exit_code == 2 and "name no server" in done.stderr


@pytest.fixture(scope="module")
def debuginfod(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DebuginfodServer]:
    reason = debuginfod_unavailable()
    if reason is not None:
        pytest.skip(reason)
    try:
        with debuginfod_serving([DEBUG_FILE], tmp_path_factory.mktemp("debuginfod")) as running:
            yield running
    except Unavailable as unavailable:
        pytest.skip(str(unavailable))


def test_end_to_end_against_elfutils_debuginfod(debuginfod: DebuginfodServer, tmp_path: Path) -> None:
    argv = [sys.executable, "-m", "symbolize", "audit", str(STRIPPED), "--debuginfod", debuginfod.url, "--json"]
    done: subprocess.CompletedProcess[str] = debuginfod.run(argv, env=client_environment(tmp_path))
    assert done.returncode == EXIT_OK, done.stderr
    servers = {entry["role"]: entry for entry in json.loads(done.stdout)["binaries"][0]["servers"]}
    assert servers["debug file"]["verdict"] == "on-server"
    assert (DEBUGINFO, 200) in debuginfod.requests()
    other = [*argv[:4], str(BIN / "cdemo-gcc-dwarf5-pie"), *argv[5:]]  # a build the server does not hold
    missing = debuginfod.run(other, env=client_environment(tmp_path))
    assert missing.returncode == EXIT_SHORT and "not-on-server" in missing.stderr


# --- symbol servers ------------------------------------------------------------------------------


def _symbol_store(root: Path, files: dict[str, Path]) -> Path:
    """``root`` as a symbol store holding ``files`` (relative key path -> file)."""
    for relative, source in files.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, root / relative)
    return root


def _audit_symbol_server(url: str, binary: Path):  # type: ignore[no-untyped-def]
    return audit_binaries([binary], remote=remote_options(symbol_servers=[f"srv*{url}"]))


def test_a_pe_images_pdb_and_image_on_a_symbol_server(tmp_path: Path) -> None:
    image = open_object(WINDOWS_BIN / "winapp.exe")
    pdb_index, code_id = str(image.debug_id), str(image.identities()[1])
    files = {
        f"winapp.pdb/{pdb_index}/winapp.pd_": WINDOWS_BIN / "compressed" / "lzx" / "winapp.pd_",  # symstore /compress
        f"winapp.exe/{code_id}/winapp.exe": WINDOWS_BIN / "winapp.exe",
    }
    with HttpStore(_symbol_store(tmp_path / "store", files)) as store:
        report = _audit_symbol_server(store.url, WINDOWS_BIN / "winapp.exe")
        checks = {check.role: check for check in report.binaries[0].servers}
        assert checks["debug file"].verdict == "on-server" and checks["debug file"].url.endswith("/winapp.pd_")
        assert checks["binary"].verdict == "on-server" and checks["binary"].what == f"winapp.exe ({code_id})"
        assert report.exit_code == EXIT_OK
        other = _audit_symbol_server(store.url, WINDOWS_BIN / "winlib.dll")  # uploaded: winapp only
    check = next(check for check in other.binaries[0].servers if check.role == "debug file")
    assert check.verdict == "not-on-server" and other.exit_code == EXIT_SHORT
    assert any("winlib.pdb" in url for url in check.tried)


def test_ssqp_keys_of_elf_and_mach_o_files(tmp_path: Path) -> None:
    macho = MACOS_BIN / "cppdemo-arm64"
    uuid = open_object(macho).debug_id.value.hex()  # type: ignore[union-attr]
    dwarf = MACOS_BIN / "cppdemo-arm64.dSYM" / "Contents" / "Resources" / "DWARF" / "cppdemo-arm64"
    files = {
        f"_.debug/elf-buildid-sym-{BUILD_ID}/_.debug": DEBUG_FILE,
        f"_.dwarf/mach-uuid-sym-{uuid}/_.dwarf": dwarf,
        f"cppdemo-arm64/mach-uuid-{uuid}/cppdemo-arm64": macho,
    }
    with HttpStore(_symbol_store(tmp_path / "store", files)) as store:
        report = audit_binaries([STRIPPED, macho], remote=remote_options(symbol_servers=[f"srv*{store.url}"]))
    verdicts = [{check.role: check.verdict for check in audit.servers} for audit in report.binaries]
    assert verdicts == [
        {"debug file": "on-server", "binary": "not-on-server"},
        {"debug file": "on-server", "binary": "on-server"},
    ]
    assert report.exit_code == EXIT_OK
