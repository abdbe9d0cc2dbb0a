"""A profile mapping of a universal binary without a UUID: its slice is chosen by the mapping's
size and the addresses it holds (symbolize/discovery/slices.py), not by the host's arch."""

from __future__ import annotations

import json

import pytest

from symbolize.api import lookup, symbolize_profile
from symbolize.formats.macho.file import MachOFile
from symbolize.formats.macho.slices import host_arch
from symbolize.module import Unknown
from symbolize.pprof import StringTable
from symbolize.proto.profile_pb2 import Profile
from tests.fixtures_data import FIXTURES

UNIVERSAL = FIXTURES / "bin" / "macos" / "cppdemo-universal"
SLIDE = 0x5A3C000


def _stored_vaddrs(arch: str) -> list[int]:
    """The stored addresses of the slice, as its program counters can be (arm64: 4-byte aligned)."""
    expected = json.loads((FIXTURES / "expected" / "macos" / f"cppdemo-macho-universal-{arch}.json").read_text())
    alignment = 4 if arch == "arm64" else 1
    return sorted({int(entry["address"], 16) // alignment * alignment for entry in expected["addresses"]})


def _profile(arch: str, mapping_size: int | None) -> tuple[Profile, list[int]]:
    """An on-CPU profile of the ``arch`` slice at ``SLIDE``: one mapping at ``__TEXT``, no build ID."""
    with MachOFile(UNIVERSAL, arch) as image:
        text = next(segment for segment in image.segments() if segment.name == "__TEXT")
    profile = Profile()
    strings = [""]

    def intern(text_value: str) -> int:
        strings.append(text_value)
        return len(strings) - 1

    sample_type = profile.sample_type.add()
    sample_type.type, sample_type.unit = intern("cpu"), intern("nanoseconds")
    mapping = profile.mapping.add()
    mapping.id = 1
    mapping.memory_start = text.vaddr + SLIDE
    mapping.memory_limit = mapping.memory_start + (mapping_size if mapping_size is not None else text.memsz)
    mapping.filename = intern(str(UNIVERSAL))
    vaddrs = _stored_vaddrs(arch)[:120]
    for position, vaddr in enumerate(vaddrs, start=1):
        location = profile.location.add()
        location.id, location.mapping_id, location.address = position, 1, vaddr + SLIDE
        sample = profile.sample.add()
        sample.location_id.append(position)  # leaves only: exact PCs, no return-address adjustment
        sample.value.append(1)
    profile.string_table.extend(strings)
    return profile, vaddrs


def _names(profile: Profile) -> list[list[tuple[str, int]]]:
    strings = StringTable(profile)
    functions = {function.id: strings.get(function.name) for function in profile.function}
    return [[(functions[line.function_id], line.line) for line in location.line] for location in profile.location]


def _expected(arch: str, vaddrs: list[int]) -> list[list[tuple[str, int]]]:
    results = lookup(UNIVERSAL, vaddrs, arch=arch, use_cache=False)
    return [[] if isinstance(r, Unknown) else [(f.function or "??", f.line) for f in r] for r in results]


@pytest.mark.parametrize("arch", ["x86_64", "arm64"])
def test_the_mapping_size_picks_the_slice(arch: str) -> None:
    profile, vaddrs = _profile(arch, None)
    rewritten, summary = symbolize_profile(profile, use_cache=False)
    (mapping,) = summary.mappings
    assert (mapping.slice, mapping.slice_by) == (arch, "mapping size")
    assert _names(rewritten) == _expected(arch, vaddrs)
    with MachOFile(UNIVERSAL, arch) as image:
        assert StringTable(rewritten).get(rewritten.mapping[0].build_id) == str(image.debug_id)


def test_the_addresses_pick_the_slice_when_the_size_says_nothing() -> None:
    """A mapping sized like neither slice (a producer that rounds sizes): the addresses decide."""
    other = "arm64" if host_arch() != "arm64" else "x86_64"
    profile, vaddrs = _profile(other, 0x3000)
    rewritten, summary = symbolize_profile(profile, use_cache=False)
    (mapping,) = summary.mappings
    assert (mapping.slice, mapping.slice_by) == (other, "addresses")
    assert _names(rewritten) == _expected(other, vaddrs)
    assert f"[{other} slice, by addresses]" in summary.format_text()


def test_a_mapping_with_a_uuid_names_its_slice_and_says_so() -> None:
    profile, vaddrs = _profile("arm64", 0x3000)
    with MachOFile(UNIVERSAL, "arm64") as image:
        profile.string_table.append(str(image.debug_id))
    profile.mapping[0].build_id = len(profile.string_table) - 1
    rewritten, summary = symbolize_profile(profile, use_cache=False)
    assert (summary.mappings[0].slice, summary.mappings[0].slice_by) == ("arm64", "uuid")
    assert _names(rewritten) == _expected("arm64", vaddrs)
