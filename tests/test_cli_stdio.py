"""The command line through pipes: ``lookup`` answering line by line, non-addresses echoed,
``-`` for stdin and stdout in ``profile``.

The streaming tests run the real console module (``python -m symbolize``) in a subprocess:
the point is what a process driving it through a pipe sees.
"""

from __future__ import annotations

import json
import queue
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO

import pytest
from typer.testing import CliRunner

from symbolize.cli.app import app
from symbolize.errors import SymbolizeError
from symbolize.pprof import parse_profile, write_profile
from symbolize.proto.profile_pb2 import Profile
from tests.fixtures_data import ROOT

NOPIE = ROOT / "fixtures" / "bin" / "cdemo-clang-dwarf4-nopie"
LLVM_SYMBOLIZER = shutil.which("llvm-symbolizer")
needs_llvm = pytest.mark.skipif(
    LLVM_SYMBOLIZER is None or not NOPIE.is_file(), reason="llvm-symbolizer or the fixture is missing"
)
# Long enough for a loaded CI machine to start Python and open the binary; a lookup that
# waits for end of input never answers within it.
ANSWER_TIMEOUT_S = 20.0
NO_SIDE_EFFECTS = ["--no-cache", "--no-background-index"]

runner = CliRunner()


def _lines_of(stream: IO[bytes]) -> queue.Queue[bytes]:
    """A queue the lines of ``stream`` arrive on, read by a thread (b"" at end of stream)."""
    lines: queue.Queue[bytes] = queue.Queue()

    def read() -> None:
        for line in stream:
            lines.put(line)
        lines.put(b"")

    threading.Thread(target=read, daemon=True).start()
    return lines


def _cli_answer(*arguments: str) -> list[str]:
    result = runner.invoke(app, ["lookup", "--obj", str(NOPIE), "--json", *NO_SIDE_EFFECTS, *arguments])
    assert result.exit_code == 0, result.output
    return result.stdout.splitlines()


def test_lookup_answers_each_stdin_line_before_the_next_is_written() -> None:
    inputs = ["0x401000", "zzz", "0x401100", "4198400"]
    expected = _cli_answer(*inputs)
    command = [sys.executable, "-m", "symbolize", "lookup", "--obj", str(NOPIE), "--json", *NO_SIDE_EFFECTS]
    process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=ROOT)
    assert process.stdin is not None and process.stdout is not None
    answers = _lines_of(process.stdout)
    try:
        for text, want in zip(inputs, expected, strict=True):
            process.stdin.write(f"{text}\n".encode())
            process.stdin.flush()  # and the pipe stays open: no end of input
            try:
                answer = answers.get(timeout=ANSWER_TIMEOUT_S)
            except queue.Empty:
                pytest.fail(f"no answer to {text!r} within {ANSWER_TIMEOUT_S} s while stdin stays open")
            assert answer.decode() == want + "\n"
        process.stdin.close()
        assert answers.get(timeout=ANSWER_TIMEOUT_S) == b""
        assert process.wait(timeout=ANSWER_TIMEOUT_S) == 0
    finally:
        process.kill()
        process.wait()
    rows = [json.loads(line) for line in expected]
    assert rows[1] == {"address": "zzz", "frames": [], "reason": "not-an-address"}
    assert rows[0]["address"] == rows[3]["address"] == "0x401000" and rows[0]["frames"]


def test_lookup_echoes_a_non_address_argument() -> None:
    result = runner.invoke(app, ["lookup", "--obj", str(NOPIE), *NO_SIDE_EFFECTS, "zzz", "0x0"])
    assert result.exit_code == 0, result.output
    assert result.stdout == "zzz\n??\n??:0:0\n\n"


def test_lookup_json_gives_a_non_address_stdin_line_its_input_and_reason() -> None:
    result = runner.invoke(app, ["lookup", "--obj", str(NOPIE), "--json", *NO_SIDE_EFFECTS], input="zzz\n0x0\n")
    assert result.exit_code == 0, result.output
    assert [json.loads(line) for line in result.stdout.splitlines()] == [
        {"address": "zzz", "frames": [], "reason": "not-an-address"},
        {"address": "0x0", "frames": [], "reason": "not-covered"},
    ]


@needs_llvm
@pytest.mark.parametrize("through_stdin", [False, True])
def test_lookup_non_addresses_read_as_llvm_symbolizer_reads_them(through_stdin: bool) -> None:
    assert LLVM_SYMBOLIZER is not None
    inputs = ["zzz", "0x401000", "0xg", "", "main", "0x0"]
    arguments = [] if through_stdin else inputs
    stdin = "".join(f"{text}\n" for text in inputs) if through_stdin else ""
    expected = subprocess.run(
        [LLVM_SYMBOLIZER, "--obj", str(NOPIE), *arguments], input=stdin, capture_output=True, text=True, check=True
    ).stdout
    result = runner.invoke(app, ["lookup", "--obj", str(NOPIE), *NO_SIDE_EFFECTS, *arguments], input=stdin)
    assert result.exit_code == 0, result.output
    assert result.stdout == expected


@pytest.fixture
def heap_profile(tmp_path: Path) -> Path:
    """A gzipped heap profile of NOPIE's first kilobyte of code (return addresses)."""
    profile = Profile(string_table=["", "alloc_space", "bytes", str(NOPIE)])
    profile.sample_type.add(type=1, unit=2)
    profile.mapping.add(id=1, memory_start=0x400000, memory_limit=0x405000, filename=3)
    for location_id, vaddr in enumerate(range(0x401000, 0x401400, 0x40), start=1):
        profile.location.add(id=location_id, mapping_id=1, address=vaddr + 1)
    profile.sample.add(location_id=[location.id for location in profile.location], value=[100])
    path = tmp_path / "heap.pb.gz"
    write_profile(profile, path, gzip=True)
    return path


def _profile_arguments(tmp_path: Path) -> list[str]:
    return ["--debug-dir", str(tmp_path), *NO_SIDE_EFFECTS]


def _named_through_a_file(heap_profile: Path) -> bytes:
    out = heap_profile.with_name("named.pb.gz")
    arguments = ["profile", str(heap_profile), "-o", str(out), *_profile_arguments(heap_profile.parent)]
    result = runner.invoke(app, arguments)
    assert result.exit_code == 0, result.output
    named, _ = parse_profile(out.read_bytes())
    assert any(location.line for location in named.location)
    return out.read_bytes()


@pytest.mark.parametrize(
    ("source", "output"), [("-", ["-o", "-"]), ("-", []), ("FILE", ["-o", "-"]), ("FILE", ["--output", "-"])]
)
def test_profile_dash_is_stdin_and_stdout(
    heap_profile: Path, monkeypatch: pytest.MonkeyPatch, source: str, output: list[str]
) -> None:
    expected = _named_through_a_file(heap_profile)
    monkeypatch.chdir(heap_profile.parent)
    in_argument = "-" if source == "-" else str(heap_profile)
    stdin = heap_profile.read_bytes() if source == "-" else None
    arguments = ["profile", in_argument, *output, *_profile_arguments(heap_profile.parent)]
    result = runner.invoke(app, arguments, input=stdin)
    assert result.exit_code == 0, result.output
    assert result.stdout_bytes == expected
    assert "total:" in result.stderr
    assert not (heap_profile.parent / "-").exists()


def test_profile_to_stdout_writes_nothing_when_the_rewrite_fails(
    heap_profile: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def failing_rewrite(*_args: object, **_kwargs: object) -> None:
        raise SymbolizeError("rewrite failed")

    monkeypatch.setattr("symbolize.rewrite.symbolize_profile", failing_rewrite)
    monkeypatch.chdir(heap_profile.parent)
    arguments = ["profile", "-", "-o", "-", *_profile_arguments(heap_profile.parent)]
    result = runner.invoke(app, arguments, input=heap_profile.read_bytes())
    assert result.exit_code == 1
    assert result.stdout_bytes == b""
    assert result.stderr == "symbolize: error: rewrite failed\n"


def test_profile_from_stdin_names_stdin_in_its_error() -> None:
    result = runner.invoke(app, ["profile", "-", "-o", "-", *NO_SIDE_EFFECTS], input=b"\xff\xff\xff")
    assert result.exit_code == 1
    assert result.stdout_bytes == b""
    assert result.stderr.startswith("symbolize: error: <stdin>: ")


def test_profile_to_stdout_refuses_a_json_summary_there(heap_profile: Path) -> None:
    result = runner.invoke(app, ["profile", str(heap_profile), "-o", "-", "--json-summary"])
    assert result.exit_code == 2
    assert result.stdout_bytes == b""


def test_profile_dash_through_the_console_module(heap_profile: Path) -> None:
    expected = _named_through_a_file(heap_profile)
    command = [sys.executable, "-m", "symbolize", "profile", "-", "-o", "-", *_profile_arguments(heap_profile.parent)]
    completed = subprocess.run(
        command, input=heap_profile.read_bytes(), capture_output=True, cwd=ROOT, timeout=120, check=False
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout == expected
    assert b"total:" in completed.stderr
    assert not (ROOT / "-").exists()
