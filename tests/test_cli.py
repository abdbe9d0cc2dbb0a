"""The command line through typer's CliRunner, plus one real subprocess."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from symbolize import api
from symbolize.answer_text import frame_json as _frame_json
from symbolize.answer_text import parse_address
from symbolize.cli.app import app
from symbolize.cli.profile_command import default_output_path
from symbolize.discovery import FileLoader
from symbolize.formats.errors import MissingDebugInfoError
from symbolize.formats.types import Frame
from symbolize.module import Module, Reason, Unknown
from symbolize.pprof import read_profile, write_profile
from symbolize.proto.profile_pb2 import Profile
from tests.fixtures_data import ROOT

FIXTURE_BIN = ROOT / "fixtures" / "bin"
NOPIE = FIXTURE_BIN / "cdemo-clang-dwarf4-nopie"
LLVM_SYMBOLIZER = shutil.which("llvm-symbolizer")
LLVM_NM = shutil.which("llvm-nm")
needs_llvm = pytest.mark.skipif(
    LLVM_SYMBOLIZER is None or LLVM_NM is None or not NOPIE.is_file(),
    reason="llvm-symbolizer/llvm-nm or the fixtures are missing",
)

runner = CliRunner()


class FakeModule(Module):
    def lookup(self, vaddrs: Sequence[int]) -> list[list[Frame] | Unknown]:
        return [
            [Frame("_ZN2ns5innerEv", "inner.h", 3, 7), Frame("_ZN2ns5outerEi", "outer.cc", 12, 5)]
            if vaddr == 0x10
            else Unknown(Reason.NOT_COVERED)
            for vaddr in vaddrs
        ]


@pytest.fixture
def fake_module(monkeypatch: pytest.MonkeyPatch) -> None:
    def fake_open(path: Path, options: FileLoader, arch: str | None = None) -> Module:
        if not path.name.startswith("fake"):
            raise MissingDebugInfoError("binary not found", path)
        return FakeModule(image=None)  # type: ignore[arg-type]

    monkeypatch.setattr(api, "discovery_open_module", fake_open)


def test_lookup_json_shape(fake_module: None) -> None:
    result = runner.invoke(app, ["lookup", "--obj", "fake", "--json", "0x10", "16", "0x20", "nonsense"])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert rows[0] == {
        "address": "0x10",
        "frames": [
            {"function": "ns::inner()", "file": "inner.h", "line": 3, "column": 7},
            {"function": "ns::outer(int)", "file": "outer.cc", "line": 12, "column": 5},
        ],
    }
    assert rows[1]["address"] == "0x10" and len(rows[1]["frames"]) == 2
    assert rows[2] == {"address": "0x20", "frames": [], "reason": "not-covered"}
    assert rows[3] == {"address": "nonsense", "frames": [], "reason": "not-an-address"}


def test_lookup_json_gives_an_unnamed_address_its_reason() -> None:
    binary = FIXTURE_BIN / "cdemo-gcc-symtab"
    result = runner.invoke(app, ["lookup", "--obj", str(binary), "--json", "--no-cache", "0x0", "zz"])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert rows == [
        {"address": "0x0", "frames": [], "reason": "not-covered"},
        {"address": "zz", "frames": [], "reason": "not-an-address"},
    ]


@given(
    function=st.none() | st.text(),
    file=st.none() | st.text(),
    line=st.integers(min_value=0, max_value=2**32),
    column=st.integers(min_value=0, max_value=2**16),
)
def test_lookup_json_frames_are_spelled_as_json_dumps(
    function: str | None, file: str | None, line: int, column: int
) -> None:
    frame = Frame(function, file, line, column)
    expected = json.dumps({"function": function, "file": file, "line": line, "column": column})
    assert _frame_json(frame) == expected


def test_lookup_json_lines_of_a_real_binary_are_json_dumps_lines() -> None:
    vaddrs = [hex(vaddr) for vaddr in range(0x401000, 0x401400, 8)]
    result = runner.invoke(app, ["lookup", "--obj", str(NOPIE), "--json", "--no-cache", *vaddrs])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert len(lines) == len(vaddrs)
    assert sum(bool(json.loads(line)["frames"]) for line in lines) > len(vaddrs) // 2
    assert all(json.dumps(json.loads(line)) == line for line in lines)


def test_lookup_text_like_llvm_symbolizer(fake_module: None) -> None:
    result = runner.invoke(app, ["lookup", "--obj", "fake", "--demangle", "none"], input="0x10\n\n0x20\n")
    assert result.exit_code == 0, result.output
    # The empty line is answered as llvm-symbolizer answers it: echoed, one empty line.
    assert result.stdout == "_ZN2ns5innerEv\ninner.h:3:7\n_ZN2ns5outerEi\nouter.cc:12:5\n\n\n??\n??:0:0\n\n"


def test_lookup_no_inlines_keeps_outer_name_inner_line(fake_module: None) -> None:
    result = runner.invoke(app, ["lookup", "--obj", "fake", "--no-inlines", "--demangle", "short", "0x10"])
    assert result.stdout == "ns::outer\ninner.h:3:7\n\n"


def test_error_is_one_line_and_exit_1(fake_module: None) -> None:
    result = runner.invoke(app, ["lookup", "--obj", "missing", "0x10"])
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr == "symbolize: error: missing: binary not found\n"


def test_debug_shows_the_exception(fake_module: None) -> None:
    result = runner.invoke(app, ["--debug", "lookup", "--obj", "missing", "0x10"])
    assert isinstance(result.exception, MissingDebugInfoError)


def test_malformed_profile_is_one_line(tmp_path: Path) -> None:
    broken = tmp_path / "broken.pb"
    broken.write_bytes(b"\xff\xff\xff")
    result = runner.invoke(app, ["profile", str(broken)])
    assert result.exit_code == 1
    assert len(result.stderr.splitlines()) == 1
    assert result.stderr.startswith(f"symbolize: error: {broken}: not a pprof profile")
    assert not (tmp_path / "broken.symbolized.pb").exists()


def test_usage_error_exits_2() -> None:
    result = runner.invoke(app, ["profile", "x.pb", "--demangle", "bogus"])
    assert result.exit_code == 2


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("cpu.pb.gz", "cpu.symbolized.pb.gz"),
        ("cpu.pprof", "cpu.symbolized.pprof"),
        ("my.app.heap.pb", "my.app.heap.symbolized.pb"),
        ("profile", "profile.symbolized"),
        (".gz", ".gz.symbolized"),
    ],
)
def test_default_output_path(name: str, expected: str) -> None:
    assert default_output_path(Path("/d") / name) == Path("/d") / expected


@pytest.mark.parametrize(("text", "value"), [("0x1F", 31), ("0X10", 16), ("42", 42), ("zz", None), ("0xg", None)])
def test_parse_address(text: str, value: int | None) -> None:
    assert parse_address(text) == value


def _function_addresses(binary: Path) -> list[int]:
    assert LLVM_NM is not None
    listing = subprocess.run([LLVM_NM, "--defined-only", str(binary)], capture_output=True, text=True, check=True)
    names = ("hash_words", "hash_phase", "compare_u32", "main")
    return [int(line.split()[0], 16) + 4 for line in listing.stdout.splitlines() if line.split()[-1] in names]


@needs_llvm
def test_lookup_matches_llvm_symbolizer() -> None:
    assert LLVM_SYMBOLIZER is not None
    addresses = [hex(vaddr) for vaddr in _function_addresses(NOPIE)]
    assert addresses
    expected = subprocess.run(
        [LLVM_SYMBOLIZER, "--obj", str(NOPIE), *addresses], capture_output=True, text=True, check=True
    ).stdout
    result = runner.invoke(app, ["lookup", "--obj", str(NOPIE), *addresses])
    assert result.exit_code == 0, result.output
    assert result.stdout.replace("> >", ">>") == expected.replace("> >", ">>")


@needs_llvm
@pytest.mark.parametrize("json_summary", [False, True])
def test_profile_end_to_end(tmp_path: Path, json_summary: bool) -> None:
    assert LLVM_SYMBOLIZER is not None
    vaddrs = _function_addresses(NOPIE)
    profile = Profile(string_table=["", "alloc_space", "bytes", str(NOPIE), "[vdso]"])
    profile.sample_type.add(type=1, unit=2)
    profile.mapping.add(id=1, memory_start=0x400000, memory_limit=0x405000, filename=3)
    profile.mapping.add(id=2, memory_start=0x7FFF0000, memory_limit=0x7FFF1000, filename=4)
    for location_id, vaddr in enumerate(vaddrs, start=1):
        # Heap stacks hold return addresses: the address after each "call".
        profile.location.add(id=location_id, mapping_id=1, address=vaddr + 1)
    vdso_id = len(vaddrs) + 1
    profile.location.add(id=vdso_id, mapping_id=2, address=0x7FFF0010)
    profile.sample.add(location_id=[vdso_id, *range(1, len(vaddrs) + 1)], value=[100])
    source = tmp_path / "heap.pb.gz"
    write_profile(profile, source, gzip=True)

    arguments = ["profile", str(source), "--debug-dir", str(tmp_path)]
    result = runner.invoke(app, arguments + (["--json-summary"] if json_summary else []))
    assert result.exit_code == 0, result.output
    if json_summary:
        summary = json.loads(result.stdout)
        assert (summary["locations"], summary["named"], summary["unnamed"]) == (len(vaddrs) + 1, len(vaddrs), 1)
        assert summary["unnamed_value_share"] == {"alloc_space": 1.0}
        assert {m["filename"] for m in summary["mappings"]} == {str(NOPIE), "[vdso]"}
    else:
        assert result.stdout == ""
        assert "total:" in result.stderr

    rewritten, was_gzipped = read_profile(tmp_path / "heap.symbolized.pb.gz")
    assert was_gzipped
    strings = rewritten.string_table
    functions = {function.id: strings[function.name] for function in rewritten.function}
    expected_text = subprocess.run(
        [LLVM_SYMBOLIZER, "--obj", str(NOPIE), *[hex(vaddr) for vaddr in vaddrs]],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    expected = [block.splitlines()[0::2] for block in expected_text.strip().split("\n\n")]
    by_id = {location.id: location for location in rewritten.location}
    got = [[functions[line.function_id] for line in by_id[i].line] for i in range(1, len(vaddrs) + 1)]
    assert got == expected
    assert len(by_id[vdso_id].line) == 0
    assert list(rewritten.sample[0].value) == [100]


def test_python_m_symbolize_help() -> None:
    completed = subprocess.run(
        [sys.executable, "-m", "symbolize", "--help"], capture_output=True, text=True, cwd=ROOT, check=False
    )
    assert completed.returncode == 0, completed.stderr
    assert "profile" in completed.stdout and "lookup" in completed.stdout


def test_package_import_does_not_load_typer() -> None:
    code = "import sys, symbolize; symbolize.lookup; symbolize.Summary; print('typer' in sys.modules)"
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert completed.stdout.strip() == "False"
