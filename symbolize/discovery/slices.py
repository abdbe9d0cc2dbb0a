"""Which slice of a universal Mach-O binary a profile mapping without a UUID was read from.

A mapping with a UUID names its slice (``find_module`` matches it). Without one (a producer
that records none, a maps line written by hand) the binary's slices are told apart by what the
mapping holds, and the host's architecture is only the last resort. The rules, in order:

1. Size. The mapping's length (``memory_limit - memory_start``) is exactly one a macOS
   producer writes for that slice: its ``__TEXT`` segment, the image from ``__TEXT`` to the end
   of its last segment, or from ``__PAGEZERO`` (the dyld image-list style; see
   symbolize/normalize.py). Slices of one program differ here: page sizes (16 KiB on arm64,
   4 KiB on x86_64) and code sizes differ.
2. Addresses. Of the mapping's sampled addresses, how many, normalized for that slice as the
   rewrite will normalize them, fall inside one of its function symbols, and on an arm64 slice
   are 4-byte aligned (every arm64 instruction is: program counters and return addresses too).

The slice with the best (size, addresses) wins; on a tie the slice discovery opened (the
host's, else the first) is kept, so a profile that says nothing keeps today's choice.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from symbolize.discovery.registry import FileLoader
from symbolize.formats.errors import SymbolizeError
from symbolize.formats.types import Image
from symbolize.normalize import translator


class SliceChoice(NamedTuple):
    arch: str
    # What decided it: "mapping size", "addresses", or "default" (nothing told the slices apart).
    decided_by: str


def _sizes(image: Image) -> set[int]:
    """The mapping lengths a producer writes for ``image``: ``__TEXT``, ``__TEXT`` to the end, all of it."""
    segments = list(image.segments())
    if not segments:
        return set()
    end = max(segment.vaddr + segment.memsz for segment in segments)
    lowest = min(segment.vaddr for segment in segments)
    sizes = {end - image.load_base, end - lowest}
    sizes.update(segment.memsz for segment in segments if segment.name == "__TEXT")
    return sizes


def _named(image: Image, memory_start: int, memory_limit: int, file_offset: int, addresses: Sequence[int]) -> int:
    """How many of ``addresses``, normalized for ``image``, fall inside one of its function symbols."""
    symbol_at = image.symbol_at
    to_vaddr = translator(image, memory_start, memory_limit, file_offset)
    alignment = 4 if image.arch.startswith("arm64") else 1
    count = 0
    for runtime_addr in addresses:
        vaddr = to_vaddr(runtime_addr)
        if vaddr is not None and vaddr % alignment == 0 and symbol_at(vaddr) is not None:
            count += 1
    return count


def choose_mapping_slice(
    image: Image,
    loader: FileLoader,
    memory_start: int,
    memory_limit: int,
    file_offset: int,
    addresses: Sequence[int] = (),
) -> SliceChoice | None:
    """The slice of universal ``image`` that a mapping ``[memory_start, memory_limit)`` holding
    ``addresses`` (runtime addresses) was read from; None when ``image`` has one slice."""
    arches = image.slice_arches()
    if len(arches) < 2:
        return None
    size = memory_limit - memory_start
    scores: list[tuple[int, int, int, str]] = []
    for arch in arches:
        try:
            opened = image if arch == image.arch else loader.open(image.path, arch=arch)
        except SymbolizeError:
            continue
        fits = int(size > 0 and size in _sizes(opened))
        named = _named(opened, memory_start, memory_limit, file_offset, addresses)
        # Ties: the slice opened first (the host's) ranks above the others.
        scores.append((fits, named, int(arch == image.arch), arch))
    if not scores:
        return None
    best = max(scores)
    runner_up = max((score for score in scores if score[3] != best[3]), default=None)
    if runner_up is None or (best[0], best[1]) == (runner_up[0], runner_up[1]):
        return SliceChoice(image.arch, "default")
    return SliceChoice(best[3], "mapping size" if best[0] > runner_up[0] else "addresses")
