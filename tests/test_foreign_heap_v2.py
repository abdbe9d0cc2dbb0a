"""Windows- and macOS-shaped heap_v2 files of the PE/PDB and Mach-O fixtures, named through the CLI.

``fixtures/make_gperf_profiles.py`` converts the made pprof profiles of those binaries (which
cannot run here) into heap_v2 text with synthesized ``start-end r-xp 00000000 00:00 0 path``
maps lines. Every frame of a heap_v2 stack is a return address, so each location must come back
named as llvm-symbolizer's stored answer names ``object address - 1``, where the object address
is computed here from the maps line and the binary's headers read with pefile and macholib (not
symbolize's readers): ``ImageBase + (runtime - start)`` for PE, ``__TEXT vmaddr + (runtime -
start)`` for Mach-O. Frames are compared by (function, line), innermost first, with the rules the
readers' differential tests hold, each as narrow: PDB-inlined frames by name only
(``test_windows_profiles.py``: llvm-symbolizer 14 misreads some inline line annotations); and
the outermost name of the ``strip -x`` Mach-O binaries, which llvm-symbolizer 14 takes from the
stripped binary's nearest symbol at or before the address and we from the dSYM's
(``test_macho_differential.py``): a static function's code (``run_round``) named ``main``.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pefile
from macholib.MachO import MachO
from typer.testing import CliRunner

from symbolize.cli.app import app
from symbolize.formats.macho.file import MachOFile
from symbolize.pprof import read_profile
from symbolize.proto.profile_pb2 import Profile
from tests.fixtures_data import FIXTURES

GPERFTOOLS = FIXTURES / "profiles" / "gperftools"
WINDOWS = FIXTURES / "bin" / "windows"
MACOS = FIXTURES / "bin" / "macos"


def _named(tmp_path: Path, name: str, search_path: Path) -> Profile:
    out = tmp_path / f"{name}.pb.gz"
    result = CliRunner().invoke(app, ["profile", str(GPERFTOOLS / name), "-o", str(out), "--search-path",
                                      str(search_path), "--no-cache"])  # fmt: skip
    assert result.exit_code == 0, result.output
    profile, _ = read_profile(out)
    return profile


def _located(profile: Profile) -> list[tuple[str, int, list[tuple[str, int]]]]:
    """(module base name, runtime address - mapping start, [(function, line)] innermost first) per location."""
    strings = profile.string_table
    functions = {f.id: strings[f.name] for f in profile.function}
    mappings = {m.id: m for m in profile.mapping}
    found = []
    for location in profile.location:
        mapping = mappings[location.mapping_id]
        module = strings[mapping.filename].replace("\\", "/").rsplit("/", 1)[-1]
        frames = [(functions[line.function_id], line.line) for line in location.line]
        found.append((module, location.address - mapping.memory_start, frames))
    return found


def _windows_truth() -> dict[tuple[str, int], list[dict[str, object]]]:
    """(module, vaddr looked up) -> llvm-symbolizer's frames, from make_windows_profiles.py's stored answers."""
    source = Profile()
    source.ParseFromString(gzip.decompress((FIXTURES / "profiles" / "windows" / "winapp.heap.pb.gz").read_bytes()))
    answers = json.loads((FIXTURES / "profiles" / "windows" / "winapp.heap.truth.json").read_text())["locations"]
    mappings = {m.id: m for m in source.mapping}
    truth = {}
    for location in source.location:
        mapping = mappings[location.mapping_id]
        module = source.string_table[mapping.filename].rsplit("\\", 1)[-1]
        image_base = pefile.PE(str(WINDOWS / module), fast_load=True).OPTIONAL_HEADER.ImageBase
        truth[(module, image_base + location.address - mapping.memory_start - 1)] = answers[str(location.id)]
    return truth


def test_windows_heap_v2_locations_are_named_as_llvm_symbolizer_names_the_call(tmp_path: Path) -> None:
    truth = _windows_truth()
    located = _located(_named(tmp_path, "winapp.windows.heap_v2", WINDOWS))
    assert {module for module, _, _ in located} == {"winapp.exe", "winlib.dll"}
    differences = []
    for module, rva, ours in located:
        image_base = pefile.PE(str(WINDOWS / module), fast_load=True).OPTIONAL_HEADER.ImageBase
        theirs = truth[(module, image_base + rva - 1)]
        if [name for name, _ in ours] != [f["function"] for f in theirs] or ours[-1][1] != theirs[-1]["line"]:
            differences.append((module, hex(rva), ours, theirs))
    assert len(located) == len(truth) > 20
    assert differences == []


def _text_vmaddr(binary: Path) -> int:
    header = MachO(str(binary)).headers[0]
    return next(
        int(command[1].vmaddr)
        for command in header.commands
        if hasattr(command[1], "segname") and command[1].segname.rstrip(b"\0") == b"__TEXT"
    )


def _nearest_symbol(binary: MachOFile, vaddr: int) -> str | None:
    return next((s.name for s in reversed(binary.defined_symbols()) if s.vaddr <= vaddr), None)


def _stripped_binary_names_outer_frame(module: str, vaddr: int, ours: list[tuple[str, int]],
                                       theirs: list[tuple[str, int]]) -> bool:  # fmt: skip
    """llvm names the outer frame after the stripped binary's symbol before it, we after the dSYM's."""
    if not ours or len(ours) != len(theirs) or ours[:-1] != theirs[:-1] or ours[-1][1] != theirs[-1][1]:
        return False
    dsym = MACOS / f"{module}.dSYM" / "Contents" / "Resources" / "DWARF" / module
    with MachOFile(MACOS / module) as binary, MachOFile(dsym) as dwarf_file:
        return theirs[-1][0] == _nearest_symbol(binary, vaddr) and ours[-1][0] == next(
            (s.name for s in reversed(dwarf_file.symbols()) if s.vaddr <= vaddr), None
        )


def test_macos_heap_v2_locations_are_named_as_llvm_symbolizer_names_the_call(tmp_path: Path) -> None:
    variants = {"usemshape-x86_64": "usemshape-macho-x86_64", "libmshape-x86_64.dylib": "libmshape-macho-x86_64"}
    stored = {
        module: {
            int(entry["address"], 16): [(f["function"], f["line"]) for f in entry["frames"]]
            for entry in json.loads((FIXTURES / "expected" / "macos" / f"{variant}.json").read_text())["addresses"]
        }
        for module, variant in variants.items()
    }
    located = _located(_named(tmp_path, "usemshape-x86_64.macos.heap_v2", MACOS))
    assert {module for module, _, _ in located} == set(variants)
    differences, by_rule = [], 0
    for module, offset, ours in located:
        vaddr = _text_vmaddr(MACOS / module) + offset - 1
        theirs = stored[module][vaddr]
        if ours == theirs:
            continue
        if _stripped_binary_names_outer_frame(module, vaddr, ours, theirs):
            by_rule += 1
        else:
            differences.append((module, hex(vaddr), ours, theirs))
    assert len(located) > 100
    assert differences == []
    assert by_rule < len(located) // 2
