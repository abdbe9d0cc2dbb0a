"""Frames named ``module+0xOFFSET`` (symbolize/offset_frames.py): named, merged, values conserved.

The fixtures in ``fixtures/profiles/offsets`` are the real sampled ``rustdemo-full.cpu.pb``
respelled by ``fixtures/make_offset_profiles.py`` (``<module>+0x<rel>``,
``<module@0xBASE>+0x<rel>``, ``0x<abs>``). Naming them must give, sample by sample and frame by
frame, what naming the original addresses gives (which ``test_fixture_profiles.py`` checks
against llvm-symbolizer), and llvm-symbolizer's answer for ``rel`` directly.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import pefile
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from symbolize.api import symbolize_profile
from symbolize.cli.app import app
from symbolize.formats.errors import MissingDebugInfoError
from symbolize.formats.open import open_object
from symbolize.formats.types import Frame, Segment
from symbolize.module import Module, Unknown
from symbolize.offset_frames import OffsetFrame, parse_offset_frame
from symbolize.pprof import StringTable, read_profile
from symbolize.proto.profile_pb2 import Profile
from symbolize.rewrite import RewriteOptions
from symbolize.rewrite import symbolize_profile as rewrite_profile
from tests.fixtures_data import FIXTURES

BIN = FIXTURES / "bin"
SOURCE = FIXTURES / "profiles" / "rustdemo-full.cpu.pb"
SPELLINGS = ["module-offset", "module-base-offset", "absolute"]
LLVM_SYMBOLIZER = shutil.which("llvm-symbolizer")


def _offsets(spelling: str) -> Path:
    return FIXTURES / "profiles" / "offsets" / f"rustdemo-full.cpu.{spelling}.pb"


def _stacks(profile: Profile) -> list[list[tuple[str, ...] | str]]:
    """Per sample, per frame: the function names of its location (innermost first), or its one name."""
    strings = StringTable(profile)
    names = {function.id: strings.get(function.system_name) for function in profile.function}
    lines = {location.id: tuple(names[line.function_id] for line in location.line) for location in profile.location}
    return [[lines[location_id] for location_id in sample.location_id] for sample in profile.sample]


@pytest.mark.parametrize("spelling", SPELLINGS)
def test_offset_frames_are_named_as_their_addresses_are(spelling: str) -> None:
    by_address, _ = symbolize_profile(SOURCE, search_paths=[BIN])
    spelled, _ = read_profile(_offsets(spelling))
    named, summary = symbolize_profile(_offsets(spelling), search_paths=[BIN])
    source, _ = read_profile(SOURCE)
    source_strings = StringTable(source)
    fixture_mapping = next(m.id for m in source.mapping if source_strings.get(m.filename).endswith("/rustdemo-full"))
    in_fixture = {location.id for location in source.location if location.mapping_id == fixture_mapping}
    compared = 0
    for sample, ours, theirs in zip(source.sample, _stacks(named), _stacks(by_address), strict=True):
        for location_id, our_frames, their_frames in zip(sample.location_id, ours, theirs, strict=True):
            was_named = not (len(our_frames) == 1 and parse_offset_frame(our_frames[0]) is not None)
            if location_id in in_fixture:
                assert was_named, our_frames
            if was_named:
                assert our_frames == their_frames
                compared += 1
    assert compared >= sum(len(s.location_id) for s in source.sample) // 2
    # Values and stack depths are kept; nothing is summed twice.
    assert [list(s.value) for s in named.sample] == [list(s.value) for s in spelled.sample]
    assert [len(s.location_id) for s in named.sample] == [len(s.location_id) for s in spelled.sample]
    assert summary.named > 0


@pytest.mark.parametrize("spelling", SPELLINGS)
def test_locations_naming_the_same_frames_are_merged(spelling: str) -> None:
    named, _ = symbolize_profile(_offsets(spelling), search_paths=[BIN])
    keys = [tuple((line.function_id, line.line, line.column) for line in loc.line) for loc in named.location]
    assert len(keys) == len(set(keys))
    used = {i for s in named.sample for i in s.location_id}
    assert used <= {loc.id for loc in named.location}
    assert len({loc.id for loc in named.location}) == len(named.location)


@pytest.mark.skipif(LLVM_SYMBOLIZER is None, reason="llvm-symbolizer not installed")
def test_module_offset_frames_match_llvm_symbolizer_at_rel() -> None:
    spelled, _ = read_profile(_offsets("module-offset"))
    named, _ = symbolize_profile(_offsets("module-offset"), search_paths=[BIN])
    strings = StringTable(spelled)
    names = {f.id: strings.get(f.name) for f in spelled.function}
    spelled_names = {loc.id: names[loc.line[0].function_id] for loc in spelled.location}
    named_strings = StringTable(named)
    functions = {f.id: named_strings.get(f.system_name) for f in named.function}
    lines = {loc.id: [(functions[line.function_id], line.line) for line in loc.line] for loc in named.location}
    queries: list[tuple[int, list[tuple[str, int]]]] = []
    for spelled_sample, named_sample in zip(spelled.sample, named.sample, strict=True):
        pairs = zip(spelled_sample.location_id, named_sample.location_id, strict=True)
        for position, (before, after) in enumerate(pairs):
            frame = parse_offset_frame(spelled_names[before])
            if frame is None or frame.module != "rustdemo-full" or frame.rel is None:
                continue
            queries.append((frame.rel - (0 if position == 0 else 1), lines[after]))
    assert queries
    output = subprocess.run(
        [str(LLVM_SYMBOLIZER), f"--obj={BIN / 'rustdemo-full'}", "--output-style=JSON", "--inlines", "--no-demangle"],
        input="\n".join(hex(vaddr) for vaddr, _ in queries), capture_output=True, text=True, check=True,
    ).stdout
    differences = []
    for (vaddr, ours), line in zip(queries, output.splitlines(), strict=True):
        theirs = [(f["FunctionName"], f["Line"]) for f in json.loads(line)["Symbol"]]
        if ours != theirs:
            differences.append((hex(vaddr), ours, theirs))
    assert differences == []


def test_cli_names_offset_frames(tmp_path: Path) -> None:
    out = tmp_path / "named.pb"
    result = CliRunner().invoke(
        app, ["profile", str(_offsets("module-offset")), "-o", str(out), "--search-path", str(BIN), "--json-summary"]
    )
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    by_file = {mapping["filename"]: mapping for mapping in summary["mappings"]}
    assert by_file["rustdemo-full"]["unnamed"] == 0
    assert by_file["rustdemo-full"]["named"] > 0
    named, _ = read_profile(out)
    assert all(len(loc.line) > 0 for loc in named.location)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("app+0x1a2b", OffsetFrame("app", None, 0x1A2B, None)),
        ("<app.exe@0x7ff600000000>+0x10", OffsetFrame("app.exe", 0x7FF600000000, 0x10, None)),
        (
            "C:\\Program Files\\app.exe@0x140000000+0x1F",
            OffsetFrame("C:\\Program Files\\app.exe", 0x140000000, 0x1F, None),
        ),
        ("libstdc++.so.6+0x99", OffsetFrame("libstdc++.so.6", None, 0x99, None)),
        ("0x7fff12345678", OffsetFrame(None, None, None, 0x7FFF12345678)),
        ("main", None),
        ("operator+", None),
        ("app+0x", None),
        ("app+0x11112222333344445", None),
    ],
)
def test_spellings_parse(name: str, expected: OffsetFrame | None) -> None:
    assert parse_offset_frame(name) == expected


# --- a fake module, for generated profiles ---------------------------------------------------------

class FakeImage:
    format = "elf"
    load_base = 0
    position_dependent = False
    debug_id = None
    path = Path("/fake/app")

    def segments(self) -> Sequence[Segment]:
        return [Segment(vaddr=0x1000, memsz=0x1000, file_offset=0, filesz=0x1000, executable=True)]


class FakeModule(Module):
    """Names vaddr v as function f<v // 16> (so nearby offsets name the same frame); 0x1f00.. unknown."""

    def lookup(self, vaddrs: Sequence[int]) -> list[list[Frame] | Unknown]:
        return [
            Unknown("no symbol covers address") if vaddr >= 0x1F00 else [Frame(f"f{vaddr // 16}", "a.c", 1, 0)]
            for vaddr in vaddrs
        ]


def _fake_opener(name: str, build_id: str | None, _options: object) -> Module:
    if name not in ("app", "/fake/app"):
        raise MissingDebugInfoError("binary not found", name)
    return FakeModule(image=FakeImage())  # type: ignore[arg-type]


def _spelled_profile(stacks: list[tuple[list[tuple[str, int]], int]]) -> Profile:
    profile = Profile()
    profile.string_table.extend(["", "samples", "count", "cpu", "nanoseconds"])
    profile.sample_type.add(type=1, unit=2)
    profile.sample_type.add(type=3, unit=4)
    ids: dict[str, int] = {}
    for frames, value in stacks:
        sample = profile.sample.add(value=[value, value * 1000])
        for module, rel in frames:
            name = f"{module}+0x{rel:x}" if module != "abs" else f"0x{0x5000 + rel:x}"
            if name not in ids:
                ids[name] = len(ids) + 1
                profile.string_table.append(name)
                profile.function.add(id=ids[name], name=len(profile.string_table) - 1)
                profile.location.add(id=ids[name]).line.add(function_id=ids[name])
            sample.location_id.append(ids[name])
    return profile


frames = st.lists(
    st.tuples(st.sampled_from(["app", "app", "app", "gone", "abs"]), st.integers(0x1000, 0x1FFF)),
    min_size=1,
    max_size=6,
)


@settings(max_examples=150, deadline=None)
@given(stacks=st.lists(st.tuples(frames, st.integers(1, 1000)), max_size=12))
def test_renaming_conserves_every_sample_value(stacks: list[tuple[list[tuple[str, int]], int]]) -> None:
    profile = _spelled_profile(stacks)
    before = Profile()
    before.CopyFrom(profile)
    summary = rewrite_profile(profile, RewriteOptions(open_module=_fake_opener))
    assert [list(s.value) for s in profile.sample] == [list(s.value) for s in before.sample]
    # Each frame is named as the fake names its vaddr (leaf exact, callers at vaddr - 1), or keeps its string.
    strings = StringTable(profile)
    names = {f.id: strings.get(f.name) for f in profile.function}
    locations = {loc.id: loc for loc in profile.location}
    leaf_totals: Counter[str] = Counter()
    for sample, (stack, value) in zip(profile.sample, stacks, strict=True):
        for position, ((module, rel), location_id) in enumerate(zip(stack, sample.location_id, strict=True)):
            got = [names[line.function_id] for line in locations[location_id].line]
            lookup = rel - (0 if position == 0 else 1)
            if module == "app" and lookup < 0x1F00:
                assert got == [f"f{lookup // 16}"]
            elif module == "app":
                assert got == [f"app+0x{rel:x}"]
            elif module == "gone":
                assert got == [f"gone+0x{rel:x}"]
            else:
                assert got == [f"0x{0x5000 + rel:x}"]  # no mapping and no base: kept
        leaf_totals[names[locations[sample.location_id[0]].line[0].function_id]] += value
    # Merged locations: one per distinct frame list; every referenced location exists once.
    keys = [tuple(line.function_id for line in loc.line) for loc in profile.location]
    assert len(keys) == len(set(keys))
    assert sum(leaf_totals.values()) == sum(value for _, value in stacks)
    assert summary.locations == summary.named + summary.unnamed


# --- the rel convention per format, against llvm-symbolizer's stored answers ----------------------

EXPECTED = FIXTURES / "expected"


@pytest.mark.parametrize(
    ("expected_file", "search_dir"),
    [
        (EXPECTED / "cppdemo-gcc-dwarf5-pie.json", BIN),  # ELF PIE: rel is the vaddr
        (EXPECTED / "cppdemo-clang-dwarf5-nopie.json", BIN),  # ELF ET_EXEC: rel is the vaddr too
        (EXPECTED / "macos" / "cppdemo-macho-x86_64.json", BIN / "macos"),  # Mach-O: rel from __TEXT
        (EXPECTED / "macos" / "cppdemo-macho-arm64.json", BIN / "macos"),
        # Not the dylibs: their stored answers differ by the rule test_macho_differential.py keeps
        # (llvm-symbolizer names a -x-stripped static function by the nearest exported symbol).
    ],
    ids=lambda value: value.name,
)
def test_rel_is_named_as_llvm_symbolizer_names_its_vaddr(expected_file: Path, search_dir: Path) -> None:
    if not expected_file.is_file():
        pytest.skip(f"{expected_file.name} is not in this checkout")
    expected = json.loads(expected_file.read_text())
    binary = FIXTURES / expected["binary"]
    image = open_object(binary)
    try:
        text_base = 0 if image.format == "elf" else image.load_base
    finally:
        image.close()
    answers = [entry for entry in expected["addresses"] if entry["frames"] and entry["frames"][0]["function"]]
    profile = Profile()
    profile.string_table.extend(["", "samples", "count"])
    profile.sample_type.add(type=1, unit=2)
    profile.period_type.type = 1  # on-CPU: each one-frame sample's leaf is looked up as is
    for index, entry in enumerate(answers, 1):
        profile.string_table.append(f"{binary.name}+0x{int(entry['address'], 16) - text_base:x}")
        profile.function.add(id=index, name=len(profile.string_table) - 1)
        profile.location.add(id=index).line.add(function_id=index)
        profile.sample.add(location_id=[index], value=[1])
    named, _ = symbolize_profile(profile, search_paths=[search_dir])
    strings = StringTable(named)
    functions = {f.id: strings.get(f.system_name) for f in named.function}
    lines = {loc.id: [(functions[line.function_id], line.line) for line in loc.line] for loc in named.location}
    differences = []
    for entry, sample in zip(answers, named.sample, strict=True):
        ours = lines[sample.location_id[0]]
        theirs = [(frame["function"] or "??", frame["line"]) for frame in entry["frames"]]
        same = len(ours) == len(theirs) and all(
            o == t or (o[1] == t[1] and o[0].endswith("::" + t[0])) for o, t in zip(ours, theirs, strict=True)
        )
        if not same:
            differences.append((entry["address"], ours, theirs))
    assert len(answers) > 100
    assert differences == []


# --- the PE spelling: rel is the RVA (fixtures/make_offset_profiles.py, from the Windows profile) -----

WINDOWS_BIN = BIN / "windows"
WINDOWS_PROFILES = FIXTURES / "profiles" / "windows"


def _windows_truth() -> dict[tuple[str, int], list[dict[str, object]]]:
    """(module, vaddr) -> llvm-symbolizer's frames there, stored by make_windows_profiles.py at vaddr - 1."""
    source, _ = read_profile(WINDOWS_PROFILES / "winapp.heap.pb.gz")
    answers = json.loads((WINDOWS_PROFILES / "winapp.heap.truth.json").read_text())["locations"]
    mappings = {m.id: m for m in source.mapping}
    truth = {}
    for location in source.location:
        mapping = mappings[location.mapping_id]
        module = source.string_table[mapping.filename].rsplit("\\", 1)[-1]
        image_base = pefile.PE(str(WINDOWS_BIN / module), fast_load=True).OPTIONAL_HEADER.ImageBase
        truth[(module, image_base + location.address - mapping.memory_start - 1)] = answers[str(location.id)]
    return truth


@pytest.mark.parametrize("spelling", ["module-offset", "module-base-offset"])
def test_pe_rva_frames_are_named_as_llvm_symbolizer_names_image_base_plus_rel(spelling: str, tmp_path: Path) -> None:
    """Each frame (a heap profile: all return addresses) named as llvm names ImageBase + rel - 1.

    PDB-inlined frames compared by name, the outermost by name and line (the rule of
    test_windows_profiles.py: llvm-symbolizer 14 misreads some inline line annotations).
    """
    path = FIXTURES / "profiles" / "offsets" / f"winapp.heap.{spelling}.pb"
    out = tmp_path / "named.pb"
    result = CliRunner().invoke(app, ["profile", str(path), "-o", str(out), "--search-path", str(WINDOWS_BIN),
                                      "--no-cache"])  # fmt: skip
    assert result.exit_code == 0, result.output
    spelled, _ = read_profile(path)
    named, _ = read_profile(out)
    source, _ = read_profile(WINDOWS_PROFILES / "winapp.heap.pb.gz")
    truth = _windows_truth()
    spelled_names = {f.id: spelled.string_table[f.name] for f in spelled.function}
    frame_of = {loc.id: parse_offset_frame(spelled_names[loc.line[0].function_id]) for loc in spelled.location}
    named_functions = {f.id: named.string_table[f.name] for f in named.function}
    lines = {loc.id: [(named_functions[line.function_id], line.line) for line in loc.line] for loc in named.location}
    compared, differences = 0, []
    for spelled_sample, named_sample in zip(spelled.sample, named.sample, strict=True):
        for before, after in zip(spelled_sample.location_id, named_sample.location_id, strict=True):
            frame = frame_of[before]
            assert frame is not None and frame.module is not None and frame.rel is not None
            module = frame.module.rsplit("\\", 1)[-1]
            image_base = pefile.PE(str(WINDOWS_BIN / module), fast_load=True).OPTIONAL_HEADER.ImageBase
            theirs, ours = truth[(module, image_base + frame.rel - 1)], lines[after]
            compared += 1
            if [name for name, _ in ours] != [f["function"] for f in theirs] or ours[-1][1] != theirs[-1]["line"]:
                differences.append((frame, ours, theirs))
    assert differences == []
    assert compared == sum(len(s.location_id) for s in source.sample) > 50
    # Values and stack depths conserved; locations naming the same frames merged.
    assert [list(s.value) for s in named.sample] == [list(s.value) for s in source.sample]
    assert [len(s.location_id) for s in named.sample] == [len(s.location_id) for s in source.sample]
    keys = [tuple((line.function_id, line.line, line.column) for line in loc.line) for loc in named.location]
    assert len(keys) == len(set(keys))
