"""Symbol servers over HTTP (symbolize/remote/symsrv.py) against tests/servers/http_store.py serving a
symbol store made from the fixture PDBs: every form a store keeps a file in (plain, ``_`` MSZIP and
LZX cabinets, ``file.ptr``, SSQP's lower case, two-tier with ``index2.txt``, a server that folds
case), the caches (a second run asks nothing, ``--offline`` names from them, a ``cache*DIR``
downstream store receives the download), and what is refused or missed (another build's file, a
cabinet of another name, a pointer to another server, the store's ``MSG:``, no opt-in)."""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from symbolize.api import lookup, open_module, remote_options, symbolize_profile
from symbolize.cli.app import app
from symbolize.formats.elf import ElfFile
from symbolize.formats.macho.file import MachOFile
from symbolize.formats.pdb import PdbFile
from symbolize.module import Reason, Unknown
from symbolize.remote import Fetcher, Missed, RemoteOptions
from symbolize.remote.prune import PRUNED_STAMP
from symbolize.remote.symsrv import SymbolStoreAttempt, download_key
from symbolize.remote.symsrv_layout import SymbolStoreKey, elf_debug_key, macho_binary_key, macho_dwarf_key, pdb_key
from symbolize.remote.verifiers import pdb_verifier
from tests.fixtures_data import BIN, DEBUG_DIR, EXPECTED, MACOS_BIN, PROFILES, WINDOWS_BIN, load_expected
from tests.servers.http_store import Fault, HttpStore

COMPRESSED = WINDOWS_BIN / "compressed"
KEY = pdb_key("winapp.pdb", PdbFile(WINDOWS_BIN / "winapp.pdb").debug_id)
assert KEY is not None
SSQP = KEY.spellings()[-1]


def _layout(root: Path, key: SymbolStoreKey, source: Path, *, two_tier: bool = False, name: str | None = None) -> Path:
    """``source`` stored under ``root`` as ``key`` (``name``: the stored file's name, the key's by default)."""
    target = root / key.relative(two_tier=two_tier, file_name=name)
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)
    return target


@pytest.fixture(autouse=True)
def _no_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for variable in ("_NT_SYMBOL_PATH", "_NT_ALT_SYMBOL_PATH", "DEBUGINFOD_URLS"):
        monkeypatch.delenv(variable, raising=False)


@pytest.fixture
def image(tmp_path: Path) -> Path:
    """winapp.exe alone in a directory: its PDB is only where a test puts it."""
    path = tmp_path / "image" / "winapp.exe"
    path.parent.mkdir()
    shutil.copyfile(WINDOWS_BIN / "winapp.exe", path)
    return path


def _expected() -> tuple[list[int], list[str | None]]:
    entries = json.loads((EXPECTED / "windows" / "winapp.exe.json").read_text())["addresses"]
    return [int(e["address"], 16) for e in entries], [e["frames"][-1]["function"] for e in entries]


def _names(image: Path, **options: object) -> list[str | None]:
    addresses, _ = _expected()
    results = lookup(image, addresses, demangle="none", use_cache=False, **options)  # type: ignore[arg-type]
    return [None if isinstance(r, Unknown) else r[-1].function for r in results]


def _plain(root: Path) -> None:
    _layout(root, KEY, WINDOWS_BIN / "winapp.pdb")


def _mszip(root: Path) -> None:
    _layout(root, KEY, COMPRESSED / "mszip" / "winapp.pd_", name=KEY.compressed_name)


def _lzx(root: Path) -> None:
    _layout(root, KEY, COMPRESSED / "lzx" / "winapp.pd_", name=KEY.compressed_name)


def _ssqp(root: Path) -> None:
    _layout(root, SSQP, WINDOWS_BIN / "winapp.pdb")


def _two_tier(root: Path) -> None:
    _layout(root, KEY, COMPRESSED / "lzx" / "winapp.pd_", two_tier=True, name=KEY.compressed_name)
    (root / "index2.txt").write_text("two-tier\n")


def _folded(root: Path) -> None:
    # Stored as neither spelling asks: only a server that folds case (IIS) finds it.
    _layout(root, SymbolStoreKey("WINAPP.PDB", KEY.index.lower()), WINDOWS_BIN / "winapp.pdb")


FORMS = {"plain": _plain, "mszip": _mszip, "lzx": _lzx, "ssqp": _ssqp, "two-tier": _two_tier, "folded": _folded}


@pytest.mark.parametrize("form", list(FORMS))
def test_each_form_of_a_store_names_the_image(form: str, image: Path, tmp_path: Path) -> None:
    served = tmp_path / "served"
    FORMS[form](served)
    _, theirs = _expected()
    assert _names(image) != theirs  # exports only, without the PDB
    with HttpStore(served, fold_case=form == "folded") as store:
        remote = remote_options(symbol_servers=[f"srv*{store.url}"], cache_dir=tmp_path / "cache")
        assert _names(image, remote=remote) == theirs
        asked = [request.path for request in store.requests]
    stored = tmp_path / "cache" / "downloads" / "symsrv" / KEY.relative()
    assert stored.read_bytes() == (WINDOWS_BIN / "winapp.pdb").read_bytes()
    assert asked[-1].lower().endswith(("winapp.pdb", "winapp.pd_"))


@pytest.mark.parametrize("credentials", ["", "reader:secret@"])
def test_file_ptr_to_the_same_server(credentials: str, image: Path, tmp_path: Path) -> None:
    """A pointer to a URL on the store's server is followed; credentials in the store's URL (not
    in the pointer's) do not make it another server."""
    served = tmp_path / "served"
    _layout(served, SymbolStoreKey("drops", "build7"), WINDOWS_BIN / "winapp.pdb", name="winapp.pdb")
    with HttpStore(served) as store:
        pointer = served / KEY.relative(file_name="file.ptr")
        pointer.parent.mkdir(parents=True)
        pointer.write_text(f"PATH:{store.url}/drops/build7/winapp.pdb\r\n")
        url = store.url.replace("http://", f"http://{credentials}")
        remote = remote_options(symbol_servers=[url], cache_dir=tmp_path / "cache")
        assert _names(image, remote=remote) == _expected()[1]
        assert store.requests[-1].path == "/drops/build7/winapp.pdb"


def test_second_run_asks_nothing_and_offline_names_from_the_cache(image: Path, tmp_path: Path) -> None:
    served = tmp_path / "served"
    _mszip(served)
    with HttpStore(served) as store:
        remote = remote_options(symbol_servers=[f"srv*{store.url}"], cache_dir=tmp_path / "cache")
        assert _names(image, remote=remote) == _expected()[1]
        assert store.requests
        store.clear_log()
        assert _names(image, remote=remote) == _expected()[1]
        offline = remote_options(offline=True, cache_dir=tmp_path / "cache")
        assert _names(image, remote=offline) == _expected()[1]
        assert store.requests == []


def test_downstream_store_of_the_symbol_path_receives_the_download(image: Path, tmp_path: Path) -> None:
    """``cache*DIR;srv*URL`` and ``srv*DIR*URL``: the file is stored in DIR, symsrv's layout, where
    WinDbg finds it too, and a later run without the server finds it there."""
    served = tmp_path / "served"
    _lzx(served)
    for number, spec in enumerate(["cache*{d};srv*{url}", "srv*{d}*{url}"]):
        downstream = tmp_path / f"downstream{number}"
        with HttpStore(served) as store:
            entries = spec.format(d=downstream, url=store.url).split(";")
            remote = remote_options(symbol_servers=entries, cache_dir=tmp_path / "cache")
            assert _names(image, remote=remote) == _expected()[1]
        assert (downstream / KEY.relative()).read_bytes() == (WINDOWS_BIN / "winapp.pdb").read_bytes()
        assert not (tmp_path / "cache" / "downloads" / "symsrv" / KEY.relative()).exists()
        # The downstream store is a local store of the symbol path: found with no server running.
        assert _names(image, remote=remote_options(symbol_servers=[f"srv*{downstream}"])) == _expected()[1]


def test_another_builds_pdb_is_refused_and_not_stored(image: Path, tmp_path: Path) -> None:
    served = tmp_path / "served"
    _plain(served)
    with HttpStore(served) as store:
        store.fault("/" + str(KEY.relative()), Fault(serve=WINDOWS_BIN / "winlib.pdb"))
        remote = remote_options(symbol_servers=[store.url], cache_dir=tmp_path / "cache")
        module = open_module(image, use_cache=False, remote=remote)
        url = f"{store.url}/{KEY.relative()}"
    assert not module.debug_files
    assert any(reason.startswith(f"{url}: PDB ") and "is not the one asked for" in reason for reason in module.refused)
    assert not list((tmp_path / "cache").rglob("winapp.pdb"))


def test_a_cabinet_holding_another_file_is_refused(image: Path, tmp_path: Path) -> None:
    served = tmp_path / "served"
    _layout(served, KEY, COMPRESSED / "mszip" / "winlib.pd_", name=KEY.compressed_name)
    with HttpStore(served) as store:
        remote = remote_options(symbol_servers=[store.url], cache_dir=tmp_path / "cache")
        module = open_module(image, use_cache=False, remote=remote)
    assert any("the cabinet holds 'winlib.pdb', not winapp.pdb" in reason for reason in module.refused)


@pytest.mark.parametrize(
    ("pointer", "why"),
    [
        ("PATH:http://127.0.0.2:9/winapp.pdb", "not a URL on this server"),
        ("PATH:\\\\buildserver\\drops\\winapp.pdb", "not a URL on this server"),
        # The store's host and port as user information: the host is 127.0.0.2.
        ("PATH:http://{netloc}@127.0.0.2:9/winapp.pdb", "not a URL on this server"),
        ("PATH:file:///etc/passwd", "not a URL on this server"),
    ],
)
def test_file_ptr_elsewhere_is_refused(pointer: str, why: str, image: Path, tmp_path: Path) -> None:
    served = tmp_path / "served"
    target = served / KEY.relative(file_name="file.ptr")
    target.parent.mkdir(parents=True)
    with HttpStore(served) as store:
        target.write_text(pointer.format(netloc=store.url.removeprefix("http://")))
        remote = remote_options(symbol_servers=[store.url], cache_dir=tmp_path / "cache")
        module = open_module(image, use_cache=False, remote=remote)
        assert all("127.0.0.2" not in request.path for request in store.requests)
    assert any(why in reason for reason in module.refused)


def test_the_stores_message_is_a_miss_with_its_words(image: Path, tmp_path: Path) -> None:
    served = tmp_path / "served"
    target = served / KEY.relative(file_name="file.ptr")
    target.parent.mkdir(parents=True)
    target.write_text("MSG: withheld by the publisher")
    with HttpStore(served) as store:
        remote = remote_options(symbol_servers=[store.url], cache_dir=tmp_path / "cache")
        module = open_module(image, use_cache=False, remote=remote)
    assert not module.debug_files
    assert module.missed and module.missed[0].reason is Reason.NOT_ON_SERVER
    assert any("withheld by the publisher" in miss.detail for miss in module.missed)


def test_a_miss_names_every_url_tried(image: Path, tmp_path: Path) -> None:
    served = tmp_path / "served"
    served.mkdir()
    with HttpStore(served) as store:
        remote = remote_options(symbol_servers=[store.url], cache_dir=tmp_path / "cache")
        module = open_module(image, use_cache=False, remote=remote)
        asked = [request.path for request in store.requests]
    base = "/" + str(KEY.relative().parent)
    ssqp = "/" + str(SSQP.relative().parent)
    assert asked == [f"{base}/winapp.pdb", f"{base}/winapp.pd_", f"{base}/file.ptr",
                     f"{ssqp}/winapp.pdb", f"{ssqp}/winapp.pd_", f"{ssqp}/file.ptr", "/index2.txt"]  # fmt: skip
    (miss,) = module.missed
    assert miss.reason is Reason.NOT_ON_SERVER
    assert [url.removeprefix(store.url) for url in miss.tried] == asked


def test_the_environments_servers_are_asked_only_when_opted_in(
    image: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    served = tmp_path / "served"
    _plain(served)
    with HttpStore(served) as store:
        monkeypatch.setenv("_NT_SYMBOL_PATH", f"srv*{tmp_path / 'downstream'}*{store.url}")
        assert _names(image) != _expected()[1]
        assert _names(image, remote=remote_options(cache_dir=tmp_path / "cache")) != _expected()[1]
        assert store.requests == []
        opted_in = remote_options(from_environment=True, cache_dir=tmp_path / "cache")
        assert _names(image, remote=opted_in) == _expected()[1]
        assert store.requests


@pytest.fixture
def stalled_and_answering(tmp_path: Path) -> Iterator[tuple[HttpStore, HttpStore]]:
    stalled_root, good_root = tmp_path / "stalled", tmp_path / "good"
    _plain(stalled_root)
    _plain(good_root)
    with HttpStore(stalled_root) as stalled, HttpStore(good_root) as good:
        stalled.fault("/" + str(KEY.relative()), Fault(stall_before_headers=True, stall_seconds=30))
        yield stalled, good


def test_a_stalled_server_loses_to_one_that_answers(
    image: Path, tmp_path: Path, stalled_and_answering: tuple[HttpStore, HttpStore]
) -> None:
    stalled, good = stalled_and_answering
    remote = remote_options(symbol_servers=[stalled.url, good.url], cache_dir=tmp_path / "cache")
    assert _names(image, remote=remote) == _expected()[1]
    assert any(request.path == "/" + str(KEY.relative()) for request in good.requests)


_ANSWERS = st.one_of(
    st.binary(max_size=300),
    st.builds(lambda tail: b"MSCF" + tail, st.binary(max_size=300)),  # a cabinet's magic, then anything
    st.builds(lambda data: data[:-1] + b"\0", st.just((COMPRESSED / "lzx" / "winapp.pd_").read_bytes())),
    st.builds(lambda cut: (COMPRESSED / "mszip" / "winapp.pd_").read_bytes()[:cut], st.integers(0, 8000)),
)


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[HttpStore, Path]]:
    served = tmp_path_factory.mktemp("hostile")
    (served / KEY.relative().parent).mkdir(parents=True)
    with HttpStore(served) as store:
        yield store, served


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(form=st.sampled_from(["winapp.pdb", "winapp.pd_", "file.ptr"]), answer=_ANSWERS)
def test_a_hostile_answer_is_refused_or_missed_never_raised(
    form: str, answer: bytes, hostile: tuple[HttpStore, Path], tmp_path: Path
) -> None:
    """Whatever bytes a server sends for any form of the key, the fetch ends in a miss or a refusal
    naming the URL, nothing is stored, and nothing raises."""
    store, served = hostile
    for old in (served / KEY.relative().parent).iterdir():
        old.unlink()
    (served / KEY.relative(file_name=form)).write_bytes(answer)
    cache = Path(tempfile.mkdtemp(dir=tmp_path))
    stored = download_key(KEY)
    debug_id = PdbFile(WINDOWS_BIN / "winapp.pdb").debug_id
    assert stored is not None and debug_id is not None
    fetcher = Fetcher(RemoteOptions(symbol_servers=(store.url,), cache_dir=cache, stall_timeout=5))
    outcome = fetcher.fetch(stored, "winapp.pdb", [SymbolStoreAttempt(store.url, KEY)], pdb_verifier(debug_id))
    assert isinstance(outcome, Missed)
    # Each refusal names its URL once, whole (a URL made a Path would read "http:/127...").
    assert all(refusal.startswith(store.url) and "http:/1" not in refusal for refusal in outcome.refused)
    # Nothing stored, no partial file left: only the store's own records (misses, the last pruning).
    left = [path for path in cache.rglob("*") if path.is_file() and path.parent.name != ".misses"]
    assert [path.name for path in left if path != cache / PRUNED_STAMP] == []


def test_a_mach_o_binary_and_its_dsym_by_uuid_from_an_ssqp_store(tmp_path: Path) -> None:
    """A macOS profile's mapping records its UUID: the binary comes as SSQP's
    ``cppdemo-arm64/mach-uuid-<UUID>/cppdemo-arm64``, its dSYM's DWARF as
    ``_.dwarf/mach-uuid-sym-<UUID>/_.dwarf``, and the profile is named as with both on disk."""
    profile = PROFILES / "macos" / "cppdemo-arm64.pac.cpu.pb.gz"
    binary = MACOS_BIN / "cppdemo-arm64"
    dwarf = MACOS_BIN / "cppdemo-arm64.dSYM" / "Contents" / "Resources" / "DWARF" / "cppdemo-arm64"
    uuid = MachOFile(binary).debug_id
    binary_key, dwarf_key = macho_binary_key("cppdemo-arm64", uuid), macho_dwarf_key(uuid)
    assert binary_key is not None and dwarf_key is not None
    served = tmp_path / "served"
    _layout(served, binary_key, binary)
    _layout(served, dwarf_key, dwarf)
    local, _ = symbolize_profile(profile, binaries=[binary], use_cache=False)
    with HttpStore(served) as store:
        remote = remote_options(symbol_servers=[store.url], cache_dir=tmp_path / "cache")
        fetched, summary = symbolize_profile(profile, use_cache=False, remote=remote)
        asked = {request.path for request in store.requests if request.status == 200}
    assert asked == {"/" + str(binary_key.relative()), "/" + str(dwarf_key.relative())}
    assert fetched.SerializeToString() == local.SerializeToString()
    (mapping,) = summary.mappings
    assert mapping.debug_file is not None and mapping.debug_file.endswith("_.dwarf")


@pytest.mark.parametrize(
    ("spec", "why"),
    [
        ("symsrv*agent.dll*https://h/s", "another symbol server (agent.dll), not symsrv's protocol"),
        ("cache*/a*/b", "a cache element names one directory"),
    ],
)
def test_a_symbol_server_entry_that_names_nothing_is_one_error_line(spec: str, why: str) -> None:
    result = CliRunner().invoke(app, ["lookup", "--obj", str(WINDOWS_BIN / "winapp.exe"), "--symbol-server", spec,
                                      "0x140001000"])  # fmt: skip
    assert result.exit_code == 1
    assert result.stderr.strip().splitlines() == [f"symbolize: error: symbol server {spec}: {why}"]


def test_an_elf_debug_file_by_build_id_from_an_ssqp_store(tmp_path: Path) -> None:
    """SSQP's ``_.debug/elf-buildid-sym-<build ID>/_.debug``: a stripped binary's lines, as its
    debug file on disk names them."""
    stripped = BIN / "cppdemo-gcc-buildid"
    build_id = ElfFile(stripped).debug_id
    key = elf_debug_key(build_id)
    assert key is not None and build_id is not None
    debug_file = DEBUG_DIR / ".build-id" / build_id.value.hex()[:2] / f"{build_id.value.hex()[2:]}.debug"
    _layout(tmp_path / "served", key, debug_file)
    empty = tmp_path / "no-debug-files"
    empty.mkdir()
    vaddrs = [address.vaddr for address in load_expected("cppdemo-gcc-dwarf5-pie").addresses[:40]]
    local = lookup(stripped, vaddrs, debug_dirs=[DEBUG_DIR], use_cache=False)
    with HttpStore(tmp_path / "served") as store:
        remote = remote_options(symbol_servers=[store.url], cache_dir=tmp_path / "cache")
        fetched = lookup(stripped, vaddrs, debug_dirs=[empty], use_cache=False, remote=remote)
        assert [request.path for request in store.requests if request.status == 200] == ["/" + str(key.relative())]
    assert fetched == local != lookup(stripped, vaddrs, debug_dirs=[empty], use_cache=False)


def test_lookup_on_the_command_line_with_a_symbol_server(image: Path, tmp_path: Path) -> None:
    served = tmp_path / "served"
    _lzx(served)
    addresses, theirs = _expected()
    with HttpStore(served) as store:
        result = CliRunner().invoke(app, ["lookup", "--obj", str(image), "--symbol-server", f"srv*{store.url}",
                                          "--cache-dir", str(tmp_path / "cache"), "--demangle", "none", "--no-inlines",
                                          *(hex(address) for address in addresses[:5])])  # fmt: skip
    assert result.exit_code == 0, result.output
    # llvm-symbolizer's layout: function, location, a blank line per address.
    assert result.stdout.splitlines()[::3] == theirs[:5]


def test_a_symbol_server_url_that_is_no_url_is_one_error_line() -> None:
    result = CliRunner().invoke(app, ["lookup", "--obj", str(WINDOWS_BIN / "winapp.exe"), "--symbol-server",
                                      "srv*https://host:99999/symbols", "0x140001000"])  # fmt: skip
    assert result.exit_code == 1
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("symbolize: error: https://host:99999/symbols: not a server URL")
