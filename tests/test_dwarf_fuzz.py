"""Damaged DWARF from real fixtures: the reader names what it can and fails only with MalformedInputError."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from symbolize.formats.dwarf import DwarfInfo
from symbolize.formats.elf import ElfFile
from symbolize.formats.errors import MalformedInputError
from tests.dwarf_builder import answering
from tests.fixtures_data import BIN

FIXTURES = BIN
SECTIONS = ("debug_info", "debug_abbrev", "debug_line", "debug_rnglists", "debug_str_offsets", "debug_addr")


@cache
def _sections(name: str) -> tuple[dict[str, bytes], list[int]]:
    with ElfFile(FIXTURES / name) as elf:
        sections = {}
        for section in (*SECTIONS, "debug_str", "debug_line_str", "debug_ranges", "debug_aranges"):
            data = elf.section_data(section)
            if data is not None:
                sections[section] = bytes(data)
        functions = [symbol.vaddr + symbol.size // 2 for symbol in elf.symbols() if symbol.size][:60]
    return sections, functions


# Read when a test first asks, not when pytest collects this module.
CASES = ("cppdemo-clang-dwarf5-pie", "cdemo-gcc-dwarf4-pie")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    case=st.sampled_from(CASES),
    section=st.sampled_from(SECTIONS),
    edits=st.lists(st.tuples(st.floats(0, 1, exclude_max=True), st.integers(0, 255)), min_size=1, max_size=8),
    cut=st.one_of(st.none(), st.floats(0, 1)),
)
def test_damaged_sections_fail_only_with_malformed_input(
    case: str, section: str, edits: list[tuple[float, int]], cut: float | None
) -> None:
    sections, addresses = _sections(case)
    if section not in sections or not sections[section]:
        return
    damaged = bytearray(sections[section])
    for position, value in edits:
        damaged[int(position * len(damaged))] = value
    if cut is not None:
        del damaged[int(cut * len(damaged)) :]
    info = answering(DwarfInfo({**sections, section: bytes(damaged)}.get, Path(case)))
    for vaddr in addresses:
        try:
            frames = info.frames_at(vaddr)
        except MalformedInputError as error:
            assert error.path == Path(case)
            continue
        assert all(frame.line >= 0 for frame in frames)
