"""Fuzz target: a profile (pprof, gzipped or not, or a gperftools format) read and symbolized.

``python fuzz/fuzz_profile.py SEEDS [libFuzzer options] [corpus dir]``: SEEDS names the seed
directory ``fuzz/seeds/<SEEDS>/`` (``pprof``, ``gperftools-cpu``, ``gperftools-heap``: one per
profile parser, all reached through the same sniffing reader). Each input goes
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
    main(sys.argv[1], make_target, [sys.argv[0], *sys.argv[2:]])
