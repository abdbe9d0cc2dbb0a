"""A PE mapping named by the image's code ID (TimeDateStamp + SizeOfImage), verified by its headers.

Breakpad, Crashpad and Sentry record a Windows module by its code ID, the symbol-store key of
the image (``name.exe/<TIMESTAMP %08X><SIZEOFIMAGE %x>/name.exe``); a MinGW or CodeView-less
image has no other ID. The profiles (``fixtures/make_windows_profiles.py``) carry it as each
mapping's build ID: a PDB-backed image and DLL (``winapp.codeid.heap``, truth: llvm-symbolizer's
frames) and the MinGW build with its DWARF (``mingwapp.codeid.cpu``, truth: the stored vaddr of
each location, whose answer the differential tests hold against llvm-symbolizer).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from symbolize.api import lookup, symbolize_profile
from symbolize.formats.pe.file import PeFile
from symbolize.formats.types import DebugId, DebugIdKind
from symbolize.module import Reason, Unknown
from symbolize.pprof import StringTable, read_profile
from symbolize.proto.profile_pb2 import Profile
from tests.fixtures_data import FIXTURES

BIN = FIXTURES / "bin" / "windows"
PROFILES = FIXTURES / "profiles" / "windows"


def _lines(profile: Profile) -> dict[int, list[tuple[str, int]]]:
    """Location address -> (function, line) innermost first."""
    strings = StringTable(profile)
    functions = {function.id: strings.get(function.name) for function in profile.function}
    return {loc.address: [(functions[line.function_id], line.line) for line in loc.line] for loc in profile.location}


def test_the_code_id_is_the_symbol_store_key_of_the_image() -> None:
    image = PeFile(BIN / "winapp.exe")
    text = f"{image.time_date_stamp:08X}{image.size_of_image:x}"
    assert str(image.code_id) == text
    for spelling in (text, text.lower(), text[:8] + text[8:].upper(), text[:8] + "000" + text[8:]):
        assert DebugId.parse(spelling, DebugIdKind.PE_CODE_ID) == image.code_id
    # A /Brepro or MinGW stamp keeps its 8 digits: 00000000 then SizeOfImage.
    mingw = PeFile(BIN / "mingwapp.exe")
    assert str(mingw.code_id) == f"00000000{mingw.size_of_image:x}"
    assert DebugId.parse(str(mingw.code_id), DebugIdKind.PE_CODE_ID) == mingw.code_id
    for not_one in ("", "1234", "12345678", "x2345678123", "12345678123456789"):
        assert DebugId.parse(not_one, DebugIdKind.PE_CODE_ID) is None


def test_the_profiles_carry_code_ids_and_nothing_else() -> None:
    for name in ("winapp.codeid.heap.pb.gz", "mingwapp.codeid.cpu.pb.gz"):
        profile, _ = read_profile(PROFILES / name)
        for mapping in profile.mapping:
            image = PeFile(BIN / profile.string_table[mapping.filename].rsplit("\\", 1)[1])
            assert profile.string_table[mapping.build_id] == str(image.code_id)
            assert image.debug_id is None or str(image.debug_id) != str(image.code_id)


def test_a_pdb_backed_profile_with_code_ids_names_every_location_as_llvm_symbolizer() -> None:
    truth = json.loads((PROFILES / "winapp.heap.truth.json").read_text())["locations"]
    original, _ = read_profile(PROFILES / "winapp.codeid.heap.pb.gz")
    named, summary = symbolize_profile(PROFILES / "winapp.codeid.heap.pb.gz", search_paths=[BIN], use_cache=False)
    lines = _lines(named)
    assert len(original.location) == len(truth) > 20
    for location in original.location:
        theirs: list[dict[str, Any]] = truth[str(location.id)]
        ours = lines[location.address]
        assert [name for name, _ in ours] == [frame["function"] for frame in theirs]
        assert ours[-1][1] == theirs[-1]["line"]
    for mapping in summary.mappings:
        assert mapping.unnamed == 0 and not mapping.unverified, mapping
        assert mapping.debug_file is not None and mapping.debug_file.endswith(".pdb")


def test_a_mingw_profile_with_its_code_id_names_every_location_from_its_dwarf() -> None:
    truth = json.loads((PROFILES / "mingwapp.codeid.cpu.truth.json").read_text())
    addresses = {int(address, 16): int(vaddr, 16) for address, vaddr in truth["locations"].items()}
    named, summary = symbolize_profile(PROFILES / "mingwapp.codeid.cpu.pb.gz", search_paths=[BIN], use_cache=False)
    (mapping,) = summary.mappings
    assert mapping.named == len(addresses) > 300 and not mapping.unverified
    expected = lookup(FIXTURES / truth["binary"], list(addresses.values()), use_cache=False)
    lines = _lines(named)
    for address, result in zip(addresses, expected, strict=True):
        assert not isinstance(result, Unknown)
        assert lines[address] == [(frame.function, frame.line) for frame in result]
    assert any(len(chain) > 1 for chain in lines.values())  # inlined frames, from the DWARF
    assert all(line > 0 for chain in lines.values() for _, line in chain[-1:])


@pytest.mark.parametrize("profile_name", ["winapp.codeid.heap.pb.gz", "mingwapp.codeid.cpu.pb.gz"])
def test_a_code_id_of_another_build_is_refused_with_both_ids(profile_name: str) -> None:
    profile, _ = read_profile(PROFILES / profile_name)
    mapping = profile.mapping[0]
    name = profile.string_table[mapping.filename].rsplit("\\", 1)[1]
    image = PeFile(BIN / name)
    # The same image name, another link: a different TimeDateStamp.
    other = f"{(image.time_date_stamp + 1) & 0xFFFFFFFF:08X}{image.size_of_image:x}"
    profile.string_table.append(other)
    mapping.build_id = len(profile.string_table) - 1
    _named, summary = symbolize_profile(profile, search_paths=[BIN], use_cache=False)
    refused = summary.mappings[0]
    assert refused.named == 0 and refused.locations > 0
    assert set(refused.reasons) == {Reason.DEBUG_ID_MISMATCH}
    (detail,) = {text for (_, text) in refused.details}
    assert str(image.code_id) in detail and other in detail and "code ID" in detail
