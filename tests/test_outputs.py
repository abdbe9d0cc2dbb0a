"""Where output goes: ``-o`` writes through a symlink and never replaces what is not a regular file
(a device node, a FIFO); a closed stdout is an output error (exit 1, one line); an index that
cannot be written names the cache's directory, never our temporary file. Through the console
script (a subprocess running this tree's code) and the API.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from symbolize.api import build_indexes, symbolize_file
from symbolize.cli.exits import EXIT_INPUT_ERROR
from symbolize.errors import SymbolizeError
from symbolize.pprof import read_profile, write_profile
from tests.posix import require, symlink
from tests.test_cli_contracts import (
    BINARY,
    NO_SIDE_EFFECTS,
    PROFILE,
    ROOT,
    console_script,
    one_error_line,
    run,
    tree_environment,
)

pytestmark = pytest.mark.skipif(os.name == "nt", reason="symlinks, FIFOs, device nodes and fd 1 as POSIX has them")

PROFILE_OUT: list[str | Path] = ["profile", PROFILE, *NO_SIDE_EFFECTS, "-o"]


def _expected_profile(tmp_path: Path) -> bytes:
    plain = tmp_path / "plain.pb"
    assert run(*PROFILE_OUT, plain).returncode == 0
    return plain.read_bytes()


# --- -o through a symlink ---------------------------------------------------------------------


def test_a_symlinked_output_is_written_through_to_its_file(tmp_path: Path) -> None:
    expected = _expected_profile(tmp_path)
    target = tmp_path / "target.pb"
    target.write_bytes(b"old")
    link = tmp_path / "link.pb"
    symlink(link, target.name)
    result = run(*PROFILE_OUT, link)
    assert result.returncode == 0, result.stderr
    assert link.is_symlink() and os.readlink(link) == target.name
    assert target.read_bytes() == expected


def test_a_dangling_symlink_gets_its_file(tmp_path: Path) -> None:
    expected = _expected_profile(tmp_path)
    link = tmp_path / "link.pb"
    symlink(link, "made.pb")
    assert run(*PROFILE_OUT, link).returncode == 0
    assert link.is_symlink() and (tmp_path / "made.pb").read_bytes() == expected


def test_the_library_writes_through_a_symlink_too(tmp_path: Path) -> None:
    profile, _ = read_profile(PROFILE)
    target = tmp_path / "target.pb"
    target.write_bytes(b"old")
    link = tmp_path / "link.pb"
    symlink(link, target)
    write_profile(profile, link, gzip=False)
    assert link.is_symlink() and read_profile(target)[0] == profile
    symbolize_file(PROFILE, link, use_cache=False)
    assert link.is_symlink() and target.read_bytes() != b"old"


# --- -o onto what is not a regular file -------------------------------------------------------


def _fifo(directory: Path) -> Path:
    fifo = directory / "fifo"
    require("mkfifo")
    os.mkfifo(fifo)
    return fifo


def _device(directory: Path) -> Path:
    """A character device like /dev/null (1, 3), made here: never the system's own."""
    device = directory / "null"
    require("mknod")
    try:
        os.mknod(device, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("making a device node needs root")
    return device


def _link_to_null(directory: Path) -> Path:
    link = directory / "devnull-link"
    symlink(link, os.devnull)
    return link


NOT_REGULAR = {
    "fifo": (_fifo, "a FIFO", stat.S_ISFIFO),
    "device": (_device, "a character device", stat.S_ISCHR),
    "symlink-to-dev-null": (_link_to_null, f"a character device, {os.devnull}", stat.S_ISCHR),
}


@pytest.mark.parametrize("kind", sorted(NOT_REGULAR))
def test_an_output_that_is_no_regular_file_is_refused_and_left_alone(tmp_path: Path, kind: str) -> None:
    make, what, is_kind = NOT_REGULAR[kind]
    out = make(tmp_path)
    result = run(*PROFILE_OUT, out)
    assert result.returncode == EXIT_INPUT_ERROR
    assert one_error_line(result) == f"symbolize: error: {out}: cannot write: not a regular file ({what})"
    assert is_kind(out.stat().st_mode)
    assert out.is_symlink() == (kind == "symlink-to-dev-null")
    with pytest.raises(SymbolizeError, match="not a regular file"):
        symbolize_file(PROFILE, out, use_cache=False)
    with pytest.raises(SymbolizeError, match="not a regular file"):
        write_profile(read_profile(PROFILE)[0], out, gzip=False)
    assert is_kind(out.stat().st_mode)
    assert not [path for path in tmp_path.iterdir() if path.name.endswith(".tmp")]


# --- a closed stdout ---------------------------------------------------------------------------


def _run_with_stdout_closed(*arguments: str | Path) -> subprocess.CompletedProcess[bytes]:
    """The console script started with fd 1 closed, as ``>&-`` starts it (a POSIX shell's)."""
    if sys.platform == "win32":
        pytest.skip("closing the child's stdout before it runs needs preexec_fn, which is POSIX's")
    return subprocess.run(
        [*console_script(), *map(str, arguments)],
        stdin=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        cwd=ROOT,
        env=tree_environment(),
        timeout=120,
        preexec_fn=lambda: os.close(1),  # nothing else runs in this process
    )


@pytest.mark.parametrize(
    "arguments",
    [
        ["lookup", "-e", BINARY, *NO_SIDE_EFFECTS, "0x1139"],
        ["lookup", "-e", BINARY, "--json", *NO_SIDE_EFFECTS, "0x1139"],
        ["lookup", "-e", BINARY, "-a", "--output-style=GNU", *NO_SIDE_EFFECTS, "0x1139"],
        ["profile", PROFILE, "-o", "-", *NO_SIDE_EFFECTS],
    ],
    ids=["lookup", "lookup-json", "lookup-gnu", "profile-to-stdout"],
)
def test_a_closed_stdout_is_an_output_error(arguments: list[str | Path]) -> None:
    result = _run_with_stdout_closed(*arguments)
    assert result.returncode == EXIT_INPUT_ERROR
    lines = result.stderr.decode().splitlines()
    assert lines == ["symbolize: error: <stdout>: cannot write: closed"]


def test_a_summary_for_a_closed_stdout_is_refused_before_writing_the_profile(tmp_path: Path) -> None:
    out = tmp_path / "out.pb"
    result = _run_with_stdout_closed("profile", PROFILE, "-o", out, "--json-summary", *NO_SIDE_EFFECTS)
    assert result.returncode == EXIT_INPUT_ERROR
    assert result.stderr.decode().splitlines() == ["symbolize: error: <stdout>: cannot write: closed"]
    assert not out.exists()


# --- an index into a cache that cannot be written ----------------------------------------------


@pytest.fixture
def unwritable_cache(tmp_path: Path) -> Iterator[Path]:
    """A cache whose index directory refuses new files: read-only, or immutable for root (whom
    permissions do not stop)."""
    cache = tmp_path / "cache"
    (cache / "index").mkdir(parents=True)
    require("geteuid")  # permissions that stop a writer (and root's immutable flag) are POSIX's
    if os.geteuid() != 0:
        (cache / "index").chmod(0o555)
        yield cache
        (cache / "index").chmod(0o755)
        return
    chattr = shutil.which("chattr")
    if chattr is None or subprocess.run([chattr, "+i", cache / "index"], capture_output=True).returncode:
        pytest.skip("root, and no immutable attribute here to make a directory refuse files")
    try:
        yield cache
    finally:
        subprocess.run([chattr, "-i", cache / "index"], check=True)


def test_an_index_that_cannot_be_written_names_the_cache_directory(unwritable_cache: Path) -> None:
    result = run("index", BINARY, "--cache-dir", unwritable_cache)
    assert result.returncode == EXIT_INPUT_ERROR
    line = one_error_line(result)
    assert line == (
        f"symbolize: error: {unwritable_cache / 'index'}: cannot write an index in this directory: permission denied"
    )
    with pytest.raises(SymbolizeError) as caught:
        build_indexes([BINARY], cache_dir=unwritable_cache)
    assert caught.value.path == unwritable_cache / "index" and ".tmp" not in str(caught.value)
