"""Write the seeds of the shapes that once cost time or memory out of proportion (README,
"Hostile input"), small, for the fuzzers to grow and mutate; the full-size shapes run in
tests/hostile_run.py.

``python tests/make_resource_seeds.py`` (re)writes (beside the builders it uses, out of the
type-checked fuzz/ package):

- ``fuzz/seeds/elf/abbrev-offsets-apart.so``: 200 units, each at its own offset of one abbreviation
  table whose only terminating 0 code is at its end;
- ``fuzz/seeds/pprof/one-field-locations.pb.gz``: 20,000 locations of one field each;
- ``fuzz/seeds/pprof/empty-lines-and-labels.pb``: a location of 2,000 empty lines, a sample of 2,000
  empty labels;
- ``fuzz/seeds/macho/load-commands-past-sizeofcmds``: a thin header listing a million load commands
  in 16 bytes.
"""

from __future__ import annotations

import gzip
import struct
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

SEEDS = REPO / "fuzz" / "seeds"


def _field(number: int, body: bytes) -> bytes:
    from tests.dwarf_builder import uleb  # protobuf's varints are LEB128

    return uleb(number << 3 | 2) + uleb(len(body)) + body


def main() -> None:
    from tests import hostile_dwarf as h
    from tests.test_malformed_elf import SHT_PROGBITS, Section, build_elf, symtab

    sections, _ = h.abbrev_offsets_apart_case(200)
    elf = build_elf([*symtab(b"sym"), *(Section("." + name, SHT_PROGBITS, data) for name, data in sections.items())])
    (SEEDS / "elf" / "abbrev-offsets-apart.so").write_bytes(elf)

    strings = _field(6, b"")
    locations = strings + _field(4, b"\x08\x01") * 20_000
    (SEEDS / "pprof" / "one-field-locations.pb.gz").write_bytes(gzip.compress(locations, mtime=0))
    nested = strings + _field(4, b"\x08\x01" + _field(4, b"") * 2_000) + _field(2, _field(3, b"") * 2_000)
    (SEEDS / "pprof" / "empty-lines-and-labels.pb").write_bytes(nested)

    header = struct.pack("<IiiIIIII", 0xFEEDFACF, 0x01000007, 3, 2, 1_000_000, 16, 0, 0)
    (SEEDS / "macho" / "load-commands-past-sizeofcmds").write_bytes(header + struct.pack("<IIQ", 0x2A, 16, 0))


if __name__ == "__main__":
    main()
