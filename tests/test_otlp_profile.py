"""``symbolize profile`` on OTLP profiles (symbolize/otlp/rewrite.py).

The done-when of issue 25: every fixture pprof profile converted to OTLP, named as OTLP and
converted back names the same frames as naming the pprof directly; the eBPF-shaped fixture (ELF
virtual addresses in a process mapping, htlhash only) is named.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from symbolize.api import symbolize_file
from symbolize.otlp.convert import Target, convert
from symbolize.otlp.encoding import Encoding
from symbolize.pprof import StringTable, parse_profile, read_profile
from symbolize.proto import profile_pb2 as pprof
from tests.fixtures_data import BIN, PROFILES

# Every committed profile the converter reads (as tests/test_otlp_convert.py lists them).
FIXTURE_PROFILES = sorted(
    path
    for path in PROFILES.rglob("*")
    if path.is_file() and path.suffix not in (".json", ".txt") and path.parent.name != "raw"
)
SEARCH = [BIN, BIN / "windows", BIN / "macos"]


def named_stacks(profile: pprof.Profile) -> list[tuple[list[int], list[list[tuple[str, str, int, int]]]]]:
    """Each sample's values and, per frame leaf first, its lines (function, file, line, column),
    inlinees first: what a reader of the profile sees, whatever the IDs."""
    strings = StringTable(profile)
    functions = {function.id: function for function in profile.function}
    locations = {location.id: location for location in profile.location}
    stacks = []
    for sample in profile.sample:
        frames = []
        for location_id in sample.location_id:
            lines = []
            for line in locations[location_id].line:
                function = functions.get(line.function_id)
                name = strings.get(function.name) if function is not None else ""
                file = strings.get(function.filename) if function is not None else ""
                lines.append((name, file, line.line, line.column))
            frames.append(lines)
        stacks.append((list(sample.value), frames))
    return stacks


def _symbolized_through_otlp(path: Path, tmp_path: Path, encoding: Encoding) -> tuple[pprof.Profile, int]:
    otlp = tmp_path / "in.otlp"
    otlp.write_bytes(convert(path.read_bytes(), Target.OTLP, encoding=encoding, path=path).data)
    named = tmp_path / "named.otlp"
    summary = symbolize_file(otlp, named, search_paths=SEARCH, use_cache=False)
    back = convert(named.read_bytes(), Target.PPROF, path=named)
    profile, _ = parse_profile(back.data, named)
    return profile, summary.named


@pytest.mark.parametrize("path", FIXTURE_PROFILES, ids=lambda path: str(path.relative_to(PROFILES)))
def test_every_fixture_profile_is_named_the_same_through_otlp(path: Path, tmp_path: Path) -> None:
    direct = tmp_path / "direct.pb"
    summary = symbolize_file(path, direct, search_paths=SEARCH, use_cache=False, gzip=False)
    expected, _ = read_profile(direct)
    through_otlp, named = _symbolized_through_otlp(path, tmp_path, Encoding.PROTOBUF)
    assert named == summary.named
    assert summary.named > 0
    assert named_stacks(through_otlp) == named_stacks(expected)
