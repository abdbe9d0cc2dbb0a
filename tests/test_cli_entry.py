"""The plain ``lookup`` and ``profile`` run without typer (symbolize/cli/entry.py) against the same command line
through typer (symbolize/cli/app.py): the same stdout, stderr and exit code, answers and errors,
and every other command line handed to typer."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from symbolize.cli.commands import LookupRequest
from symbolize.cli.entry import plain_command, plain_lookup
from symbolize.cli.profile_command import ProfileRequest
from symbolize.cli.spellings import llvm_spellings
from tests.fixtures_data import ROOT

BINARY = ROOT / "fixtures" / "bin" / "cppdemo-gcc-dwarf5-pie"
PROFILE = ROOT / "fixtures" / "profiles" / "cdemo-gcc-dwarf5-pie.cpu.pb"
TYPER = "import sys; from symbolize.cli.app import main; main()"
ENTRY = "import sys; from symbolize.cli.entry import main; main()"


def _run(program: str, arguments: list[str], stdin: bytes, cwd: Path) -> tuple[int, bytes, bytes]:
    done = subprocess.run(
        [sys.executable, "-c", program, *arguments], input=stdin, capture_output=True, cwd=cwd, timeout=120
    )
    return done.returncode, done.stdout, done.stderr


@pytest.mark.parametrize(
    ("arguments", "stdin"),
    [
        (["--obj", str(BINARY), "--json", "0x1139", "0x1200", "", "main"], b""),
        (["-e", str(BINARY), "-C", "-i", "--no-cache", "--no-background-index"], b"0x1139\nzz\n\n0x0\n0x11a0"),
        (["-e=" + str(BINARY), "--no-inlines", "--demangle", "short", "--no-cache"], b"0x1139\n0x1160\n"),
        (["--exe=" + str(BINARY), "--demangle=none", "--json", "--no-cache"], b"0x1139\n"),
        (["--obj", "missing-binary", "0x10"], b""),
        (["--obj", "fixtures", "0x10", "--no-cache"], b""),
        (["--obj", str(BINARY), "--search-path", "missing-dir", "0x10"], b""),
        (["--obj", str(ROOT / "README.md"), "0x10", "--no-cache"], b""),
        (["--obj", str(BINARY), "--arch", "arm64", "0x1139", "--no-cache"], b""),
    ],
)
def test_a_plain_lookup_prints_what_typer_prints(arguments: list[str], stdin: bytes, tmp_path: Path) -> None:
    words = ["lookup", *arguments, "--cache-dir", str(tmp_path / "cache")]
    assert plain_lookup(llvm_spellings(words)) is not None, "the entry should answer this itself"
    entry = _run(ENTRY, words, stdin, ROOT)
    typer = _run(TYPER, words, stdin, ROOT)
    assert entry == typer
    assert entry[0] in (0, 1)


def test_a_warm_lookup_prints_what_typer_prints(tmp_path: Path) -> None:
    cache = ["--cache-dir", str(tmp_path / "cache")]
    built = _run(TYPER, ["index", str(BINARY), *cache], b"", ROOT)
    assert built[0] == 0, built
    words = ["lookup", "--obj", str(BINARY), "--json", "--no-background-index", *cache]
    stdin = b"".join(b"%#x\n" % vaddr for vaddr in range(0x1100, 0x1300, 3))
    entry = _run(ENTRY, words, stdin, ROOT)
    assert entry == _run(TYPER, words, stdin, ROOT)
    assert entry[0] == 0 and entry[1].count(b"\n") == len(range(0x1100, 0x1300, 3))


@pytest.mark.parametrize(
    "words",
    [
        ["lookup", "--obj", "a.out", "-a", "0x10"],
        ["lookup", "--obj", "a.out", "--pretty-print"],
        ["lookup", "--obj", "a.out", "--output-style=gnu"],  # click's case-insensitive choice
        ["lookup", "--obj", "a.out", "--functions=none"],
        ["lookup", "--obj", "a.out", "--json", "--output-style=JSON"],  # lookup_usage_problem's
        ["lookup", "--json", "0x10"],
        ["lookup", "--help"],
        ["lookup", "-h"],
        ["--debug", "lookup", "--obj", "a.out"],
        ["--version"],
        ["profile", "in.pb"],
        ["lookup", "--obj", "a.out", "--obj", "b.out"],
        ["lookup", "--obj", "a.out", "--json", "--json"],
        ["lookup", "--obj", "a.out", "--inlines", "--no-inlines"],
        ["lookup", "--obj", "-x"],
        ["lookup", "--obj"],
        ["lookup", "--obj", ""],
        ["lookup", "--obj=", "0x10"],
        ["lookup", "--obj", "a.out", "--demangle=bogus"],
        ["lookup", "--obj", "a.out", "--json=1"],
        ["lookup", "--obj", "a.out", "--", "-5"],
        ["lookup", "--obj", "a.out", "-5"],
        ["lookup", "-ea.out", "0x10"],
    ],
)
def test_anything_else_goes_to_typer(words: list[str]) -> None:
    assert plain_lookup(llvm_spellings(words)) is None


def test_the_background_variable_is_read_as_click_reads_it(monkeypatch: pytest.MonkeyPatch) -> None:
    words = ["lookup", "--obj", "a.out", "0x10"]
    for value, expected in (("", True), (" Off ", False), ("0", False), ("yes", True), ("1", True)):
        monkeypatch.setenv("SYMBOLIZE_BACKGROUND_INDEX", value)
        assert plain_lookup(words) == LookupRequest(Path("a.out"), ["0x10"], background_index=expected)
    monkeypatch.setenv("SYMBOLIZE_BACKGROUND_INDEX", "maybe")
    assert plain_lookup(words) is None  # typer's usage error
    assert plain_lookup([*words, "--background-index"]) == LookupRequest(Path("a.out"), ["0x10"])
    monkeypatch.setenv("_SYMBOLIZE_COMPLETE", "bash_complete")
    assert plain_lookup(words) is None


@pytest.mark.parametrize("value", ["maybe", "No", "2"])
def test_the_background_variable_answers_as_typer_does(value: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SYMBOLIZE_BACKGROUND_INDEX", value)
    words = ["lookup", "--obj", str(BINARY), "--no-cache", "0x1139"]
    assert _run(ENTRY, words, b"", ROOT) == _run(TYPER, words, b"", ROOT)


def test_a_usage_error_is_typers(tmp_path: Path) -> None:
    words = ["lookup", "--obj", str(BINARY), "--demangle=bogus", "0x10"]
    entry = _run(ENTRY, words, b"", tmp_path)
    assert entry == _run(TYPER, words, b"", tmp_path)
    assert entry[0] == 2


@pytest.mark.parametrize(
    "options",
    [
        [],
        ["--json-summary", "--demangle", "short"],
        ["--demangle=none", "--no-return-address-adjust", "--no-cache"],
        ["--binary", "missing-binary"],
        ["--search-path", "fixtures/bin", "--debug-dir", "fixtures/bin/debug", "--json-summary"],
        ["--binary", str(BINARY), "--json-summary"],
    ],
)
def test_a_plain_profile_writes_and_prints_what_typer_does(options: list[str], tmp_path: Path) -> None:
    outputs = []
    for program in (ENTRY, TYPER):
        out = tmp_path / f"out-{len(outputs)}.pb.gz"
        words = ["profile", str(PROFILE), "-o", str(out), "--cache-dir", str(tmp_path / "cache"), *options]
        assert plain_command(llvm_spellings(words)) is not None, "the entry should answer this itself"
        outputs.append((_run(program, words, b"", ROOT), out.read_bytes() if out.exists() else None))
    assert outputs[0] == outputs[1]


def test_a_missing_profile_and_the_default_output_name_are_typers(tmp_path: Path) -> None:
    profile = tmp_path / "cpu.pb"
    profile.write_bytes(PROFILE.read_bytes())
    words = ["profile", str(profile), "--search-path", str(ROOT / "fixtures" / "bin")]
    entry = _run(ENTRY, words, b"", tmp_path)
    written = (tmp_path / "cpu.symbolized.pb").read_bytes()
    assert entry == _run(TYPER, words, b"", tmp_path)
    assert written == (tmp_path / "cpu.symbolized.pb").read_bytes()
    missing = ["profile", str(tmp_path / "nope.pb")]
    entry = _run(ENTRY, missing, b"", tmp_path)
    assert entry == _run(TYPER, missing, b"", tmp_path)
    assert entry[0] == 1


@pytest.mark.parametrize(
    "words",
    [
        ["profile"],
        ["profile", "a.pb", "b.pb"],
        ["profile", "-"],
        ["profile", "a.pb", "-o", "-"],
        ["profile", "a.pb", "-o=out.pb"],
        ["profile", "a.pb", "--drop-frames", "malloc"],
        ["profile", "a.pb", "--json-summary", "--json-summary"],
        ["profile", "a.pb", "--demangle", "bogus"],
        ["profile", "a.pb", "--arch", "x86_64"],
        ["profile", "a.pb", "--help"],
    ],
)
def test_other_profile_command_lines_go_to_typer(words: list[str]) -> None:
    assert plain_command(llvm_spellings(words)) is None


def test_a_plain_profile_reads_as_typer_would(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SYMBOLIZE_BACKGROUND_INDEX", raising=False)
    words = ["profile", "a.pb", "--output=o.pb", "--binary", "x", "--binary=y", "--demangle", "short"]
    assert plain_command(words) == ProfileRequest(
        Path("a.pb"), Path("o.pb"), binaries=(Path("x"), Path("y")), demangle="short"
    )


# The console script's plain lookup leaves without the interpreter's teardown (entry.leave_now).
_WITH_ATEXIT = (
    "import atexit, sys; atexit.register(lambda: sys.stderr.write('atexit ran\\n'));"
    " from symbolize.cli.entry import main; main()"
)
_WITH_THREAD = (
    "import sys, threading, time;"
    " threading.Thread(target=lambda: (time.sleep(0.5), sys.stderr.write('thread done\\n'))).start();"
    " from symbolize.cli.entry import main; main()"
)


@pytest.mark.parametrize("as_json", [False, True])
def test_a_plain_lookup_leaves_its_output_whole_and_its_exit_code(as_json: bool, tmp_path: Path) -> None:
    """Thousands of answers, to a file and through a pipe: every byte written before the process
    leaves, the atexit functions run, the exit code kept (0, and 1 for a file that is missing)."""
    addresses = b"".join(b"%#x\n" % vaddr for vaddr in range(0x1000, 0x1600))
    words = ["lookup", "--obj", str(BINARY), "--no-cache", *(["--json"] if as_json else [])]
    piped = _run(_WITH_ATEXIT, words, addresses, ROOT)
    assert piped == (0, _run(TYPER, words, addresses, ROOT)[1], b"atexit ran\n")
    assert piped[1].count(b"\n") >= 0x600
    written = tmp_path / "answers.txt"
    with written.open("wb") as out:
        done = subprocess.run([sys.executable, "-c", ENTRY, *words], input=addresses, stdout=out, timeout=120)
    assert done.returncode == 0 and written.read_bytes() == piped[1]
    missing = _run(_WITH_ATEXIT, ["lookup", "--obj", str(tmp_path / "missing"), "0x10"], b"", ROOT)
    assert missing[0] == 1 and missing[2].endswith(b"file not found\natexit ran\n") and not missing[1]


def test_a_plain_lookup_waits_for_a_thread_still_running(tmp_path: Path) -> None:
    """Where another thread is alive, the lookup exits the usual way, which waits for it."""
    words = ["lookup", "--obj", str(BINARY), "--no-cache", "0x1139"]
    done = _run(_WITH_THREAD, words, b"", ROOT)
    assert done == (0, _run(TYPER, words, b"", ROOT)[1], b"thread done\n")
