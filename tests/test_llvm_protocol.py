"""``symbolize lookup`` driven as llvm-symbolizer is driven (symbolize/cli/llvm_protocol.py).

Against llvm-symbolizer 22's answers stored by ``fixtures/make_expected_llvm22.py`` (re-read live
where /usr/lib/llvm-22/bin/llvm-symbolizer is installed): ``--output-style=JSON`` writes every
field LLVM writes that the readers know, with LLVM's values, and byte for byte LLVM's object
where it writes them all; the text flags print what LLVM prints; stdin lines without ``--obj``
are read as LLVM reads them. Then Google's pprof names a fixture profile through a shim named
llvm-symbolizer as it does through llvm-symbolizer itself.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
STORED = FIXTURES / "expected" / "llvm22"
LLVM_22 = Path("/usr/lib/llvm-22/bin/llvm-symbolizer")
PPROF = os.environ.get("SYMBOLIZE_PPROF") or shutil.which("pprof")
NAMES = sorted(path.stem for path in STORED.glob("*.json") if path.stem != "protocol")
LOOKUP = [sys.executable, "-m", "symbolize", "lookup", "--no-cache", "--no-background-index"]
# The fields of LLVM's frame the readers do not give (module docstring of llvm_protocol.py).
NOT_READ = ("Discriminator", "StartFileName", "StartAddress")


def _stored(name: str) -> dict[str, Any]:
    return json.loads((STORED / f"{name}.json").read_text())


def _inputs(stored: dict[str, Any], flags: str) -> list[str]:
    """The arguments that ask for the stored addresses under ``flags`` (as the script moved them)."""
    addresses: list[str] = stored["addresses"]
    if flags.startswith("--adjust-vma"):
        return [f"{int(address, 16) + int(stored['adjust_vma'], 16):#x}" for address in addresses]
    if flags == "--relative-address":
        return [f"{int(address, 16) - int(stored['load_base'], 16):#x}" for address in addresses]
    return addresses


def _lookup(words: list[str], stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run([*LOOKUP, *words], input=stdin, capture_output=True, text=True, cwd=FIXTURES)


def _fields_agree(theirs: dict[str, Any], ours: dict[str, Any]) -> bool:
    """Our answer writes LLVM's fields with LLVM's values, frame by frame, and leaves out only
    fields the readers do not give."""
    if set(ours) != set(theirs) or {key: value for key, value in ours.items() if key not in ("Symbol", "Loc")} != {
        key: value for key, value in theirs.items() if key not in ("Symbol", "Loc")
    }:
        return False
    key = "Symbol" if "Symbol" in theirs else "Loc"
    frames = zip(theirs.get(key, []), ours.get(key, []), strict=False)
    same_count = len(theirs.get(key, [])) == len(ours.get(key, []))
    return same_count and all(
        set(frame) | set(NOT_READ) >= set(their) and all(their[field] == value for field, value in frame.items())
        for their, frame in frames
    )


JSON_CASES = [(name, flags) for name in NAMES for flags in _stored(name)["outputs"] if "JSON" in flags]
TEXT_CASES = [
    (name, flags)
    for name in NAMES
    for flags in _stored(name)["outputs"]
    if "JSON" not in flags and not flags.startswith("--verbose")
]


@pytest.mark.parametrize(("name", "flags"), JSON_CASES, ids=[f"{n} {f}" for n, f in JSON_CASES])
def test_llvm_json_agrees_with_llvm_symbolizer_22(name: str, flags: str) -> None:
    stored = _stored(name)
    done = _lookup(["--obj", stored["binary"], *flags.split(), *_inputs(stored, flags)])
    assert done.returncode == 0, done.stderr
    if "-p" in flags.split():  # pretty: LLVM's indentation
        assert done.stdout.startswith("[\n  {\n    ") and done.stdout.endswith("\n]\n")
    else:
        assert done.stdout.endswith("]\n") and done.stdout.count("\n") == 1  # one array, one line
    theirs, ours = json.loads(stored["outputs"][flags]), json.loads(done.stdout)
    assert len(theirs) == len(ours) == len(stored["addresses"])
    disagree = [answer["Address"] for answer, mine in zip(theirs, ours, strict=True) if not _fields_agree(answer, mine)]
    assert not disagree
    # Where every field is written (an address nothing or only a symbol names), the bytes are LLVM's.
    whole = [mine for mine in ours if all(set(frame) >= set(NOT_READ) for frame in mine["Symbol"])]
    expected = {answer["Address"]: answer for answer in theirs}
    for mine in whole:
        assert json.dumps(mine, sort_keys=True) == json.dumps(expected[mine["Address"]], sort_keys=True)


@pytest.mark.parametrize(("name", "flags"), TEXT_CASES, ids=[f"{n} {f}" for n, f in TEXT_CASES])
def test_text_flags_print_what_llvm_symbolizer_22_prints(name: str, flags: str) -> None:
    stored = _stored(name)
    done = _lookup(["--obj", stored["binary"], *flags.split(), *_inputs(stored, flags)])
    assert done.returncode == 0, done.stderr
    assert done.stdout == stored["outputs"][flags]


def _without_unread_lines(text: str) -> str:
    """--verbose's text without the lines of fields the readers do not give (LLVM prints the
    start address of an inlined frame from its DIE; ours only the outermost's, from its symbol)."""
    unread = ("  Function start filename: ", "  Function start address: ", "  Discriminator: ")
    return "\n".join(line for line in text.split("\n") if not line.startswith(unread))


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("flags", ["--verbose", "--verbose --no-inlines"])
def test_verbose_prints_llvms_block_of_the_fields_read(name: str, flags: str) -> None:
    stored = _stored(name)
    done = _lookup(["--obj", stored["binary"], *flags.split(), *stored["addresses"]])
    assert done.returncode == 0, done.stderr
    assert _without_unread_lines(done.stdout) == _without_unread_lines(stored["outputs"][flags])
    assert "  Line: " in done.stdout and "  Filename: " in done.stdout


PROTOCOL = json.loads((STORED / "protocol.json").read_text())["cases"]


@pytest.mark.parametrize("case", PROTOCOL, ids=[f"{case['flags'] or 'text'}: {case['line']!r}" for case in PROTOCOL])
def test_stdin_lines_without_obj_are_read_as_llvm_symbolizer_22_reads_them(case: dict[str, Any]) -> None:
    done = _lookup(case["flags"].split(), case["line"] + "\n")
    assert done.returncode == 0, done.stderr
    messages = [line.split(": error: ", 1)[1] for line in done.stderr.splitlines() if ": error: " in line]
    if "JSON" in case["flags"]:
        theirs, ours = json.loads(case["stdout"]), json.loads(done.stdout)
        if "Error" in theirs:  # a file that cannot be opened: the message is ours
            assert set(ours) == set(theirs) and ours["ModuleName"] == theirs["ModuleName"]
        else:
            assert _fields_agree(theirs, ours)
        assert messages == case["errors"]
        return
    assert done.stdout == case["stdout"]
    if case["errors"] and "No such file" in case["errors"][0]:
        assert messages == [f"{case['line'].split()[0]}: file not found"]  # our own words
    else:
        assert messages == case["errors"]


def test_stored_answers_are_llvm_symbolizer_22s() -> None:
    if not LLVM_22.exists():
        pytest.skip("llvm-symbolizer 22 is not installed")
    for name in NAMES:
        stored = _stored(name)
        for flags in ("--output-style=JSON", "--verbose", "-s"):
            command = [str(LLVM_22), f"--obj={stored['binary']}", *flags.split(), *stored["addresses"]]
            live = subprocess.run(command, capture_output=True, text=True, cwd=FIXTURES).stdout
            assert live == stored["outputs"][flags], (name, flags)
    for case in PROTOCOL[:8]:
        live = subprocess.run(
            [str(LLVM_22), *case["flags"].split()], input=case["line"] + "\n", capture_output=True, text=True,
            cwd=FIXTURES,
        )  # fmt: skip
        assert live.stdout == case["stdout"]


def test_source_context_lines_are_llvm_symbolizer_22s() -> None:
    """Live only: the sources are the compiler's headers the cppdemo fixture inlines from."""
    stored = _stored("cppdemo-gcc-dwarf5-pie")
    if not LLVM_22.exists() or not Path("/usr/include/c++/12/bits/stl_vector.h").exists():
        pytest.skip("llvm-symbolizer 22 and GCC 12's headers are needed")
    for flags in ("--print-source-context-lines=3", "--print-source-context-lines=4 -s"):
        words = [f"--obj={stored['binary']}", *flags.split(), *stored["addresses"]]
        live = subprocess.run([str(LLVM_22), *words], capture_output=True, text=True, cwd=FIXTURES).stdout
        assert (" >: " in live) == ("-s" not in flags.split())  # LLVM reads the file by the name it prints
        assert _lookup(words).stdout == live


def test_combined_short_flags_mean_each_flag() -> None:
    stored = _stored("cppdemo-gcc-dwarf5-pie")
    combined = _lookup(["--obj", stored["binary"], "-Cfias", *stored["addresses"][:5]])
    separate = _lookup(["--obj", stored["binary"], "-C", "-f", "-i", "-a", "-s", *stored["addresses"][:5]])
    assert combined.returncode == 0 and combined.stdout == separate.stdout
    assert combined.stdout.startswith(stored["addresses"][0])


def test_a_usage_error_is_one_plain_line_when_stderr_is_no_terminal() -> None:
    done = _lookup(["--obj", "a.out", "--output-style=XML", "0x10"])
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "--output-style" in done.stderr
    assert not set(done.stderr) & set("╭╰│─")


def test_help_shows_every_option_name_whole_at_80_columns() -> None:
    from symbolize.cli.options import LOOKUP_OPTIONS

    done = subprocess.run(
        [sys.executable, "-m", "symbolize", "lookup", "-h"], capture_output=True, text=True,
        env={**os.environ, "COLUMNS": "80", "TERMINAL_WIDTH": "80"},
    )  # fmt: skip
    assert done.returncode == 0
    for declared in LOOKUP_OPTIONS:
        for name in (*declared.names, *declared.off_names):
            assert name in done.stdout, name
    assert "JSON" in done.stdout and "…" not in done.stdout


def test_answers_stream_one_line_at_a_time_without_obj() -> None:
    """A driver writes a line and waits for its answer before the next, as pprof does."""
    stored = _stored("cdemo-gcc-dwarf5-pie")
    process = subprocess.Popen(
        [*LOOKUP, "--inlining", "-demangle=false", "--output-style=JSON"], stdin=subprocess.PIPE,
        stdout=subprocess.PIPE, text=True, cwd=FIXTURES,
    )  # fmt: skip
    assert process.stdin is not None and process.stdout is not None
    try:
        for address in stored["addresses"][:3]:
            process.stdin.write(f"CODE {stored['binary']} {address}\n")
            process.stdin.flush()
            answer = json.loads(process.stdout.readline())
            assert answer["Address"] == address and answer["ModuleName"] == stored["binary"]
    finally:
        process.stdin.close()
        process.wait(timeout=60)


def _tool_dir(directory: Path, command: str) -> Path:
    """A directory holding an executable ``llvm-symbolizer``: a shell script ending in ``command``
    with its arguments."""
    directory.mkdir()
    tool = directory / "llvm-symbolizer"
    tool.write_text(f'#!/bin/sh\n{command} "$@"\n')
    tool.chmod(0o755)
    return directory


PPROF_PROFILES = ["cdemo-gcc-dwarf5-pie.cpu.pb", "cppdemo-gcc-dwarf5-pie.heap.pb", "useshape.cpu.pb"]


@pytest.mark.skipif(
    PPROF is None or not LLVM_22.exists(), reason="needs pprof ($SYMBOLIZE_PPROF) and llvm-symbolizer 22"
)
@pytest.mark.parametrize("profile", PPROF_PROFILES)
def test_pprof_names_a_profile_through_symbolize_as_through_llvm_symbolizer(profile: str, tmp_path: Path) -> None:
    assert PPROF is not None
    ours = _tool_dir(tmp_path / "ours", " ".join(["exec", *LOOKUP]))
    log = tmp_path / "asked.log"
    llvm = _tool_dir(tmp_path / "llvm", f'echo "$@" >> {log}\nexec {LLVM_22}')
    outputs = []
    for tools in (ours, llvm):
        environment = {**os.environ, "PPROF_TOOLS": str(tools), "PPROF_BINARY_PATH": str(FIXTURES / "bin"),
                       "HOME": str(tmp_path)}  # fmt: skip
        done = subprocess.run(
            [PPROF, "-symbolize=local", "-traces", str(FIXTURES / "profiles" / profile)], capture_output=True,
            text=True, env=environment, timeout=300,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        outputs.append(done.stdout)
    assert log.read_text(), "pprof should have run llvm-symbolizer from PPROF_TOOLS"
    # The profile's own binary is named (not only addresses) and both runs name the same frames.
    assert outputs[0] == outputs[1]
    assert "main" in outputs[0]
