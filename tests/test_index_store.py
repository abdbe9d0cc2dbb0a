"""The shared index store (symbolize/index_store/): the backends' contract, publishing and fetching
through a real S3 server (moto on loopback, tests/servers/s3.py), several processes building one
index at once, a store that goes away mid-run, damaged objects, markers, aliases and the LRU."""

from __future__ import annotations

import importlib
import importlib.util
import os
import subprocess
import sys
import threading
import time
import uuid
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from symbolize.api import build_indexes
from symbolize.cache import clear_cache, index_key, index_path, publish_index_file, stored_key
from symbolize.discovery import SearchOptions, open_module
from symbolize.formats.identity import htlhash
from symbolize.index.indexed import IndexedObject
from symbolize.index.store import IndexFile
from symbolize.index_store import configure_index_store, index_metrics, reset_index_metrics
from symbolize.index_store.backends import (
    DirectoryBackend,
    ObjectBackend,
    ObjectInfo,
    StoreUnavailableError,
)
from symbolize.index_store.config import forget_index_stores, index_store
from symbolize.index_store.tiers import FETCHED_DIR, IndexStore, check_index_file
from symbolize.index_store.urls import open_backend
from symbolize.loader import Loader
from tests.fixtures_data import FIXTURES
from tests.servers.s3 import S3Server, Unavailable, stalling_endpoint, start_s3
from tests.test_index import fixture_addresses

BINARY = FIXTURES / "bin" / "cppdemo-gcc-dwarf5-pie"
OTHER_BINARY = FIXTURES / "bin" / "cdemo-gcc-dwarf5-pie"
WINDOWS_IMAGE = FIXTURES / "bin" / "windows" / "winapp.exe"
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def _fresh_store_state(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every test starts without a store and with zero counts (and leaves none behind)."""
    monkeypatch.delenv("SYMBOLIZE_INDEX_STORE", raising=False)
    forget_index_stores()
    reset_index_metrics()
    yield
    forget_index_stores()


@pytest.fixture(scope="module")
def s3() -> Iterator[S3Server]:
    if importlib.util.find_spec("obstore") is None:
        pytest.skip("obstore is not installed (pip install -e '.[store]')")
    try:
        with start_s3() as server:
            yield server
    except Unavailable as reason:
        pytest.skip(str(reason))


@pytest.fixture
def s3_url(s3: S3Server, monkeypatch: pytest.MonkeyPatch) -> str:
    """A fresh prefix of the module's bucket, with the AWS_* variables pointing at the server."""
    for name, value in s3.environ.items():
        monkeypatch.setenv(name, value)
    return s3.url(f"run-{uuid.uuid4().hex[:8]}")


def _use(url: str, monkeypatch: pytest.MonkeyPatch) -> IndexStore:
    monkeypatch.setenv("SYMBOLIZE_INDEX_STORE", url)  # undone after the test, as configure sets it
    configure_index_store(url)
    store = index_store()
    assert store is not None
    return store


def _lookup(binary: Path, cache_dir: Path | None, build: bool = False) -> tuple[list[object], bool]:
    """The answers at the binary's fixture addresses, and whether an index answered them."""
    options = SearchOptions(index_dir=cache_dir, build_missing_indexes=build)
    with Loader(options) as loader:
        module = open_module(binary, loader)
        indexed = any(isinstance(source, IndexedObject) for source in [*module.debug_files, module.binary])
        return module.lookup(fixture_addresses(binary, per_segment=200)), indexed


def _uncached(binary: Path) -> list[object]:
    return _lookup(binary, None)[0]


def _index_objects(s3: S3Server, url: str) -> dict[str, bytes]:
    prefix = url.removeprefix(f"s3://{s3.bucket}/")
    return {key: body for key, body in s3.keys(prefix).items() if "/idx/" in key}


# --- The backends' contract ---------------------------------------------------------------


def _backends(tmp_path: Path, s3_env: S3Server | None) -> list[ObjectBackend]:
    backends: list[ObjectBackend] = [DirectoryBackend(tmp_path / "dir")]
    if importlib.util.find_spec("fsspec") is not None:
        backends.append(open_backend(f"memory://store-{uuid.uuid4().hex[:8]}"))
    if s3_env is not None:
        backends.append(open_backend(s3_env.url(f"contract-{uuid.uuid4().hex[:8]}")))
    return backends


def test_every_backend_keeps_the_first_write_and_reads_ranges(s3_url: str, s3: S3Server, tmp_path: Path) -> None:
    for backend in _backends(tmp_path, s3):
        assert backend.head("idx/a/b") is None, backend.url
        assert backend.put_if_absent("idx/a/b", b"first writer") is True
        assert backend.put_if_absent("idx/a/b", b"second writer") is False  # no overwrite
        assert backend.head("idx/a/b") is not None
        assert backend.head("idx/a/b").size == len(b"first writer")  # type: ignore[union-attr]
        assert backend.get_range("idx/a/b", 0, 5) == b"first"
        assert backend.get_range("idx/a/b", 6, 100) == b"writer"  # past the end: the rest
        with pytest.raises(FileNotFoundError):
            backend.get_range("idx/a/missing", 0, 4)
        backend.put("fail/a/b", b"marker 1")
        backend.put("fail/a/b", b"marker 2")  # markers are overwritten
        assert backend.get_range("fail/a/b", 0, 100) == b"marker 2"


@pytest.mark.parametrize("name", ["../escape", "idx/../../x", "/abs", "idx//x", "idx/.hidden", "", "a\\b", "a b"])
def test_object_names_never_leave_the_store(name: str, tmp_path: Path) -> None:
    backend = DirectoryBackend(tmp_path / "root")
    with pytest.raises(ValueError):
        backend.put_if_absent(name, b"x")
    assert not (tmp_path / "escape").exists()


def test_a_directory_store_lets_exactly_one_of_racing_writers_win(tmp_path: Path) -> None:
    backend = DirectoryBackend(tmp_path / "store")
    start = threading.Barrier(8)
    results: dict[int, bool] = {}

    def write(number: int) -> None:
        start.wait()
        results[number] = backend.put_if_absent("idx/v/same", f"writer {number}".encode() * 1000)

    threads = [threading.Thread(target=write, args=(number,)) for number in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    winners = [number for number, wrote in results.items() if wrote]
    assert len(winners) == 1
    assert backend.get_range("idx/v/same", 0, 1 << 20) == f"writer {winners[0]}".encode() * 1000
    assert not [path for path in (tmp_path / "store" / "idx" / "v").iterdir() if path.name != "same"]  # no leftovers


# --- Publish and fetch through S3 ------------------------------------------------------------


def test_an_index_built_on_one_machine_answers_on_another(
    s3_url: str, s3: S3Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _use(s3_url, monkeypatch)
    built = build_indexes([BINARY], cache_dir=tmp_path / "builder")
    assert index_metrics().published == 1
    objects = _index_objects(s3, s3_url)
    assert len(objects) == 1
    ((name, body),) = objects.items()
    assert body == built[0].read_bytes()  # the index file, byte for byte
    assert "/idx/v" in name and "/gnu-build-id-" in name

    reset_index_metrics()
    answers, indexed = _lookup(BINARY, tmp_path / "worker")  # another cache: nothing local
    assert indexed
    assert answers == _uncached(BINARY)
    metrics = index_metrics()
    assert (metrics.local_misses, metrics.fetched_misses, metrics.store_hits, metrics.built) == (1, 1, 1, 0)
    assert metrics.bytes_fetched == len(body)
    assert list((tmp_path / "worker" / FETCHED_DIR).glob("*.idx"))

    reset_index_metrics()
    _lookup(BINARY, tmp_path / "worker")  # the second run: from the local LRU, nothing fetched
    metrics = index_metrics()
    assert (metrics.fetched_hits, metrics.store_hits, metrics.bytes_fetched) == (1, 0, 0)


def test_the_index_command_publishes_and_a_lookup_fetches(s3_url: str, s3: S3Server, tmp_path: Path) -> None:
    environment = {**os.environ, **s3.environ, "SYMBOLIZE_BACKGROUND_INDEX": "0"}
    environment.pop("SYMBOLIZE_INDEX_STORE", None)
    command = [sys.executable, "-m", "symbolize"]
    # Built without the store first: `index --index-store` publishes what the cache holds.
    subprocess.run([*command, "index", str(BINARY), "--cache-dir", str(tmp_path / "a")], check=True, env=environment)
    assert not _index_objects(s3, s3_url)
    subprocess.run(
        [*command, "index", str(BINARY), "--cache-dir", str(tmp_path / "a"), "--index-store", s3_url],
        check=True,
        env=environment,
        capture_output=True,
    )
    assert len(_index_objects(s3, s3_url)) == 1

    addresses = [hex(address) for address in fixture_addresses(BINARY, per_segment=20)]
    uncached = subprocess.run(
        [*command, "lookup", "--obj", str(BINARY), "--no-cache", *addresses], env=environment, capture_output=True
    )
    fetched = subprocess.run(
        [*command, "lookup", "--obj", str(BINARY), "--cache-dir", str(tmp_path / "b"), *addresses],
        env={**environment, "SYMBOLIZE_INDEX_STORE": s3_url},  # the variable, as --index-store
        capture_output=True,
    )
    assert fetched.returncode == 0, fetched.stderr
    assert fetched.stdout == uncached.stdout and fetched.stdout
    assert fetched.stderr == b""
    assert list((tmp_path / "b" / FETCHED_DIR).glob("*.idx"))  # answered from the fetched index


def test_several_processes_building_one_index_leave_one_object(
    s3_url: str, s3: S3Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    environment = {**os.environ, **s3.environ, "SYMBOLIZE_INDEX_STORE": s3_url, "SYMBOLIZE_BACKGROUND_INDEX": "0"}
    workers = [
        subprocess.Popen(
            [sys.executable, "-m", "symbolize", "index", str(BINARY), "--cache-dir", str(tmp_path / f"w{number}")],
            env=environment,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for number in range(4)
    ]
    outputs = [worker.communicate(timeout=120) for worker in workers]
    assert all(worker.returncode == 0 for worker in workers), outputs
    objects = _index_objects(s3, s3_url)
    assert len(objects) == 1
    ((_name, body),) = objects.items()
    checked = tmp_path / "object.idx"
    checked.write_bytes(body)
    key = stored_key(checked)
    assert key is not None and check_index_file(checked, key)
    # Every worker printed its index: built, or fetched when another had published first.
    for stdout, _stderr in outputs:
        (printed,) = stdout.decode().split()
        assert Path(printed).is_file() and Path(printed).parent.name in ("index", FETCHED_DIR)
    # Every worker's index answers as the binary does (through the store's tiers, as the workers).
    _use(s3_url, monkeypatch)
    expected = _uncached(BINARY)
    for number in range(4):
        answers, indexed = _lookup(BINARY, tmp_path / f"w{number}")
        assert indexed and answers == expected


# --- A store that goes away, a store that lies -------------------------------------------------


def test_a_store_that_goes_away_mid_run_falls_back_and_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if importlib.util.find_spec("obstore") is None:
        pytest.skip("obstore is not installed (pip install -e '.[store]')")
    try:
        context = start_s3()
        server = context.__enter__()
    except Unavailable as reason:
        pytest.skip(str(reason))
    try:
        for name, value in server.environ.items():
            monkeypatch.setenv(name, value)
        url = server.url("gone")
        store = _use(url, monkeypatch)
        build_indexes([BINARY], cache_dir=tmp_path / "run")
        assert index_metrics().published == 1
        server.stop()  # mid-run: the same process, the same store object
        with pytest.warns(RuntimeWarning, match="indexes are built locally"):
            built = build_indexes([OTHER_BINARY], cache_dir=tmp_path / "run")
        assert built and built[0].parent.name == "index"  # built locally
        assert store.unavailable is not None and url in store.unavailable
        answers, indexed = _lookup(BINARY, tmp_path / "fresh", build=True)  # not asked again
        assert indexed and answers == _uncached(BINARY)
        metrics = index_metrics()
        assert metrics.store_errors == 1 and metrics.store_unavailable is not None

        # The command line says so in one line on stderr, and answers as without a store.
        environment = {**os.environ, "SYMBOLIZE_BACKGROUND_INDEX": "0"}
        environment.pop("SYMBOLIZE_INDEX_STORE", None)
        command = [sys.executable, "-m", "symbolize", "lookup", "--obj", str(OTHER_BINARY), "0x1139", "0x11a9"]
        plain = subprocess.run([*command, "--no-cache"], env=environment, capture_output=True)
        run = subprocess.run(
            [*command, "--cache-dir", str(tmp_path / "cli"), "--index-store", url], env=environment, capture_output=True
        )
        assert run.returncode == 0
        assert run.stdout == plain.stdout
        lines = run.stderr.decode().splitlines()
        assert len(lines) == 1 and lines[0].startswith("symbolize: warning: ") and url in lines[0], lines
    finally:
        context.__exit__(None, None, None)


def _damage_middle_of_run_low(body: bytes, tmp_path: Path) -> bytes:
    path = tmp_path / "original.idx"
    path.write_bytes(body)
    key = stored_key(path)
    assert key is not None
    index = IndexFile(path, key)
    try:
        _data, places = index.checked_contents(
            ["run_low"], lambda data, start, length: zlib.crc32(data[start : start + length])
        )
    finally:
        index.close()
    _code, start, items = places["run_low"]
    assert items > 1
    damaged = bytearray(body)
    damaged[start + items // 2] ^= 0x40
    return bytes(damaged)


DAMAGES = {
    "a byte flipped in an array": _damage_middle_of_run_low,
    "truncated": lambda body, _tmp: body[: len(body) // 2],
    "another build's index": lambda _body, tmp: build_indexes([OTHER_BINARY], cache_dir=tmp / "other")[0].read_bytes(),
    "not an index": lambda body, _tmp: b"<html>502 Bad Gateway</html>" + body[28:],
}


@pytest.mark.parametrize("damage", DAMAGES, ids=list(DAMAGES))
def test_a_damaged_object_is_refused_rebuilt_locally_and_replaced(
    damage: str, s3_url: str, s3: S3Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = _use(s3_url, monkeypatch)
    build_indexes([BINARY], cache_dir=tmp_path / "builder")
    ((name, good),) = _index_objects(s3, s3_url).items()
    damaged = DAMAGES[damage](good, tmp_path)
    s3.client().put_object(Bucket=s3.bucket, Key=name, Body=damaged)

    reset_index_metrics()
    answers, indexed = _lookup(BINARY, tmp_path / "worker", build=True)
    assert indexed and answers == _uncached(BINARY)
    metrics = index_metrics()
    assert (metrics.refused, metrics.store_hits, metrics.built, metrics.published) == (1, 0, 1, 1)
    assert not list((tmp_path / "worker" / FETCHED_DIR).glob("*"))  # never kept
    # The damaged object was replaced by the checked one this worker built.
    replaced = tmp_path / "replaced.idx"
    replaced.write_bytes(_index_objects(s3, s3_url)[name])
    key = stored_key(replaced)
    assert key is not None and check_index_file(replaced, key)
    assert store.unavailable is None


def test_a_damaged_object_is_never_used_by_a_run_that_builds_nothing(
    s3_url: str, s3: S3Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _use(s3_url, monkeypatch)
    build_indexes([BINARY], cache_dir=tmp_path / "builder")
    ((name, good),) = _index_objects(s3, s3_url).items()
    s3.client().put_object(Bucket=s3.bucket, Key=name, Body=_damage_middle_of_run_low(good, tmp_path))
    answers, indexed = _lookup(BINARY, tmp_path / "worker", build=False)
    assert not indexed and answers == _uncached(BINARY)
    assert index_metrics().refused == 1


@pytest.fixture(scope="module")
def published(tmp_path_factory: pytest.TempPathFactory) -> tuple[bytes, str]:
    """An index file's bytes and key."""
    built = build_indexes([OTHER_BINARY], cache_dir=tmp_path_factory.mktemp("published"))[0]
    key = stored_key(built)
    assert key is not None
    return built.read_bytes(), key


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(position=st.floats(min_value=0.0, max_value=1.0, exclude_max=True), bit=st.integers(0, 7))
def test_any_flipped_bit_is_refused_or_changes_no_answer(
    position: float, bit: int, published: tuple[bytes, str], tmp_path_factory: pytest.TempPathFactory
) -> None:
    # The padding between arrays is covered by no checksum: a flip there is harmless; any other is refused.
    body, key = published
    work = tmp_path_factory.mktemp("flip")
    store = IndexStore(str(work / "store"))
    name = store.object_name(key)
    assert name is not None
    damaged = bytearray(body)
    damaged[int(position * len(body))] ^= 1 << bit
    DirectoryBackend(work / "store").put(name, bytes(damaged))
    fetched = store.fetch(key, work / "worker")
    if fetched is None:
        assert not list((work / "worker" / FETCHED_DIR).glob("*"))  # refused and not kept
        return
    assert check_index_file(fetched, key)
    with Loader(SearchOptions()) as loader:
        source, _follower = loader.open_for_indexing(OTHER_BINARY)
        indexed = IndexedObject(source, IndexFile(fetched, key))
        try:
            for address in fixture_addresses(OTHER_BINARY, per_segment=100):
                assert indexed.frames_at(address) == source.frames_at(address)
        finally:
            indexed.index.close()


def test_an_object_over_the_size_cap_is_not_fetched(
    s3_url: str, s3: S3Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _use(s3_url, monkeypatch)
    build_indexes([BINARY], cache_dir=tmp_path / "builder")
    monkeypatch.setenv("SYMBOLIZE_INDEX_STORE_MAX_BYTES", "1000")
    forget_index_stores()
    reset_index_metrics()
    _answers, indexed = _lookup(BINARY, tmp_path / "worker")
    metrics = index_metrics()
    assert not indexed and metrics.refused == 1 and metrics.bytes_fetched == 0


# --- Markers, aliases, the LRU, what is not shared ------------------------------------------------


def _key(binary: Path) -> str:
    with Loader(SearchOptions()) as loader:
        source, _follower = loader.open_for_indexing(binary)
        return index_key(source)


def test_a_could_not_index_marker_stops_builds_until_it_expires(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = _use(str(tmp_path / "store"), monkeypatch)
    key = _key(BINARY)
    store.mark_unindexable(key, "DWARF unit 3 is damaged")
    assert store.unindexable(key) == "DWARF unit 3 is damaged"
    assert build_indexes([BINARY], cache_dir=tmp_path / "cache") == []
    assert index_metrics().skipped_unindexable == 1

    monkeypatch.setenv("SYMBOLIZE_INDEX_STORE_FAILURE_TTL", "0")  # expired
    forget_index_stores()
    assert index_store().unindexable(key) is None  # type: ignore[union-attr]
    assert build_indexes([BINARY], cache_dir=tmp_path / "cache")


@pytest.mark.parametrize("body", [b"not json", b"[]", b'{"reason": "x"}', b'{"reason": "x", "written": "soon"}'])
def test_a_hostile_marker_is_no_marker(body: bytes, tmp_path: Path) -> None:
    store = IndexStore(str(tmp_path / "store"))
    key = _key(BINARY)
    name = store.object_name(key)
    assert name is not None
    DirectoryBackend(tmp_path / "store").put("fail/" + name.removeprefix("idx/"), body)
    assert store.unindexable(key) is None


def test_a_pe_image_code_id_is_an_alias_of_its_pdb_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = _use(str(tmp_path / "store"), monkeypatch)
    built = build_indexes([WINDOWS_IMAGE], cache_dir=tmp_path / "cache")
    names = {store.object_name(key) for key in (stored_key(path) for path in built) if key is not None}
    with Loader(SearchOptions()) as loader:
        code_id = next(
            identity for identity in loader.open(WINDOWS_IMAGE).identities() if identity.kind.value == "pe-code-id"
        )
    alias = store.resolve_alias(f"pe-code-id-{code_id.value.hex()}")
    assert alias is not None and alias["index"] in names and alias["debug_id"].startswith("pdb-")
    assert store.resolve_alias("pe-code-id-00000000") is None


def test_the_fetched_indexes_stay_within_their_bound(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _use(str(tmp_path / "store"), monkeypatch)
    build_indexes([BINARY, OTHER_BINARY], cache_dir=tmp_path / "builder")
    monkeypatch.setenv("SYMBOLIZE_INDEX_STORE_LRU_BYTES", "1")  # room for the newest alone
    forget_index_stores()
    first, _ = _lookup(BINARY, tmp_path / "worker")
    second, _ = _lookup(OTHER_BINARY, tmp_path / "worker")
    kept = list((tmp_path / "worker" / FETCHED_DIR).glob("*.idx"))
    assert len(kept) == 1 and kept[0].name == index_path(tmp_path, _key(OTHER_BINARY)).name
    assert first == _uncached(BINARY) and second == _uncached(OTHER_BINARY)


def test_an_index_of_a_file_without_a_debug_id_is_not_shared(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A copy whose build ID note is retyped (NT_GNU_BUILD_ID 3 -> 0x7fff): a note no reader takes.
    from elftools.elf.elffile import ELFFile

    with OTHER_BINARY.open("rb") as stream:
        note = ELFFile(stream).get_section_by_name(".note.gnu.build-id")
        assert note is not None
        type_offset = note["sh_offset"] + 8
    data = bytearray(OTHER_BINARY.read_bytes())
    assert int.from_bytes(data[type_offset : type_offset + 4], "little") == 3
    data[type_offset : type_offset + 4] = (0x7FFF).to_bytes(4, "little")
    binary = tmp_path / "no-build-id"
    binary.write_bytes(bytes(data))
    store = _use(str(tmp_path / "store"), monkeypatch)
    assert build_indexes([binary], cache_dir=tmp_path / "cache")  # indexed here, named by path and mtime
    key = _key(binary)
    assert " path " in key and store.object_name(key) is None
    assert not (tmp_path / "store").exists()


def test_an_index_whose_answers_came_from_other_files_stays_local(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A split-DWARF binary's index records where its .dwo files were found on this machine.
    _use(str(tmp_path / "store"), monkeypatch)
    built = build_indexes([FIXTURES / "bin" / "cdemo-gcc-split4"], cache_dir=tmp_path / "cache")
    assert built
    assert index_metrics().built >= 1 and index_metrics().published == 0
    assert not list((tmp_path / "store").rglob("idx/*/*/*"))
    assert publish_index_file(built[0]) is False


def test_an_unknown_scheme_without_its_backend_is_unavailable_not_a_crash() -> None:
    with pytest.raises(StoreUnavailableError) as raised:
        open_backend("nosuchprotocol://bucket/prefix")
    assert "nosuchprotocol://bucket/prefix" in str(raised.value)


def test_a_run_that_names_no_store_imports_none_of_it() -> None:
    # Only the store's configuration and counts (two small modules): no backend, no obstore or fsspec.
    environment = {key: value for key, value in os.environ.items() if key != "SYMBOLIZE_INDEX_STORE"}
    run = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "symbolize", "lookup", "--obj", str(OTHER_BINARY), "0x1139"],
        env=environment,
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert run.returncode == 0
    modules = {line.rpartition("|")[2].strip() for line in run.stderr.splitlines() if line.startswith("import time:")}
    loaded = {name for name in modules if name.startswith(("obstore", "fsspec", "symbolize.index_store"))}
    assert loaded == {"symbolize.index_store", "symbolize.index_store.config", "symbolize.index_store.counts"}


def test_the_index_command_fails_when_it_cannot_publish(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    environment = {key: value for key, value in os.environ.items() if key != "SYMBOLIZE_INDEX_STORE"}
    command = [sys.executable, "-m", "symbolize", "index", str(OTHER_BINARY), "--cache-dir", str(tmp_path / "cache")]
    run = subprocess.run(
        [*command, "--index-store", str(blocker / "store")],
        env=environment,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 1
    assert run.stdout.strip().endswith(".idx")  # built locally all the same
    warnings = [line for line in run.stderr.splitlines() if line.startswith("symbolize: warning: ")]
    assert len(warnings) == 1 and str(blocker / "store") in warnings[0]


class _CountingDirectory(DirectoryBackend):
    """A directory store that counts the heads it is asked (the requests a lookup costs)."""

    heads = 0

    def head(self, name: str) -> ObjectInfo | None:
        self.heads += 1
        return super().head(name)


def test_a_missing_index_is_asked_for_once_a_minute_not_per_lookup(tmp_path: Path) -> None:
    backend = _CountingDirectory(tmp_path / "store")
    store = IndexStore(str(tmp_path / "store"), backend)
    key = _key(BINARY)
    assert store.fetch(key, tmp_path / "cache") is None
    assert store.fetch(key, tmp_path / "cache") is None
    assert backend.heads == 1
    assert index_metrics().store_misses == 2
    built = build_indexes([BINARY], cache_dir=tmp_path / "builder")[0]
    assert store.publish_file(key, built)
    assert store.fetch(key, tmp_path / "cache") is not None  # what this process published is seen at once


def test_profile_names_from_the_store_as_without_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _use(str(tmp_path / "store"), monkeypatch)
    build_indexes([BINARY], cache_dir=tmp_path / "builder")  # published by another machine
    profile = FIXTURES / "profiles" / "cppdemo-gcc-dwarf5-pie.heap.pb"
    environment = {key: value for key, value in os.environ.items() if key != "SYMBOLIZE_INDEX_STORE"}
    command = [sys.executable, "-m", "symbolize", "profile", str(profile), "--binary", str(BINARY)]
    plain = subprocess.run([*command, "-o", str(tmp_path / "plain.pb"), "--no-cache"], env=environment)
    worker = ["--cache-dir", str(tmp_path / "worker"), "--index-store", str(tmp_path / "store")]
    stored = subprocess.run(
        [*command, "-o", str(tmp_path / "stored.pb"), *worker],
        env=environment,
        capture_output=True,
    )
    assert plain.returncode == 0 and stored.returncode == 0, stored.stderr
    assert (tmp_path / "stored.pb").read_bytes() == (tmp_path / "plain.pb").read_bytes()
    assert list((tmp_path / "worker" / FETCHED_DIR).glob("*.idx"))  # named from the fetched index


def test_an_fsspec_store_serves_as_an_object_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if importlib.util.find_spec("fsspec") is None:
        pytest.skip("fsspec is not installed (pip install -e '.[store]')")
    _use(f"memory://indexes-{uuid.uuid4().hex[:8]}/prefix", monkeypatch)  # fsspec's in-memory filesystem
    build_indexes([BINARY], cache_dir=tmp_path / "builder")
    assert index_metrics().published == 1
    answers, indexed = _lookup(BINARY, tmp_path / "worker")
    assert indexed and answers == _uncached(BINARY)
    assert index_metrics().store_hits == 1


def test_the_background_builder_publishes_what_a_lookup_missed(tmp_path: Path) -> None:
    store = tmp_path / "store"
    environment = {key: value for key, value in os.environ.items() if key != "SYMBOLIZE_INDEX_STORE"}
    command = [sys.executable, "-m", "symbolize", "lookup", "--obj", str(BINARY), "0x1d09", "--background-index"]
    run = subprocess.run(
        [*command, "--cache-dir", str(tmp_path / "cache"), "--index-store", str(store)],
        env=environment,
        capture_output=True,
    )
    assert run.returncode == 0, run.stderr
    deadline = time.monotonic() + 120
    # The builder removes its marker last, after publishing.
    while (not list(store.rglob("idx/*/*/*")) or list((tmp_path / "cache" / "index").glob("*.building"))) and (
        time.monotonic() < deadline
    ):
        time.sleep(0.1)
    (published,) = store.rglob("idx/*/*/*")
    (built,) = (tmp_path / "cache" / "index").glob("*.idx")
    assert published.read_bytes() == built.read_bytes()


def test_a_binary_htlhash_is_an_alias_of_its_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = _use(str(tmp_path / "store"), monkeypatch)
    (built,) = build_indexes([BINARY], cache_dir=tmp_path / "cache")
    key = stored_key(built)
    assert key is not None
    alias = store.resolve_alias(f"htlhash-{htlhash(BINARY)}")
    assert alias is not None and alias["index"] == store.object_name(key)


def test_a_store_that_hangs_costs_seconds_then_is_not_asked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if importlib.util.find_spec("obstore") is None:
        pytest.skip("obstore is not installed (pip install -e '.[store]')")
    with stalling_endpoint() as endpoint:
        for name, value in S3Server(endpoint, "hangs", None).environ.items():
            monkeypatch.setenv(name, value)
        monkeypatch.setenv("SYMBOLIZE_INDEX_STORE_TIMEOUT", "1")
        store = _use("s3://hangs/prefix", monkeypatch)
        started = time.monotonic()
        with pytest.warns(RuntimeWarning, match="indexes are built locally"):
            answers, indexed = _lookup(BINARY, tmp_path / "cache", build=True)
        assert indexed and answers == _uncached(BINARY)
        assert store.unavailable is not None
        _lookup(OTHER_BINARY, tmp_path / "cache", build=True)  # not asked again
        assert index_metrics().store_errors == 1
        assert time.monotonic() - started < 30  # three one-second tries, not the client's minutes


def test_clearing_the_cache_removes_the_fetched_indexes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _use(str(tmp_path / "store"), monkeypatch)
    build_indexes([BINARY], cache_dir=tmp_path / "builder")
    _lookup(BINARY, tmp_path / "worker")
    assert list((tmp_path / "worker" / FETCHED_DIR).glob("*.idx"))
    assert clear_cache(tmp_path / "worker") == 1
    assert not list((tmp_path / "worker" / FETCHED_DIR).glob("*"))
