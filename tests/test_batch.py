"""``symbolize batch``: every output byte for byte what ``symbolize profile`` writes, on the local pool
and on a Dask LocalCluster; failures said and the rest rewritten; shards by debug ID."""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from symbolize.batch.cluster import dask_client
from symbolize.batch.local import run_local
from symbolize.batch.plan import PlannedProfile, profile_key, shard
from symbolize.batch.worker import ProfileOutcome, RewriteSettings
from symbolize.cli.app import app
from symbolize.cli.batch import batch_exit_code
from symbolize.cli.profile_command import default_output_path
from symbolize.errors import SymbolizeError
from symbolize.pprof import read_profile
from tests.fixtures_data import BIN, MACOS_BIN, PROFILES, ROOT, WINDOWS_BIN

runner = CliRunner()

SEARCH = ["--search-path", str(BIN), "--search-path", str(MACOS_BIN), "--search-path", str(WINDOWS_BIN)]
# One profile of each kind: pprof of an ELF PIE and non-PIE, gzipped; gperftools' heap_v2, CPU and
# legacy heap; Mach-O (a fat file's slice) and PE mappings; a module-offset convention.
FIXTURE_PROFILES = [
    PROFILES / "rustdemo-full.cpu.daemon.pb.gz",
    PROFILES / "cppdemo-clang-dwarf5-nopie.cpu.pb",
    PROFILES / "cppdemo-gcc-dwarf5-pie.heap.pb",
    PROFILES / "gperftools" / "rustdemo-full.heap_v2",
    PROFILES / "gperftools" / "cppdemo-gcc-dwarf5-pie.cpu.prof",
    PROFILES / "gperftools" / "cppdemo-gcc-dwarf5-pie.heapprofile",
    PROFILES / "macos" / "cppdemo-universal-x86_64.fatoffset.cpu.pb.gz",
    PROFILES / "windows" / "winapp.heap.pb.gz",
    PROFILES / "offsets" / "rustdemo-full.cpu.module-offset.pb",
]


def _batch(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, ["batch", *args])
    return result.exit_code, result.stdout, result.stderr


def _profile_bytes(in_path: Path, out_dir: Path, *args: str) -> bytes:
    out = out_dir / default_output_path(in_path).name
    result = runner.invoke(app, ["profile", str(in_path), "-o", str(out), *SEARCH, *args])
    assert result.exit_code == 0, result.output
    return out.read_bytes()


def test_fixture_profiles_have_distinct_output_names() -> None:
    names = [default_output_path(path).name for path in FIXTURE_PROFILES]
    assert len(set(names)) == len(names)


def test_batch_writes_what_profile_writes(tmp_path: Path) -> None:
    """Two workers, indexes built in them, against profile run by run with no index at all."""
    out = tmp_path / "out"
    code, _, stderr = _batch(
        *map(str, FIXTURE_PROFILES), "-o", str(out), "--workers", "2", "--background-index",
        "--cache-dir", str(tmp_path / "cache"), *SEARCH,
    )  # fmt: skip
    assert code == 0, stderr
    assert any((tmp_path / "cache" / "index").iterdir()), "the workers built indexes"
    expected_dir = tmp_path / "expected"
    expected_dir.mkdir()
    for path in FIXTURE_PROFILES:
        written = out / default_output_path(path).name
        assert written.read_bytes() == _profile_bytes(path, expected_dir, "--no-cache"), path
    assert sorted(entry.name for entry in out.iterdir()) == sorted(
        default_output_path(p).name for p in FIXTURE_PROFILES
    )
    assert f"{len(FIXTURE_PROFILES)}/{len(FIXTURE_PROFILES)} profiles rewritten, 0 failed" in stderr


def test_a_second_batch_answers_from_the_index_store_the_first_filled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two machines in one: the second batch has an empty cache and fetches what the first published."""
    pytest.importorskip("symbolize.index_store", reason="the index store (issue 26's other half) is not in this tree")
    monkeypatch.setenv("SYMBOLIZE_INDEX_STORE", str(tmp_path / "store"))
    chosen = [PROFILES / "rustdemo-full.cpu.pb", PROFILES / "cdemo-gcc-dwarf5-pie.cpu.pb", PROFILES / "useshape.cpu.pb"]
    reports = []
    for run in ("first", "second"):
        code, stdout, stderr = _batch(
            *map(str, chosen), "-o", str(tmp_path / run), "--workers", "2", "--background-index", "--json-summary",
            "--cache-dir", str(tmp_path / f"cache-{run}"), *SEARCH,
        )  # fmt: skip
        assert code == 0, stderr
        reports.append(json.loads(stdout)["metrics"]["index"])
    first, second = reports
    assert first["built"] > 0 and first["published"] > 0
    assert second["built"] == 0 and second["store_hits"] > 0 and second["bytes_fetched"] > 0
    for path in chosen:
        name = default_output_path(path).name
        assert (tmp_path / "second" / name).read_bytes() == (tmp_path / "first" / name).read_bytes()


def test_json_summary_holds_profiles_own_summary(tmp_path: Path) -> None:
    chosen = [PROFILES / "rustdemo-full.cpu.pb", PROFILES / "cdemo-gcc-dwarf5-pie.cpu.pb"]
    code, stdout, _ = _batch(
        *map(str, chosen), "-o", str(tmp_path / "out"), "--workers", "1", "--json-summary", *SEARCH
    )
    assert code == 0
    report = json.loads(stdout)
    assert [entry["input"] for entry in report["profiles"]] == [str(path) for path in chosen]
    for entry, path in zip(report["profiles"], chosen, strict=True):
        alone = runner.invoke(
            app, ["profile", str(path), "-o", str(tmp_path / path.name), "--json-summary", *SEARCH]
        )  # fmt: skip
        assert entry["summary"] == json.loads(alone.stdout)
        assert entry["exit_code"] == 0 and entry["error"] is None
    metrics = report["metrics"]
    assert metrics["profiles"] == 2 and metrics["failed"] == 0 and metrics["workers"] == 1
    assert metrics["locations"] == sum(entry["summary"]["locations"] for entry in report["profiles"])
    assert metrics["profiles_per_second"] > 0


def test_a_failed_profile_is_said_and_the_rest_are_rewritten(tmp_path: Path) -> None:
    garbage = tmp_path / "in" / "garbage.pb.gz"
    garbage.parent.mkdir()
    garbage.write_bytes(b"\x1f\x8b" + os.urandom(64))  # gzip's magic, then no gzip stream
    missing = tmp_path / "in" / "missing.pb"
    good = PROFILES / "useshape.cpu.pb"
    out = tmp_path / "out"
    code, _, stderr = _batch(str(garbage), str(good), str(missing), "-o", str(out), "--workers", "2", *SEARCH)
    assert code == 1
    lines = stderr.splitlines()
    garbage_lines = [line for line in lines if line.startswith(f"symbolize: error: {garbage}")]
    missing_lines = [line for line in lines if line.startswith(f"symbolize: error: {missing}")]
    assert len(garbage_lines) == 1 and len(missing_lines) == 1, stderr
    assert "1/3 profiles rewritten, 2 failed" in stderr
    assert sorted(entry.name for entry in out.iterdir()) == ["useshape.cpu.symbolized.pb"], "nothing else, no temporary"
    read_profile(out / "useshape.cpu.symbolized.pb")


def test_a_gate_trips_after_every_output_is_written(tmp_path: Path) -> None:
    """The Windows profile without its binaries stays unnamed: profile's gate code, its output kept."""
    windows = PROFILES / "windows" / "winapp.heap.pb.gz"
    out = tmp_path / "out"
    code, _, stderr = _batch(
        str(windows), str(PROFILES / "useshape.cpu.pb"), "-o", str(out), "--search-path", str(BIN),
        "--fail-unnamed-above", "50", "--workers", "1",
    )  # fmt: skip
    assert code == 4, stderr
    assert "gates: fail-unnamed-above" in stderr
    read_profile(out / default_output_path(windows).name)


@pytest.mark.parametrize(
    ("codes", "expected"),
    [((0, 0), 0), ((5, 4), 4), ((4, 1, 5), 1), ((1, 70, 0), 70), ((5,), 5)],
)
def test_the_batch_exits_with_its_worst_profile(codes: tuple[int, ...], expected: int) -> None:
    outcomes = [ProfileOutcome(Path(f"{n}.pb"), Path(f"out/{n}.pb"), 0.0, code) for n, code in enumerate(codes)]
    assert batch_exit_code(outcomes) == expected


def test_two_inputs_with_one_output_name_are_refused_before_any_work(tmp_path: Path) -> None:
    copy = tmp_path / "elsewhere" / "useshape.cpu.pb"
    copy.parent.mkdir()
    copy.write_bytes((PROFILES / "useshape.cpu.pb").read_bytes())
    out = tmp_path / "out"
    code, _, stderr = _batch(str(PROFILES / "useshape.cpu.pb"), str(copy), "-o", str(out), *SEARCH)
    assert code == 1
    assert stderr.count("\n") == 1 and "would both be written to useshape.cpu.symbolized.pb" in stderr
    assert not out.exists()


def test_an_output_that_would_replace_an_input_is_refused(tmp_path: Path) -> None:
    first = tmp_path / "useshape.cpu.pb"
    second = tmp_path / "useshape.cpu.symbolized.pb"
    for path in (first, second):
        path.write_bytes((PROFILES / "useshape.cpu.pb").read_bytes())
    code, _, stderr = _batch(str(first), str(second), "-o", str(tmp_path), *SEARCH)
    assert code == 1 and stderr.count("\n") == 1
    assert f"would be written over the input {second}" in stderr
    assert second.read_bytes() == (PROFILES / "useshape.cpu.pb").read_bytes()


@pytest.mark.parametrize(
    ("args", "hint"),
    [(["--workers", "0"], "--workers"), (["--workers", "two"], "--workers"), (["--drop-frames", "("], "--drop-frames")],
)
def test_usage_errors(tmp_path: Path, args: list[str], hint: str) -> None:
    code, _, stderr = _batch(str(PROFILES / "useshape.cpu.pb"), "-o", str(tmp_path), *args)
    assert code == 2 and hint in stderr


def test_a_worker_that_dies_fails_the_profile_it_held_and_a_new_one_takes_the_rest(tmp_path: Path) -> None:
    """The first outcome kills every worker process (SIGKILL): no profile is lost or reported twice,
    each failure names the death, and every output there is is whole (a temporary of a write cut
    short is no output: a later write in the directory removes it, symbolize/tempfiles.py)."""
    sources = [PROFILES / "rustdemo-full.cpu.pb", PROFILES / "cppdemo-clang-dwarf5-pie.cpu.pb"]
    planned = []
    for number in range(8):
        source = sources[number % 2]
        planned.append(PlannedProfile(source, tmp_path / f"{number}.pb", *profile_key(source)))
    killed: list[int] = []

    def kill_workers(outcome: ProfileOutcome) -> None:
        if not killed:
            for child in multiprocessing.active_children():
                if child.pid is not None:
                    os.kill(child.pid, signal.SIGKILL)
                    killed.append(child.pid)

    rewrite_settings = RewriteSettings(search_paths=(BIN,), use_cache=False)
    outcomes, _ = run_local(shard(planned, 2), rewrite_settings, kill_workers)
    assert sorted(str(outcome.out_path) for outcome in outcomes) == sorted(str(p.out_path) for p in planned)
    for outcome in outcomes:
        if outcome.failed:
            assert "the worker process died (signal 9) while rewriting it" in (outcome.error or "")
        # A worker killed after its atomic rename, before it said so, leaves a whole output all the same.
        if not outcome.failed or outcome.out_path.exists():
            read_profile(outcome.out_path)
    assert killed


def test_one_real_process(tmp_path: Path) -> None:
    """The console entry point, its workers spawned from ``python -m symbolize``."""
    out = tmp_path / "out"
    result = subprocess.run(
        [sys.executable, "-m", "symbolize", "batch", str(PROFILES / "useshape.cpu.pb"), "-o", str(out), *SEARCH,
         "--workers", "1"],
        capture_output=True, text=True, timeout=120, cwd=ROOT, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert (out / "useshape.cpu.symbolized.pb").read_bytes() == _profile_bytes(PROFILES / "useshape.cpu.pb", tmp_path)


def test_dask_local_cluster_writes_what_profile_writes(tmp_path: Path) -> None:
    distributed = pytest.importorskip("distributed", reason="Dask distributed is the scale extra: not installed")
    chosen = [PROFILES / "rustdemo-full.cpu.pb", PROFILES / "useshape.cpu.pb", PROFILES / "cdemo-gcc-dwarf5-pie.cpu.pb"]
    garbage = tmp_path / "garbage.pb"
    garbage.write_bytes(b"not a profile at all\n")
    out = tmp_path / "out"
    # Threads in this process (processes=False: cheap), reached over TCP on loopback like a real cluster.
    with distributed.LocalCluster(
        n_workers=1, threads_per_worker=2, processes=False, protocol="tcp", host="127.0.0.1", scheduler_port=0,
        dashboard_address="127.0.0.1:0",
    ) as cluster:  # fmt: skip
        code, stdout, stderr = _batch(
            *map(str, chosen), str(garbage), "-o", str(out), "--dask", cluster.scheduler_address, "--json-summary",
            *SEARCH,
        )  # fmt: skip
    assert code == 1, stderr
    report = json.loads(stdout)
    assert report["metrics"]["workers"] == 2 and report["metrics"]["scheduler"].startswith("dask ")
    assert [entry["error"] is not None for entry in report["profiles"]] == [False, False, False, True]
    assert f"symbolize: error: {garbage}" in stderr
    for path in chosen:
        assert (out / default_output_path(path).name).read_bytes() == _profile_bytes(path, tmp_path)


def test_dask_scheduler_that_does_not_answer_is_one_error() -> None:
    pytest.importorskip("distributed", reason="Dask distributed is the scale extra: not installed")
    with pytest.raises(SymbolizeError, match=r"Dask scheduler tcp://127\.0\.0\.1:9: "):
        dask_client("tcp://127.0.0.1:9", timeout=0.5)


_planned = st.builds(
    lambda key, weight, number: PlannedProfile(Path(f"{number}.pb"), Path(f"out/{number}.pb"), key, weight),
    st.sampled_from(["a", "b", "c", "d", ""]),
    st.integers(1, 50),
    st.integers(0, 10_000),
)


@settings(suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(st.lists(_planned, max_size=40, unique_by=lambda planned: planned.in_path), st.integers(1, 6))
def test_shards_hold_profiles_once_keys_together_loads_balanced(profiles: list[PlannedProfile], workers: int) -> None:
    shards = shard(profiles, workers)
    assert len(shards) <= workers and all(shards)
    assert sorted(p.in_path for s in shards for p in s) == sorted(p.in_path for p in profiles)
    total = sum(p.weight for p in profiles)
    fair = max(1, -(-total // workers))
    heaviest = max((p.weight for p in profiles), default=0)
    for key in {p.key for p in profiles}:
        weight = sum(p.weight for p in profiles if p.key == key)
        holders = [s for s in shards if any(p.key == key for p in s)]
        if weight <= fair:
            assert len(holders) == 1, f"key {key!r} ({weight} of fair {fair}) split"
    for members in shards:
        assert sum(p.weight for p in members) <= fair + max(fair, heaviest)
        # Each key's profiles one after the other, within its first pieces and then its later ones.
        keys = [p.key for p in members]
        runs = [key for position, key in enumerate(keys) if position == 0 or keys[position - 1] != key]
        split = {key for key in keys if sum(q.weight for q in profiles if q.key == key) > fair}
        assert len(runs) - len(set(runs)) <= len(split), "a key comes back only for a later piece of a split key"


def test_profile_key_is_the_mapping_most_locations_fall_in() -> None:
    key, weight = profile_key(PROFILES / "rustdemo-full.cpu.pb")
    profile, _ = read_profile(PROFILES / "rustdemo-full.cpu.pb")
    assert weight == len(profile.location)
    assert key in {profile.string_table[m.build_id] for m in profile.mapping} | {
        Path(profile.string_table[m.filename]).name for m in profile.mapping
    }
    assert key
