"""Profile rewriting with a fake module: roles, splits, skips, failures, flags, summary."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from symbolize.discovery import FileLoader
from symbolize.formats.errors import MissingDebugInfoError, SymbolizeError
from symbolize.formats.types import DebugHint, DebugId, DebugInfoSummary, Frame, ReaderDefaults, Segment, Symbol
from symbolize.module import Module, Reason, Unknown
from symbolize.proto.profile_pb2 import Location, Profile
from symbolize.rewrite import RewriteOptions, symbolize_profile
from symbolize.summary import Summary

TEXT_START = 0x400000
TEXT_END = 0x410000
UNKNOWN_VADDR = 0x40F000


@dataclass
class FakeBinary(ReaderDefaults):
    """A position-dependent executable whose one segment is TEXT_START..TEXT_END."""

    path: Path = Path("/fake/app")
    format: str = "elf"
    arch: str = "x86_64"
    debug_id: DebugId | None = None
    position_dependent: bool = True
    load_base: int = TEXT_START

    def segments(self) -> Sequence[Segment]:
        size = TEXT_END - TEXT_START
        return [Segment(vaddr=TEXT_START, memsz=size, file_offset=0, filesz=size, executable=True)]

    def symbols(self) -> Sequence[Symbol]:
        return []

    def debug_hints(self) -> Sequence[DebugHint]:
        return []

    def debug_info(self) -> DebugInfoSummary:
        return DebugInfoSummary(has_symbols=True, has_dwarf=True, has_line_info=True, has_inline_info=True)

    def frames_at(self, vaddr: int) -> list[Frame]:
        return fake_frames(vaddr)

    def close(self) -> None:
        pass


def fake_frames(vaddr: int) -> list[Frame]:
    """Even vaddrs: an inlined C++ function inside ``outer``; odd ones: one plain C function."""
    if vaddr % 2 == 0:
        return [
            Frame("_ZN2ns5innerEv", "inner.h", 10 + vaddr % 7, 3, start_line=9),
            Frame("outer", "main.c", 20, 5, start_line=18),
        ]
    return [Frame(f"fn_{vaddr:x}", "main.c", 30, 0, start_line=29)]


class FakeModule(Module):
    def __init__(self, image: FakeBinary) -> None:
        super().__init__(image)  # type: ignore[arg-type]
        self.looked_up: list[int] = []

    def lookup(self, vaddrs: Sequence[int]) -> list[list[Frame] | Unknown]:
        self.looked_up.extend(vaddrs)
        return [Unknown(Reason.NOT_COVERED) if vaddr == UNKNOWN_VADDR else fake_frames(vaddr) for vaddr in vaddrs]


@dataclass
class Opener:
    module: FakeModule = field(default_factory=lambda: FakeModule(image=FakeBinary()))
    calls: list[tuple[str, str | None]] = field(default_factory=list)
    fail_for: set[str] = field(default_factory=set)

    def __call__(self, filename: str, build_id: str | None, options: FileLoader) -> Module:
        self.calls.append((filename, build_id))
        if filename in self.fail_for:
            raise MissingDebugInfoError("binary not found", filename)
        return self.module


def make_profile(
    stacks: Sequence[Sequence[int]],
    addresses: dict[int, int],
    *,
    sample_type: str = "cpu",
    mapping_files: Sequence[str] = ("/usr/bin/app",),
    location_mapping: dict[int, int] | None = None,
) -> Profile:
    """A profile whose locations (id -> address) sit in mapping 1 unless ``location_mapping`` says otherwise."""
    profile = Profile(string_table=["", sample_type, "nanoseconds", *mapping_files, "abc-DEF-12"])
    profile.sample_type.add(type=1, unit=2)
    profile.period_type.type = 1
    build_id = 3 + len(mapping_files)
    for index in range(1, len(mapping_files) + 1):
        profile.mapping.add(
            id=index, memory_start=TEXT_START, memory_limit=TEXT_END, filename=2 + index, build_id=build_id
        )
    for location_id, address in addresses.items():
        mapping_id = (location_mapping or {}).get(location_id, 1)
        profile.location.add(id=location_id, mapping_id=mapping_id, address=address)
    for number, stack in enumerate(stacks):
        profile.sample.add(location_id=list(stack), value=[10 * (number + 1)])
    return profile


def run(profile: Profile, opener: Opener, **kwargs: Any) -> Summary:
    return symbolize_profile(profile, RewriteOptions(open_module=opener, **kwargs))


def location(profile: Profile, location_id: int) -> Location:
    return next(loc for loc in profile.location if loc.id == location_id)


def names(profile: Profile, location_id: int) -> list[str]:
    functions = {function.id: function for function in profile.function}
    loc = next(loc for loc in profile.location if loc.id == location_id)
    return [profile.string_table[functions[line.function_id].name] for line in loc.line]


def test_cpu_leaf_is_exact_and_callers_are_return_addresses() -> None:
    profile = make_profile([[1, 2, 3]], {1: 0x401001, 2: 0x402001, 3: 0x403001})
    opener = Opener()
    run(profile, opener)
    assert sorted(opener.module.looked_up) == [0x401001, 0x402000, 0x403000]
    assert [loc.address for loc in profile.location] == [0x401001, 0x402001, 0x403001]


def test_non_cpu_profiles_treat_every_frame_as_return_address() -> None:
    profile = make_profile([[1, 2]], {1: 0x401001, 2: 0x402001}, sample_type="alloc_space")
    opener = Opener()
    run(profile, opener)
    assert sorted(opener.module.looked_up) == [0x401000, 0x402000]


def test_no_adjust_looks_up_addresses_as_given() -> None:
    profile = make_profile([[1, 2]], {1: 0x401001, 2: 0x402001})
    opener = Opener()
    run(profile, opener, adjust_return_addresses=False)
    assert sorted(opener.module.looked_up) == [0x401001, 0x402001]


def test_location_used_as_leaf_and_caller_is_split() -> None:
    # Location 2 is the leaf of the second sample and a caller in the first.
    profile = make_profile([[1, 2], [2, 3]], {1: 0x401001, 2: 0x402001, 3: 0x403001})
    opener = Opener()
    summary = run(profile, opener)
    twin = location(profile, 4)
    assert twin.address == 0x402001 and twin.mapping_id == 1
    assert list(profile.sample[0].location_id) == [1, 4]
    assert list(profile.sample[1].location_id) == [2, 3]
    assert sorted(opener.module.looked_up) == [0x401001, 0x402000, 0x402001, 0x403000]
    assert names(profile, 2) == ["fn_402001"]
    assert names(profile, 4) == ["ns::inner()", "outer"]
    assert summary.locations == 4 and summary.unnamed == 0


def test_lines_are_innermost_first_with_deduplicated_functions() -> None:
    profile = make_profile([[1], [2]], {1: 0x402000, 2: 0x402002})
    run(profile, Opener(), demangle="full")
    assert names(profile, 1) == ["ns::inner()", "outer"]
    assert names(profile, 2) == ["ns::inner()", "outer"]
    assert len(profile.function) == 2  # both locations share inner() and outer()
    inner = next(f for f in profile.function if profile.string_table[f.name] == "ns::inner()")
    assert profile.string_table[inner.system_name] == "_ZN2ns5innerEv"
    assert profile.string_table[inner.filename] == "inner.h"
    assert inner.start_line == 9
    line = location(profile, 1).line[0]
    assert (line.line, line.column) == (10 + 0x402000 % 7, 3)


def test_unmappable_mappings_are_left_alone() -> None:
    files = ("/usr/bin/app", "[vdso]", "//anon", "[kernel.kallsyms]", "/dev/zero", "")
    addresses = {index: 0x401001 for index in range(1, 7)}
    profile = make_profile(
        [[1, 2, 3, 4, 5, 6]], addresses, mapping_files=files, location_mapping={i: i for i in range(1, 7)}
    )
    opener = Opener()
    summary = run(profile, opener)
    # The mapping's debug ID reaches discovery as text: it is parsed as each candidate's kind there.
    assert opener.calls == [("/usr/bin/app", "abc-DEF-12")]
    for location_id in range(2, 7):
        assert len(location(profile, location_id).line) == 0
    mappings = {m["filename"]: m for m in summary.to_json()["mappings"]}
    for name in ("[vdso]", "[kernel.kallsyms]", "//anon", "/dev/zero", ""):
        assert mappings[name]["reasons"] == {"not-a-file": 1}, name
    assert mappings["[vdso]"]["details"] == [{"reason": "not-a-file", "detail": "[vdso] is not a file", "count": 1}]
    assert mappings["[kernel.kallsyms]"]["details"][0]["detail"] == "kernel mapping"
    assert summary.named == 1 and summary.unnamed == 5


def test_failed_mapping_is_reported_and_the_run_goes_on() -> None:
    profile = make_profile(
        [[1, 2]],
        {1: 0x401001, 2: 0x401001},
        mapping_files=("/usr/bin/app", "/lib/libgone.so"),
        location_mapping={2: 2},
    )
    summary = run(profile, Opener(fail_for={"/lib/libgone.so"}))
    data = summary.to_json()
    gone = next(m for m in data["mappings"] if m["filename"] == "/lib/libgone.so")
    assert gone["unnamed"] == 1 and gone["binary"] is None
    assert gone["reasons"] == {"binary-not-found": 1}
    detail = "/lib/libgone.so: binary not found"
    assert gone["details"] == [{"reason": "binary-not-found", "detail": detail, "count": 1}]
    assert names(profile, 1) == ["fn_401001"]


def test_unknown_and_outside_addresses_are_counted() -> None:
    profile = make_profile([[1], [2], [3]], {1: UNKNOWN_VADDR, 2: TEXT_END + 0x10, 3: 0x401001})
    profile.mapping[0].memory_limit = TEXT_END + 0x1000
    summary = run(profile, Opener())
    mapping = summary.to_json()["mappings"][0]
    assert mapping["reasons"] == {"not-covered": 1, "outside-file": 1}
    assert mapping["details"] == []
    assert (mapping["locations"], mapping["named"], mapping["unnamed"]) == (3, 1, 2)
    assert summary.to_json()["unnamed_value_share"] == {"cpu": pytest.approx(30 / 60)}
    assert profile.mapping[0].has_functions is False


def test_mapping_flags_when_every_location_is_named() -> None:
    profile = make_profile([[1], [2]], {1: 0x402000, 2: 0x401001})
    run(profile, Opener())
    mapping = profile.mapping[0]
    assert (mapping.has_functions, mapping.has_filenames, mapping.has_line_numbers, mapping.has_inline_frames) == (
        True,
        True,
        True,
        True,
    )


def test_already_symbolized_locations_are_kept() -> None:
    profile = make_profile([[1, 2]], {1: 0x401001, 2: 0x402001})
    profile.function.add(id=7, name=1)
    location(profile, 2).line.add(function_id=7, line=5)
    before = location(profile, 2).SerializeToString()
    opener = Opener()
    summary = run(profile, opener)
    assert location(profile, 2).SerializeToString() == before
    assert opener.module.looked_up == [0x401001]
    assert summary.mappings[0].already_symbolized == 1
    assert summary.named == 2


def test_summary_text_and_top_functions() -> None:
    profile = make_profile([[1], [1], [2]], {1: 0x401001, 2: 0x402001})
    summary = run(profile, Opener())
    text = summary.format_text()
    assert "total: 2/2 locations named" in text
    assert summary.top_functions == [("fn_401001", 30), ("fn_402001", 30)]


def test_rewrite_keeps_unknown_fields_and_string_prefix() -> None:
    profile = make_profile([[1]], {1: 0x401001})
    unknown = b"\xa0\x06\x07"
    parsed = Profile()
    parsed.ParseFromString(profile.SerializeToString() + unknown)
    strings_before = list(parsed.string_table)
    run(parsed, Opener())
    assert unknown in parsed.SerializeToString()
    assert list(parsed.string_table)[: len(strings_before)] == strings_before


def test_opener_errors_must_be_symbolize_errors() -> None:
    class Broken(Opener):
        def __call__(self, filename: str, build_id: str | None, options: FileLoader) -> Module:
            raise SymbolizeError("cannot parse", filename)

    summary = run(make_profile([[1]], {1: 0x401001}), Broken())
    assert summary.unnamed == 1


stacks = st.lists(st.lists(st.integers(1, 6), min_size=0, max_size=8), min_size=1, max_size=12)


@settings(max_examples=80, deadline=None)
@given(stacks=stacks, sample_type=st.sampled_from(["cpu", "samples", "inuse_space", "contentions"]))
def test_samples_keep_values_and_stack_lengths(stacks: list[list[int]], sample_type: str) -> None:
    addresses = {index: 0x401000 + 0x101 * index for index in range(1, 7)}
    profile = make_profile(stacks, addresses, sample_type=sample_type)
    before = [(list(sample.value), len(sample.location_id)) for sample in profile.sample]
    addresses_before = [[addresses[i] for i in sample.location_id] for sample in profile.sample]
    run(profile, Opener())
    by_id = {loc.id: loc for loc in profile.location}
    assert [(list(sample.value), len(sample.location_id)) for sample in profile.sample] == before
    assert [[by_id[i].address for i in sample.location_id] for sample in profile.sample] == addresses_before
    assert all(len(loc.line) > 0 for loc in profile.location)
    assert len({loc.id for loc in profile.location}) == len(profile.location)
    if sample_type in ("cpu", "samples"):
        # A leaf is never a twin made for return addresses, and no twin is a leaf.
        twins = {loc.id for loc in profile.location if loc.id > 6}
        assert not any(sample.location_id and sample.location_id[0] in twins for sample in profile.sample)
