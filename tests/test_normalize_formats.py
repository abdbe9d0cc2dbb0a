"""Normalization rules per format, on synthetic images (PE, Mach-O) and on lld's ELF layout.

The PE and Mach-O images are laid out as their linkers lay them out (link.exe/lld-link sections
at 0x1000 steps from ImageBase; ld64's __PAGEZERO, __TEXT at 0x100000000, __DATA, __LINKEDIT), so
the rules are checked before those readers exist; each mapping below is what a producer reports.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from symbolize.formats import ElfFile
from symbolize.formats.types import DebugHint, DebugId, Segment
from symbolize.normalize import PAGE_SIZE, runtime_to_vaddr, translator
from tests.fixtures_data import BIN


@dataclass
class SyntheticImage:
    format: str
    load_base: int
    layout: list[Segment] = field(default_factory=list)
    position_dependent: bool = False
    path: Path = Path("/synthetic")
    arch: str = "x86_64"
    debug_id: DebugId | None = None

    def segments(self) -> Sequence[Segment]:
        return self.layout

    def debug_hints(self) -> Sequence[DebugHint]:
        return []

    def close(self) -> None:
        pass


IMAGE_BASE = 0x1_4000_0000
PE = SyntheticImage(
    "pe",
    IMAGE_BASE,
    [
        Segment(IMAGE_BASE + 0x1000, 0x2345, 0x400, 0x2400, True, ".text"),
        Segment(IMAGE_BASE + 0x4000, 0x800, 0x2800, 0x800, False, ".rdata"),
        Segment(IMAGE_BASE + 0x5000, 0x1200, 0x3000, 0x200, False, ".data"),  # .bss-like tail
    ],
)

TEXT_VMADDR = 0x1_0000_0000
MACHO = SyntheticImage(
    "macho",
    TEXT_VMADDR,
    [
        Segment(0, TEXT_VMADDR, 0, 0, False, "__PAGEZERO"),
        Segment(TEXT_VMADDR, 0x4000, 0, 0x4000, True, "__TEXT"),
        Segment(TEXT_VMADDR + 0x4000, 0x4000, 0x4000, 0x4000, False, "__DATA"),
        Segment(TEXT_VMADDR + 0x8000, 0x4000, 0x8000, 0x1234, False, "__LINKEDIT"),
    ],
)
MACHO_DYLIB = SyntheticImage(
    "macho",
    0,
    [
        Segment(0, 0x4000, 0, 0x4000, True, "__TEXT"),
        Segment(0x4000, 0x4000, 0x4000, 0x4000, False, "__DATA"),
    ],
)


# --- PE ----------------------------------------------------------------------------------


@pytest.mark.parametrize("module_base", [0x7FF6_1234_0000, IMAGE_BASE, 0x10000])
@pytest.mark.parametrize("offset", [0, None])
def test_pe_module_mapping_is_image_base_plus_rva(module_base: int, offset: int | None) -> None:
    limit = module_base + 0x6200
    for rva in (0x1000, 0x1000 + 0x2344, 0x4010, 0x5000 + 0x11FF):
        assert runtime_to_vaddr(PE, module_base, limit, offset, module_base + rva) == IMAGE_BASE + rva


def test_pe_outside_sections_is_none() -> None:
    base = 0x7FF6_1234_0000
    # The headers page and the gap after .text's virtual size hold no section.
    assert runtime_to_vaddr(PE, base, base + 0x6200, 0, base + 0x10) is None
    assert runtime_to_vaddr(PE, base, base + 0x6200, 0, base + 0x1000 + 0x2345) is None
    assert runtime_to_vaddr(PE, base, base + 0x6200, 0, base + 0x6200) is None


def test_pe_mapping_with_a_file_offset_goes_through_the_sections() -> None:
    # A section mapped from the file (Wine): .text's raw data at 0x400 appears at the mapping start.
    start = 0x7000_0000
    assert runtime_to_vaddr(PE, start, start + 0x2400, 0x400, start + 0x10) == IMAGE_BASE + 0x1010
    assert runtime_to_vaddr(PE, start, start + 0x800, 0x2800, start + 0x20) == IMAGE_BASE + 0x4020


# --- Mach-O ------------------------------------------------------------------------------


@pytest.mark.parametrize("slide", [0, 0x1000_0000, 0x2_3450_0000])
def test_macho_mapping_from_text_uses_the_slide(slide: int) -> None:
    start = TEXT_VMADDR + slide
    for limit in (start + 0x4000, start + 0xC000, 0):  # __TEXT only, the whole image, no limit
        for vaddr in (TEXT_VMADDR, TEXT_VMADDR + 0x3FFF):
            assert runtime_to_vaddr(MACHO, start, limit, 0, vaddr + slide) == vaddr


@pytest.mark.parametrize("slide", [0, 0x1000_0000, 0x2_3450_0000])
def test_macho_main_executable_reported_from_pagezero(slide: int) -> None:
    # dyld's image list walked by segment: the lowest segment is __PAGEZERO at 0, so the mapping
    # starts at the slide itself and spans __PAGEZERO too.
    start = 0 + slide
    limit = TEXT_VMADDR + 0xC000 + slide
    for vaddr in (TEXT_VMADDR, TEXT_VMADDR + 0x1234, TEXT_VMADDR + 0x4100):
        assert runtime_to_vaddr(MACHO, start, limit, 0, vaddr + slide) == vaddr
    # Inside __PAGEZERO nothing is mapped.
    assert runtime_to_vaddr(MACHO, start, limit, 0, start + 0x10) is None


def test_macho_dylib_without_pagezero() -> None:
    start = 0x1_0400_0000
    assert runtime_to_vaddr(MACHO_DYLIB, start, start + 0x8000, 0, start + 0x123) == 0x123
    assert runtime_to_vaddr(MACHO_DYLIB, start, start + 0x8000, 0, start + 0x8000) is None


@given(
    slide_pages=st.integers(min_value=0, max_value=1 << 20),
    vaddr_offset=st.integers(min_value=0, max_value=0xBFFF),
    from_pagezero=st.booleans(),
)
def test_macho_round_trip(slide_pages: int, vaddr_offset: int, from_pagezero: bool) -> None:
    slide = slide_pages * 0x4000
    vaddr = TEXT_VMADDR + vaddr_offset
    start = slide if from_pagezero else TEXT_VMADDR + slide
    limit = TEXT_VMADDR + 0xC000 + slide
    assert runtime_to_vaddr(MACHO, start, limit, 0, vaddr + slide) == vaddr


# --- ELF: lld's code segment in file page 0 ------------------------------------------------


def _page_floor(value: int) -> int:
    return value // PAGE_SIZE * PAGE_SIZE


@pytest.mark.parametrize("name", ["libshape-lld.so", "useshape-lld"])
@pytest.mark.parametrize("base", [0x7F12_3456_0000, 0x5555_5555_4000])
def test_lld_code_line_one_page_above_the_load_base(name: str, base: int) -> None:
    with ElfFile(BIN / name) as elf:
        code = next(segment for segment in elf.segments() if segment.executable)
        # The shape this fixture exists for: code shares file page 0, one page above the load base.
        assert _page_floor(code.file_offset) == 0 and _page_floor(code.vaddr) > elf.load_base
        start = base + _page_floor(code.vaddr)
        limit = base + code.vaddr + code.memsz
        to_vaddr = translator(elf, start, limit, 0)
        for vaddr in (code.vaddr, code.vaddr + code.filesz // 2, code.vaddr + code.filesz - 1):
            assert to_vaddr(base + vaddr) == vaddr
        # The same library as one whole-module mapping still reads through the load base.
        whole_limit = base + max(s.vaddr + s.memsz for s in elf.segments())
        assert runtime_to_vaddr(elf, base + elf.load_base, whole_limit, 0, base + code.vaddr) == code.vaddr
