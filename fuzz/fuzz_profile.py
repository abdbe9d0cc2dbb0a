"""Fuzz target: a pprof profile (gzipped or not) read and symbolized.

``python fuzz/fuzz_profile.py [libFuzzer options] [corpus dir]``: each input goes
through :func:`symbolize.pprof.parse_profile`, then the profile rewrite with no
filesystem search: every mapping, whatever its name, is answered by one fixture
binary opened once (so names, new Function ids and location splits are made from
what the input's mappings and addresses say), then serialization, as
``symbolize profile`` does.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fuzz.harness import REPO, Target, main

TARGET = "pprof"


def make_target() -> Target:
    from symbolize import api
    from symbolize.pprof import parse_profile, serialize_profile
    from symbolize.rewrite import RewriteOptions, symbolize_profile

    module = api.open_module(REPO / "fixtures" / "bin" / "cdemo-gcc-dwarf5-pie", use_cache=False)
    options = RewriteOptions(open_module=lambda filename, build_id, discovery: module)

    def one_input(data: bytes) -> object:
        profile, was_gzipped = parse_profile(data, "fuzz-input.pb")
        symbolize_profile(profile, options)
        return serialize_profile(profile, gzip=was_gzipped)

    return one_input


if __name__ == "__main__":
    main(TARGET, make_target, sys.argv)
