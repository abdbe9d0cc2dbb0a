"""Heap profiles read like pprof's: the allocator's frames are the profile's drop_frames by default.

On the fixture heap profiles (the LD_PRELOAD sampler's, tcmalloc's heap_v2, a C++ one), the top
leaf functions are the allocating callers once the default applies and the allocator's own
frames without it (``--drop-frames ''``); Google's pprof, where at hand, reads the written
``drop_frames`` and agrees with the summary's top leaf (``pprof -top``). The stack shapes no
fixture here holds (mimalloc-pprof's sampler frames, the Rust shims, operator new) are checked on
small profiles built here, with pprof's Prune rules.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from symbolize.api import symbolize_profile
from symbolize.cli.app import app
from symbolize.drop_frames import HEAP_DROP_FRAMES
from symbolize.pprof import StringTable, read_profile
from symbolize.proto.profile_pb2 import Profile
from symbolize.rewrite import symbolize_profile as rewrite_profile
from symbolize.top_functions import simplified_name, top_leaf_functions
from tests.fixtures_data import FIXTURES

BIN = FIXTURES / "bin"
PROFILES = FIXTURES / "profiles"
RUST_HEAP = PROFILES / "rustdemo-full.heap.pb"
CPP_HEAP = PROFILES / "cppdemo-gcc-dwarf5-pie.heap.pb"
CPU = PROFILES / "rustdemo-full.cpu.pb"
PPROF = os.environ.get("SYMBOLIZE_PPROF") or shutil.which("pprof")
ALLOCATOR = re.compile(HEAP_DROP_FRAMES)


def _leaves(summary_json: dict[str, object], sample_type: str) -> list[str]:
    tops = summary_json["top_functions"]
    assert isinstance(tops, dict)
    return [entry["function"] for entry in tops[sample_type]]


@pytest.mark.parametrize("profile_path", [RUST_HEAP, CPP_HEAP], ids=lambda path: path.name)
def test_a_heap_profile_drops_the_allocator_frames_by_default(profile_path: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.pb"
    result = CliRunner().invoke(
        app, ["profile", str(profile_path), "-o", str(out), "--search-path", str(BIN), "--json-summary",
              "--no-background-index"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["drop_frames"] == {"pattern": HEAP_DROP_FRAMES, "source": "heap default"}
    written, _ = read_profile(out)
    assert StringTable(written).get(written.drop_frames) == HEAP_DROP_FRAMES
    leaves = _leaves(summary, "alloc_space")
    assert leaves and not any(ALLOCATOR.fullmatch(simplified_name(name)) for name in leaves)

    # --drop-frames '' turns the default off: the allocator is the leaf again.
    kept = tmp_path / "kept.pb"
    result = CliRunner().invoke(
        app, ["profile", str(profile_path), "-o", str(kept), "--search-path", str(BIN), "--json-summary",
              "--no-background-index", "--drop-frames", ""],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    off = json.loads(result.stdout)
    assert off["drop_frames"] is None
    written, _ = read_profile(kept)
    assert written.drop_frames == 0
    assert ALLOCATOR.fullmatch(simplified_name(_leaves(off, "alloc_space")[0]))


def test_the_text_summary_says_so_and_the_rust_leaf_is_no_longer_the_allocator() -> None:
    _, summary = symbolize_profile(RUST_HEAP, search_paths=[BIN])
    text = summary.format_text()
    assert "drop_frames: the allocator's frames (heap profile default" in text
    _, without = symbolize_profile(RUST_HEAP, search_paths=[BIN], drop_frames="")
    assert without.top_functions[0][0] == "alloc::alloc::alloc"  # 100% before
    assert summary.top_functions[0][0] != "alloc::alloc::alloc"


def test_a_given_drop_frames_wins_and_a_cpu_profile_gets_none() -> None:
    profile, summary = symbolize_profile(RUST_HEAP, search_paths=[BIN], drop_frames="alloc::alloc::alloc")
    assert StringTable(profile).get(profile.drop_frames) == "alloc::alloc::alloc"
    assert summary.drop_frames is not None and summary.drop_frames.source == "given"
    profile, summary = symbolize_profile(CPU, search_paths=[BIN])
    assert profile.drop_frames == 0 and summary.drop_frames is None
    assert summary.to_json()["drop_frames"] is None


def _synthetic(stacks: list[tuple[list[list[str]], int]], own_drop_frames: str = "") -> Profile:
    """A heap profile whose locations are already named: each stack leaf first, each location its
    frames innermost first."""
    profile = Profile()
    profile.string_table.extend(["", "alloc_objects", "count", "alloc_space", "bytes"])
    profile.sample_type.add(type=1, unit=2)
    profile.sample_type.add(type=3, unit=4)
    if own_drop_frames:
        profile.string_table.append(own_drop_frames)
        profile.drop_frames = len(profile.string_table) - 1
    functions: dict[str, int] = {}
    for stack, value in stacks:
        location_ids = []
        for frames in stack:
            location = profile.location.add(id=len(profile.location) + 1, address=0x1000 + len(profile.location))
            for name in frames:
                if name not in functions:
                    profile.string_table.append(name)
                    functions[name] = len(functions) + 1
                    profile.function.add(id=functions[name], name=len(profile.string_table) - 1)
                location.line.add(function_id=functions[name])
            location_ids.append(location.id)
        profile.sample.add(location_id=location_ids, value=[1, value])
    return profile


def test_mimalloc_rust_and_operator_new_stacks_start_at_the_program() -> None:
    mimalloc_rust = [
        ["_mi_prof_stack_intern"], ["_mi_prof_sample"], ["mi_malloc_aligned"],
        ["<mimalloc::MiMalloc as core::alloc::global::GlobalAlloc>::alloc", "__rust_alloc"],
        ["alloc::alloc::alloc", "<alloc::alloc::Global>::alloc_impl", "alloc::raw_vec::finish_grow"],
        ["app::parse::{{closure}}", "app::parse"], ["app::main"],
    ]  # fmt: skip
    realloc_rust = [["realloc"], ["__rust_realloc"], ["alloc::alloc::realloc"], ["app::grow"], ["app::main"]]
    operator_new = [["tc_new"], ["operator new(unsigned long)"], ["Parser::Parser(char const*)"], ["main"]]
    malloc_only = [["__libc_malloc"], ["malloc"]]  # a walk that stopped in the allocator
    profile = _synthetic([(mimalloc_rust, 100), (realloc_rust, 50), (operator_new, 30), (malloc_only, 5)])
    summary = rewrite_profile(profile)
    assert summary.drop_frames is not None and summary.drop_frames.source == "heap default"
    tops = {top.function: top.value for top in summary.top_functions_by_type["alloc_space"]}
    # pprof's Prune: frames matching before the program's first are kept, so a stack of the
    # allocator alone keeps its leaf (pprof shows it too).
    assert tops == {"app::parse::{{closure}}": 100, "app::grow": 50, "Parser::Parser(char const*)": 30,
                    "__libc_malloc": 5}  # fmt: skip


def test_a_heap_profile_with_its_own_drop_frames_keeps_it() -> None:
    profile = _synthetic([([["mi_malloc"], ["app::main"]], 10)], own_drop_frames="nothing_here")
    summary = rewrite_profile(profile)
    assert StringTable(profile).get(profile.drop_frames) == "nothing_here"
    assert summary.drop_frames is not None and summary.drop_frames.source == "profile"
    assert [(top.function, top.value) for top in summary.top_functions_by_type["alloc_space"]] == [("mi_malloc", 10)]


@pytest.mark.parametrize(
    ("name", "simplified"),
    [
        ("operator new(unsigned long)", "operator new"),
        ("ns::A::operator()(int) const", "ns::A::operator()"),
        ("(anonymous namespace)::f(int)", "(anonymous namespace)::f"),
        (".foo(int)", "foo"),
        ("alloc::vec::Vec<T,A>::push", "alloc::vec::Vec<T,A>::push"),
    ],
)
def test_names_are_simplified_as_pprof_simplifies_them(name: str, simplified: str) -> None:
    assert simplified_name(name) == simplified


def test_pprof_drops_the_same_frames_top_functions_skip() -> None:
    # A location whose inline chain holds the match keeps only its lines outside it, as pprof trims.
    profile = _synthetic([([["alloc::alloc::alloc", "app::inner", "app::outer"], ["main"]], 7)])
    tops = top_leaf_functions(profile, StringTable(profile), re.compile(HEAP_DROP_FRAMES))
    assert [(top.function, top.value) for top in tops["alloc_space"]] == [("app::inner", 7)]


@pytest.mark.skipif(PPROF is None, reason="Google's pprof is not installed (fixtures/build_pprof.sh builds it)")
@pytest.mark.parametrize("profile_path", [RUST_HEAP, CPP_HEAP], ids=lambda path: path.name)
def test_pprof_top_of_the_output_starts_at_the_summarys_leaf(profile_path: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.pb"
    summary = rewrite_profile_file(profile_path, out)
    shown = subprocess.run(
        [str(PPROF), "-symbolize=none", "-top", "-sample_index=alloc_space", "-nodecount=3", str(out)],
        capture_output=True, text=True, check=True, timeout=120,
    ).stdout  # fmt: skip
    rows = [line for line in shown.splitlines() if re.match(r"\s+[0-9.]+[kMG]?B\s", line)]
    assert rows, shown
    first = re.sub(r" \(inline\)$", "", rows[0].split("%", 3)[3].strip())
    assert first == summary.top_functions_by_type["alloc_space"][0].function
    assert not ALLOCATOR.fullmatch(simplified_name(first))


def rewrite_profile_file(profile_path: Path, out: Path) -> object:
    from symbolize.api import symbolize_file

    return symbolize_file(profile_path, out, search_paths=[BIN])
