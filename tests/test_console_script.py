"""Conventions that only the installed console script shows (its ``main`` rewrites the
words before typer sees them), run as a subprocess: ``--version``, ``-h`` everywhere, ``--debug``
after the command name, and ``lookup``'s non-addresses and reasons as a pipe reads them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.test_cli_contracts import FIXTURE_BIN, NO_SIDE_EFFECTS, run

NOPIE = FIXTURE_BIN / "cdemo-gcc-dwarf5-nopie"


def test_version() -> None:
    result = run("--version")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("symbolize ")


@pytest.mark.parametrize("command", [[], ["lookup"], ["profile"], ["index"], ["cache"], ["cache", "show"], ["audit"]])
def test_dash_h_is_help(command: list[str]) -> None:
    short, long = run(*command, "-h"), run(*command, "--help")
    assert short.returncode == 0, short.stderr
    assert "Usage: symbolize" in short.stdout and short.stdout == long.stdout


def test_debug_after_the_command_name_shows_the_traceback(tmp_path: Path) -> None:
    result = run("lookup", "--obj", tmp_path / "missing", *NO_SIDE_EFFECTS, "--debug", "0x10")
    assert result.returncode != 0
    assert "Traceback" in result.stderr and "file not found" in result.stderr
    plain = run("lookup", "--obj", tmp_path / "missing", *NO_SIDE_EFFECTS, "0x10")
    assert plain.returncode == 1 and "Traceback" not in plain.stderr


def test_lookup_echoes_a_non_address_and_says_why_in_json() -> None:
    text = run("lookup", "--obj", NOPIE, *NO_SIDE_EFFECTS, stdin=b"zzz\n0x0\n")
    assert text.returncode == 0, text.stderr
    assert text.stdout == "zzz\n??\n??:0:0\n\n"
    answers = run("lookup", "--obj", NOPIE, "--json", *NO_SIDE_EFFECTS, stdin=b"zzz\n0x0\n")
    assert answers.returncode == 0, answers.stderr
    assert [json.loads(line) for line in answers.stdout.splitlines()] == [
        {"address": "zzz", "frames": [], "reason": "not-an-address"},
        {"address": "0x0", "frames": [], "reason": "not-covered"},
    ]


@pytest.mark.parametrize(
    ("content", "problem"),
    [(b"not a binary\n", "not an object file"), (None, "file not found")],
    ids=["not-an-object-file", "missing"],
)
def test_every_command_says_a_problem_with_a_binary_alike(tmp_path: Path, content: bytes | None, problem: str) -> None:
    binary = tmp_path / "app"
    if content is not None:
        binary.write_bytes(content)
    expected = f"symbolize: error: {binary}: {problem}"
    results = {
        "lookup": run("lookup", "--obj", binary, *NO_SIDE_EFFECTS, "0x10"),
        "index": run("index", binary, "--cache-dir", tmp_path / "cache"),
        "audit": run("audit", binary),
    }
    assert {command: result.stderr.splitlines() for command, result in results.items()} == {
        command: [expected] for command in results
    }
