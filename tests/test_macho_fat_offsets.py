"""A universal Mach-O mapping whose file offset counts from the fat file, or from the slice.

The kernel maps a slice of a fat file at the slice's offset plus the segment's, and vmmap (and
any producer reading the VM regions) reports that; a producer reading the slice's load commands
reports the segment's own offset. Both are read (symbolize/normalize.py, ``macho_offset_base``),
the fat reading only where it lands on the chosen slice's segments better than the offset as it
is, and the summary says which was used. The profiles (``fixtures/make_macos_profiles.py``,
``*.fatoffset.*``) are held against the stored answers by tests/test_macos_profiles.py.
"""

from __future__ import annotations

import pytest

from symbolize.api import symbolize_profile
from symbolize.formats.macho.file import MachOFile
from symbolize.normalize import macho_offset_base, translator
from tests.fixtures_data import FIXTURES

MACOS = FIXTURES / "bin" / "macos"
PROFILES = FIXTURES / "profiles" / "macos"
FAT = MACOS / "cppdemo-universal"
SLIDE = 0x7000000


@pytest.mark.parametrize(
    ("name", "arch"),
    [("cppdemo-universal-x86_64.fatoffset.cpu", "x86_64"), ("cppdemo-universal-arm64.fatoffset.heap", "arm64")],
)
def test_a_fat_file_offset_names_every_location_and_the_summary_says_so(name: str, arch: str) -> None:
    _profile, summary = symbolize_profile(PROFILES / f"{name}.pb.gz", search_paths=[MACOS], use_cache=False)
    (mapping,) = summary.mappings
    assert mapping.locations > 100 and mapping.named == mapping.locations
    assert (mapping.slice, mapping.file_offsets_from) == (arch, "fat file")
    assert mapping.to_json()["file_offsets_from"] == "fat file"
    assert f"[{arch} slice" in summary.format_text() and "offsets from the fat file" in summary.format_text()


@pytest.mark.parametrize("arch", ["x86_64", "arm64"])
def test_both_conventions_read_each_segment(arch: str) -> None:
    with MachOFile(FAT, arch=arch) as image:
        slice_offset = image.slice.file_offset
        text = next(segment for segment in image.segments() if segment.name == "__TEXT")
        assert image.universal and slice_offset > 0
        ambiguous = 0
        for segment in image.segments():
            if segment.name == "__PAGEZERO" or not segment.filesz:
                continue
            start = segment.vaddr + SLIDE
            limit = start + segment.memsz
            for offset, base in ((segment.file_offset, 0), (slice_offset + segment.file_offset, slice_offset)):
                if not offset:
                    continue  # no offset: the mapping starts at __TEXT, the rule without one
                if base == 0 and offset == slice_offset + text.file_offset:
                    # Both readings start a segment (arm64: the slice at 0x4000, its __LINKEDIT at
                    # 0x4000 of it): __TEXT's wins, a profile's addresses being code.
                    assert macho_offset_base(image, offset) == slice_offset
                    ambiguous += 1
                    continue
                assert macho_offset_base(image, offset) == base, (segment.name, hex(offset))
                to_vaddr = translator(image, start, limit, offset)
                assert to_vaddr(start + 8) == segment.vaddr + 8, (segment.name, hex(offset))
        assert ambiguous == (1 if arch == "arm64" else 0)


def test_a_region_inside_text_counted_from_the_fat_file() -> None:
    """vmmap splits a region (a page made writable by a debugger): it starts inside __TEXT."""
    with MachOFile(FAT, arch="arm64") as image:
        text = next(segment for segment in image.segments() if segment.name == "__TEXT")
        inside = 0x1000
        start = text.vaddr + inside + SLIDE
        offset = image.slice.file_offset + text.file_offset + inside
        assert macho_offset_base(image, offset) == image.slice.file_offset
        assert translator(image, start, start + 0x1000, offset)(start + 4) == text.vaddr + inside + 4


def test_a_thin_file_reads_offsets_as_they_are() -> None:
    with MachOFile(MACOS / "cppdemo-x86_64") as image:
        linkedit = next(segment for segment in image.segments() if segment.name == "__LINKEDIT")
        assert not image.universal
        assert macho_offset_base(image, linkedit.file_offset) == 0
        start = linkedit.vaddr + SLIDE
        assert translator(image, start, start + linkedit.memsz, linkedit.file_offset)(start) == linkedit.vaddr
