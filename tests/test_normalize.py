"""runtime_to_vaddr on the fixtures' real segments, with mappings laid out as the Linux loader does.

A segment at ``p_vaddr``/``p_offset`` in a module loaded with bias ``base`` is
mapped at ``base + page_floor(p_vaddr)`` from file offset ``page_floor(p_offset)``
(one /proc/<pid>/maps line per segment); whole-module producers emit one mapping
from ``base + page_floor(first p_vaddr)`` with offset 0.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from symbolize.formats import ElfFile
from symbolize.formats.types import Segment
from symbolize.normalize import PAGE_SIZE, runtime_to_vaddr
from tests.fixtures_data import BIN

RELOCATABLE = ["cdemo-gcc-dwarf5-pie", "cppdemo-clang-dwarf5-pie", "libshape.so", "rustdemo-full"]
FIXED = ["cdemo-gcc-dwarf5-nopie", "cppdemo-clang-dwarf5-nopie"]
BASES = [0x5555_5555_4000, 0x7F12_3456_0000]


def page_floor(value: int) -> int:
    return value // PAGE_SIZE * PAGE_SIZE


def open_fixture(name: str) -> ElfFile:
    return ElfFile(BIN / name)


def probes(segment: Segment) -> Iterator[int]:
    """Addresses with file bytes in ``segment``: first, middle, last."""
    yield from sorted({segment.vaddr, segment.vaddr + segment.filesz // 2, segment.vaddr + segment.filesz - 1})


@pytest.mark.parametrize("name", RELOCATABLE)
@pytest.mark.parametrize("base", BASES)
def test_per_segment_mappings(name: str, base: int) -> None:
    with open_fixture(name) as elf:
        assert not elf.position_dependent
        for segment in elf.segments():
            start = base + page_floor(segment.vaddr)
            limit = base + segment.vaddr + segment.memsz
            offset = page_floor(segment.file_offset)
            for vaddr in probes(segment):
                assert runtime_to_vaddr(elf, start, limit, offset, base + vaddr) == vaddr


@pytest.mark.parametrize("name", RELOCATABLE)
@pytest.mark.parametrize("base", BASES)
@pytest.mark.parametrize("offset", [0, None])
def test_whole_module_mapping(name: str, base: int, offset: int | None) -> None:
    with open_fixture(name) as elf:
        segments = elf.segments()
        start = base + page_floor(segments[0].vaddr)
        limit = base + max(s.vaddr + s.memsz for s in segments)
        for segment in segments:
            for vaddr in probes(segment):
                assert runtime_to_vaddr(elf, start, limit, offset, base + vaddr) == vaddr
            # The zero-filled tail (.bss) is still in the module.
            if segment.memsz > segment.filesz:
                tail = segment.vaddr + segment.memsz - 1
                assert runtime_to_vaddr(elf, start, limit, offset, base + tail) == tail


def test_whole_module_mapping_differs_from_offset_rule() -> None:
    # The data segment's vaddr is a page above its file offset: the offset rule would misplace it.
    with open_fixture("cdemo-gcc-dwarf5-pie") as elf:
        last = elf.segments()[-1]
        assert last.vaddr != last.file_offset
        base = BASES[0]
        assert runtime_to_vaddr(elf, base, base + 0x10_0000, 0, base + last.vaddr) == last.vaddr


@pytest.mark.parametrize("name", FIXED)
def test_fixed_address_executable(name: str) -> None:
    with open_fixture(name) as elf:
        assert elf.position_dependent
        for segment in elf.segments():
            start, limit = page_floor(segment.vaddr), segment.vaddr + segment.memsz
            for vaddr in probes(segment):
                assert runtime_to_vaddr(elf, start, limit, page_floor(segment.file_offset), vaddr) == vaddr
        first = elf.segments()[0]
        assert runtime_to_vaddr(elf, 0, 0, None, first.vaddr - 1) is None


def test_addresses_outside_are_none() -> None:
    with open_fixture("libshape.so") as elf:
        segments = elf.segments()
        base = BASES[1]
        start = base + page_floor(segments[0].vaddr)
        end = base + max(s.vaddr + s.memsz for s in segments)
        assert runtime_to_vaddr(elf, start, end, 0, start - 1) is None
        assert runtime_to_vaddr(elf, start, end, 0, end) is None
        # Inside the mapping's range but past every segment.
        assert runtime_to_vaddr(elf, start, end + 0x10_0000, 0, end + 0x1000) is None


@given(
    name=st.sampled_from(RELOCATABLE),
    base_page=st.integers(min_value=1, max_value=(1 << 35)),
    segment_pick=st.integers(min_value=0),
    fraction=st.floats(min_value=0, max_value=1, exclude_max=True),
)
def test_round_trip(name: str, base_page: int, segment_pick: int, fraction: float) -> None:
    base = base_page * PAGE_SIZE
    with open_fixture(name) as elf:
        segments = elf.segments()
        segment = segments[segment_pick % len(segments)]
        vaddr = segment.vaddr + int(segment.filesz * fraction)
        per_segment = runtime_to_vaddr(
            elf,
            base + page_floor(segment.vaddr),
            base + segment.vaddr + segment.memsz,
            page_floor(segment.file_offset),
            base + vaddr,
        )
        whole = runtime_to_vaddr(
            elf,
            base + page_floor(segments[0].vaddr),
            base + max(s.vaddr + s.memsz for s in segments),
            0,
            base + vaddr,
        )
    assert per_segment == whole == vaddr
