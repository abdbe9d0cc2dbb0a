"""Address normalization: a runtime address in a pprof mapping to a vaddr in the object file.

A pprof ``Mapping`` (profile.proto) says that ``[memory_start, memory_limit)``
of the process shows the file from ``file_offset`` on. The loader places each
``PT_LOAD`` segment (gABI chapter 5, "Program Header") so that its file bytes
at ``p_offset`` appear at ``p_vaddr + bias``; this module inverts that, as
pprof's ``elfexec.GetBase`` and blazesym's ``normalize`` do.
"""

from __future__ import annotations

from collections.abc import Sequence

from symbolize.formats.types import Image, Segment

# Mappings start on a page boundary; 4 KiB is the smallest page of every Linux target, and the
# first PT_LOAD's vaddr and file offset agree modulo any page size the loader used.
PAGE_SIZE = 0x1000


def runtime_to_vaddr(
    binary: Image,
    memory_start: int,
    memory_limit: int,
    file_offset: int | None,
    runtime_addr: int,
) -> int | None:
    """The vaddr of ``runtime_addr`` in ``binary``, or None when no loaded segment holds it.

    Position-dependent executables (ET_EXEC) are loaded at their vaddrs, so
    the runtime address is the vaddr. Otherwise two rules apply:

    - offset rule: ``file_offset + (runtime_addr - memory_start)`` is a file
      offset; the PT_LOAD holding it translates it to a vaddr. Right for a
      real ``/proc/<pid>/maps`` line, one mapping per segment.
    - bias rule: the mapping starts at the first PT_LOAD's page, so
      ``bias = memory_start - page_floor(first.vaddr)``. Right for producers
      that emit one mapping spanning the whole module with offset 0.

    With offset 0 (or None) both rules agree inside the first segment's file
    range, which is all a real offset-0 mapping can cover. Beyond it, only a
    whole-module mapping can reach, and there the offset rule would read the
    gaps between segments wrongly (vaddr gaps are not file gaps), so the
    bias rule is used.
    """
    if memory_limit > memory_start and not memory_start <= runtime_addr < memory_limit:
        return None
    segments = binary.segments()
    if not segments:
        return None
    if binary.position_dependent:
        return runtime_addr if _in_memory(segments, runtime_addr) else None
    offset = (file_offset or 0) + (runtime_addr - memory_start)
    if not file_offset:
        first = min(segments, key=lambda segment: segment.vaddr)
        if not first.file_offset <= offset < first.file_offset + first.filesz:
            vaddr = runtime_addr - (memory_start - binary.load_base)
            return vaddr if _in_memory(segments, vaddr) else None
    return _offset_to_vaddr(segments, offset)


def _in_memory(segments: Sequence[Segment], vaddr: int) -> bool:
    return any(segment.vaddr <= vaddr < segment.vaddr + segment.memsz for segment in segments)


def _offset_to_vaddr(segments: Sequence[Segment], offset: int) -> int | None:
    for segment in segments:
        if segment.file_offset <= offset < segment.file_offset + segment.filesz:
            return segment.vaddr + (offset - segment.file_offset)
    # Zero-filled tails (.bss) have no file bytes; the mapping still covers them.
    for segment in segments:
        if segment.file_offset <= offset < segment.file_offset + segment.memsz:
            return segment.vaddr + (offset - segment.file_offset)
    return None
