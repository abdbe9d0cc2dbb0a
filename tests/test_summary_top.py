"""Around the rewrite: top functions per sample type with shares, --drop-frames, named profiles, build IDs."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile
from elftools.elf.sections import NoteSection
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from symbolize.api import symbolize_profile
from symbolize.cli.app import app
from symbolize.pprof import StringTable, read_profile, serialize_profile
from symbolize.proto.profile_pb2 import Profile
from symbolize.top_functions import top_leaf_functions
from tests.fixtures_data import FIXTURES

BIN = FIXTURES / "bin"
HEAP_V2 = FIXTURES / "profiles" / "gperftools" / "rustdemo-full.heap_v2"
TCMALLOC = r"tc_\w+|.*tcmalloc.*"
# The profile's leaves lie in the machine's own libtcmalloc (its mapping has no build ID, so it is
# found by path); .ci/run installs the Debian package that wrote it (libgoogle-perftools4 2.10).
LIBTCMALLOC = Path("/usr/lib/x86_64-linux-gnu/libtcmalloc.so.4.5.10")
needs_libtcmalloc = pytest.mark.skipif(not LIBTCMALLOC.is_file(), reason=f"{LIBTCMALLOC} is not installed")


@needs_libtcmalloc
def test_json_summary_has_top_functions_for_every_sample_type_with_shares(tmp_path: Path) -> None:
    out = tmp_path / "out.pb"
    result = CliRunner().invoke(
        app, ["profile", str(HEAP_V2), "-o", str(out), "--search-path", str(BIN), "--json-summary",
              "--drop-frames", TCMALLOC],
    )
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    rewritten, _ = read_profile(out)
    strings = StringTable(rewritten)
    assert strings.get(rewritten.drop_frames) == TCMALLOC
    types = [strings.get(t.type) for t in rewritten.sample_type]
    assert list(summary["top_functions"]) == types
    for index, sample_type in enumerate(types):
        total = sum(abs(s.value[index]) for s in rewritten.sample)
        entries = summary["top_functions"][sample_type]
        assert entries
        for entry in entries:
            assert entry["share"] == pytest.approx(entry["value"] / total)
            assert not re.fullmatch(TCMALLOC, entry["function"])
        assert sum(entry["share"] for entry in entries) <= 1 + 1e-9


@needs_libtcmalloc
def test_drop_frames_moves_the_leaf_to_the_first_caller_kept() -> None:
    profile, summary = symbolize_profile(HEAP_V2, search_paths=[BIN], drop_frames="")  # no heap default
    leaves_before = {top.function for top in summary.top_functions_by_type["inuse_space"]}
    strings = StringTable(profile)
    dropped = top_leaf_functions(profile, strings, re.compile(TCMALLOC))
    leaves_after = {top.function for top in dropped["inuse_space"]}
    # Every tcmalloc stack starts in tcmalloc; once dropped, the leaves are the program's.
    assert any(re.fullmatch(TCMALLOC, name) for name in leaves_before)
    assert leaves_after and not any(re.fullmatch(TCMALLOC, name) for name in leaves_after)
    assert leaves_after.isdisjoint(leaves_before)


@needs_libtcmalloc
def test_text_summary_shows_shares_for_each_type() -> None:
    _, summary = symbolize_profile(HEAP_V2, search_paths=[BIN], drop_frames=TCMALLOC)
    text = summary.format_text()
    for sample_type in ("alloc_objects", "alloc_space", "inuse_objects", "inuse_space"):
        assert f"top leaf functions by {sample_type}:" in text
    assert "%" in text.split("top leaf functions by inuse_space:")[1]


def test_bad_drop_frames_is_a_usage_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["profile", str(HEAP_V2), "-o", str(tmp_path / "o.pb"), "--drop-frames", "(("])
    assert result.exit_code == 2
    assert "not a regular expression" in result.output


def test_named_profile_passes_through_unchanged_and_says_nothing_to_name() -> None:
    named, first = symbolize_profile(FIXTURES / "profiles" / "rustdemo-full.cpu.pb", search_paths=[BIN])
    assert not first.nothing_to_name
    # Label every sample as an off-CPU profile labels task spawn sites; drop what stayed unnamed.
    key = len(named.string_table)
    named.string_table.extend(["task", "spawn site"])
    for sample in named.sample:
        sample.label.add(key=key, str=key + 1)
    unnamed = {loc.id for loc in named.location if not loc.line}
    kept = [s for s in named.sample if not unnamed & set(s.location_id)]
    del named.sample[:]
    named.sample.extend(kept)
    before = serialize_profile(named, gzip=False)
    again, summary = symbolize_profile(named, search_paths=[BIN])
    assert serialize_profile(again, gzip=False) == before
    assert summary.nothing_to_name
    assert "nothing to name" in summary.format_text()
    assert summary.to_json()["nothing_to_name"] is True


def _gnu_build_id(path: Path) -> str:
    with path.open("rb") as stream:
        for section in ELFFile(stream).iter_sections():
            if isinstance(section, NoteSection):
                for note in section.iter_notes():
                    if note["n_type"] == "NT_GNU_BUILD_ID":
                        return str(note["n_desc"])
    raise AssertionError(f"{path} has no build ID")


def test_mapping_without_build_id_keeps_the_found_one() -> None:
    daemon = FIXTURES / "profiles" / "rustdemo-full.cpu.daemon.pb.gz"
    original, _ = read_profile(daemon)
    assert all(StringTable(original).get(m.build_id) == "" for m in original.mapping)
    rewritten, _ = symbolize_profile(daemon, search_paths=[BIN])
    strings = StringTable(rewritten)
    main = next(m for m in rewritten.mapping if strings.get(m.filename).endswith("/rustdemo-full"))
    assert strings.get(main.build_id) == _gnu_build_id(BIN / "rustdemo-full")


@settings(max_examples=100, deadline=None)
@given(
    stacks=st.lists(
        st.tuples(st.lists(st.sampled_from(["alloc", "inner", "outer", "main"]), min_size=1, max_size=5),
                  st.integers(-50, 1000)),
        max_size=15,
    ),
    drop=st.sampled_from([None, "alloc", "alloc|inner", "main"]),
)
def test_top_function_values_are_the_kept_leaves_totals(stacks: list[tuple[list[str], int]], drop: str | None) -> None:
    profile = Profile()
    profile.string_table.extend(["", "space", "bytes"])
    profile.sample_type.add(type=1, unit=2)
    ids = {}
    for name in ("alloc", "inner", "outer", "main"):
        ids[name] = len(ids) + 1
        profile.string_table.append(name)
        profile.function.add(id=ids[name], name=len(profile.string_table) - 1)
        profile.location.add(id=ids[name]).line.add(function_id=ids[name])
    for names, value in stacks:
        profile.sample.add(location_id=[ids[name] for name in names], value=[value])
    pattern = re.compile(drop) if drop else None
    tops = top_leaf_functions(profile, StringTable(profile), pattern, count=10)["space"]
    expected: dict[str, int] = {}
    for names, value in stacks:
        # pprof's Prune: from the root, the first matching frame after one that does not match ends
        # the stack; matching frames before any that does not are kept.
        kept = []
        for name in reversed(names):
            matches = pattern is not None and pattern.fullmatch(name)
            if matches and any(not pattern.fullmatch(earlier) for earlier in kept):  # type: ignore[union-attr]
                break
            kept.append(name)
        if kept:
            expected[kept[-1]] = expected.get(kept[-1], 0) + value
    assert {top.function: top.value for top in tops} == expected
    total = sum(abs(value) for _, value in stacks)
    for top in tops:
        assert top.share == (top.value / total if total else 0.0)
