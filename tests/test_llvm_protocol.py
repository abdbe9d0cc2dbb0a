"""``symbolize lookup`` driven as llvm-symbolizer is driven (symbolize/cli/llvm_protocol.py).

Against llvm-symbolizer 22's answers stored by ``fixtures/make_expected_llvm22.py`` (re-read live
where /usr/lib/llvm-22/bin/llvm-symbolizer is installed): ``--output-style=JSON`` writes LLVM's
objects byte for byte, ``Discriminator``, ``StartAddress`` and ``StartFileName`` of inlined frames
included, but where LLVM is wrong: its ``StartFileName`` is "" for a DIE whose ``DW_AT_decl_file``
is a ``DW_FORM_implicit_const`` (symbolize/cli/llvm_protocol.py), which pyelftools confirms here
for every such difference; ``--verbose`` prints LLVM's block likewise; the text flags print what
LLVM prints; stdin lines without ``--obj`` are read as LLVM reads them. Then Google's pprof names
a fixture profile through a shim named llvm-symbolizer as it does through llvm-symbolizer itself.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from functools import cache
from pathlib import Path, PurePosixPath
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from symbolize.cli.llvm_protocol import _PLAIN_HEX, _all_plain_hex

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
STORED = FIXTURES / "expected" / "llvm22"
LLVM_22 = Path("/usr/lib/llvm-22/bin/llvm-symbolizer")
PPROF = os.environ.get("SYMBOLIZE_PPROF") or shutil.which("pprof")
NAMES = sorted(path.stem for path in STORED.glob("*.json") if path.stem != "protocol")
LOOKUP = [sys.executable, "-m", "symbolize", "lookup", "--no-cache", "--no-background-index"]


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


@cache
def _implicit_decl_files(binary: str) -> frozenset[tuple[int, str]]:
    """(decl line, file base name) of every DIE of ``binary`` whose DW_AT_decl_file has the form
    DW_FORM_implicit_const, read by pyelftools: where llvm-symbolizer 22 writes no StartFileName."""
    from elftools.elf.elffile import ELFFile

    found = set()
    with (FIXTURES / binary).open("rb") as stream:
        dwarf = ELFFile(stream).get_dwarf_info()
        for unit in dwarf.iter_CUs():
            program = dwarf.line_program_for_CU(unit)
            entries = program["file_entry"] if program is not None else []
            first = 0 if unit.header["version"] >= 5 else 1
            for die in unit.iter_DIEs():
                decl_file, decl_line = die.attributes.get("DW_AT_decl_file"), die.attributes.get("DW_AT_decl_line")
                if decl_file is None or decl_line is None or decl_file.form != "DW_FORM_implicit_const":
                    continue
                if 0 <= decl_file.value - first < len(entries):
                    name = entries[decl_file.value - first].name.decode()
                    found.add((decl_line.value, PurePosixPath(name).name))
    return frozenset(found)


def _llvm_misses_start_file(binary: str, their: dict[str, Any], frame: dict[str, Any]) -> bool:
    """Whether ``frame`` differs from LLVM's ``their`` only by the StartFileName LLVM leaves
    empty for an implicit_const DW_AT_decl_file (module docstring)."""
    start_file = frame.get("StartFileName", "")
    return (
        their.get("StartFileName") == "" and start_file != ""
        and (frame["StartLine"], PurePosixPath(start_file).name) in _implicit_decl_files(binary)
        and {**frame, "StartFileName": ""} == their
    )  # fmt: skip


def _fields_agree(theirs: dict[str, Any], ours: dict[str, Any], binary: str) -> bool:
    """Our answer is LLVM's, frame by frame, but for StartFileNames LLVM misses."""
    if set(ours) != set(theirs) or {key: value for key, value in ours.items() if key not in ("Symbol", "Loc")} != {
        key: value for key, value in theirs.items() if key not in ("Symbol", "Loc")
    }:
        return False
    key = "Symbol" if "Symbol" in theirs else "Loc"
    frames = zip(theirs.get(key, []), ours.get(key, []), strict=False)
    same_count = len(theirs.get(key, [])) == len(ours.get(key, []))
    return same_count and all(
        frame == their or _llvm_misses_start_file(binary, their, frame) for their, frame in frames
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
    binary = stored["binary"]
    disagree = [
        answer["Address"] for answer, mine in zip(theirs, ours, strict=True) if not _fields_agree(answer, mine, binary)
    ]
    assert not disagree
    # Where LLVM is right, the bytes are LLVM's: the whole output once its misses are put back.
    mended = [
        {**mine, "Symbol": [their if _llvm_misses_start_file(binary, their, frame) else frame
                            for their, frame in zip(answer["Symbol"], mine["Symbol"], strict=True)]}
        for answer, mine in zip(theirs, ours, strict=True)
    ]  # fmt: skip
    separators = (",", ": ") if "-p" in flags.split() else (",", ":")
    text = json.dumps(mended, indent=2 if "-p" in flags.split() else None, separators=separators, ensure_ascii=False)
    assert text + "\n" == stored["outputs"][flags]


@pytest.mark.parametrize(("name", "flags"), TEXT_CASES, ids=[f"{n} {f}" for n, f in TEXT_CASES])
def test_text_flags_print_what_llvm_symbolizer_22_prints(name: str, flags: str) -> None:
    stored = _stored(name)
    done = _lookup(["--obj", stored["binary"], *flags.split(), *_inputs(stored, flags)])
    assert done.returncode == 0, done.stderr
    assert done.stdout == stored["outputs"][flags]


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("flags", ["--verbose", "--verbose --no-inlines"])
def test_verbose_prints_llvms_block(name: str, flags: str) -> None:
    """Line for line LLVM's, but for the start file LLVM misses (checked as in the JSON)."""
    stored = _stored(name)
    done = _lookup(["--obj", stored["binary"], *flags.split(), *stored["addresses"]])
    assert done.returncode == 0, done.stderr
    ours, theirs = done.stdout.split("\n"), stored["outputs"][flags].split("\n")
    assert len(ours) == len(theirs)
    prefix = "  Function start filename: "
    for position, (mine, their) in enumerate(zip(ours, theirs, strict=True)):
        if mine != their:
            # LLVM's miss: its DILineInfo's default, "<invalid>", stays where no inline chain was read.
            assert their in (prefix, f"{prefix}<invalid>") and mine.startswith(prefix), (position, mine, their)
            start_line = int(ours[position + 1].removeprefix("  Function start line: "))
            assert (start_line, PurePosixPath(mine.removeprefix(prefix)).name) in _implicit_decl_files(stored["binary"])
    assert "  Line: " in done.stdout and "  Filename: " in done.stdout


@pytest.mark.parametrize("name", ["cdemo-gcc-dwarf5-pie", "cppdemo-gcc-dwarf5-pie"])
def test_indexed_answers_write_the_fields_the_debug_info_gives(name: str, tmp_path: Path) -> None:
    """Discriminators, start files and entries come back from the persistent index as read: the
    JSON and --verbose answers from an index are the uncached ones, and they hold every field."""
    stored = _stored(name)
    built = subprocess.run(
        [sys.executable, "-m", "symbolize", "index", "--cache-dir", str(tmp_path), stored["binary"]],
        capture_output=True, text=True, cwd=FIXTURES,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr
    indexed = [sys.executable, "-m", "symbolize", "lookup", "--cache-dir", str(tmp_path), "--no-background-index"]
    outputs = {}
    for flags in ("--output-style=JSON", "--verbose"):
        words = ["--obj", stored["binary"], *flags.split(), *stored["addresses"]]
        from_index = subprocess.run([*indexed, *words], capture_output=True, text=True, cwd=FIXTURES)
        assert from_index.returncode == 0, from_index.stderr
        assert from_index.stdout == _lookup(words).stdout
        outputs[flags] = from_index.stdout
    answers = json.loads(outputs["--output-style=JSON"])
    assert any(frame["Discriminator"] for answer in answers for frame in answer["Symbol"])
    assert any(frame["StartFileName"] for answer in answers for frame in answer["Symbol"])
    # An inlined frame's entry is its DIE's DW_AT_low_pc (the outermost's is the symbol's).
    assert any(frame["StartAddress"] for answer in answers for frame in answer["Symbol"][:-1])


def _live_llvm_symbolizer() -> Path | None:
    """llvm-symbolizer 22, else the system's (Debian's llvm, 14 on bookworm), None when neither is."""
    if LLVM_22.exists():
        return LLVM_22
    found = shutil.which("llvm-symbolizer")
    return Path(found) if found else None


@pytest.mark.parametrize("name", ["rustdemo-lines", "rustdemo-full", "rs-cargo-packed"])
def test_relativenames_changes_the_file_names_llvm_symbolizer_changes(name: str) -> None:
    """Live only (no answer is stored: llvm-symbolizer 22 was not at hand when this was written).
    Rust binaries join the standard library's files under its own compilation directory
    (``/rustc/HASH``) and give the crate's copies of the same paths whole: ``--relativenames``
    drops the directory from the first alone, per unit. Compared as what the flag changes, line by
    line, so that the names the two tools spell differently (LLVM 14's demangling) do not count:
    every line LLVM changes becomes LLVM's line, and no other line changes."""
    peer = _live_llvm_symbolizer()
    if peer is None:
        pytest.skip("llvm-symbolizer is not installed")
    expected = json.loads((FIXTURES / "expected" / f"{name}.json").read_text())
    words = ["--obj", expected["binary"], "-i", *[entry["address"] for entry in expected["addresses"]][::3][:100]]
    outputs = []
    for flags in ([], ["--relativenames"]):
        theirs = subprocess.run([str(peer), *words, *flags], capture_output=True, text=True, cwd=FIXTURES)
        ours = _lookup([*words, *flags])
        assert ours.returncode == 0, ours.stderr
        outputs.append((theirs.stdout.split("\n"), ours.stdout.split("\n")))
    (theirs_before, ours_before), (theirs_after, ours_after) = outputs
    assert len(theirs_before) == len(theirs_after) == len(ours_before) == len(ours_after)
    changed = {at for at, pair in enumerate(zip(theirs_before, theirs_after, strict=True)) if pair[0] != pair[1]}
    assert changed, "the fixture should have names the flag shortens"
    assert all(ours_after[at] == theirs_after[at] for at in changed if ours_before[at] == theirs_before[at])
    assert all(ours_after[at] == ours_before[at] for at in range(len(ours_after)) if at not in changed)


def test_relativenames_reads_each_units_own_split(tmp_path: Path) -> None:
    """The standard library's files lose their compilation directory (``/rustc/HASH/``) in JSON
    too (FileName and StartFileName), from an index as without one, and -s still wins (as in
    llvm-symbolizer)."""
    expected = json.loads((FIXTURES / "expected" / "rustdemo-full.json").read_text())
    words = ["--obj", expected["binary"], "--output-style=JSON", *[entry["address"] for entry in expected["addresses"]]]
    plain = json.loads(_lookup(words).stdout)
    relative = json.loads(_lookup([*words, "--relativenames"]).stdout)
    built = subprocess.run(
        [sys.executable, "-m", "symbolize", "index", "--cache-dir", str(tmp_path), expected["binary"]],
        capture_output=True, text=True, cwd=FIXTURES,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr
    indexed = subprocess.run(
        [sys.executable, "-m", "symbolize", "lookup", "--cache-dir", str(tmp_path), "--no-background-index", *words,
         "--relativenames"], capture_output=True, text=True, cwd=FIXTURES,
    )  # fmt: skip
    assert json.loads(indexed.stdout) == relative
    shortened = {field: 0 for field in ("FileName", "StartFileName")}
    for before, after in zip(plain, relative, strict=True):
        for frame, short in zip(before["Symbol"], after["Symbol"], strict=True):
            for field in shortened:
                if frame[field] != short[field]:
                    assert frame[field].endswith("/" + short[field]) and not short[field].startswith("/")
                    shortened[field] += 1
    assert all(shortened.values()), shortened
    basenames = json.loads(_lookup([*words, "--relativenames", "-s"]).stdout)
    assert basenames == json.loads(_lookup([*words, "-s"]).stdout)


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
            assert _fields_agree(theirs, ours, theirs["ModuleName"])
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


_HEX_LINE = st.from_regex(r"0x[0-9a-fA-F]{1,17}", fullmatch=True)


@given(st.lists(st.text(alphabet="0xX1fFg \n", max_size=20) | _HEX_LINE
                | st.lists(_HEX_LINE, min_size=2, max_size=3).map("\n".join), min_size=1, max_size=6))
def test_a_batch_is_plain_hex_where_each_line_is(lines: list[str]) -> None:
    """One match over the joined lines says what a match per line says, a line holding a newline
    (an argument can) or past sixteen digits included."""
    assert _all_plain_hex(lines) == all(map(_PLAIN_HEX, lines))
