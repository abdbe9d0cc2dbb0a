"""A Windows-shaped heap profile (fixtures/make_windows_profiles.py) named through the CLI on Linux.

One mapping per module at an ASLR base, limit base + SizeOfImage, Windows paths, no build ID or
offset, the four heap sample types, return addresses in callers. Truth: llvm-symbolizer's frames
at each location's vaddr - 1, stored beside the profile. Inlined frames are compared by name (their
lines differ where llvm-symbolizer 14 misreads annotations, see test_windows_differential.py), the
outermost frame by name and line.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from symbolize.cli.app import app
from symbolize.formats.pe import PeFile
from symbolize.mapping_ids import spell
from symbolize.pprof import read_profile
from symbolize.proto.profile_pb2 import Profile
from tests.fixtures_data import FIXTURES

PROFILE = FIXTURES / "profiles" / "windows" / "winapp.heap.pb.gz"
TRUTH = FIXTURES / "profiles" / "windows" / "winapp.heap.truth.json"
BIN = FIXTURES / "bin" / "windows"


def _symbolize(tmp_path: Path, search_path: Path) -> Profile:
    out = tmp_path / "named.pb.gz"
    result = CliRunner().invoke(app, ["profile", str(PROFILE), "-o", str(out), "--search-path", str(search_path),
                                      "--no-cache"])  # fmt: skip
    assert result.exit_code == 0, result.output
    profile, _ = read_profile(out)
    return profile


def _chains(profile: Profile) -> dict[int, list[tuple[str, int]]]:
    """Location id -> (function name, line) innermost first."""
    functions = {f.id: profile.string_table[f.name] for f in profile.function}
    return {loc.id: [(functions[line.function_id], line.line) for line in loc.line] for loc in profile.location}


def _truth() -> dict[int, list[dict[str, Any]]]:
    return {int(k): v for k, v in json.loads(TRUTH.read_text())["locations"].items()}


def test_the_profile_is_windows_shaped() -> None:
    profile, _ = read_profile(PROFILE)
    strings = profile.string_table
    assert [strings[t.type] for t in profile.sample_type] == ["alloc_objects", "alloc_space", "inuse_objects",
                                                             "inuse_space"]  # fmt: skip
    for mapping in profile.mapping:
        assert strings[mapping.filename].startswith("C:\\Program Files\\")
        assert mapping.memory_start >= 0x7FF000000000 and mapping.file_offset == 0 and not mapping.build_id
    assert {strings[m.filename].rsplit("\\", 1)[1] for m in profile.mapping} == {"winapp.exe", "winlib.dll"}


def test_every_location_is_named_as_llvm_symbolizer_names_the_call(tmp_path: Path) -> None:
    original, _ = read_profile(PROFILE)
    named = _symbolize(tmp_path, BIN)
    chains = _chains(named)
    truth = _truth()
    assert len(truth) == len(original.location) > 20
    addresses = {loc.id: loc.address for loc in original.location}
    for location in named.location:
        theirs = truth[next(i for i, a in addresses.items() if a == location.address)]
        ours = chains[location.id]
        assert [name for name, _ in ours] == [frame["function"] for frame in theirs]
        assert ours[-1][1] == theirs[-1]["line"]
    assert [list(s.value) for s in named.sample] == [list(s.value) for s in original.sample]
    assert any(len(chain) > 1 for chain in chains.values())  # inlined frames at some call sites


def test_without_the_dlls_pdb_its_frames_come_from_exports(tmp_path: Path) -> None:
    search = tmp_path / "bin"
    search.mkdir()
    for name in ("winapp.exe", "winapp.pdb", "winlib.dll"):
        shutil.copy(BIN / name, search / name)
    original, _ = read_profile(PROFILE)
    named = _symbolize(tmp_path, search)
    chains = _chains(named)
    truth = _truth()
    dll = next(m.id for m in original.mapping if original.string_table[m.filename].endswith("winlib.dll"))
    addresses = {loc.address: loc.id for loc in original.location}
    dll_locations = [loc for loc in named.location if loc.mapping_id == dll]
    assert dll_locations
    for location in dll_locations:
        theirs = truth[addresses[location.address]]
        assert chains[location.id] == [(theirs[-1]["function"], 0)]  # the export's name, no line


def test_a_stripped_pdb_says_in_the_summary_why_lines_are_missing(tmp_path: Path) -> None:
    """The exe's PDB is found and verified but holds publics only: its frames are named without lines,
    and the summary says why (the PDB's own reason), not that no debug file was found."""
    from tests.test_pdb import stripped_pdb

    search = tmp_path / "bin"
    search.mkdir()
    for name in ("winapp.exe", "winlib.dll", "winlib.pdb"):
        shutil.copy(BIN / name, search / name)
    (search / "winapp.pdb").write_bytes(stripped_pdb())
    out = tmp_path / "named.pb.gz"
    result = CliRunner().invoke(app, ["profile", str(PROFILE), "-o", str(out), "--search-path", str(search),
                                      "--no-cache", "--json-summary"])  # fmt: skip
    assert result.exit_code == 0, result.output
    mappings = {m["filename"].rsplit("\\", 1)[1]: m for m in json.loads(result.stdout)["mappings"]}
    exe, dll = mappings["winapp.exe"], mappings["winlib.dll"]
    assert exe["named"] > 0 and exe["debug_file"].endswith("winapp.pdb")
    assert exe["missing_lines"] is not None and "stripped" in exe["missing_lines"]
    assert dll["missing_lines"] is None  # its PDB has lines


@pytest.mark.parametrize("profile_path", [PROFILE, FIXTURES / "profiles" / "windows" / "mingwapp.codeid.cpu.pb.gz"])
def test_a_mapping_matched_by_name_records_every_id_of_its_image(tmp_path: Path, profile_path: Path) -> None:
    """Found by name, an image's IDs are written into the mapping as ``symbolize stamp`` spells them:
    a PDB's GUID + age and the code ID, or the code ID alone for a MinGW image (which has no PDB)."""
    bare = tmp_path / "bare.pb"
    profile, _ = read_profile(profile_path)
    for mapping in profile.mapping:
        mapping.build_id = 0
    bare.write_bytes(profile.SerializeToString())
    out = tmp_path / "named.pb"
    result = CliRunner().invoke(app, ["profile", str(bare), "-o", str(out), "--search-path", str(BIN), "--no-cache"])
    assert result.exit_code == 0, result.output
    named, _ = read_profile(out)
    strings = named.string_table
    recorded = {strings[m.filename].rsplit("\\", 1)[-1]: strings[m.build_id] for m in named.mapping}
    assert recorded
    for name, text in recorded.items():
        image = PeFile(BIN / name)
        assert text == spell(image.identities())
        assert text.endswith(str(image.code_id)) and (image.debug_id is None) == ("," not in text)
