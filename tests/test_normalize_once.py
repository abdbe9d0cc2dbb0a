"""One normalization for every runtime address (symbolize/normalize.py): a pprof location and a
``module+0xOFFSET`` frame (symbolize/offset_frames.py) of the same address give the same object
address and the same answer, on the fixtures' real images of every format.

For each image a module is laid out as its loader would (ELF: PT_LOADs moved by a load bias; PE:
the image at a module base; Mach-O: ``__TEXT`` slid), and one code address is spelled four ways:
a runtime address in a whole-module pprof mapping, ``module+0x<rel>``, ``<module@0xBASE>+0x<rel>``
and ``0x<abs>`` (placed by that mapping). A return address one byte past a segment's end, or on
its first byte, is the one place the conventions differ (normalize.py's docstring): the mapping
steps back before placing, the module-relative spelling after; checked here as documented.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from symbolize.api import symbolize_profile
from symbolize.formats.open import open_object
from symbolize.formats.types import Image, Segment
from symbolize.normalize import EXACT, PAGE_SIZE, RETURN, mapping_placement, module_placement, step_back
from symbolize.offset_frames import parse_offset_frame
from symbolize.pprof import StringTable
from symbolize.proto.profile_pb2 import Profile
from tests.fixtures_data import BIN

# One image of each format and layout the fixtures have (fixtures/manifest.json).
IMAGES = {
    "elf-pie": BIN / "cppdemo-gcc-dwarf5-pie",
    "elf-exec": BIN / "cppdemo-clang-dwarf5-nopie",
    "pe": BIN / "windows" / "winapp.exe",
    "macho-x86_64": BIN / "macos" / "cppdemo-x86_64",
    "macho-arm64": BIN / "macos" / "cppdemo-arm64",
    "macho-dylib": BIN / "macos" / "libmshape-x86_64.dylib",
}
SEARCH_PATHS = [BIN, BIN / "windows", BIN / "macos"]


@dataclass(frozen=True)
class Layout:
    """Where a module of ``image`` sits in a process: its whole-module mapping and its runtime base."""

    segments: tuple[Segment, ...]
    format: str
    load_base: int
    memory_start: int
    memory_limit: int
    bias: int  # runtime address - vaddr
    runtime_base: int  # what ``<module@0xBASE>`` gives: ELF's load bias, else where load_base went

    def runtime(self, vaddr: int) -> int:
        return vaddr + self.bias

    def rel(self, vaddr: int) -> int:
        """``rel`` of ``module+0x<rel>``: the ELF vaddr, the RVA, the offset from ``__TEXT``."""
        return vaddr if self.format == "elf" else vaddr - self.load_base


def _layout(image: Image, slide_pages: int) -> Layout:
    segments = tuple(image.segments())
    high = max(segment.vaddr + segment.memsz for segment in segments)
    bias = 0 if image.position_dependent else slide_pages * PAGE_SIZE
    start = image.load_base + bias
    return Layout(segments, image.format, image.load_base, start, start + (high - image.load_base),
                  bias, bias if image.format == "elf" else start)  # fmt: skip


@pytest.fixture(scope="module")
def images() -> Iterator[dict[str, Image]]:
    opened = {name: open_object(path) for name, path in IMAGES.items()}
    yield opened
    for image in opened.values():
        image.close()


def _in_segments(segments: Sequence[Segment], vaddr: int) -> bool:
    return any(segment.vaddr <= vaddr < segment.vaddr + segment.memsz for segment in segments)


slides = st.integers(0, 0x7FFF_0000)  # pages: a module anywhere below 2^47


@settings(max_examples=300, deadline=None)
@given(
    name=st.sampled_from(sorted(IMAGES)),
    slide=slides,
    where=st.floats(0, 1, allow_nan=False),
    outside=st.integers(-0x3000, 0x3000),
    role=st.sampled_from([EXACT, RETURN]),
)
def test_every_spelling_of_an_address_gives_the_same_object_address(
    images: dict[str, Image], name: str, slide: int, where: float, outside: int, role: int
) -> None:
    image = images[name]
    layout = _layout(image, slide)
    # A vaddr anywhere from below the lowest segment to above the highest, segment edges included.
    low = min(segment.vaddr for segment in layout.segments if segment.memsz)
    high = max(segment.vaddr + segment.memsz for segment in layout.segments)
    vaddr = max(low + int((high - low) * where) + outside, 0)
    if layout.rel(vaddr) < 0:
        return  # below the image's origin: no module+0x<rel> spelling exists
    by_mapping = mapping_placement(image, layout.memory_start, layout.memory_limit, 0)(layout.runtime(vaddr), role)
    by_rel = module_placement(image)(layout.rel(vaddr), role)
    by_base = module_placement(image, layout.runtime_base)(layout.runtime(vaddr), role)
    assert by_rel == by_base
    # The mapping steps the runtime address back, then places it; a rel frame places, then steps back.
    stepped_first = step_back(layout.runtime(vaddr), role) - layout.bias
    assert by_mapping == (stepped_first if _in_segments(layout.segments, stepped_first) else None)
    placed_first = step_back(vaddr, role)
    assert by_rel == (placed_first if _in_segments(layout.segments, vaddr) else None)
    # So they agree but where a return address is on a segment's edge (or at address 0).
    if stepped_first == placed_first and _in_segments(layout.segments, vaddr) == _in_segments(
        layout.segments, placed_first
    ):
        assert by_mapping == by_rel


# --- the same answer, through a whole rewrite -------------------------------------------------------

SPELLINGS = ("mapping", "module+rel", "module@base+rel", "absolute")


def _profile(path_name: str, debug_id: str, layout: Layout, stacks: list[list[int]], spelling: str) -> Profile:
    """An on-CPU profile whose samples are ``stacks`` of vaddrs (leaf first), spelled one way."""
    profile = Profile()
    profile.string_table.extend(["", "samples", "count", path_name, debug_id])
    profile.sample_type.add(type=1, unit=2)
    if spelling in ("mapping", "absolute"):
        profile.mapping.add(id=1, memory_start=layout.memory_start, memory_limit=layout.memory_limit,
                            filename=3, build_id=4)  # fmt: skip
    ids: dict[int, int] = {}
    for stack in stacks:
        sample = profile.sample.add(value=[1])
        for vaddr in stack:
            if vaddr not in ids:
                location_id = ids[vaddr] = len(ids) + 1
                location = profile.location.add(id=location_id)
                if spelling == "mapping":
                    location.mapping_id, location.address = 1, layout.runtime(vaddr)
                else:
                    text = {
                        "module+rel": f"{path_name}+0x{layout.rel(vaddr):x}",
                        "module@base+rel": f"<{path_name}@0x{layout.runtime_base:x}>+0x{layout.rel(vaddr):x}",
                        "absolute": f"0x{layout.runtime(vaddr):x}",
                    }[spelling]
                    profile.string_table.append(text)
                    profile.function.add(id=location_id, name=len(profile.string_table) - 1)
                    location.line.add(function_id=location_id)
            sample.location_id.append(ids[vaddr])
    return profile


def _frames(profile: Profile) -> list[list[tuple[str, ...] | None]]:
    """Per sample, per frame: the (function, file, line) of each Line, or None when left unnamed."""
    strings = StringTable(profile)
    functions = {function.id: function for function in profile.function}
    named: dict[int, tuple[str, ...] | None] = {}
    for location in profile.location:
        kept = (
            len(location.line) == 1
            and parse_offset_frame(strings.get(functions[location.line[0].function_id].name)) is not None
        )
        named[location.id] = (
            None
            if kept or not location.line
            else tuple(
                f"{strings.get(functions[line.function_id].system_name)}"
                f" {strings.get(functions[line.function_id].filename)}:{line.line}"
                for line in location.line
            )
        )
    return [[named[location_id] for location_id in sample.location_id] for sample in profile.sample]


@settings(max_examples=12, deadline=None)
@given(
    name=st.sampled_from(sorted(IMAGES)),
    slide=slides,
    picks=st.lists(
        st.lists(st.tuples(st.integers(0, 1 << 16), st.floats(0, 1, allow_nan=False)), min_size=1, max_size=4),
        min_size=1,
        max_size=8,
    ),
)
def test_every_spelling_of_an_address_gets_the_same_answer(
    images: dict[str, Image], name: str, slide: int, picks: list[list[tuple[int, float]]]
) -> None:
    image = images[name]
    layout = _layout(image, slide)
    # Inside the functions of the symbol table (the code segments when it has none), off their first
    # byte: the spellings agree there by rule (see the test above), and most addresses are named.
    functions = [(symbol.vaddr, symbol.size) for symbol in image.symbols() if symbol.size > 2] or [
        (segment.vaddr, segment.memsz) for segment in layout.segments if segment.executable and segment.memsz > 2
    ]
    stacks = [
        [functions[which % len(functions)][0] + 1 + int((functions[which % len(functions)][1] - 2) * where)
         for which, where in stack]
        for stack in picks
    ]  # fmt: skip
    assert image.debug_id is not None
    answers = {}
    for spelling in SPELLINGS:
        profile = _profile(IMAGES[name].name, str(image.debug_id), layout, stacks, spelling)
        named, _ = symbolize_profile(profile, search_paths=SEARCH_PATHS, use_cache=False)
        answers[spelling] = _frames(named)
    assert answers["module+rel"] == answers["mapping"]
    assert answers["module@base+rel"] == answers["mapping"]
    assert answers["absolute"] == answers["mapping"]
    # Named at all: the comparison is of answers, not of strings left alone.
    assert any(frame is not None for sample in answers["mapping"] for frame in sample)
