"""Sample object-file addresses (vaddrs) that fall inside functions, reproducibly.

An address is a random ``STT_FUNC`` symbol from ``.symtab`` (``.dynsym`` when there is none), then a
random byte offset inside ``[st_value, st_value + st_size)`` (ELF gABI, "Symbol Table"): the shape of
a profile's program counters, which land anywhere inside a function, not only on its entry.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile
from elftools.elf.sections import SymbolTableSection


class SamplingError(Exception):
    """The binary cannot be sampled (not ELF, no function symbols)."""


@dataclass(frozen=True, slots=True)
class FunctionRange:
    name: str
    vaddr: int
    size: int


def function_ranges(binary: Path) -> list[FunctionRange]:
    """Sized function symbols of ``binary``, deduplicated by range, in address order."""
    try:
        with binary.open("rb") as stream:
            elf = ELFFile(stream)
            # Thumb functions have the low bit set in st_value; the code starts one byte lower.
            thumb_mask = ~1 if elf["e_machine"] == "EM_ARM" else ~0
            table = elf.get_section_by_name(".symtab") or elf.get_section_by_name(".dynsym")
            if not isinstance(table, SymbolTableSection):
                raise SamplingError(f"{binary}: no symbol table (.symtab or .dynsym)")
            ranges: dict[tuple[int, int], FunctionRange] = {}
            for symbol in table.iter_symbols():
                if (
                    symbol["st_info"]["type"] == "STT_FUNC"
                    and symbol["st_size"] > 0
                    and symbol["st_shndx"] != "SHN_UNDEF"
                ):
                    vaddr = symbol["st_value"] & thumb_mask
                    key = (vaddr, symbol["st_size"])
                    ranges.setdefault(key, FunctionRange(symbol.name, vaddr, symbol["st_size"]))
    except (ELFError, OSError) as error:
        raise SamplingError(f"{binary}: cannot read symbols: {error}") from error
    if not ranges:
        raise SamplingError(f"{binary}: no sized STT_FUNC symbols to sample")
    return [ranges[key] for key in sorted(ranges)]


def sample_vaddrs(functions: list[FunctionRange], count: int, seed: int) -> list[int]:
    """``count`` addresses, drawn with replacement so small binaries still yield 10k samples."""
    rng = random.Random(seed)
    vaddrs = []
    for _ in range(count):
        function = rng.choice(functions)
        vaddrs.append(function.vaddr + rng.randrange(function.size))
    return vaddrs


def sample_unique_vaddrs(functions: list[FunctionRange], count: int, seed: int) -> list[int]:
    """``count`` distinct addresses drawn like :func:`sample_vaddrs`, in the order first drawn."""
    capacity = sum(function.size for function in functions)
    if count > capacity:
        raise SamplingError(f"only {capacity} distinct function bytes, {count} distinct addresses wanted")
    rng = random.Random(seed)
    chosen: dict[int, None] = {}
    while len(chosen) < count:
        function = rng.choice(functions)
        chosen.setdefault(function.vaddr + rng.randrange(function.size))
    return list(chosen)
