"""macOS-shaped profiles of the Mach-O fixtures (fixtures/make_macos_profiles.py), named end to end.

Each location stands for a stored address of ``fixtures/expected/macos`` (``*.truth.json`` says
which): once named, its lines must be what a lookup of that binary at that vaddr gives, which
the differential tests hold against llvm-symbolizer. So a wrong slide, a mapping read from the
wrong segment or an authentication signature left on a return address shows up as a wrong or
missing name here.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from symbolize.api import lookup, symbolize_profile
from symbolize.formats.macho.file import MachOFile
from symbolize.module import Reason, Unknown
from symbolize.pprof import StringTable, read_profile
from symbolize.proto.profile_pb2 import Profile
from tests.fixtures_data import FIXTURES

MACOS = FIXTURES / "bin" / "macos"
PROFILES = FIXTURES / "profiles" / "macos"
VARIANTS = json.loads((FIXTURES / "manifest.json").read_text())["macos_variants"]


def _truth(profile: Path) -> dict[int, tuple[str | None, int]]:
    """Location address -> (variant or None for a file not on disk, vaddr looked up)."""
    data = json.loads(profile.with_name(profile.name.replace(".pb.gz", ".truth.json")).read_text())
    return {int(address, 16): (entry["variant"], int(entry["vaddr"], 16)) for address, entry in data.items()}


def _named(profile: Path) -> tuple[dict[int, list[tuple[str, int]]], dict[Reason, int]]:
    """Location address -> its lines (function, line), innermost first; and the summary's reasons."""
    rewritten, summary = symbolize_profile(profile, search_paths=[MACOS], use_cache=False)
    strings = StringTable(rewritten)
    functions = {function.id: strings.get(function.name) for function in rewritten.function}
    named = {
        location.address: [(functions[line.function_id], line.line) for line in location.line]
        for location in rewritten.location
    }
    reasons: dict[Reason, int] = {}
    for mapping in summary.mappings:
        for reason, count in mapping.reasons.items():
            reasons[reason] = reasons.get(reason, 0) + count
    return named, reasons


def _expected_lines(variant: str, vaddrs: list[int]) -> list[list[tuple[str, int]]]:
    binary = MACOS / Path(next(iter(VARIANTS[variant]["files"]))).name
    results = lookup(binary, vaddrs, arch=VARIANTS[variant]["arch"], use_cache=False)
    return [[] if isinstance(r, Unknown) else [(f.function or "??", f.line) for f in r] for r in results]


@pytest.mark.parametrize("profile", sorted(PROFILES.glob("*.pb.gz")), ids=lambda p: p.name)
def test_macos_profile_locations_are_named_as_their_binaries_name_them(profile: Path) -> None:
    truth = _truth(profile)
    named, _reasons = _named(profile)
    by_variant: dict[str, list[int]] = {}
    for address, (variant, _vaddr) in truth.items():
        if variant is not None:
            by_variant.setdefault(variant, []).append(address)
    assert by_variant
    for variant, addresses in by_variant.items():
        expected = _expected_lines(variant, [truth[address][1] for address in addresses])
        assert [named[address] for address in addresses] == expected, variant
        assert all(expected)


def test_a_shared_cache_library_is_unnamed_for_that_reason() -> None:
    profile = PROFILES / "cdemo-arm64.sharedcache.cpu.pb.gz"
    truth = _truth(profile)
    named, reasons = _named(profile)
    in_cache = [address for address, (variant, _) in truth.items() if variant is None]
    assert in_cache and all(named[address] == [] for address in in_cache)
    assert reasons == {Reason.IN_SHARED_CACHE: len(in_cache)}


def test_the_profiles_have_the_shapes_they_claim() -> None:
    """What the cases above exercise is really in the files (a generator change cannot drop it)."""
    pac, _ = read_profile(PROFILES / "cppdemo-arm64.pac.cpu.pb.gz")
    assert sum(location.address >> 47 != 0 for location in pac.location) > 50
    pagezero, _ = read_profile(PROFILES / "cppdemo-x86_64.pagezero.heap.pb.gz")
    (mapping,) = pagezero.mapping
    assert mapping.memory_limit - mapping.memory_start > 1 << 32  # __PAGEZERO's 4 GiB included
    assert all(location.address - mapping.memory_start > 1 << 32 for location in pagezero.location)


def test_a_stripped_binary_without_its_dsym_is_named_and_the_summary_says_why_lines_are_missing() -> None:
    slide = 0x3A000
    profile = Profile()
    profile.string_table.extend(["", "samples", "count", "/Users/dev/cdemo-x86_64-stripped"])
    profile.sample_type.add(type=1, unit=2)
    profile.mapping.add(id=1, memory_start=0x100000000 + slide, memory_limit=0x100004000 + slide, filename=3)
    for location_id, vaddr in enumerate((0x100000440, 0x100000330, 0x1000003B0), 1):  # checksum_round, memset, memcpy
        profile.location.add(id=location_id, mapping_id=1, address=vaddr + slide)
        profile.sample.add(location_id=[location_id], value=[1])
    rewritten, summary = symbolize_profile(profile, search_paths=[MACOS], use_cache=False)
    strings = StringTable(rewritten)
    names = {function.id: strings.get(function.name) for function in rewritten.function}
    assert [[names[line.function_id] for line in location.line] for location in rewritten.location] == [
        ["checksum_round"], ["memset"], ["memcpy"]
    ]
    (mapping,) = summary.mappings
    assert mapping.missing_lines is not None and "no dSYM" in mapping.missing_lines
    assert mapping.to_json()["missing_lines"] == mapping.missing_lines
    assert "no lines: named from the symbol table only: no dSYM was found" in summary.format_text()


def test_the_slice_of_a_universal_binary_is_the_one_with_the_mappings_uuid() -> None:
    with MachOFile(MACOS / "cppdemo-universal", arch="arm64") as arm64:
        uuid = str(arm64.debug_id)
    vaddrs = [0x100000400, 0x100000500]
    profile = Profile()
    profile.string_table.extend(["", "samples", "count", "/Applications/cppdemo-universal", uuid])
    profile.sample_type.add(type=1, unit=2)
    profile.mapping.add(id=1, memory_start=0x100000000, memory_limit=0x100008000, filename=3, build_id=4)
    for location_id, vaddr in enumerate(vaddrs, 1):
        profile.location.add(id=location_id, mapping_id=1, address=vaddr)
        profile.sample.add(location_id=[location_id], value=[1])
    rewritten, summary = symbolize_profile(profile, search_paths=[MACOS], use_cache=False)
    strings = StringTable(rewritten)
    names = {function.id: strings.get(function.name) for function in rewritten.function}
    expected = lookup(MACOS / "cppdemo-universal", vaddrs, arch="arm64", use_cache=False)
    assert [[(names[line.function_id], line.line) for line in location.line] for location in rewritten.location] == [
        [(frame.function, frame.line) for frame in result] for result in expected if not isinstance(result, Unknown)
    ]
    assert summary.mappings[0].debug_file is not None and "cppdemo-universal.dSYM" in summary.mappings[0].debug_file
    assert summary.mappings[0].slice == "arm64"
    assert "[arm64 slice]" in summary.format_text()
