"""``symbolize audit`` through typer's CliRunner, plus one real subprocess: exit codes and output.

Exit codes are a promise to CI scripts: 0 meets every --require, 1 falls short (each reason on
stderr), 2 usage, 3 unreadable or no reader yet.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from symbolize.cli.app import app
from tests.fixtures_data import BIN, FIXTURES

AUDIT = FIXTURES / "audit"
CARGO = FIXTURES / "cargo"


def _run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["audit", *args])
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize(
    ("args", "code"),
    [
        ([str(AUDIT / "rs-debug2"), "--require", "inlines"], 0),
        ([str(AUDIT / "rs-strip-debuginfo"), "--require", "names"], 0),
        ([str(AUDIT / "rs-strip-debuginfo"), "--require", "lines"], 1),
        ([str(AUDIT / "rs-strip-symbols"), "--require", "names"], 1),
        ([str(AUDIT / "rs-debug2"), "--require-frame-pointers"], 1),
        ([str(AUDIT / "rs-debug2-fp"), "--require-frame-pointers", "--require", "lines"], 0),
        ([str(AUDIT / "packed-missing" / "rs-packed"), "--require", "inlines"], 1),
        ([str(AUDIT / "rs-packed"), "--require", "inlines"], 0),
        ([str(BIN / "windows" / "winapp.exe"), "--require", "inlines"], 0),  # its PDB beside it
        ([str(AUDIT / "pe-exports-only" / "winlib.dll"), "--require", "lines"], 1),
        ([str(BIN / "macos" / "cppdemo-x86_64"), "--require", "inlines"], 0),  # its dSYM beside it
        ([str(BIN / "macos" / "cdemo-x86_64-stripped"), "--require", "lines"], 1),
        ([str(AUDIT / "rs-debug2"), "--require", "everything"], 2),
        ([], 2),
        ([str(AUDIT / "no-such-binary")], 3),
        (["--cargo", str(CARGO / "no-such" / "Cargo.toml")], 3),
        (["--cargo", str(CARGO / "no-release-profile" / "Cargo.toml"), "--require", "lines"], 1),
    ],
)
def test_exit_codes(args: list[str], code: int) -> None:
    assert _run(*args)[0] == code


def test_each_shortfall_is_printed() -> None:
    code, _out, err = _run(str(AUDIT / "rs-strip-debuginfo"), str(AUDIT / "rs-strip-symbols"), "--require", "lines")
    assert code == 1
    lines = [line for line in err.splitlines() if line.startswith("symbolize: audit:")]
    assert len(lines) == 2
    assert "rs-strip-debuginfo" in lines[0] and "names" in lines[0]
    assert "rs-strip-symbols" in lines[1] and "bare-hex" in lines[1]


def test_no_reader_yet(tmp_path: Path) -> None:
    # Hand-made: a WebAssembly module's magic, a format no reader reads (Mach-O, which this test
    # used before, now has one).
    other = tmp_path / "app"
    other.write_bytes(b"\0asm\x01\0\0\0" + bytes(24))
    code, _out, err = _run(str(other), str(AUDIT / "rs-debug2"))
    assert code == 3
    assert str(other) in err


def test_table_names_the_verdict_and_the_fix() -> None:
    code, out, _err = _run(str(AUDIT / "rs-debug0"))
    assert code == 0
    assert "names" in out and "line-tables-only" in out  # the fix for a Rust build without line tables
    assert "[profile.release]" in out  # brackets kept, not eaten as markup


def test_json() -> None:
    code, out, _err = _run(str(AUDIT / "rs-debug2"), "--json", "--cargo", str(CARGO / "line-tables" / "Cargo.toml"))
    assert code == 0
    data = json.loads(out)
    assert data["schema"] == 1
    assert data["binaries"][0]["verdict"]["shows"] == "with-inlines"
    assert data["cargo"]["predictions"][0]["profile"] == "release"


def test_subprocess() -> None:
    run = subprocess.run(
        [sys.executable, "-m", "symbolize", "audit", str(AUDIT / "rs-strip-symbols"), "--json", "--require", "names"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 1
    assert json.loads(run.stdout)["binaries"][0]["verdict"]["shows"] == "bare-hex"
    assert "bare-hex" in run.stderr


def test_plain_text_without_rich(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("rich", "rich.console", "rich.table", "rich.text"):
        monkeypatch.setitem(sys.modules, name, None)  # importing it raises ImportError
    code, out, _err = _run(str(AUDIT / "rs-debug0"))
    assert code == 0
    assert "a profile shows" in out and "names" in out and "┌" not in out
