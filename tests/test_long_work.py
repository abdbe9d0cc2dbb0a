"""Long work says what it does: progress on a terminal (and nothing elsewhere), the binary each index
answers for, and the large symbol-only binaries the background builder indexes too."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from symbolize import cache
from symbolize.cache import cache_entries, index_owner
from symbolize.discovery import SearchOptions, open_module
from symbolize.index.background import build_missing
from symbolize.loader import Loader
from tests.fixtures_data import BIN, PROFILES, ROOT

try:
    import pty
except ImportError:  # Windows: no pseudo-terminals (termios)
    pty = None  # type: ignore[assignment]
needs_pty = pytest.mark.skipif(pty is None, reason="a pseudo-terminal needs POSIX")

DEBUGLINK_BINARY = BIN / "cdemo-gcc-debuglink"
DEBUG_FILE = BIN / "cdemo-gcc-debuglink.debug"
SYMBOL_ONLY = BIN / "cdemo-gcc-symtab"
PROFILE = PROFILES / "rustdemo-full.cpu.daemon.pb.gz"
# What rich draws: a cursor hidden while the bar shows, lines erased and redrawn.
HIDE_CURSOR = b"\x1b[?25l"
ERASE_LINE = b"\x1b[2K"


def _run(arguments: list[str], cache_dir: Path, *, terminal: bool) -> tuple[int, bytes, bytes]:
    """``python -m symbolize ARGUMENTS``: exit code, stdout, and stderr (a pseudo-terminal's, read
    while the command runs, when ``terminal``; a pipe otherwise)."""
    command = [sys.executable, "-m", "symbolize", *arguments]
    env = dict(os.environ, SYMBOLIZE_CACHE_DIR=str(cache_dir), COLUMNS="120")
    if not terminal:
        done = subprocess.run(command, capture_output=True, env=env, cwd=ROOT, timeout=300, check=False)
        return done.returncode, done.stdout, done.stderr
    controller, terminal_end = pty.openpty()
    process = subprocess.Popen(
        command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=terminal_end, env=env, cwd=ROOT
    )
    os.close(terminal_end)
    drawn: list[bytes] = []

    def drain() -> None:  # the bar is redrawn ten times a second: a full pty would stall the command
        while True:
            try:
                chunk = os.read(controller, 1 << 16)
            except OSError:  # EIO: the command and every child closed the terminal
                return
            if not chunk:
                return
            drawn.append(chunk)

    reader = threading.Thread(target=drain)
    reader.start()
    assert process.stdout is not None
    stdout = process.stdout.read()
    code = process.wait(timeout=300)
    reader.join(timeout=30)
    os.close(controller)
    return code, stdout, b"".join(drawn)


@needs_pty
def test_index_shows_progress_on_a_terminal(tmp_path: Path) -> None:
    code, stdout, stderr = _run(["index", str(DEBUGLINK_BINARY)], tmp_path, terminal=True)
    assert code == 0, stderr
    assert all(Path(line).is_file() for line in stdout.decode().splitlines())
    assert HIDE_CURSOR in stderr and ERASE_LINE in stderr
    assert f"indexing {DEBUGLINK_BINARY.name}".encode() in stderr
    assert b"/1" in stderr  # the count of binaries done


@needs_pty
def test_a_cold_profile_shows_progress_on_a_terminal(tmp_path: Path) -> None:
    out = tmp_path / "out.pb.gz"
    arguments = ["profile", str(PROFILE), "--search-path", str(BIN), "-o", str(out), "--no-background-index"]
    code, _stdout, stderr = _run(arguments, tmp_path / "cache", terminal=True)
    assert code == 0, stderr
    assert HIDE_CURSOR in stderr and ERASE_LINE in stderr
    assert b"naming rustdemo-full (1/" in stderr
    assert out.is_file()


@pytest.mark.parametrize("command", ["index", "profile"])
def test_no_progress_when_stderr_is_not_a_terminal(tmp_path: Path, command: str) -> None:
    if command == "index":
        arguments = ["index", str(DEBUGLINK_BINARY)]
    else:
        arguments = ["profile", str(PROFILE), "--search-path", str(BIN), "-o", str(tmp_path / "out.pb.gz")]
    code, _stdout, stderr = _run([*arguments, *(["--no-background-index"] if command == "profile" else [])],
                                 tmp_path / "cache", terminal=False)  # fmt: skip
    assert code == 0, stderr
    assert b"\x1b[" not in stderr and b"indexing" not in stderr and b"naming " not in stderr


def test_index_names_the_binary_each_index_answers_for(tmp_path: Path) -> None:
    code, stdout, stderr = _run(["index", str(DEBUGLINK_BINARY)], tmp_path, terminal=False)
    assert code == 0, stderr
    built = [Path(line) for line in stdout.decode().splitlines()]
    assert len(built) == 2 and all(path.is_file() for path in built)  # the debug file's and the binary's
    said = dict(line.split(": ", 1) for line in stderr.decode().splitlines())
    assert said[str(built[0])] == f"{DEBUG_FILE.resolve()} (debug file of {DEBUGLINK_BINARY.resolve()})"
    assert said[str(built[1])] == str(DEBUGLINK_BINARY.resolve())
    assert index_owner(built[0]) == (DEBUG_FILE.resolve(), DEBUGLINK_BINARY.resolve())
    assert index_owner(built[1]) == (DEBUGLINK_BINARY.resolve(), None)


def test_cache_show_names_binary_and_build_id_of_a_debug_files_index(tmp_path: Path) -> None:
    """A debug file's index key also holds the digest of its image (``inputs``): its build ID and
    demangler are still read from it."""
    assert _run(["index", str(DEBUGLINK_BINARY)], tmp_path, terminal=False)[0] == 0
    entries = {entry.source_path: entry for entry in cache_entries(tmp_path)}
    debug_entry = entries[DEBUG_FILE.resolve()]
    assert debug_entry.key is not None and " inputs " in debug_entry.key
    build_id = _gnu_build_id(DEBUG_FILE)
    assert debug_entry.debug_id == build_id == entries[DEBUGLINK_BINARY.resolve()].debug_id
    assert debug_entry.demangler is not None and debug_entry.demangler.startswith("llvm ")
    assert debug_entry.image_path == DEBUGLINK_BINARY.resolve()
    code, stdout, _ = _run(["cache", "show"], tmp_path, terminal=False)
    assert code == 0
    rows = stdout.decode().splitlines()[1:]
    (debug_row,) = [row for row in rows if row.startswith(str(DEBUG_FILE.resolve()))]
    assert f"(debug file of {DEBUGLINK_BINARY.resolve()})" in debug_row and build_id in debug_row
    assert "(none" not in stdout.decode() and not debug_row.endswith("?")
    shown = json.loads(_run(["cache", "show", "--json"], tmp_path, terminal=False)[1])
    by_binary = {entry["binary"]: entry for entry in shown["indexes"]}
    assert by_binary[str(DEBUG_FILE.resolve())]["debug_file_of"] == str(DEBUGLINK_BINARY.resolve())
    assert by_binary[str(DEBUGLINK_BINARY.resolve())]["debug_file_of"] is None


def _gnu_build_id(path: Path) -> str:
    """The GNU build ID from the note's bytes (pyelftools, not our reader)."""
    from elftools.elf.elffile import ELFFile

    with path.open("rb") as stream:
        for section in ELFFile(stream).iter_sections():
            if section.name == ".note.gnu.build-id":
                for note in section.iter_notes():
                    return str(note["n_desc"])
    raise AssertionError(f"{path} has no build ID")


LARGE_SYMBOL_TABLE = cache.LARGE_SYMBOL_TABLE


@pytest.mark.parametrize(("threshold", "indexed"), [(1, True), (LARGE_SYMBOL_TABLE, False)])
def test_a_large_symbol_only_binary_is_indexed_in_the_background(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, threshold: int, indexed: bool
) -> None:
    """A binary with a symbol table and no debug info is handed to the background builder once its
    table is large (the fixture's is small: the threshold is lowered to it)."""
    monkeypatch.setattr(cache, "LARGE_SYMBOL_TABLE", threshold)
    with Loader(SearchOptions(index_dir=tmp_path)) as loader:
        module = open_module(SYMBOL_ONLY, loader)
        summary = module.binary.debug_info()
        assert summary.has_symbols and not summary.has_dwarf
        assert 0 < len(module.binary.symbols()) < LARGE_SYMBOL_TABLE
        missing = loader.missing_indexes()
    assert [source.path for source, _job in missing] == ([SYMBOL_ONLY] if indexed else [])
    if indexed:  # and the builder indexes it
        assert build_missing([job for _source, job in missing], tmp_path) == 0
        assert [entry.source_path for entry in cache_entries(tmp_path)] == [SYMBOL_ONLY.resolve()]
