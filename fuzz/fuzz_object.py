"""Fuzz target: an object file (binary or debug file) through the public lookup API.

``python fuzz/fuzz_object.py elf [libFuzzer options] [corpus dir]``: each input is
written to a scratch file and opened with :func:`symbolize.api.lookup` (no cache, no
background indexing), asking for a fixed set of addresses spread over the fixtures'
code; the format is sniffed from the bytes, so the same target serves every reader.
The first argument names the seed directory ``fuzz/seeds/<name>/``: a reader added
later (``pe``, ``macho``) gets its target by adding one.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fuzz.harness import REPO, Target, main, scratch_file, seed_files

# Addresses per input: enough to reach several units and the symbol table, few enough to keep
# inputs fast.
ADDRESS_COUNT = 48


def addresses_for(reader: str) -> list[int]:
    """Addresses the seeds' peer answers name (fixtures/expected, any file whose ``binary`` or
    ``dsym`` is a seed or holds one), spread evenly, plus edge values."""
    seeds = {str(seed.resolve()) for seed in seed_files(reader)}
    found: set[int] = set()
    for expected in (REPO / "fixtures" / "expected").rglob("*.json"):
        try:
            answers = json.loads(expected.read_text())
        except ValueError:
            continue
        if not isinstance(answers, dict) or "addresses" not in answers:
            continue
        named = [str((REPO / "fixtures" / answers[key]).resolve()) for key in ("binary", "dsym") if answers.get(key)]
        if any(seed == name or seed.startswith(name + "/") for seed in seeds for name in named):
            # Answer files hold {"address": ...} entries; the stored output styles hold bare strings.
            found.update(
                int(entry["address"] if isinstance(entry, dict) else entry, 16) for entry in answers["addresses"]
            )
    ordered = sorted(found)
    step = max(1, len(ordered) // ADDRESS_COUNT)
    return [0, 1, *ordered[::step][:ADDRESS_COUNT], (1 << 64) - 1]


def make_target(reader: str) -> Target:
    from symbolize import api

    vaddrs = addresses_for(reader)

    def one_input(data: bytes) -> object:
        path = scratch_file(data)
        return api.lookup(path, vaddrs, use_cache=False, background_index=False, debug_dirs=())

    return one_input


if __name__ == "__main__":
    reader = sys.argv[1]
    main(reader, lambda: make_target(reader), [sys.argv[0], *sys.argv[2:]])
