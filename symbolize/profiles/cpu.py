"""gperftools CPU profiles (binary), what ``CPUPROFILE`` / ``ProfilerStart`` writes.

Format (gperftools "CPU Profiler Binary Data File Format"): every slot is one machine word of
the writing process (4 or 8 bytes, its native byte order)::

    header:  0 (header count), 3 (header words that follow), 0 (format version),
             sampling period in microseconds, 0 (padding)
    records: sample count, number of PCs N, PC 1 ... PC N   (innermost first)
    trailer: 0, 1, 0
    then the text of /proc/self/maps

The word size and byte order are found as pprof's ``parseCPU`` finds them: the one reading of
the first three words as ``0, 3, 0`` (the four readings cannot agree on that). Output as pprof
reads it: sample types ``samples/count`` and ``cpu/nanoseconds`` (count x period), period type
``cpu/nanoseconds``, one Location per distinct PC as written (the first PC of a sample is the
interrupted instruction, the others are return addresses; the symbolizer adjusts those at lookup
time, where pprof subtracts 1 when reading), a Mapping per executable maps line. The profiler can
write the leaf twice (from the signal context and again from the unwinder); a second PC equal to
the first is dropped, as pprof's ``cleanupDuplicateLocations`` does. pprof also drops a second
frame shared by most samples (a signal handler's) when there is one; here that frame stays.

A file without the trailer (a process that died while profiling) is refused: its last record may
be half written. Hand-written: there is no Python reader of this format.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import NamedTuple

from symbolize.formats.errors import MalformedInputError
from symbolize.profiles.builder import MapsEntry, ProfileBuilder
from symbolize.profiles.text import MAX_FRAMES, MAX_VALUE, iter_lines, parse_maps_line
from symbolize.proto.profile_pb2 import Profile

__all__ = ["CpuLayout", "cpu_layout", "parse_cpu"]

HEADER_WORDS = 5


class CpuLayout(NamedTuple):
    """How the file's words are stored."""

    word_size: int  # 4 or 8
    byte_order: str  # "<" little-endian or ">" big-endian (struct notation)

    @property
    def word(self) -> str:
        return self.byte_order + ("Q" if self.word_size == 8 else "I")


_LAYOUTS = (CpuLayout(8, "<"), CpuLayout(8, ">"), CpuLayout(4, "<"), CpuLayout(4, ">"))


def cpu_layout(data: bytes) -> CpuLayout | None:
    """The layout whose first three words read ``0, 3, 0``; None when the bytes are no CPU profile."""
    for layout in _LAYOUTS:
        header_fits = len(data) >= HEADER_WORDS * layout.word_size
        if header_fits and struct.unpack_from(layout.byte_order + 3 * layout.word[-1], data) == (0, 3, 0):
            return layout
    return None


def parse_cpu(data: bytes, path: Path | str = "<memory>") -> Profile:
    """Parse a gperftools CPU profile; raises MalformedInputError for bytes that break the format."""
    layout = cpu_layout(data)
    if layout is None:
        raise MalformedInputError("not a gperftools CPU profile (no 0, 3, 0 header)", path)
    size = layout.word_size
    word_count = len(data) // size
    values = struct.unpack_from(f"{layout.byte_order}{word_count}{layout.word[-1]}", data)
    version, period_us = values[2], values[3]
    if version != 0:
        raise MalformedInputError(f"CPU profile format version {version}, expected 0", path, offset=2 * size)
    period_ns = period_us * 1000
    if period_ns > MAX_VALUE:
        raise MalformedInputError(f"sampling period {period_us} us does not fit 64 bits", path, offset=3 * size)

    builder = ProfileBuilder()
    builder.set_sample_types((("samples", "count"), ("cpu", "nanoseconds")))
    builder.set_period("cpu", "nanoseconds", period_ns)
    at = HEADER_WORDS
    while True:
        if at + 2 > word_count:
            raise MalformedInputError("CPU profile cut short: no end-of-data trailer", path, offset=at * size)
        count, depth = values[at], values[at + 1]
        if depth > word_count - at - 2:
            raise MalformedInputError(
                f"record of {depth} PCs runs past the end of the file", path, offset=(at + 1) * size
            )
        pcs = values[at + 2 : at + 2 + depth]
        if count == 0 and depth == 1 and pcs[0] == 0:
            at += 3
            break
        if depth > MAX_FRAMES:
            raise MalformedInputError(f"record of {depth} PCs (more than {MAX_FRAMES})", path, offset=(at + 1) * size)
        # The count is a value of its own too: with a period of 0 the product says nothing.
        if count > MAX_VALUE or count * period_ns > MAX_VALUE:
            raise MalformedInputError(f"sample count {count} too large", path, offset=at * size)
        if len(pcs) > 1 and pcs[1] == pcs[0]:
            pcs = pcs[:1] + pcs[2:]
        builder.add_sample(pcs, (count, count * period_ns))
        at += 2 + depth
    maps = _parse_maps_text(data, at * size, path)
    return builder.finish(maps)


def _parse_maps_text(data: bytes, text_offset: int, path: Path | str) -> list[MapsEntry]:
    text = data[text_offset:].decode("utf-8", errors="replace")
    try:
        return [parse_maps_line(line, path) for line in iter_lines(text, path) if line.text.strip()]
    except MalformedInputError as exc:
        # Its line numbers count from the start of the maps text, which follows the trailer.
        raise MalformedInputError(f"maps text {exc.reason}", path, offset=text_offset) from exc
