"""Real sampled profiles of the fixture programs, symbolized end to end.

The profiles in ``fixtures/profiles`` were recorded by the fixture sampler in
real processes (ASLR, real mappings, return addresses). Each must come back with
every location of a fixture binary named, samples untouched, and, where
llvm-symbolizer is installed, the same frames llvm-symbolizer gives for the
same object addresses.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from symbolize.api import symbolize_profile
from symbolize.pprof import StringTable, read_profile
from symbolize.proto.profile_pb2 import Mapping, Profile
from tests.fixtures_data import FIXTURES

BIN = FIXTURES / "bin"
# pprof profiles from the fixture sampler, and gperftools' own formats (fixtures/make_gperf_profiles.py),
# of the ELF fixtures; the heap_v2 files of the PE and Mach-O fixtures are in test_foreign_heap_v2.py.
FOREIGN_HEAP_V2 = {"winapp.windows.heap_v2", "usemshape-x86_64.macos.heap_v2"}
PROFILES = sorted(p for p in (FIXTURES / "profiles").glob("*.pb*") if p.is_file()) + sorted(
    p for p in (FIXTURES / "profiles" / "gperftools").iterdir() if p.name not in FOREIGN_HEAP_V2
)
LLVM_SYMBOLIZER = shutil.which("llvm-symbolizer")


def _fixture_mappings(profile: Profile) -> dict[int, Path]:
    """Mapping id -> fixture binary, for mappings of files shipped in fixtures/bin."""
    strings = StringTable(profile)
    found = {}
    for mapping in profile.mapping:
        # Windows-shaped profiles name modules with backslashes.
        candidate = BIN / strings.get(mapping.filename).replace("\\", "/").rsplit("/", 1)[-1]
        if strings.get(mapping.filename) and candidate.is_file():
            found[mapping.id] = candidate
    return found


def _symbolized(path: Path) -> tuple[Profile, Profile]:
    original, _ = read_profile(path)
    rewritten, _ = symbolize_profile(path, search_paths=[BIN])
    return original, rewritten


@pytest.mark.parametrize("path", PROFILES, ids=lambda p: p.name)
def test_every_fixture_location_is_named_and_samples_are_kept(path: Path) -> None:
    original, rewritten = _symbolized(path)
    mappings = _fixture_mappings(rewritten)
    assert mappings, "the profile has no mapping of a fixture binary"
    fixture_locations = [loc for loc in rewritten.location if loc.mapping_id in mappings]
    assert fixture_locations
    assert [loc.id for loc in fixture_locations if not loc.line] == []
    # Samples keep their values; stacks keep their length (a split location only changes ids).
    assert [list(s.value) for s in original.sample] == [list(s.value) for s in rewritten.sample]
    assert [len(s.location_id) for s in original.sample] == [len(s.location_id) for s in rewritten.sample]
    addresses = {loc.id: loc.address for loc in rewritten.location}
    assert [[addresses[i] for i in s.location_id] for s in rewritten.sample] == [
        [loc.address for i in s.location_id for loc in original.location if loc.id == i] for s in original.sample
    ]


def _load_segments(binary: Path) -> tuple[bool, list[tuple[int, int, int]]]:
    """(is ET_EXEC, [(p_offset, p_vaddr, p_filesz)]) as llvm-readelf prints them."""
    output = subprocess.run(["llvm-readelf", "-hlW", str(binary)], capture_output=True, text=True, check=True).stdout
    segments = [
        (int(fields[1], 16), int(fields[2], 16), int(fields[4], 16))
        for fields in (line.split() for line in output.splitlines())
        if fields and fields[0] == "LOAD"
    ]
    return "EXEC (Executable file)" in output, segments


def _object_address(mapping: Mapping, runtime_addr: int, binary: Path) -> int:
    """The object address, derived from llvm-readelf's program headers rather than symbolize.normalize.

    A /proc/maps mapping maps file offsets: find the PT_LOAD holding the offset. A whole-module
    mapping (offset 0, larger than any one segment, as the daemon-style profile has) is the
    image loaded at a bias from the first PT_LOAD's page.
    """
    is_exec, segments = _load_segments(binary)
    if is_exec:
        return runtime_addr
    file_offset = runtime_addr - mapping.memory_start + mapping.file_offset
    first_vaddr = segments[0][1]
    # An offset-0 mapping larger than a segment's page span is the whole module. A smaller one is one
    # maps line, even one starting above the first page: lld puts code in file page 0 at a higher vaddr.
    page_spans = [((vaddr + filesz + 0xFFF) & ~0xFFF) - (vaddr & ~0xFFF) for offset, vaddr, filesz in segments]
    if mapping.file_offset == 0 and mapping.memory_limit - mapping.memory_start > max(page_spans):
        return runtime_addr - mapping.memory_start + (first_vaddr & ~0xFFF)
    for p_offset, p_vaddr, p_filesz in segments:
        if p_offset <= file_offset < p_offset + p_filesz:
            return p_vaddr + file_offset - p_offset
    raise AssertionError(f"{runtime_addr:#x} is outside {binary.name}'s segments")


@pytest.mark.skipif(LLVM_SYMBOLIZER is None or shutil.which("llvm-readelf") is None,
                    reason="llvm-symbolizer not installed")
@pytest.mark.parametrize("path", PROFILES, ids=lambda p: p.name)
def test_profile_frames_match_llvm_symbolizer(path: Path) -> None:
    _, rewritten = _symbolized(path)
    strings = StringTable(rewritten)
    sample_types = {strings.get(t.type) for t in rewritten.sample_type}
    on_cpu = bool(sample_types & {"cpu", "samples"})
    leaf_ids = {s.location_id[0] for s in rewritten.sample if s.location_id}
    functions = {f.id: f for f in rewritten.function}
    mappings = _fixture_mappings(rewritten)
    by_binary: dict[Path, list[tuple[int, list[tuple[str, int]]]]] = {}
    for location in rewritten.location:
        binary = mappings.get(location.mapping_id)
        if binary is None:
            continue
        mapping = next(m for m in rewritten.mapping if m.id == location.mapping_id)
        vaddr = _object_address(mapping, location.address, binary)
        if not (on_cpu and location.id in leaf_ids):
            vaddr -= 1
        ours = [(strings.get(functions[line.function_id].system_name), line.line) for line in location.line]
        by_binary.setdefault(binary, []).append((vaddr, ours))
    disagreements = []
    for binary, entries in by_binary.items():
        output = subprocess.run(
            [str(LLVM_SYMBOLIZER), f"--obj={binary}", "--output-style=JSON", "--inlines", "--no-demangle"],
            input="\n".join(hex(vaddr) for vaddr, _ in entries), capture_output=True, text=True, check=True,
        ).stdout
        for (vaddr, ours), line in zip(entries, output.splitlines(), strict=True):
            theirs = [(f["FunctionName"], f["Line"]) for f in json.loads(line)["Symbol"]]
            if theirs[0][0] in ("??", ""):
                continue  # llvm-symbolizer cannot name it either
            same = len(ours) == len(theirs) and all(
                o == t or (o[1] == t[1] and o[0].endswith("::" + t[0])) for o, t in zip(ours, theirs, strict=True)
            )
            if not same:
                disagreements.append((binary.name, hex(vaddr), theirs, ours))
    assert disagreements == []
