"""The library as a package: modules release their files, a missing file is a not-found error."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import symbolize
from symbolize.api import lookup, open_module
from symbolize.errors import MissingDebugInfoError, NotFoundError, SymbolizeError
from tests.fixtures_data import BIN, ROOT

BINARY = BIN / "cdemo-gcc-debuglink"  # a binary and its debug file: two readers
DESCRIPTORS = next((Path(path) for path in ("/proc/self/fd", "/dev/fd") if Path(path).is_dir()), None)


def _open_descriptors() -> int:
    assert DESCRIPTORS is not None
    return len(os.listdir(DESCRIPTORS))


@pytest.mark.skipif(DESCRIPTORS is None, reason="no per-process descriptor directory (Windows)")
def test_close_releases_the_descriptors_of_a_module(tmp_path: Path) -> None:
    before = _open_descriptors()
    module = open_module(BINARY, use_cache=False)
    assert module.debug_files, "the fixture's debug file was not found"
    assert module.lookup([0])  # answers while open
    assert _open_descriptors() >= before + 2
    module.close()
    assert _open_descriptors() == before
    module.close()  # twice is harmless


@pytest.mark.skipif(DESCRIPTORS is None, reason="no per-process descriptor directory (Windows)")
def test_a_module_is_a_context_manager(tmp_path: Path) -> None:
    before = _open_descriptors()
    with open_module(BINARY, cache_dir=tmp_path) as module:
        assert module.path == BINARY
        assert _open_descriptors() > before
    assert _open_descriptors() == before


def test_a_missing_binary_is_a_not_found_error(tmp_path: Path) -> None:
    missing = tmp_path / "nonexistent"
    with pytest.raises(NotFoundError) as caught:
        lookup(missing, [0x1000])
    assert not isinstance(caught.value, MissingDebugInfoError)  # not "debug info missing"
    assert isinstance(caught.value, SymbolizeError)
    assert caught.value.path == missing and str(caught.value) == f"{missing}: file not found"
    assert symbolize.NotFoundError is NotFoundError
    with pytest.raises(NotFoundError):
        open_module(missing)


def test_a_missing_binary_exits_1_with_one_line(tmp_path: Path) -> None:
    missing = tmp_path / "nonexistent"
    done = subprocess.run([sys.executable, "-m", "symbolize", "lookup", "-e", str(missing), "0x10"],
                          capture_output=True, text=True, cwd=ROOT, timeout=120, check=False)  # fmt: skip
    assert done.returncode == 1
    assert done.stderr.splitlines() == [f"symbolize: error: {missing}: file not found"]


@pytest.mark.parametrize("process_ends", [False, True])
def test_a_sessions_run_closes_its_files_unless_the_process_ends_with_it(process_ends: bool) -> None:
    """Session.finish closes every file of the run (the binary's mapping and its debug file's); with
    ``process_ends`` (the console script's lookup, which leaves without teardown) it closes none."""
    from symbolize.api import Session
    from symbolize.formats.elf import ElfFile

    session = Session(use_cache=False, process_ends=process_ends)
    module, loader = session.open_module(BINARY, None)
    assert module.lookup([0x1139])
    opened = [entry[1] for table in (loader._objects, loader._sources) for entry in table.values()]
    readers = [reader for reader in opened if isinstance(reader, ElfFile)]
    assert len(readers) == 2
    session.finish(loader)
    assert all((reader._map is None) is not process_ends for reader in readers)
    loader.close()
    assert all(reader._map is None for reader in readers)
