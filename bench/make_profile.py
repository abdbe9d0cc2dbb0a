"""Write a bare-hex pprof profile of one ELF binary, for timing a whole ``symbolize profile``.

The profile is what a native profiler without symbols records (pprof ``profile.proto``): one
``Mapping`` of the binary at a fixed fake ASLR base, ``Location``s that carry only an address, no
``Function``s or ``Line``s, and ``Sample``s whose stacks are 1-8 of those locations. Addresses are
drawn like the lookup benchmark's (``addresses.py``: a random function, then a random byte in it),
all distinct, with a fixed seed, so the same binary always gives the same profile.

Mapping (``profile.proto``, ``message Mapping``): for a PIE or a shared object (``ET_DYN``) the image
is placed at ``memory_start = 0x555555554000`` with ``file_offset = 0`` and ``memory_limit`` covering
the ``PT_LOAD`` extent, so a location's address is ``base + vaddr``. A non-PIE executable
(``ET_EXEC``) loads at its own vaddrs, so there the base is 0.

    python bench/make_profile.py BINARY OUT.pb.gz [--locations 10000] [--seed S]
"""

from __future__ import annotations

import argparse
import gzip
import random
import sys
from dataclasses import dataclass
from pathlib import Path

from addresses import SamplingError, function_ranges, sample_unique_vaddrs
from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile
from elftools.elf.sections import NoteSection

from symbolize.proto import profile_pb2

FAKE_ASLR_BASE = 0x555555554000
PAGE_SIZE = 0x1000
DEFAULT_LOCATIONS = 10_000
DEFAULT_SEED = 1234
MAX_STACK_DEPTH = 8
SAMPLE_PERIOD_NS = 10_000_000


@dataclass(frozen=True, slots=True)
class Layout:
    """Where the binary's ``PT_LOAD`` segments sit once loaded."""

    load_bias: int
    vaddr_start: int
    vaddr_end: int
    build_id: str


def read_layout(binary: Path) -> Layout:
    try:
        with binary.open("rb") as stream:
            elf = ELFFile(stream)
            loads = [segment for segment in elf.iter_segments() if segment["p_type"] == "PT_LOAD"]
            if not loads:
                raise SamplingError(f"{binary}: no PT_LOAD segment")
            vaddr_start = min(int(segment["p_vaddr"]) for segment in loads) & ~(PAGE_SIZE - 1)
            vaddr_end = max(int(segment["p_vaddr"]) + int(segment["p_memsz"]) for segment in loads)
            build_id = ""
            for section in elf.iter_sections():
                if isinstance(section, NoteSection):
                    for note in section.iter_notes():
                        if note["n_type"] == "NT_GNU_BUILD_ID":
                            build_id = str(note["n_desc"])
            load_bias = FAKE_ASLR_BASE if elf["e_type"] == "ET_DYN" else 0
    except (ELFError, OSError) as error:
        raise SamplingError(f"{binary}: cannot read program headers: {error}") from error
    vaddr_end = (vaddr_end + PAGE_SIZE - 1) & ~(PAGE_SIZE - 1)
    return Layout(load_bias, vaddr_start, vaddr_end, build_id)


def build_profile(binary: Path, location_count: int, seed: int) -> profile_pb2.Profile:
    layout = read_layout(binary)
    vaddrs = sample_unique_vaddrs(function_ranges(binary), location_count, seed)
    profile = profile_pb2.Profile()
    strings: dict[str, int] = {}

    def string_index(text: str) -> int:
        if text not in strings:
            strings[text] = len(profile.string_table)
            profile.string_table.append(text)
        return strings[text]

    string_index("")  # pprof requires string_table[0] == "".
    for type_name, unit in (("samples", "count"), ("cpu", "nanoseconds")):
        profile.sample_type.add(type=string_index(type_name), unit=string_index(unit))
    profile.period_type.type = string_index("cpu")
    profile.period_type.unit = string_index("nanoseconds")
    profile.period = SAMPLE_PERIOD_NS

    profile.mapping.add(
        id=1,
        memory_start=layout.load_bias + layout.vaddr_start,
        memory_limit=layout.load_bias + layout.vaddr_end,
        # Offset 0 maps the first PT_LOAD, which starts at file offset 0 in what gcc, rustc and ld emit.
        file_offset=0,
        filename=string_index(str(binary.resolve())),
        build_id=string_index(layout.build_id),
    )
    for location_id, vaddr in enumerate(vaddrs, start=1):
        profile.location.add(id=location_id, mapping_id=1, address=layout.load_bias + vaddr)

    # Every location lands in at least one stack: deal them out in random order, 1-8 per sample.
    rng = random.Random(seed)
    location_ids = list(range(1, location_count + 1))
    rng.shuffle(location_ids)
    position = 0
    while position < len(location_ids):
        depth = rng.randint(1, MAX_STACK_DEPTH)
        count = rng.randint(1, 50)
        profile.sample.add(
            location_id=location_ids[position : position + depth], value=[count, count * SAMPLE_PERIOD_NS]
        )
        position += depth
    return profile


def write_profile(binary: Path, out: Path, location_count: int, seed: int) -> int:
    """Write the gzipped profile; returns the number of samples."""
    profile = build_profile(binary, location_count, seed)
    # mtime=0 keeps the file byte-identical across runs.
    out.write_bytes(gzip.compress(profile.SerializeToString(), mtime=0))
    return len(profile.sample)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("binary", type=Path, help="ELF binary with a symbol table")
    parser.add_argument("out", type=Path, help="profile to write (gzipped)")
    parser.add_argument("--locations", type=int, default=DEFAULT_LOCATIONS, help="distinct addresses")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    args = parser.parse_args()
    try:
        samples = write_profile(args.binary, args.out, args.locations, args.seed)
    except SamplingError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(f"wrote {args.out}: {args.locations} locations, {samples} samples")
    return 0


if __name__ == "__main__":
    sys.exit(main())
