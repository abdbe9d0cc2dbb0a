"""gperftools legacy heap profiles (``heap profile: ... @ heapprofile``), what ``HEAPPROFILE`` writes.

gperftools' heap profiler (``HeapProfileTable``) records every allocation, not a sample, so the
counts are exact and nothing is scaled (pprof's ``parseHeapHeader`` gives it period 1 and no
sampling). The sample lines and the ``MAPPED_LIBRARIES:`` section are those of ``heap_v2``
(:mod:`symbolize.profiles.heap_v2`), and so is the output's shape, without ``raw_*`` labels.
"""

from __future__ import annotations

from pathlib import Path

from symbolize.profiles.heap_v2 import LEGACY_KIND, parse_heap_text
from symbolize.proto.profile_pb2 import Profile

__all__ = ["parse_legacy_heap"]


def parse_legacy_heap(data: bytes, path: Path | str = "<memory>") -> Profile:
    """Parse a ``heapprofile`` text profile; values are the counts as written."""
    return parse_heap_text(data, path, expect=frozenset({LEGACY_KIND}), scaled=False)
