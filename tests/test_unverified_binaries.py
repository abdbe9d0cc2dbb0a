"""A binary matched only by its file name (the mapping has no build ID), through the real console
script: named, and the summary says the match is unverified; refused with the reason when
the mapping's size or file offset contradicts the file (symbolize/normalize.py,
``mapping_contradiction``), its addresses kept and counted.

The inputs are a real gperftools profile of a fixture binary (fixtures/profiles/), its mapping
stripped of its build ID as a producer without build IDs writes it, and then made too large for the
image or given a file offset past the file's end.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from symbolize.formats.elf import ElfFile
from symbolize.pprof import read_profile, write_profile
from symbolize.proto.profile_pb2 import Mapping, Profile
from tests.test_cli_contracts import FIXTURE_BIN, NO_SIDE_EFFECTS, ROOT, run

BINARY = FIXTURE_BIN / "cdemo-gcc-dwarf5-pie"
PROFILE = ROOT / "fixtures" / "profiles" / "cdemo-gcc-dwarf5-pie.cpu.pb"
# Where the profile says the binary was: not on this machine, so only --binary finds it, by name.
RECORDED = "/build/elsewhere/cdemo-gcc-dwarf5-pie"
CONTRADICTS = "mapping-contradicts-file"


def _profile_without_build_id(tmp_path: Path, *, size: int | None = None, file_offset: int | None = None) -> Path:
    profile, _ = read_profile(PROFILE)
    mapping = _binary_mapping(profile)
    profile.string_table.append(RECORDED)
    mapping.filename = len(profile.string_table) - 1
    mapping.build_id = 0
    if size is not None:
        mapping.memory_limit = mapping.memory_start + size
    if file_offset is not None:
        mapping.file_offset = file_offset
    path = tmp_path / "in.pb"
    write_profile(profile, path, gzip=False)
    return path


def _binary_mapping(profile: Profile) -> Mapping:
    return next(m for m in profile.mapping if profile.string_table[m.filename].endswith(BINARY.name))


def _symbolize(tmp_path: Path, profile: Path) -> tuple[dict[str, Any], str, Profile]:
    out = tmp_path / "out.pb"
    result = run("profile", profile, "-o", out, "--binary", BINARY, "--json-summary", *NO_SIDE_EFFECTS)
    assert result.returncode == 0, result.stderr
    entries = [m for m in json.loads(result.stdout)["mappings"] if m["filename"] == RECORDED]
    assert len(entries) == 1, entries
    text = run("profile", profile, "-o", tmp_path / "text.pb", "--binary", BINARY, *NO_SIDE_EFFECTS)
    assert text.returncode == 0, text.stderr
    return entries[0], text.stderr, read_profile(out)[0]


def _locations_of(profile: Profile) -> list[tuple[int, int]]:
    """(address, number of lines) of each location in the binary's mapping."""
    mapping_id = _binary_mapping(profile).id
    return sorted((loc.address, len(loc.line)) for loc in profile.location if loc.mapping_id == mapping_id)


def test_a_binary_found_by_name_only_is_used_and_said_unverified(tmp_path: Path) -> None:
    entry, stderr, out = _symbolize(tmp_path, _profile_without_build_id(tmp_path))
    assert entry["binary"] == str(BINARY) and entry["unverified"] is True
    assert entry["locations"] > 0 and entry["named"] == entry["locations"]
    assert entry["refused"] == []
    assert "  unverified: matched by file name only (no build ID to check it by)" in stderr.splitlines()
    assert all(lines > 0 for _, lines in _locations_of(out))


def test_a_mapping_with_its_build_id_is_verified(tmp_path: Path) -> None:
    profile, _ = read_profile(PROFILE)
    profile.string_table.append(RECORDED)
    _binary_mapping(profile).filename = len(profile.string_table) - 1
    write_profile(profile, tmp_path / "in.pb", gzip=False)
    entry, stderr, _ = _symbolize(tmp_path, tmp_path / "in.pb")
    assert entry["binary"] == str(BINARY) and entry["unverified"] is False
    assert "unverified" not in stderr


def test_a_mapping_far_larger_than_the_image_refuses_the_file(tmp_path: Path) -> None:
    verified, _, _ = _symbolize(tmp_path, _profile_without_build_id(tmp_path))
    entry, stderr, out = _symbolize(tmp_path, _profile_without_build_id(tmp_path, size=64 << 20))
    why = "the mapping is 0x4000000 bytes, larger than the whole image"
    _assert_refused(entry, stderr, out, verified["locations"], why)


def test_a_file_offset_past_the_end_of_the_file_refuses_it(tmp_path: Path) -> None:
    verified, _, _ = _symbolize(tmp_path, _profile_without_build_id(tmp_path))
    past_end = BINARY.stat().st_size + 0x1000 & ~0xFFF
    entry, stderr, out = _symbolize(tmp_path, _profile_without_build_id(tmp_path, file_offset=past_end))
    why = f"file offset {past_end:#x} lies past the end of the file"
    _assert_refused(entry, stderr, out, verified["locations"], why)


def _assert_refused(entry: dict[str, Any], stderr: str, out: Profile, locations: int, why: str) -> None:
    assert entry["binary"] is None and entry["unverified"] is False
    [refusal] = entry["refused"]
    assert refusal.startswith(f"{BINARY}: ") and why in refusal, refusal
    assert f"  refused: {refusal}" in stderr.splitlines()
    # Every address is kept, unnamed, and counted under the new reason.
    assert entry["locations"] == locations and entry["named"] == 0
    assert entry["reasons"] == {CONTRADICTS: locations}
    assert entry["details"] == [{"reason": CONTRADICTS, "detail": refusal, "count": locations}]
    kept = _locations_of(out)
    assert len(kept) == locations and all(lines == 0 for _, lines in kept)


def test_the_output_carries_the_build_id_of_the_binary_used(tmp_path: Path) -> None:
    """The output keeps the build ID of the binary found by name, so a later run checks
    the binary it is given against the one this run used: the same file is then verified by it, and
    another build of the same name is not taken for it."""
    entry, _, out = _symbolize(tmp_path, _profile_without_build_id(tmp_path))
    assert entry["unverified"] is True
    with ElfFile(BINARY) as image:
        assert image.debug_id is not None
        assert out.string_table[_binary_mapping(out).build_id] == str(image.debug_id)
    # A location left unnamed, so the next run looks the mapping up again.
    mapping_id = _binary_mapping(out).id
    named = next(location for location in out.location if location.mapping_id == mapping_id and location.line)
    del named.line[:]
    again = tmp_path / "again.pb"
    write_profile(out, again, gzip=False)
    result = run("profile", again, "-o", tmp_path / "again.out.pb", "--binary", BINARY, "--json-summary",
                 *NO_SIDE_EFFECTS)  # fmt: skip
    assert result.returncode == 0, result.stderr
    [later] = [m for m in json.loads(result.stdout)["mappings"] if m["filename"] == RECORDED]
    assert later["unverified"] is False and later["named"] == later["locations"] > 0


OFFSETS = ROOT / "fixtures" / "profiles" / "offsets"


@pytest.mark.parametrize(("spelling", "unverified"), [("module-offset", True), ("module-base-offset", True),
                                                      ("absolute", False)])  # fmt: skip
def test_modules_of_offset_frames_found_by_name_are_said_unverified(
    tmp_path: Path, spelling: str, unverified: bool
) -> None:
    """``rustdemo-full+0x<rel>`` names its module by file name only, as a mapping without a build ID
    does; a bare ``0x<abs>`` placed by a mapping with a build ID is verified by it."""
    profile = OFFSETS / f"rustdemo-full.cpu.{spelling}.pb"
    arguments = ["profile", profile, "--search-path", FIXTURE_BIN, *NO_SIDE_EFFECTS]
    result = run(*arguments, "-o", tmp_path / "out.pb", "--json-summary")
    assert result.returncode == 0, result.stderr
    [entry] = [m for m in json.loads(result.stdout)["mappings"] if Path(m["filename"]).name == "rustdemo-full"]
    assert entry["named"] > 0 and entry["unverified"] is unverified
    text = run(*arguments, "-o", tmp_path / "text.pb")
    assert text.returncode == 0, text.stderr
    said = "  unverified: matched by file name only (no build ID to check it by)" in text.stderr.splitlines()
    assert said is unverified
