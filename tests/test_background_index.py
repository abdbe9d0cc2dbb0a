"""Indexes built in a detached process after a run, so that the next run answers from them."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from symbolize.api import index_in_background
from symbolize.cache import cache_entries, clear_cache
from symbolize.cli.app import app
from symbolize.discovery import SearchOptions, open_module
from symbolize.formats.elf import ElfFile
from symbolize.index.background import (
    LOG_NAME,
    STALE_MARKER_SECONDS,
    build_missing,
    marker_path,
    start_background_indexing,
)
from symbolize.index.indexed import IndexedObject
from symbolize.index.job import IndexJob
from symbolize.loader import Loader
from symbolize.module import Module
from tests.fixtures_data import BIN

FIXTURE_BIN = BIN
BINARY = FIXTURE_BIN / "cppdemo-gcc-dwarf5-pie"
runner = CliRunner()


def _wait_for_index(cache_dir: Path, elf: ElfFile, timeout: float = 120.0) -> None:
    """Until the builder has removed its marker (it does so last, whatever happened)."""
    marker = marker_path(cache_dir, elf)
    deadline = time.monotonic() + timeout
    while marker.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not marker.exists(), "the background builder did not finish"


def test_a_lookup_leaves_an_index_for_the_next_run(tmp_path: Path) -> None:
    cache_dir = tmp_path / "cache"
    arguments = ["lookup", "--obj", str(BINARY), "--json", "--cache-dir", str(cache_dir), "0x1d09", "0x1200"]
    first = runner.invoke(app, [*arguments, "--background-index"])
    assert first.exit_code == 0, first.output
    with ElfFile(BINARY) as elf:
        _wait_for_index(cache_dir, elf)
    assert len(cache_entries(cache_dir)) == 1
    module = open_module(BINARY, Loader(SearchOptions(index_dir=cache_dir)))
    assert isinstance(module.binary, IndexedObject)
    second = runner.invoke(app, [*arguments, "--background-index"])
    assert second.stdout == first.stdout
    assert not list((cache_dir / "index").glob("*.building"))


def test_no_builder_without_the_option_or_the_cache(tmp_path: Path) -> None:
    cache_dir = tmp_path / "cache"
    for extra in (["--no-background-index"], ["--background-index", "--no-cache"]):
        result = runner.invoke(app, ["lookup", "--obj", str(BINARY), "--cache-dir", str(cache_dir), *extra, "0x1d09"])
        assert result.exit_code == 0, result.output
    assert not (cache_dir / "index").exists() or not any((cache_dir / "index").iterdir())


def test_a_live_builder_is_not_joined_and_a_stale_one_is_replaced(tmp_path: Path) -> None:
    with ElfFile(BINARY) as elf:
        marker = marker_path(tmp_path, elf)
        marker.parent.mkdir(parents=True)
        marker.touch()
        assert start_background_indexing([elf], tmp_path) == []
        assert not cache_entries(tmp_path)
        old = time.time() - STALE_MARKER_SECONDS - 60
        os.utime(marker, (old, old))
        assert start_background_indexing([elf], tmp_path) == [BINARY]
        _wait_for_index(tmp_path, elf)
    assert len(cache_entries(tmp_path)) == 1


def test_a_builder_logs_what_it_could_not_index(tmp_path: Path) -> None:
    not_elf = tmp_path / "notes.txt"
    not_elf.write_text("not an object file")
    assert build_missing([not_elf, tmp_path / "gone"], tmp_path) == 2
    log = (tmp_path / LOG_NAME).read_text().splitlines()
    assert len(log) == 2
    assert str(not_elf) in log[0] and "gone" in log[1]


def test_clearing_the_cache_removes_build_markers(tmp_path: Path) -> None:
    with ElfFile(BINARY) as elf:
        marker = marker_path(tmp_path, elf)
    marker.parent.mkdir(parents=True)
    marker.touch()
    assert clear_cache(tmp_path) == 1
    assert not marker.exists()


def test_a_builder_that_cannot_start_is_one_warning_and_leaves_no_marker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise OSError("no processes left")

    monkeypatch.setattr(subprocess, "Popen", refuse)
    cache_dir = tmp_path / "cache"
    arguments = ["lookup", "--obj", str(BINARY), "--cache-dir", str(cache_dir), "--background-index", "0x1d09"]
    result = runner.invoke(app, arguments)
    assert result.exit_code == 0, result.output
    warning = "symbolize: warning: could not start building indexes in the background: no processes left"
    assert result.stderr.splitlines() == [warning]
    assert result.stdout.strip()
    assert not list((cache_dir / "index").glob("*.building"))


def test_the_builder_is_given_absolute_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[list[str]] = []

    def record(argv: list[str], **kwargs: object) -> None:
        started.append(argv)

    monkeypatch.setattr(subprocess, "Popen", record)
    monkeypatch.chdir(tmp_path)
    relative = Path(os.path.relpath(BINARY, tmp_path))
    with ElfFile(relative) as elf:
        assert start_background_indexing([elf], Path("cache")) == [relative]
    (argv,) = started
    cache_dir, job = argv[argv.index("--cache-dir") + 1], IndexJob.from_json(argv[argv.index("--job") + 1])
    assert Path(cache_dir) == tmp_path.resolve() / "cache"
    assert job.path == BINARY.resolve()


def _wait_for_builders(cache_dir: Path, timeout: float = 120.0) -> None:
    """Until every builder has removed its markers (each does so last, whatever happened)."""
    deadline = time.monotonic() + timeout
    while list((cache_dir / "index").glob("*.building")) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not list((cache_dir / "index").glob("*.building")), "a background builder did not finish"


def _indexed_in_background(binary: Path, cache_dir: Path, **settings: Any) -> Module:
    """The module of ``binary`` after a run's background builder indexed what the run opened."""
    arch = settings.pop("arch", None)
    options = Loader(SearchOptions(index_dir=cache_dir, **settings))
    try:
        module = open_module(binary, options, arch=arch)
        assert not any(isinstance(source, IndexedObject) for source in [*module.debug_files, module.binary])
        assert index_in_background(options)
    finally:
        options.close()
    _wait_for_builders(cache_dir)
    assert not (cache_dir / LOG_NAME).exists(), (cache_dir / LOG_NAME).read_text()
    return open_module(binary, Loader(SearchOptions(index_dir=cache_dir, **settings)), arch=arch)


def test_a_pdb_is_indexed_in_the_background_bound_to_its_image(tmp_path: Path) -> None:
    """The builder binds the PDB to the image the run bound it to, so its index is the one missed."""
    binary = FIXTURE_BIN / "windows" / "winapp.exe"
    module = _indexed_in_background(binary, tmp_path / "cache")
    (pdb,) = [source for source in module.debug_files if callable(getattr(source, "bind_image", None))]
    assert isinstance(pdb, IndexedObject)
    expected = open_module(binary, Loader(SearchOptions())).lookup(list(range(0x140001000, 0x140002000, 7)))
    assert module.lookup(list(range(0x140001000, 0x140002000, 7))) == expected


def test_a_slice_of_a_universal_binary_is_indexed_in_the_background(tmp_path: Path) -> None:
    """The builder opens the slice the run opened (arm64 here, not the host's), and its dSYM's."""
    binary = FIXTURE_BIN / "macos" / "cppdemo-universal"
    module = _indexed_in_background(binary, tmp_path / "cache", arch="arm64")
    indexed = [source for source in [*module.debug_files, module.binary] if isinstance(source, IndexedObject)]
    assert {source.arch for source in indexed} == {"arm64"}
    assert any(source.path.parent.name == "DWARF" for source in indexed)  # the dSYM's slice


def test_a_debug_map_binary_is_indexed_with_the_objects_the_run_found(tmp_path: Path) -> None:
    """Its objects were found through --search-path: the builder follows the same search settings."""
    binary = tmp_path / "cdemo-arm64"
    binary.write_bytes((FIXTURE_BIN / "macos" / "cdemo-arm64").read_bytes())
    module = _indexed_in_background(binary, tmp_path / "cache", search_paths=[FIXTURE_BIN / "macos"])
    assert isinstance(module.binary, IndexedObject)
    vaddrs = list(range(0x100000338, 0x1000006E8, 3))
    uncached = open_module(binary, Loader(SearchOptions(search_paths=[FIXTURE_BIN / "macos"]))).lookup(vaddrs)
    assert module.lookup(vaddrs) == uncached
    assert any(len(result) > 1 for result in uncached if isinstance(result, list))


def test_a_job_travels_as_json_and_a_bad_one_is_logged_not_raised(tmp_path: Path) -> None:
    job = IndexJob(Path("a/b"), "arm64", Path("c"), Path("d.exe"), "x86_64", (Path("e"),), (Path("f"),), None)
    assert IndexJob.from_json(job.to_json()) == job._replace(
        path=Path("a/b").resolve(), image_path=Path("c").resolve(), bound_image=Path("d.exe").resolve(),
        binaries=(Path("e").resolve(),), search_paths=(Path("f").resolve(),),
    )  # fmt: skip
    for bad in ("[]", "{}", '{"path": 3}', "not json", '{"path": "x", "search_paths": [1]}'):
        with pytest.raises(ValueError, match="not an index job"):
            IndexJob.from_json(bad)
    builder = [sys.executable, "-m", "symbolize.index.background", "--cache-dir", str(tmp_path), "--job", "{}"]
    assert subprocess.run(builder, check=False).returncode == 0
    assert "not an index job" in (tmp_path / LOG_NAME).read_text()
