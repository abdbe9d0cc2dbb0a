"""Profiles written in other formats than pprof protobuf, parsed into pprof ``Profile`` messages.

One module per input format: :mod:`~symbolize.profiles.heap_v2` (gperftools ``heap_v2`` text,
what tcmalloc's heap sampler and mimalloc-pprof write), :mod:`~symbolize.profiles.legacy_heap`
(gperftools ``heapprofile`` text, what ``HEAPPROFILE`` writes), :mod:`~symbolize.profiles.cpu`
(gperftools binary CPU profile, what ``CPUPROFILE`` writes). :mod:`~symbolize.profiles.sniff`
tells them apart from the bytes; :func:`parse_foreign_profile` is the one entry point
``symbolize.pprof.read_profile`` uses.
"""

from __future__ import annotations

from pathlib import Path

from symbolize.profiles.cpu import parse_cpu
from symbolize.profiles.heap_v2 import parse_heap_v2
from symbolize.profiles.legacy_heap import parse_legacy_heap
from symbolize.profiles.sniff import OPENTELEMETRY_EXPORT, ProfileFormat, describe_protobuf, describe_text, sniff_format
from symbolize.proto.profile_pb2 import Profile

__all__ = [
    "OPENTELEMETRY_EXPORT",
    "ProfileFormat",
    "describe_protobuf",
    "describe_text",
    "parse_foreign_profile",
    "sniff_format",
]

_PARSERS = {
    ProfileFormat.GPERFTOOLS_CPU: parse_cpu,
    ProfileFormat.HEAP_V2: parse_heap_v2,
    ProfileFormat.LEGACY_HEAP: parse_legacy_heap,
    # Parsing refuses it with its kind named (UnsupportedFormatError).
    ProfileFormat.OTHER_HEAP: parse_heap_v2,
}


def parse_foreign_profile(data: bytes, path: Path | str = "<memory>") -> Profile | None:
    """The profile in ``data`` (gunzipped already) when it is a gperftools format; None for pprof.

    Raises MalformedInputError (naming the line or offset) for a broken one, and
    UnsupportedFormatError for a gperftools heap profile of a kind not read.
    """
    parser = _PARSERS.get(sniff_format(data))
    return parser(data, path) if parser is not None else None
