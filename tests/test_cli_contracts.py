"""Command-line contracts, through the real console script (a subprocess):
errors for paths that do not exist, an empty profile, ``index A B`` going on past A,
messages that name the user's path, output files that follow the umask, ``cache show``.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from symbolize import api
from symbolize.errors import SymbolizeError
from symbolize.pprof import read_profile
from tests.fixtures_data import ROOT

FIXTURE_BIN = ROOT / "fixtures" / "bin"
PROFILE = ROOT / "fixtures" / "profiles" / "cdemo-gcc-dwarf5-pie.cpu.pb"
BINARY = FIXTURE_BIN / "cdemo-gcc-dwarf5-pie"
NO_SIDE_EFFECTS = ["--no-cache", "--no-background-index"]


def console_script() -> list[str]:
    """The installed ``symbolize`` entry point beside this Python, else the module it runs."""
    script = Path(sys.executable).parent / ("symbolize.exe" if os.name == "nt" else "symbolize")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "symbolize"]


def tree_environment() -> dict[str, str]:
    """The environment in which the console script imports this tree's code (the installed one
    may be another checkout's, as an editable install in a worktree is)."""
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    return dict(os.environ, PYTHONPATH=path)


def run(*arguments: str | Path, stdin: bytes = b"", cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [*console_script(), *map(str, arguments)],
        input=stdin,
        capture_output=True,
        cwd=cwd,
        timeout=120,
        env=tree_environment(),
    )
    return subprocess.CompletedProcess(
        done.args, done.returncode, done.stdout.decode("utf-8", "replace"), done.stderr.decode("utf-8", "replace")
    )


def one_error_line(result: subprocess.CompletedProcess[str]) -> str:
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("symbolize: error: "), lines[0]
    assert "Traceback" not in result.stderr and "Errno" not in lines[0]
    return lines[0]


@pytest.mark.parametrize(
    ("option", "value", "reason"),
    [
        ("--binary", "missing-binary", "binary not found"),
        ("--binary", ".", "binary is a directory, not a file"),
        ("--search-path", "missing-dir", "search path not found"),
        ("--search-path", str(BINARY), "search path is not a directory"),
        ("--debug-dir", "missing-debug", "debug directory not found"),
    ],
)
def test_profile_refuses_a_path_option_that_names_nothing_usable(
    tmp_path: Path, option: str, value: str, reason: str
) -> None:
    result = run("profile", PROFILE, "-o", tmp_path / "out.pb", *NO_SIDE_EFFECTS, option, value, cwd=tmp_path)
    assert result.returncode == 1
    assert one_error_line(result) == f"symbolize: error: {value}: {reason}"
    assert not (tmp_path / "out.pb").exists()


@pytest.mark.parametrize("option", ["--search-path", "--debug-dir"])
def test_lookup_refuses_a_directory_option_that_does_not_exist(tmp_path: Path, option: str) -> None:
    result = run("lookup", "--obj", BINARY, *NO_SIDE_EFFECTS, option, tmp_path / "nope", "0x1000")
    assert result.returncode == 1
    assert str(tmp_path / "nope") in one_error_line(result)
    assert result.stdout == ""


def test_library_refuses_them_too(tmp_path: Path) -> None:
    with pytest.raises(SymbolizeError, match="search path not found"):
        api.lookup(BINARY, [0x1000], search_paths=[tmp_path / "nope"], use_cache=False)


@pytest.mark.parametrize("content", [b"", gzip.compress(b"", mtime=0)])
def test_an_empty_profile_is_an_error_not_zero_samples(tmp_path: Path, content: bytes) -> None:
    empty = tmp_path / "empty.pb"
    empty.write_bytes(content)
    result = run("profile", empty, "-o", tmp_path / "out.pb", *NO_SIDE_EFFECTS)
    assert result.returncode == 1
    assert one_error_line(result) == f"symbolize: error: {empty}: not a profile: the file is empty"
    assert not (tmp_path / "out.pb").exists()
    stdin = run("profile", "-", *NO_SIDE_EFFECTS, stdin=content)
    assert stdin.returncode == 1 and "the file is empty" in one_error_line(stdin)


def test_a_missing_profile_is_a_symbolize_error_naming_it(tmp_path: Path) -> None:
    with pytest.raises(SymbolizeError, match="file not found") as caught:
        read_profile(tmp_path / "missing.pb")
    assert not isinstance(caught.value, FileNotFoundError)
    result = run("profile", tmp_path / "missing.pb", *NO_SIDE_EFFECTS)
    assert one_error_line(result) == f"symbolize: error: {tmp_path / 'missing.pb'}: file not found"
    # The same words as lookup and index for the same problem.
    for command in (["lookup", "--obj"], ["index"]):
        other = run(*command, tmp_path / "missing.pb", *(["0x1"] if command[0] == "lookup" else []))
        assert one_error_line(other) == f"symbolize: error: {tmp_path / 'missing.pb'}: file not found"


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs /proc, a directory that takes no new files")
def test_an_unwritable_output_is_named_never_its_temporary() -> None:
    result = run("profile", PROFILE, "-o", "/proc/out.pb.gz", *NO_SIDE_EFFECTS)
    assert result.returncode == 1
    line = one_error_line(result)
    assert line.startswith("symbolize: error: /proc/out.pb.gz: cannot write: "), line
    assert ".tmp" not in line


def test_an_output_in_a_missing_directory_says_which(tmp_path: Path) -> None:
    result = run("profile", PROFILE, "-o", tmp_path / "no" / "out.pb", *NO_SIDE_EFFECTS)
    assert one_error_line(result) == (
        f"symbolize: error: {tmp_path / 'no' / 'out.pb'}: cannot write: no directory {tmp_path / 'no'}"
    )


@pytest.mark.skipif(os.name == "nt", reason="POSIX modes")
@pytest.mark.parametrize("umask", [0o022, 0o002, 0o077])
def test_output_files_follow_the_umask(tmp_path: Path, umask: int) -> None:
    out = tmp_path / "out.pb.gz"
    previous = os.umask(umask)
    try:
        result = run("profile", PROFILE, "-o", out, *NO_SIDE_EFFECTS)
    finally:
        os.umask(previous)
    assert result.returncode == 0, result.stderr
    assert stat.S_IMODE(out.stat().st_mode) == 0o666 & ~umask


@pytest.mark.skipif(os.name == "nt", reason="POSIX modes")
def test_an_output_written_over_keeps_its_mode(tmp_path: Path) -> None:
    out = tmp_path / "out.pb"
    out.write_bytes(b"old")
    out.chmod(0o640)
    result = run("profile", PROFILE, "-o", out, *NO_SIDE_EFFECTS)
    assert result.returncode == 0, result.stderr
    assert stat.S_IMODE(out.stat().st_mode) == 0o640 and out.read_bytes() != b"old"


def test_index_goes_on_past_a_binary_it_cannot_index(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    missing = tmp_path / "missing"
    result = run("index", missing, BINARY, "--cache-dir", cache)
    assert result.returncode == 1
    built = [Path(line) for line in result.stdout.splitlines()]
    assert built and all(path.is_file() and path.parent == cache / "index" for path in built)
    # Besides the error, stderr names the binary of each index built: "INDEX: BINARY".
    owners = [f"{path}: {BINARY.resolve()}" for path in built]
    errors = [line for line in result.stderr.splitlines() if line not in owners]
    assert len(errors) == len(result.stderr.splitlines()) - len(owners)
    assert one_error_line(subprocess.CompletedProcess(result.args, 1, "", "\n".join(errors))) == (
        f"symbolize: error: {missing}: file not found"
    )


def test_cache_show_is_a_table_naming_each_binary(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    assert run("index", BINARY, "--cache-dir", cache).returncode == 0
    result = run("cache", "show", "--cache-dir", cache)
    assert result.returncode == 0, result.stderr
    header, *rows = result.stdout.splitlines()
    assert header.split() == ["BINARY", "DEBUG", "ID", "SIZE", "AGE", "DEMANGLER"]
    build_id = _build_id(BINARY)
    (row,) = rows
    assert row.startswith(str(BINARY.resolve())) and build_id in row
    assert "\\x" not in row and " s " in row  # seconds old, not a nanosecond mtime
    assert result.stderr.startswith("1 indexes, ")


def test_cache_show_json(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    assert run("index", BINARY, "--cache-dir", cache).returncode == 0
    result = run("cache", "show", "--cache-dir", cache, "--json")
    assert result.returncode == 0, result.stderr
    shown = json.loads(result.stdout)
    (entry,) = shown["indexes"]
    assert shown["cache_dir"] == str(cache)
    assert entry["binary"] == str(BINARY.resolve())
    assert entry["debug_id"] == _build_id(BINARY)
    assert entry["size"] == Path(entry["index"]).stat().st_size
    assert 0 <= entry["age_seconds"] < 600 and entry["demangler"].startswith("llvm ")


def _build_id(binary: Path) -> str:
    """The GNU build ID as readelf prints it (a peer tool, not our reader)."""
    readelf = shutil.which("readelf") or shutil.which("llvm-readelf")
    if readelf is None:
        pytest.skip("readelf is missing")
    notes = subprocess.run([readelf, "-n", str(binary)], capture_output=True, text=True, check=True).stdout
    return next(line.split()[-1] for line in notes.splitlines() if "Build ID" in line)
