"""gperftools heap profiles in text: the ``heap_v2`` sampled form (and the grammar it shares).

Format (gperftools "Heap Profiler" docs; what tcmalloc's ``MallocExtension::GetHeapSample`` and
mimalloc-pprof write)::

    heap profile: <inuse objs>: <inuse bytes> [<alloc objs>: <alloc bytes>] @ heap_v2/<rate>
    <inuse objs>: <inuse bytes> [<alloc objs>: <alloc bytes>] @ 0xADDR 0xADDR ...
    ...
    # other sections (a "# ... heap stats" block): blank and '#' lines are skipped
    MAPPED_LIBRARIES:
    <one /proc/self/maps line each, verbatim on Linux, synthesized on Windows and macOS>

Output, as pprof's ``legacy_profile.go`` ``parseHeap`` reads it: sample types
``alloc_objects/count``, ``alloc_space/bytes``, ``inuse_objects/count``, ``inuse_space/bytes``
(always all four; pprof drops the alloc pair when the header's alloc totals equal the in-use
ones), period type ``space/bytes`` with the sampling rate as period, one ``bytes`` label per
sample (the average block size, as pprof adds), one Location per distinct address as written
(pprof subtracts 1 from every heap address when it reads the file; the symbolizer does that at
lookup time instead, since every heap frame is a return address), and a Mapping per executable
maps line.

Scaling: each sampled ``(count, bytes)`` pair is multiplied by ``1 / (1 - exp(-avg / rate))``
with ``avg = bytes / count`` and each product truncated to an integer, as pprof's
``scaleHeapSample`` does (no scaling when the rate is 0 or 1). The counts as written stay
recoverable: each scaled sample carries the labels ``raw_alloc_objects``, ``raw_alloc_space``,
``raw_inuse_objects`` and ``raw_inuse_space`` (units count and bytes), and a profile comment
names the rate and the formula.

Hand-written: there is no Python reader of these formats; pprof's is Go.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import NamedTuple

from symbolize.formats.errors import MalformedInputError, UnsupportedFormatError
from symbolize.profiles.builder import MapsEntry, NumLabel, ProfileBuilder
from symbolize.profiles.text import (
    MAX_FRAMES,
    MAX_VALUE,
    TextLine,
    iter_lines,
    parse_address,
    parse_maps_line,
)
from symbolize.proto.profile_pb2 import Profile

__all__ = ["HEAP_SAMPLE_TYPES", "HeapHeader", "parse_heap_text", "parse_heap_v2", "read_heap_header", "scale_heap_v2"]

HEAP_SAMPLE_TYPES = (
    ("alloc_objects", "count"),
    ("alloc_space", "bytes"),
    ("inuse_objects", "count"),
    ("inuse_space", "bytes"),
)
RAW_LABELS = (
    ("raw_alloc_objects", "count"),
    ("raw_alloc_space", "bytes"),
    ("raw_inuse_objects", "count"),
    ("raw_inuse_space", "bytes"),
)
HEAP_V2_KINDS = frozenset({"heap_v2", "heapz_v2"})
LEGACY_KIND = "heapprofile"
MAPS_SENTINELS = frozenset({"MAPPED_LIBRARIES:", "--- Memory map: ---"})

_NUMBER = r"(-?\d{1,20})"
_PAIRS = rf"{_NUMBER}:\s*{_NUMBER}\s*\[\s*{_NUMBER}:\s*{_NUMBER}\s*\]\s*@"
_HEADER = re.compile(rf"heap profile:\s*{_PAIRS}\s*([A-Za-z_0-9]*)(?:/(\d{{1,20}}))?\s*")
_SAMPLE = re.compile(rf"\s*{_PAIRS}(.*)")


class HeapHeader(NamedTuple):
    """The first line: the profile's kind (``heap_v2``, ``heapprofile``, ...) and sampling rate."""

    kind: str
    rate: int  # bytes between samples; 0 when the header gives none


def read_heap_header(first_line: str) -> HeapHeader | None:
    """The header of a gperftools heap profile, or None when the line is not one."""
    match = _HEADER.fullmatch(first_line.strip())
    if match is None:
        return None
    return HeapHeader(match.group(5), int(match.group(6) or 0))


def scale_heap_v2(count: int, size: int, rate: int) -> tuple[int, int]:
    """pprof's ``scaleHeapSample``: the estimated ``(count, bytes)`` behind one sampled pair.

    Raises OverflowError when the estimate does not fit an int64.
    """
    if count == 0 or size == 0:
        return 0, 0
    if rate <= 1:
        return count, size
    average = size / count
    denominator = 1 - math.exp(-average / rate)
    if denominator == 0:
        raise OverflowError("scale factor is infinite")
    scale = 1 / denominator
    scaled_count, scaled_size = count * scale, size * scale
    if not (abs(scaled_count) <= MAX_VALUE and abs(scaled_size) <= MAX_VALUE):
        raise OverflowError("scaled value does not fit 64 bits")
    return int(scaled_count), int(scaled_size)


def parse_heap_v2(data: bytes, path: Path | str = "<memory>") -> Profile:
    """Parse a ``heap_v2`` text profile (values scaled; raw counts in ``raw_*`` labels)."""
    return parse_heap_text(data, path, expect=HEAP_V2_KINDS, scaled=True)


def parse_heap_text(data: bytes, path: Path | str, *, expect: frozenset[str], scaled: bool) -> Profile:
    """The grammar both heap text forms share; ``expect`` names the header kinds accepted."""
    text = data.decode("utf-8", errors="replace")
    lines = iter_lines(text, path)
    first = next(lines, None)
    header = read_heap_header(first.text) if first is not None else None
    if header is None or first is None:
        raise MalformedInputError("line 1: not a gperftools heap profile header", path)
    if not first.complete:
        raise MalformedInputError("line 1: header cut short (no newline)", path)
    if not header.kind:
        raise MalformedInputError("line 1: header names no profile kind after '@'", path)
    if header.kind not in expect:
        raise UnsupportedFormatError(f"gperftools heap profile of kind {header.kind!r} is not read", path)
    rate = header.rate if scaled else 1

    builder = ProfileBuilder()
    builder.set_sample_types(HEAP_SAMPLE_TYPES)
    builder.set_period("space", "bytes", rate if scaled else 1)
    if scaled and rate > 1:
        builder.add_comment(
            f"heap_v2 sampling rate {rate} bytes: values scaled by 1/(1-exp(-avg/{rate})) with avg = bytes/objects "
            "as pprof scales them; raw_* sample labels hold the counts as written"
        )
    maps: list[MapsEntry] = []
    in_maps = False
    last_complete = True
    for line in lines:
        last_complete = line.complete
        stripped = line.text.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if in_maps:
            maps.append(parse_maps_line(line, path))
        elif stripped in MAPS_SENTINELS:
            in_maps = True
        else:
            _add_sample(builder, line, path, rate, scaled)
    if not in_maps:
        if not last_complete:
            raise MalformedInputError("profile cut short: last line has no newline and no maps section follows", path)
        builder.add_comment("no MAPPED_LIBRARIES section: no location has a mapping")
    return builder.finish(maps)


def _add_sample(builder: ProfileBuilder, line: TextLine, path: Path | str, rate: int, scaled: bool) -> None:
    if not line.complete:
        raise MalformedInputError(f"line {line.number}: sample line cut short (no newline)", path)
    match = _SAMPLE.fullmatch(line.text)
    if match is None:
        raise MalformedInputError(f"line {line.number}: not a heap sample line: {line.text[:80]!r}", path)
    inuse_objects, inuse_space, alloc_objects, alloc_space = (int(match.group(index)) for index in range(1, 5))
    raw = (alloc_objects, alloc_space, inuse_objects, inuse_space)
    if any(abs(value) > MAX_VALUE for value in raw):
        raise MalformedInputError(f"line {line.number}: count does not fit 64 bits", path)
    for label, objects, space in (("alloc", alloc_objects, alloc_space), ("inuse", inuse_objects, inuse_space)):
        if objects == 0 and space != 0:
            raise MalformedInputError(f"line {line.number}: {label} count is 0 but {label} bytes is {space}", path)
    tokens = match.group(5).split()
    if len(tokens) > MAX_FRAMES:
        raise MalformedInputError(f"line {line.number}: more than {MAX_FRAMES} frames", path)
    addresses = [parse_address(token, line, path) for token in tokens]

    values = list(raw)
    labels: list[NumLabel] = []
    if scaled and rate > 1:
        try:
            values[0:2] = scale_heap_v2(alloc_objects, alloc_space, rate)
            values[2:4] = scale_heap_v2(inuse_objects, inuse_space, rate)
        except OverflowError as exc:
            raise MalformedInputError(f"line {line.number}: counts too large to scale: {exc}", path) from exc
        labels = [NumLabel(key, value, unit) for (key, unit), value in zip(RAW_LABELS, raw, strict=True)]
    # pprof's "bytes" label: the average block size, from the in-use pair when it has objects.
    objects, space = (inuse_objects, inuse_space) if inuse_objects else (alloc_objects, alloc_space)
    if objects:
        block_size = abs(space) // abs(objects) * (1 if (space < 0) == (objects < 0) else -1)  # Go's truncating /
        labels.insert(0, NumLabel("bytes", block_size, "bytes"))
    builder.add_sample(addresses, values, labels)
