"""Mutated fixtures answered by the persistent index and by uncached lookups, address by address.

Shared by ``tests/test_damaged_agreement.py`` (twenty seeds, in CI) and by hand, over more seeds:
``python -m tests.damaged_agreement SEED [SEED ...]`` prints, per seed, how many addresses
differ. A mutant is a fixture with one to four bytes of ``.debug_info`` or ``.debug_abbrev``
replaced, chosen by ``random.Random(seed)``; its addresses are sampled over the fixture's
function symbols (the code its DWARF describes). The uncached answers come from one
:class:`ElfFile` per mutant, asked in the sampled order (not sorted), and from another asked in
the reverse order: an answer that depends on which lookups came first counts as differing. The
indexed ones come from the index that ``symbolize.cache.build_index`` writes for the same file,
loaded as a warm run loads it.
"""

from __future__ import annotations

import random
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

from symbolize.cache import build_index, load_index
from symbolize.formats.elf import ElfFile
from symbolize.formats.errors import MalformedInputError
from symbolize.formats.types import Frame
from tests.elf_patch import section_headers
from tests.fixtures_data import BIN

FIXTURES = BIN
# DWARF 4 and 5, GCC (sibling links) and Clang (none), C and C++ with deep inlining.
CASES = ("cppdemo-gcc-dwarf5-pie", "cppdemo-clang-dwarf5-pie", "cdemo-gcc-dwarf4-pie", "cppdemo-clang-dwarf4-pie",
         "cdemo-clang-dwarf5-pie")
SECTIONS = (".debug_info", ".debug_abbrev")

# An answer: the frames, or the reason no frame could be given.
Answer = tuple[Frame, ...] | str


class Mutant(NamedTuple):
    case: str
    section: str
    # (offset in the section, new byte)
    edits: tuple[tuple[int, int], ...]
    data: bytes
    vaddrs: tuple[int, ...]


class Difference(NamedTuple):
    mutant: Mutant
    vaddr: int
    uncached: Answer
    indexed: Answer


def _function_ranges(path: Path) -> list[tuple[int, int]]:
    with ElfFile(path) as elf:
        return [(symbol.vaddr, symbol.vaddr + symbol.size) for symbol in elf.symbols() if symbol.size > 0]


def mutants(seed: int, count: int, per_mutant: int) -> Iterator[Mutant]:
    """``count`` mutants of the fixtures, each with ``per_mutant`` sampled addresses."""
    rng = random.Random(seed)
    for _ in range(count):
        case = rng.choice(CASES)
        path = FIXTURES / case
        original = path.read_bytes()
        section = rng.choice(SECTIONS)
        header = section_headers(original)[section]
        data = bytearray(original)
        edits = []
        for _ in range(rng.randint(1, 4)):
            offset = rng.randrange(header.size)
            value = rng.randrange(256)
            edits.append((offset, value))
            data[header.offset + offset] = value
        ranges = _function_ranges(path)
        vaddrs = []
        for _ in range(per_mutant):
            low, high = rng.choice(ranges)
            vaddrs.append(rng.randrange(low, high))
        yield Mutant(case, section, tuple(edits), bytes(data), tuple(vaddrs))


def answer(source: object, vaddr: int) -> Answer:
    """The frames at ``vaddr``, or the reason for none."""
    try:
        return tuple(source.frames_at(vaddr))  # type: ignore[attr-defined]
    except MalformedInputError as error:
        return f"unnamed: {error.reason}"


def differences(mutant: Mutant, work_dir: Path) -> tuple[list[Difference], bool]:
    """The addresses of ``mutant`` whose answers differ; and whether an index was built at all."""
    path = work_dir / mutant.case
    path.write_bytes(mutant.data)
    with ElfFile(path) as elf:
        uncached = [answer(elf, vaddr) for vaddr in mutant.vaddrs]
    with ElfFile(path) as elf:
        backwards = [answer(elf, vaddr) for vaddr in reversed(mutant.vaddrs)][::-1]
    cache_dir = work_dir / "cache"
    with ElfFile(path) as elf:
        try:
            build_index(elf, cache_dir)
        except MalformedInputError:
            # DWARF that cannot be read at all is not indexed (symbolize/cache.py, worth_indexing):
            # the uncached answers are all there is.
            return [], False
    with ElfFile(path) as elf:
        indexed_source = load_index(elf, cache_dir)
        assert indexed_source is not None
        indexed = [answer(indexed_source, vaddr) for vaddr in mutant.vaddrs]
        indexed_source.close()
    # An uncached answer that changes with the order of the lookups counts as differing too.
    found = [
        Difference(mutant, vaddr, lazy, stored if lazy == reversed_lazy else reversed_lazy)
        for vaddr, lazy, reversed_lazy, stored in zip(mutant.vaddrs, uncached, backwards, indexed, strict=True)
        if lazy != stored or lazy != reversed_lazy
    ]
    return found, True


def count_differences(seed: int, count: int = 30, per_mutant: int = 50) -> tuple[int, int, int, list[Difference]]:
    """(addresses compared, addresses differing, mutants indexed, the differences) for ``seed``."""
    compared = 0
    indexed = 0
    found: list[Difference] = []
    with tempfile.TemporaryDirectory() as work:
        for mutant in mutants(seed, count, per_mutant):
            differing, was_indexed = differences(mutant, Path(work))
            compared += len(mutant.vaddrs)
            indexed += was_indexed
            found += differing
    return compared, len(found), indexed, found


def main(argv: list[str]) -> int:
    total = 0
    for seed in map(int, argv or ["1"]):
        compared, differing, indexed, found = count_differences(seed)
        total += differing
        print(f"seed {seed}: {differing} of {compared} addresses differ ({indexed} of 30 mutants indexed)")
        for difference in found[:5]:
            mutant = difference.mutant
            print(f"  {mutant.case} {mutant.section} {mutant.edits} {difference.vaddr:#x}")
            print(f"    uncached: {str(difference.uncached)[:300]}")
            print(f"    indexed:  {str(difference.indexed)[:300]}")
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

